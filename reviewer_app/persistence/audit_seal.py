"""What keeps the audit log honest from outside the database: the chain's key and the anchor file.

Anyone who can write the database file can edit rows; they cannot compute a row's HMAC without the key (a
0600 file in the user data dir, or ``REVIEWER_AUDIT_KEY_FILE``), and cannot un-write the chain heads appended to
the anchor file (``<user data dir>/audit-anchors/<database id>.jsonl``, or ``REVIEWER_AUDIT_ANCHOR_DIR``) after
every decision. A team sharing a PostgreSQL queue shares one key file and keeps the anchors where every
reviewer's machine appends to them (docs/security.md).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from reviewer_app.domain.audit_chain import key_id
from reviewer_app.domain.lean_json import dumps, loads

TYPE_CHECKING = False  # no ``typing`` or ``dataclasses`` here: the hook's lean path loads this module
if TYPE_CHECKING:
    import logging


def _log() -> logging.Logger:
    """This module's logger; logging is imported when there is something to say (the hook's fast path rarely has)."""
    import logging

    return logging.getLogger(__name__)


APP_NAME = "reviewer-app"


class AuditKeyError(RuntimeError):
    """The audit key cannot be read or created safely, or is not the key the chain was written with."""


class Anchor:
    """A chain head recorded outside the database: after ``count`` rows the head was ``head``."""

    __slots__ = ("count", "database_url", "head")

    def __init__(self, count: int, head: str, database_url: str | None = None) -> None:
        self.count = count
        self.head = head
        self.database_url = database_url

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Anchor):
            return NotImplemented
        return (self.count, self.head, self.database_url) == (other.count, other.head, other.database_url)

    def __hash__(self) -> int:
        return hash((self.count, self.head, self.database_url))

    def __repr__(self) -> str:
        return f"Anchor({self.count}, {self.head!r}, {self.database_url!r})"


def user_data_dir() -> Path:
    """``platformdirs.user_data_dir("reviewer-app")``: on Linux with an absolute ``$XDG_DATA_HOME`` or ``$HOME``
    (what every platformdirs 4 gives then) worked out here, since importing platformdirs costs the hook's lean
    path more than its SQLite work; anywhere else platformdirs itself. A test holds the two to each other."""
    if sys.platform == "linux":
        xdg = os.environ.get("XDG_DATA_HOME", "")
        home = os.environ.get("HOME", "")
        if os.path.isabs(xdg):
            return Path(xdg) / APP_NAME
        if not xdg and os.path.isabs(home):
            return Path(home) / ".local" / "share" / APP_NAME
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


class AuditSeal:
    """The audit key and the anchor directory of this user (or team)."""

    __slots__ = ("_anchor_files", "_key", "_key_id", "anchor_dir", "key_path")

    def __init__(self, key_path: Path, anchor_dir: Path) -> None:
        self.key_path = key_path
        self.anchor_dir = anchor_dir
        self._key: bytes | None = None
        self._key_id: str | None = None
        self._anchor_files: dict[str, Path] = {}
        """Anchor file per database id, worked out once (an anchor is appended after every decision's commit)."""

    def __repr__(self) -> str:
        return f"AuditSeal(key_path={self.key_path!r}, anchor_dir={self.anchor_dir!r})"

    @classmethod
    def default(cls) -> AuditSeal:
        data_dir = user_data_dir()
        key_file = os.environ.get("REVIEWER_AUDIT_KEY_FILE")
        anchor_dir = os.environ.get("REVIEWER_AUDIT_ANCHOR_DIR")
        return cls(
            key_path=Path(key_file) if key_file else data_dir / "audit.key",
            anchor_dir=Path(anchor_dir) if anchor_dir else data_dir / "audit-anchors",
        )

    @property
    def key(self) -> bytes:
        """The key, created (32 random bytes, mode 0600) on first use; refused if others can read it."""
        if self._key is None:
            self._key = self._load_or_create()
        return self._key

    @property
    def key_id(self) -> str:
        if self._key_id is None:  # an HMAC of the key: worked out once
            self._key_id = key_id(self.key)
        return self._key_id

    def existing_key(self) -> bytes | None:
        """The key if this process holds one already (never created here): an agent's machine has none, by design."""
        if self._key is None:
            if not self.key_path.exists():
                return None
            try:
                self._key = self._load_or_create()
            except AuditKeyError:
                return None
        return self._key

    def _load_or_create(self) -> bytes:
        path = self.key_path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except FileExistsError:
            pass
        except OSError as exc:
            raise AuditKeyError(f"cannot create the audit key {path}: {exc.strerror or exc}") from exc
        else:
            with os.fdopen(fd, "w", encoding="ascii") as handle:  # secrets.token_hex(32), without its imports
                handle.write(os.urandom(32).hex() + "\n")  # (random, math, hmac, OpenSSL) on a hook's first call
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as handle:  # bytes: a text file's codec look-up costs a hook call ~1 ms
                if os.name == "posix" and os.fstat(handle.fileno()).st_mode & 0o077:
                    raise AuditKeyError(f"the audit key {path} is readable by other users: chmod 600 it")
                raw = handle.read()
        except OSError as exc:
            raise AuditKeyError(f"cannot read the audit key {path}: {exc.strerror or exc}") from exc
        try:
            key = bytes.fromhex(raw.decode("ascii").strip())
        except ValueError:  # UnicodeDecodeError included
            raise AuditKeyError(f"the audit key {path} is not hex text") from None
        if len(key) < 16:
            raise AuditKeyError(f"the audit key {path} is too short (at least 16 bytes)")
        return key

    def _anchor_file(self, database_id: str) -> Path:
        path = self._anchor_files.get(database_id)
        if path is None:
            safe = "".join(ch for ch in database_id if ch.isalnum() or ch in "-_")
            path = self._anchor_files[database_id] = self.anchor_dir / f"{safe}.jsonl"
        return path

    def anchor(self, database_id: str, count: int, head: str, database_url: str) -> None:
        """Append a chain head; a failure is logged, never raised (the decision is already committed).

        One ``write`` of the whole line on an ``O_APPEND`` descriptor (no buffered file object); the directory is
        created only when the file cannot be opened without it."""
        line = dumps({"count": count, "head": head, "at_ms": time.time_ns() // 1_000_000, "db": database_url})
        data = (line + "\n").encode("utf-8")
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        path = self._anchor_file(database_id)
        try:
            try:
                fd = os.open(path, flags, 0o600)
            except FileNotFoundError:
                self.anchor_dir.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, flags, 0o600)
            try:
                written = os.write(fd, data)
                while written < len(data):  # a short write (a full disk, a signal): append the rest
                    written += os.write(fd, data[written:])
            finally:
                os.close(fd)
        except OSError as exc:
            _log().warning("could not append the audit anchor to %s: %s", self.anchor_dir, exc)

    def anchors(self, database_id: str) -> list[Anchor]:
        """Every head anchored for ``database_id`` (lines that do not parse are skipped)."""
        try:
            text = self._anchor_file(database_id).read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        found = []
        for raw in text.splitlines():
            try:
                item = loads(raw)
                found.append(Anchor(int(item["count"]), str(item["head"]), item.get("db")))
            except (ValueError, KeyError, TypeError):
                continue
        return found

    def anchored_ids_for(self, database_url: str) -> list[str]:
        """Database ids whose anchors name ``database_url``: finds a log whose id was changed to hide it."""
        if not self.anchor_dir.is_dir():
            return []
        ids = []
        for path in sorted(self.anchor_dir.glob("*.jsonl")):
            try:
                with path.open(encoding="utf-8") as handle:
                    first = loads(handle.readline() or "{}")
            except (OSError, ValueError):
                continue
            if isinstance(first, dict) and first.get("db") == database_url:
                ids.append(path.stem)
        return ids
