"""The hook's SQLite statements: the request, its session and run, a decision and its audit row, written with
``sqlite3`` alone.

Why: PreToolUse fires before every tool Claude runs, so the hook writes without the ORM. These statements mirror
the store's (``StoreTx`` in ``persistence/store/``: ``ensure_session``, ``ensure_invocation``, ``create_request``,
``decide``, ``append_audit``) column for column, with the audit chain's step from
:mod:`reviewer_app.domain.audit_chain`; the lean path (:mod:`.lean`) and the fast path (:mod:`.fast`, which adds
the typed request and decision) both write through them, and tests compare their rows with the backend's.

Standard library only at import, no dataclasses or ``typing``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from reviewer_app.domain.lean_json import dumps, loads

try:  # the C module alone: ``sqlite3.dbapi2`` imports ``datetime`` for adapters nothing here uses (~2.5 ms)
    import _sqlite3 as sqlite3
except ImportError:  # pragma: no cover - an interpreter without it
    import sqlite3  # type: ignore[no-redef]

TYPE_CHECKING = False  # no ``typing`` at run time (see the module docstring)
if TYPE_CHECKING:
    from typing import Any

    from reviewer_app.domain.audit_chain import ChainStep
    from reviewer_app.persistence.audit_seal import AuditSeal

SCHEMA_REVISION = "0012"
"""The Alembic revision these statements were written against; a test checks it is the bundled head.

0006 installs PostgreSQL-only triggers; the SQLite schema these statements use is that of 0005, plus 0007's
policy_rules table and 0008's run heartbeat columns (left NULL here: an external run has no heartbeat); 0012's
counts per hour are kept by triggers on ``hitl_requests``, which these statements' writes fire like any other."""
BUSY_TIMEOUT_MS = 5_000
WAL_LIMIT_BYTES = 1024 * 1024
"""A write-ahead log past this is emptied by the hook that finds it so (:meth:`LeanStore.keep_log_short`): every
hook process reads the whole log when it opens the database (~0.3 ms per 100 KiB here), and emptying it costs a
checkpoint (two fsyncs) once every dozen calls."""
BLOB_REFS_KEY = "$blobs"
"""``blobs.REFS_KEY`` (a test holds the two equal): a request whose data names blobs is withdrawn by the store."""
ASK_USER = "ask_user"
"""``HITLType.ASK_USER``: its whole data is what the reviewer saw (``domain.hitl.shown_arguments``)."""
_RECORD_JSON = ("data", "metadata", "tool_state", "user_response")
"""The request's JSON columns (``user_response`` ``'null'``: None, as SQLAlchemy's JSON type reads it)."""
_AUDIT_SIGNED = (
    "id",
    "hitl_id",
    "decision",
    "reviewer",
    "at_ms",
    "shown_args_sha256",
    "edited_args",
    "message",
    "prev_hash",
    "row_hash",
)
"""``AuditReads``' ``_SIGNED_COLUMNS``: what the check of a decision against its audit row reads."""
SMALL_VALUE_BYTES = 4096
"""``blobs.BLOB_THRESHOLD`` (a test holds the two equal): JSON shorter than this is never a blob, so a call with
small arguments is written without loading the blob code."""


def sqlite_file(target: str) -> Path | None:
    """The file of a plain path or ``sqlite:///`` URL; None for other databases and in-memory ones."""
    if target.startswith("sqlite:///"):
        target = target[len("sqlite:///") :].split("?", 1)[0]
    elif "://" in target:
        return None
    if not target or target == ":memory:":
        return None
    return Path(target).expanduser().resolve()


def _json(value: Any) -> str:
    """How SQLAlchemy's JSON type stores a value on SQLite (``json.dumps``, ``None`` as ``'null'``)."""
    return dumps(value)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


_UNCLOSED: list[sqlite3.Connection] = []
"""Connections the hook process leaves to its exit (see :meth:`LeanStore.close`)."""


