"""Wake-up hints between processes on one machine for one SQLite database (standard library only).

``PRAGMA data_version`` polling (:mod:`reviewer_app.persistence.changes`) notices another process's commit within
the poll interval. To wake at once, each watching process binds one Unix datagram socket in a directory derived
from the database's real path; a writer, after COMMIT, sends one byte to every socket there. The byte is only a
hint: the woken process re-reads the database (and ignores the hint when nothing changed), so a lost, forged or
garbled datagram costs at most one poll interval or one cheap probe, never a wrong answer.

The directory lives in ``$XDG_RUNTIME_DIR/reviewer-wake`` (else ``<tmp>/reviewer-wake-<uid>``), one subdirectory per
database, each created 0700 and refused unless it is a real directory owned by this user and closed to others
(another user may have planted it, or a symlink, first). Only sockets are sent to (never a symlink or a file);
sockets nobody listens on any more are removed by the next writer. Whenever the channel is unavailable (Windows,
no ``AF_UNIX`` datagrams, a directory refused or not writable, a path too long for a socket) everything works as
before, by polling. ``REVIEWER_WAKE_CHANNEL=0`` turns it off.

Hook processes use this module with nothing but the standard library (see
:mod:`reviewer_app.integrations.claude_code.fast`).
"""

from __future__ import annotations

import _thread  # the lock alone: ``threading`` costs a hook call a millisecond it never uses
import contextlib
import errno
import os
import stat
import time
from pathlib import Path

from reviewer_app.domain.sha import sha256_hex

TYPE_CHECKING = False  # no ``typing`` at run time: the hook's lean path imports this module

if TYPE_CHECKING:
    import logging

try:  # the C module alone: ``socket`` builds its enums on import (~3 ms of a hook process's 100 ms budget)
    import _socket as socket
except ImportError:  # pragma: no cover - another Python implementation
    import socket  # type: ignore[no-redef]


def _log() -> logging.Logger:
    """This module's logger; logging is imported when there is something to say (the hook's fast path rarely has)."""
    import logging

    return logging.getLogger(__name__)


SUFFIX = ".wake"
MAX_SOCKET_PATH = 100
"""``sun_path`` holds 104-108 bytes depending on the system; stay under the smallest with a margin."""
DRAIN_LIMIT = 256
"""At most this many datagrams are read per wake-up: a flood is drained in bounded batches."""
ENV_SWITCH = "REVIEWER_WAKE_CHANNEL"
LISTING_MARGIN_NS = 50_000_000


def supported() -> bool:
    """Unix datagram sockets exist here (not on Windows) and the operator has not turned the channel off."""
    return hasattr(socket, "AF_UNIX") and hasattr(os, "getuid") and os.environ.get(ENV_SWITCH, "1") != "0"


def _private_dir(path: Path) -> bool:
    """Create ``path`` 0700 if missing; True only when it is a real directory, ours, closed to everyone else."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        _log().warning("wake-up channel: %s is not a directory of this user; polling instead", path)
        return False
    if info.st_mode & 0o077:
        _log().warning("wake-up channel: %s is open to other users; polling instead", path)
        return False
    return True


SOCKET_NAME_LENGTH = 24 + 1 + 7 + 1 + 8 + len(SUFFIX)
"""``<database digest>/<pid>-<random>.wake``, with a pid of up to 7 digits."""


def channel_root() -> Path:
    """Where the per-database directories live: the user's runtime dir, else a per-user directory in tmp (``/tmp``
    when the temporary directory's path is too long for socket paths, as macOS's is)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "reviewer-wake"
    name = f"reviewer-wake-{os.getuid()}"
    temporary = Path(_temporary_dir()) / name
    if len(os.fsencode(temporary)) + 1 + SOCKET_NAME_LENGTH > MAX_SOCKET_PATH and os.path.isdir("/tmp"):
        return Path("/tmp") / name
    return temporary


def _temporary_dir() -> str:
    """``tempfile.gettempdir()``; with none of its variables set and ``/tmp`` writable, ``/tmp`` as it would say
    without importing it (with ``shutil`` and ``random``: milliseconds of every hook call)."""
    if not any(os.environ.get(name) for name in ("TMPDIR", "TEMP", "TMP")) and os.access("/tmp", os.W_OK | os.X_OK):
        return "/tmp"
    import tempfile

    return tempfile.gettempdir()


def channel_dir(database: Path) -> Path:
    """The directory of ``database``'s channel (not created): derived from its real path."""
    digest = sha256_hex(str(Path(database).resolve()).encode("utf-8", "surrogateescape"))[:24]
    return channel_root() / digest


def _open_dir(database: Path) -> Path | None:
    """The channel's directory, created safely, or None when the channel cannot be used here."""
    if not supported():
        return None
    directory = channel_dir(database)
    try:
        if _private_dir(directory.parent) and _private_dir(directory):
            return directory
    except OSError as exc:
        _log().info("wake-up channel unavailable for %s (%s); polling instead", database, exc)
    return None