class LeanStore:
    """One short-lived ``sqlite3`` connection to Reviewer's database: the statements of the hook's fast and lean
    paths, mirrors of ``StoreTx``'s (persistence/store/), same columns and values."""

    def __init__(self, connection: sqlite3.Connection, path: Path, seal: AuditSeal | None = None) -> None:
        self.connection = connection
        self.path = path
        self._seal = seal
        self._anchor: ChainStep | None = None

    @property
    def seal(self) -> AuditSeal:
        """The audit key and anchors, found on first use: a waiting request is written without them."""
        if self._seal is None:
            from reviewer_app.persistence.audit_seal import AuditSeal

            self._seal = AuditSeal.default()
        return self._seal

    @classmethod
    def open(cls, target: str) -> Any:
        """The database, when it is an existing SQLite file at :data:`SCHEMA_REVISION`; else None."""
        path = sqlite_file(target)
        if path is None or not path.is_file():
            return None
        connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("PRAGMA foreign_keys = ON")
            rows = connection.execute("SELECT version_num FROM alembic_version").fetchall()
        except sqlite3.Error:
            connection.close()
            return None
        if [row[0] for row in rows] != [SCHEMA_REVISION]:
            connection.close()
            return None
        return cls(connection, path)

    def close(self, *, checkpoint: bool = True) -> None:
        """Close; ``checkpoint=False`` leaves the connection to the process's exit instead.

        Closing the last connection to a WAL database checkpoints it (with an fsync): ~20 ms, a quarter of the
        rule-settled hook's budget. The hook process ends right after answering, and SQLite recovers the WAL
        on the next open exactly as after any exit, so the hook skips that work (``os._exit``), but keeps the log
        short (:meth:`keep_log_short`).
        """
        if checkpoint:
            self.connection.close()
        else:
            self.keep_log_short()
            _UNCLOSED.append(self.connection)

    def keep_log_short(self) -> None:
        """Empty the write-ahead log once it is past :data:`WAL_LIMIT_BYTES` (never waiting for a lock).

        Why: a process that ends without closing leaves the log to the next one to open the database, which
        rebuilds the log's index by reading and checksumming every frame, and the rebuilt index counts no frame as
        checkpointed, so the log is never restarted. With hooks alone on a database (no window open) the log grew
        by every call (~80 KiB) and every call read all of it: after a few hundred calls, most of a settled call's
        time. A busy database (a reader on an older snapshot) leaves the work to a later call."""
        connection = self.connection
        try:
            if connection.in_transaction or os.path.getsize(f"{self.path}-wal") <= WAL_LIMIT_BYTES:
                return
            connection.execute("PRAGMA busy_timeout = 0")
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except (OSError, sqlite3.Error):  # no log file, or busy: nothing to do now
            pass

    def run_exists(self, invocation_id: str) -> bool:
        """Whether the run is recorded already (then its title is not needed: nothing would change it)."""
        return (
            self.connection.execute("SELECT 1 FROM invocations WHERE id = ?", (invocation_id,)).fetchone() is not None
        )

    def waiver_rows(self, session_id: str, tool_name: str) -> list[tuple[int, str, str | None]]:
        """The session's waiver rows for this tool (no other can cover its call): ``(id, tool_name, scope)``."""
        return self.connection.execute(
            "SELECT id, tool_name, scope FROM session_rules WHERE session_id = ? AND tool_name = ?",
            (session_id, tool_name),
        ).fetchall()

    def rule_rows(self, columns: tuple[str, ...], now: float) -> list[tuple[Any, ...]]:
        """The persistent rules in force (``columns`` of each), oldest first, as the store orders them."""
        return self.connection.execute(
            f"SELECT {', '.join(columns)} FROM policy_rules WHERE revoked_at IS NULL "
            "AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id",
            (now,),
        ).fetchall()

    def transaction(self, write: Any) -> Any:
        """``write()`` in one ``BEGIN IMMEDIATE`` transaction (rolled back on any error); its result."""
        connection = self.connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            result = write()
            connection.execute("COMMIT" if result is not False else "ROLLBACK")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        return result

    def ensure_session(self, session_id: str, agent: str, workspace: str | None) -> None:
        now = int(time.time())
        self.connection.execute(
            "INSERT INTO sessions (id, agent, title, workspace, external, created_at, updated_at) "
            "VALUES (?, ?, NULL, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING",
            (session_id, agent, workspace, now, now),
        )

    def ensure_invocation(self, invocation_id: str, session_id: str, agent: str, prompt: str | None) -> bool:
        """The run unless it exists (``RunWrites.ensure``, external); True when it was created."""
        ms = _now_ms()
        cursor = self.connection.execute(
            "INSERT INTO invocations (id, session_id, agent, prompt, state, parent_id, external, owner, error, "
            "created_at, started_at, finished_at, updated_at_ms, active_ms) "
            "VALUES (?, ?, ?, ?, 'running', NULL, 1, NULL, NULL, ?, ?, NULL, ?, 0) ON CONFLICT (id) DO NOTHING",
            (invocation_id, session_id, agent, prompt, ms // 1000, ms // 1000, ms),
        )
        return cursor.rowcount > 0

    def create_request(self, row: dict[str, Any]) -> bool:
        """Insert a pending request (``row``: :func:`request_row`'s keys); False when its id exists already."""
        from reviewer_app.domain.tool_args import summarize_arguments

        ms = _now_ms()
        data = row["data"]
        cursor = self.connection.execute(
            "INSERT INTO hitl_requests (hitl_id, hitl_type, session_id, invocation_id, data, metadata, block_id, "
            "status, resume_mode, tool_state, checkpoint_id, tool_name, tool_call_id, node_id, expires_at, "
            "user_response, responded_at, created_at, updated_at, updated_at_ms, summary, agent, decision, "
            "decided_by, external) "
            "VALUES (?, ?, ?, ?, ?, ?, NULL, 'pending', 'response', 'null', NULL, ?, ?, NULL, ?, 'null', NULL, "
            "?, ?, ?, ?, ?, NULL, NULL, 1) ON CONFLICT (hitl_id) DO NOTHING",
            (
                row["hitl_id"],
                row["hitl_type"],
                row["session_id"],
                row["invocation_id"],
                _json(data),
                _json(row["metadata"]),
                row["tool_name"],
                row["tool_call_id"],
                row["expires_at"],
                ms // 1000,
                ms // 1000,
                ms,
                summarize_arguments(data.get("arguments", data)),
                row["agent"],
            ),
        )
        return cursor.rowcount > 0

    def decide(
        self, hitl_id: str, arguments: Any, kind: str, response: dict[str, Any], reviewer: str, message: str | None
    ) -> None:
        """The pending request (created in this very transaction) decided, with its audit row."""
        ms = _now_ms()
        cursor = self.connection.execute(
            "UPDATE hitl_requests SET status = 'completed', user_response = ?, responded_at = ?, updated_at = ?, "
            "updated_at_ms = ?, decision = ?, decided_by = ? WHERE hitl_id = ? AND status = 'pending'",
            (_json(response), ms // 1000, ms // 1000, ms, kind, reviewer, hitl_id),
        )
        if cursor.rowcount != 1:  # inserted in this very transaction: cannot happen
            raise sqlite3.IntegrityError(f"request {hitl_id} vanished inside its transaction")
        self._append_audit(hitl_id, kind, reviewer, ms, arguments, response.get("args"), message)

    def withdraw(self, hitl_id: str, reviewer: str, message: str, note: str | None = None) -> bool | None:
        """In one transaction: cancel the pending request as ``requests.decide`` does (its audit row included) and
        patch its timeline block with the note ``watchdog.withdraw`` writes (``note``: the note's own message, as
        the hook's ``TimelineWriter.abandoned`` words it; default ``message``). False when it is no longer pending,
        None when this path cannot tell what was shown (no such request, or arguments stored as blobs): the
        caller withdraws it through the store instead."""

        def write() -> bool | None:
            row = self.connection.execute(
                "SELECT hitl_type, session_id, invocation_id, data, status FROM hitl_requests WHERE hitl_id = ?",
                (hitl_id,),
            ).fetchone()
            if row is None:
                return None
            hitl_type, session_id, invocation_id, data_text, status = row
            if status != "pending":
                return False
            data = loads(data_text) if isinstance(data_text, (str, bytes)) else None
            if not isinstance(data, dict) or BLOB_REFS_KEY in data:
                return None
            shown = data if hitl_type == ASK_USER else data.get("arguments", data)
            ms = _now_ms()
            cursor = self.connection.execute(
                "UPDATE hitl_requests SET status = 'cancelled', user_response = 'null', responded_at = ?, "
                "updated_at = ?, updated_at_ms = ?, decision = 'cancel', decided_by = ? "
                "WHERE hitl_id = ? AND status = 'pending'",
                (ms // 1000, ms // 1000, ms, reviewer, hitl_id),
            )
            if cursor.rowcount != 1:
                return False
            self._append_audit(hitl_id, "cancel", reviewer, ms, shown, None, message)
            note_data = {"status": "cancelled", "decision": "cancel", "message": note or message, "resolved_ms": ms}
            self.connection.execute(
                "INSERT INTO block_events (block_id, parent_id, kind, op, data, ts_ms, session_id, invocation_id, "
                "blob_refs) VALUES (?, NULL, 'hitl', 'patch', ?, ?, ?, ?, 'null')",
                (f"hitl_{hitl_id}", _json(note_data), ms, session_id, invocation_id),
            )
            return True

        done: bool | None = self.transaction(write)  # False and None wrote nothing
        if done:
            self.committed()
        return done

    def expire(self, hitl_id: str, response: dict[str, Any]) -> bool:
        """Inside a transaction: the pending request expired with ``response`` (its ``decision``: ``expire`` or
        ``reject``; ``message``) as ``requests.decide(status=EXPIRED, reviewer="system:expiry")`` writes it, its
        audit row included; False when it is no longer pending (a decision won: it stands)."""
        row = self.connection.execute(
            "SELECT hitl_type, data FROM hitl_requests WHERE hitl_id = ? AND status = 'pending'", (hitl_id,)
        ).fetchone()
        if row is None:
            return False
        hitl_type, data_text = row
        data = loads(data_text) if isinstance(data_text, (str, bytes)) else None
        if not isinstance(data, dict) or BLOB_REFS_KEY in data:
            raise sqlite3.DataError(f"request {hitl_id}: its arguments are not readable here")
        shown = data if hitl_type == ASK_USER else data.get("arguments", data)
        ms = _now_ms()
        kind, reviewer = response["decision"], "system:expiry"
        cursor = self.connection.execute(
            "UPDATE hitl_requests SET status = 'expired', user_response = ?, responded_at = ?, updated_at = ?, "
            "updated_at_ms = ?, decision = ?, decided_by = ? WHERE hitl_id = ? AND status = 'pending'",
            (_json(response), ms // 1000, ms // 1000, ms, kind, reviewer, hitl_id),
        )
        if cursor.rowcount != 1:
            return False
        self._append_audit(hitl_id, kind, reviewer, ms, shown, response.get("args"), response.get("message"))
        return True

    def decided_record(self, hitl_id: str) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, str]] | None:
        """The request once it is no longer pending, as the store's record (``RECORD_KEYS``, its JSON decoded),
        with its audit rows (``AuditReads.signed_decided_among``'s columns) and the chain's meta values, read in
        one snapshot; None while it is pending."""
        from reviewer_app.domain.audit_chain import AUDIT_KEY_ID_KEY, AUDIT_KEYED_FROM_KEY
        from reviewer_app.domain.hitl import RECORD_KEYS

        connection = self.connection
        connection.execute("BEGIN")
        try:
            cursor = connection.execute(
                f"SELECT {', '.join(RECORD_KEYS)} FROM hitl_requests WHERE hitl_id = ? AND status != 'pending'",
                (hitl_id,),
            )
            found = cursor.fetchone()
            if found is None:
                return None
            record = dict(zip(RECORD_KEYS, found, strict=True))
            for name in _RECORD_JSON:
                value = record[name]
                record[name] = loads(value) if isinstance(value, (str, bytes)) else value
            for name in ("data", "metadata"):
                if record[name] is None:
                    record[name] = {}
            cursor = connection.execute(
                f"SELECT {', '.join(_AUDIT_SIGNED)} FROM audit_log WHERE hitl_id = ? ORDER BY id", (hitl_id,)
            )
            audit = []
            for values in cursor.fetchall():
                fields = dict(zip(_AUDIT_SIGNED, values, strict=True))
                edited = fields["edited_args"]
                fields["edited_args"] = loads(edited) if isinstance(edited, (str, bytes)) else edited
                audit.append(fields)
            meta = {
                str(key): str(value)
                for key, value in connection.execute(
                    "SELECT key, value FROM reviewer_meta WHERE key IN (?, ?)", (AUDIT_KEY_ID_KEY, AUDIT_KEYED_FROM_KEY)
                ).fetchall()
            }
        finally:
            connection.execute("COMMIT")
        return record, audit, meta

    def audit_position(self, row_id: int) -> int:
        """An audit row's 1-based place in the log (``AuditReads._problems``' count)."""
        return int(self.connection.execute("SELECT count(*) FROM audit_log WHERE id <= ?", (row_id,)).fetchone()[0])

    def record_hit(self, rule_id: str) -> None:
        """As ``RuleWrites.record_hit``."""
        self.connection.execute(
            "UPDATE policy_rules SET hit_count = hit_count + 1, last_hit_at = ? WHERE id = ?", (time.time(), rule_id)
        )

    def _append_audit(
        self,
        hitl_id: str,
        decision: str,
        reviewer: str,
        at_ms: int,
        shown_args: Any,
        edited_args: Any,
        message: str | None,
    ) -> None:
        from reviewer_app.domain.audit_chain import (
            AUDIT_HEAD_KEY,
            args_digest,
            audit_fields,
            chain_meta_defaults,
            next_chain_step,
        )

        connection = self.connection
        meta = self._chain_meta()
        missing = chain_meta_defaults(meta, self.seal.key_id, os.urandom(16).hex())  # uuid4's randomness, no uuid
        for name, value in missing.items():  # BEGIN IMMEDIATE holds the write lock: no concurrent first row
            connection.execute(
                "INSERT INTO reviewer_meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING", (name, value)
            )
        if missing:
            meta = self._chain_meta()
        shown_sha = args_digest(shown_args) if shown_args is not None else None
        fields = audit_fields(hitl_id, decision, reviewer, at_ms, shown_sha, edited_args, message)
        step = next_chain_step(meta, fields, self.seal.key)
        # Large shown arguments are not copied into the log: one blob, named by the row (as the store does).
        shown_ref = self._blob_ref(shown_args)
        connection.execute(
            "INSERT INTO audit_log (hitl_id, decision, reviewer, at_ms, shown_args, shown_args_ref, shown_args_sha256, "
            "edited_args, message, prev_hash, row_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                hitl_id,
                decision,
                reviewer,
                at_ms,
                _json(shown_args if shown_ref is None else None),
                shown_ref,
                shown_sha,
                _json(edited_args),
                message,
                step.prev_hash,
                step.row_hash,
            ),
        )
        connection.execute("UPDATE reviewer_meta SET value = ? WHERE key = ?", (step.head_value, AUDIT_HEAD_KEY))
        self._anchor = step

    def _blob_ref(self, value: Any) -> str | None:
        """``<kind>:<sha256>`` of the blob a large value is stored as (``persistence/store/blobstore.py``'s rows,
        once), None for a value small enough for its row (``blobs.encode_value``'s answer)."""
        if isinstance(value, dict) and len(dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")) < (
            SMALL_VALUE_BYTES
        ):
            return None  # encode_value's None for it, told without loading the blob code
        from reviewer_app.persistence.blobs import encode_value

        encoded = encode_value(value)
        if encoded is None:
            return None
        kind, raw = encoded
        return f"{kind}:{self.put_blob(raw)}"

    def put_blob(self, raw: bytes) -> str:
        """``BlobWrites.put``: the blob stored unless it is (packed as the store packs it); its SHA-256."""
        from reviewer_app.persistence.blobs import digest, pack

        sha = digest(raw)
        if self.connection.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (sha,)).fetchone() is None:
            codec, data = pack(raw)
            self.connection.execute(
                "INSERT INTO blobs (sha256, codec, size, data) VALUES (?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
                (sha, codec, len(raw), data),
            )
        return str(sha)

    def _chain_meta(self) -> dict[str, str]:
        from reviewer_app.domain.audit_chain import CHAIN_META_KEYS

        rows = self.connection.execute(
            "SELECT key, value FROM reviewer_meta WHERE key IN (?, ?, ?, ?)", CHAIN_META_KEYS
        ).fetchall()
        return {str(k): str(v) for k, v in rows}

    def committed(self) -> None:
        """After COMMIT: wake the open windows and append the new chain head to the anchor file, as the store does
        after its commits."""
        from reviewer_app.persistence.wakeup import notify_commit

        notify_commit(self.path)  # an open window shows the request now, not at its next poll
        step, self._anchor = self._anchor, None
        if step is not None:
            self.seal.anchor(step.database_id, step.position, step.row_hash, str(self.path.resolve()))