class WakeListener:
    """One waiting process's socket: readable when a writer hinted at a commit.

    :meth:`open` returns None when the channel is unavailable; the caller then only polls.
    """

    def __init__(self, sock: socket.socket, path: Path) -> None:
        self.socket = sock
        self.path = path

    @classmethod
    def open(cls, database: Path) -> WakeListener | None:
        directory = _open_dir(database)
        if directory is None:
            return None
        path = directory / f"{os.getpid()}-{os.urandom(4).hex()}{SUFFIX}"
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            _log().info("wake-up channel: %s is too long for a socket; polling instead", path)
            return None
        for attempt in range(2):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                sock.bind(os.fsencode(path))  # bind never follows or replaces an existing name: EADDRINUSE
                os.chmod(path, 0o600)
                sock.setblocking(False)
            except FileNotFoundError:  # the last listener removed the empty directory just now: once more
                sock.close()
                if attempt or _open_dir(database) is None:
                    return None
                continue
            except OSError as exc:
                sock.close()
                _log().info("wake-up channel: cannot listen at %s (%s); polling instead", path, exc)
                return None
            return cls(sock, path)
        return None

    def fileno(self) -> int:
        return self.socket.fileno()

    def drain(self) -> int:
        """Read (and discard) what is queued, at most :data:`DRAIN_LIMIT` datagrams; how many were read."""
        count = 0
        while count < DRAIN_LIMIT:
            try:
                self.socket.recv(64)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            count += 1
        return count

    def poke(self) -> None:
        """Wake this listener from this process (to interrupt its own wait, e.g. on close)."""
        sender = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sender.setblocking(False)
            sender.sendto(b"\0", os.fsencode(self.path))
        except OSError:
            pass
        finally:
            sender.close()

    def close(self) -> None:
        """Stop listening; the database's directory goes too once it is empty (nothing piles up in tmp)."""
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        self.socket.close()
        with contextlib.suppress(OSError):  # fails while other listeners are in it
            os.rmdir(self.path.parent)


class WakeSender:
    """Sends the hint to every listener of one database after a commit; never blocks, never raises."""

    def __init__(self, database: Path) -> None:
        self.database = Path(database)
        self._directory: str | None = None  # a str: a Path is two Python calls at every os.lstat
        self._opened = False
        self._socket: socket.socket | None = None
        self._lock = _thread.allocate_lock()  # threading.Lock
        self._targets: list[bytes] = []
        self._listing_stamp: tuple[int, int] | None = None
        self._listed_at_ns = 0
        self.exclude: bytes | None = None
        """This process's own listener, woken in-process instead."""

    def _open(self) -> None:
        self._opened = True
        directory = _open_dir(self.database)
        if directory is not None:
            self._directory = os.fspath(directory)
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self._socket.setblocking(False)

    def _listeners(self, directory: str) -> list[bytes]:
        """The sockets in the directory, re-listed unless the directory is unchanged (one ``stat`` then).

        File times tick coarsely (a jiffy), so a listing counts as current only when it was taken well after the
        directory's last change: a socket bound in the same tick as an earlier one is never missed.
        """
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
            return []  # replaced since it was opened: send nothing there
        stamp = (info.st_mtime_ns, info.st_ino)
        if stamp != self._listing_stamp or self._listed_at_ns - info.st_mtime_ns < LISTING_MARGIN_NS:
            self._listed_at_ns = time.time_ns()
            targets = []
            with os.scandir(directory) as entries:
                for entry in entries:
                    # lstat: a symlink (to someone else's socket) is not a socket here, and is never sent to
                    if entry.name.endswith(SUFFIX) and stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                        targets.append(os.fsencode(entry.path))
            self._targets = targets
            self._listing_stamp = stamp
        return self._targets

    def send(self) -> int:
        """Hint every listener but this process's own; removes sockets nobody listens on. How many were sent."""
        with self._lock:
            try:
                if not self._opened:
                    self._open()
                sock, directory = self._socket, self._directory
                if sock is None or directory is None:
                    return 0
                sent = 0
                for target in self._listeners(directory):
                    if target == self.exclude:
                        continue
                    try:
                        sock.sendto(b"\1", target)
                        sent += 1
                    except (BlockingIOError, InterruptedError):
                        sent += 1  # its queue is full: it has a wake-up pending already
                    except OSError as exc:
                        if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):  # its process is gone
                            self._remove_stale(target)
            except OSError as exc:
                _log().debug("wake-up hint not sent (%s); waiters poll", exc)
                return 0
            return sent

    def _remove_stale(self, target: bytes) -> None:
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.lstat(target).st_mode):
                os.unlink(target)
        self._listing_stamp = None

    def close(self) -> None:
        with self._lock:
            if self._socket is not None:
                self._socket.close()
                self._socket = None


def notify_commit(database: Path) -> int:
    """One-shot hint after a commit (a short-lived process such as a hook): how many listeners were told."""
    sender = WakeSender(database)
    try:
        return sender.send()
    finally:
        sender.close()
