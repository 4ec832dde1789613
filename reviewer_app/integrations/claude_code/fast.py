"""Calls a rule settles, answered with the standard library's ``sqlite3``: no ORM on every tool call.

PreToolUse fires before every tool Claude runs; importing SQLAlchemy alone costs more than the 100 ms a
rule-settled answer may take. This module reads the session's rules and writes the rule-decided request and its
audit row on the same schema as :mod:`reviewer_app.persistence.store`, statement for statement (its
``ensure_session``, ``ensure_invocation``, ``create_request``, ``decide`` and ``append_audit``), with the audit
chain from :mod:`reviewer_app.domain.audit`. A test writes the same call both ways and compares the rows.

It only runs on a SQLite file at the schema revision it was written for; anything else (PostgreSQL, a new or
older database, a lock it cannot get) returns None and the caller takes the full backend path.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Iterable, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reviewer_app.domain.audit import (
    AUDIT_HEAD_KEY,
    AUDIT_KEY_ID_KEY,
    AUDIT_KEYED_FROM_KEY,
    DATABASE_ID_KEY,
    ChainStep,
    audit_fields,
    chain_meta_defaults,
    next_chain_step,
)
from reviewer_app.domain.decisions import Decision, args_digest
from reviewer_app.domain.hitl import summarize_arguments
from reviewer_app.domain.rule_outcome import RULE_COLUMNS, rule_from_row
from reviewer_app.domain.settlement import Settlement, may_concern, settlement_for
from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.integrations.claude_code.request import RequestFields
from reviewer_app.persistence.audit_seal import AuditSeal
from reviewer_app.persistence.blobs import digest, encode_value, pack
from reviewer_app.persistence.wakeup import notify_commit

if TYPE_CHECKING:
    from reviewer_app.domain.rules import Rule
    from reviewer_app.domain.waivers import SessionRule

SCHEMA_REVISION = "0011"
"""The Alembic revision these statements were written against; a test checks it is the bundled head.

0006 installs PostgreSQL-only triggers; the SQLite schema these statements use is that of 0005, plus 0007's
policy_rules table and 0008's run heartbeat columns (left NULL here: an external run has no heartbeat)."""
BUSY_TIMEOUT_MS = 5_000


def hook_settlement(
    tool_name: str,
    arguments: dict[str, Any],
    waivers: Iterable[tuple[int, SessionRule]],
    allow_tools: Iterable[str],
    *,
    cwd: str | None = None,
    policy_rules: Sequence[Rule] = (),
    agent: str | None = None,
    session_id: str | None = None,
    now: float | None = None,
) -> Settlement | None:
    """What settles a hook's call (:func:`reviewer_app.domain.settlement.settlement_for`, the one place every path
    asks), or None: a reviewer decides. An ask rule gives None here too."""
    call = ToolCall(tool_name, arguments, agent=agent, session_id=session_id, cwd=cwd)
    settlement = settlement_for(call, rules=policy_rules, waivers=waivers, allow_tools=allow_tools, now=now)
    return settlement if settlement is not None and settlement.settles else None


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
    return json.dumps(value)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


_UNCLOSED: list[sqlite3.Connection] = []
"""Connections the hook process leaves to its exit (see :meth:`FastStore.close`)."""


class FastStore:
    """One short-lived ``sqlite3`` connection to Reviewer's database, for the rule-settled path."""

    def __init__(self, connection: sqlite3.Connection, path: Path, seal: AuditSeal | None = None) -> None:
        self.connection = connection
        self.path = path
        self._seal = seal
        self._anchor: ChainStep | None = None

    @property
    def seal(self) -> AuditSeal:
        """The audit key and anchors, found on first use: a waiting request is written without them."""
        if self._seal is None:
            self._seal = AuditSeal.default()
        return self._seal

    @classmethod
    def open(cls, target: str) -> FastStore | None:
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
        on the next open exactly as after any exit, so the hook skips that work (``os._exit``, see hook.py).
        """
        if checkpoint:
            self.connection.close()
        else:
            _UNCLOSED.append(self.connection)

    def run_exists(self, invocation_id: str) -> bool:
        """Whether the run is recorded already (then its title is not needed: nothing would change it)."""
        return (
            self.connection.execute("SELECT 1 FROM invocations WHERE id = ?", (invocation_id,)).fetchone() is not None
        )

    def session_rules(self, session_id: str, tool_name: str) -> list[tuple[int, SessionRule]]:
        """The session's waivers for this tool (no other can cover its call) with their row ids, read as the store
        reads them (:meth:`SessionRule.from_stored`); the waiver matcher is loaded only when there is one."""
        with closing(
            self.connection.execute(
                "SELECT id, tool_name, scope FROM session_rules WHERE session_id = ? AND tool_name = ?",
                (session_id, tool_name),
            )
        ) as cursor:
            rows = cursor.fetchall()
        if not rows:
            return []
        from reviewer_app.domain.waivers import SessionRule

        found = ((rule_id, SessionRule.from_stored(tool, scope)) for rule_id, tool, scope in rows)
        return [(rule_id, rule) for rule_id, rule in found if rule is not None]

    def policy_rules(self, now: float, tool_name: str) -> list[Rule]:
        """The persistent rules in force that may concern this tool (:func:`may_concern`), oldest first, read as the
        store reads them (:func:`rule_from_row`): a rule about another tool is never built (nor its pattern parsed)."""
        columns = ", ".join(RULE_COLUMNS)
        with closing(
            self.connection.execute(
                f"SELECT {columns} FROM policy_rules WHERE revoked_at IS NULL "
                "AND (expires_at IS NULL OR expires_at > ?) ORDER BY created_at, id",
                (now,),
            )
        ) as cursor:
            pattern = RULE_COLUMNS.index("pattern")
            rows = [
                row
                for row in cursor.fetchall()
                if isinstance(row[pattern], str) and may_concern(row[pattern], tool_name)
            ]
        found = (rule_from_row(dict(zip(RULE_COLUMNS, row, strict=True))) for row in rows)
        return [rule for rule in found if rule is not None]

    def settle(
        self, fields: RequestFields, decision: Decision, *, workspace: str | None, rule_id: str | None = None
    ) -> bool:
        """Record the call as requested and decided by ``decision`` in one transaction.

        False when a request with this id exists already (the caller asks the backend what became of it).
        Raises ``RequestRejected`` (the library's limits) before writing anything.
        """
        fields.check_limits()
        connection = self.connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            self._ensure_session(fields.session_id, fields.agent, workspace)
            self._ensure_invocation(fields.invocation_id, fields.session_id, fields.agent, fields.title)
            if not self._create_request(fields):
                connection.execute("ROLLBACK")
                return False
            self._decide(fields, decision)
            if rule_id is not None:  # as RuleWrites.record_hit
                connection.execute(
                    "UPDATE policy_rules SET hit_count = hit_count + 1, last_hit_at = ? WHERE id = ?",
                    (time.time(), rule_id),
                )
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        notify_commit(self.path)  # an open window shows the settled call now, not at its next poll
        self.anchor_committed()
        return True

    def create_pending(self, fields: RequestFields, *, workspace: str | None) -> bool:
        """Create the waiting request (with its session and run) in one transaction, as ``ReviewClient.submit``
        would: an open window shows it before this hook has even loaded the backend that waits on it.

        False when a request with this id exists already; ``RequestRejected`` as :meth:`settle`.
        """
        fields.check_limits()
        connection = self.connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            self._ensure_session(fields.session_id, fields.agent, workspace)
            self._ensure_invocation(fields.invocation_id, fields.session_id, fields.agent, fields.title)
            created = self._create_request(fields)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        if created:
            notify_commit(self.path)  # the window shows the request now, not at its next poll
        return created

    # -- mirrors of StoreTx (persistence/store.py), same columns and values ------------------------------
    def _ensure_session(self, session_id: str, agent: str, workspace: str | None) -> None:
        now = int(time.time())
        self.connection.execute(
            "INSERT INTO sessions (id, agent, title, workspace, external, created_at, updated_at) "
            "VALUES (?, ?, NULL, ?, 1, ?, ?) ON CONFLICT (id) DO NOTHING",
            (session_id, agent, workspace, now, now),
        )

    def _ensure_invocation(self, invocation_id: str, session_id: str, agent: str, prompt: str | None) -> None:
        ms = _now_ms()
        self.connection.execute(
            "INSERT INTO invocations (id, session_id, agent, prompt, state, parent_id, external, owner, error, "
            "created_at, started_at, finished_at, updated_at_ms, active_ms) "
            "VALUES (?, ?, ?, ?, 'running', NULL, 1, NULL, NULL, ?, ?, NULL, ?, 0) ON CONFLICT (id) DO NOTHING",
            (invocation_id, session_id, agent, prompt, ms // 1000, ms // 1000, ms),
        )

    def _create_request(self, fields: RequestFields) -> bool:
        ms = _now_ms()
        data = fields.request_data()
        cursor = self.connection.execute(
            "INSERT INTO hitl_requests (hitl_id, hitl_type, session_id, invocation_id, data, metadata, block_id, "
            "status, resume_mode, tool_state, checkpoint_id, tool_name, tool_call_id, node_id, expires_at, "
            "user_response, responded_at, created_at, updated_at, updated_at_ms, summary, agent, decision, "
            "decided_by, external) "
            "VALUES (?, ?, ?, ?, ?, ?, NULL, 'pending', 'response', 'null', NULL, ?, ?, NULL, ?, 'null', NULL, "
            "?, ?, ?, ?, ?, NULL, NULL, 1) ON CONFLICT (hitl_id) DO NOTHING",
            (
                fields.hitl_id,
                fields.hitl_type,
                fields.session_id,
                fields.invocation_id,
                _json(data),
                _json(fields.request_metadata()),
                fields.tool_name,
                fields.tool_call_id,
                fields.expires_at,
                ms // 1000,
                ms // 1000,
                ms,
                summarize_arguments(data.get("arguments", data)),
                fields.agent,
            ),
        )
        return cursor.rowcount > 0

    def _decide(self, fields: RequestFields, decision: Decision) -> None:
        ms = _now_ms()
        response = decision.to_user_response()
        reviewer = decision.reviewer or "rule"
        cursor = self.connection.execute(
            "UPDATE hitl_requests SET status = 'completed', user_response = ?, responded_at = ?, updated_at = ?, "
            "updated_at_ms = ?, decision = ?, decided_by = ? WHERE hitl_id = ? AND status = 'pending'",
            (_json(response), ms // 1000, ms // 1000, ms, decision.kind.value, reviewer, fields.hitl_id),
        )
        if cursor.rowcount != 1:  # inserted in this very transaction: cannot happen
            raise sqlite3.IntegrityError(f"request {fields.hitl_id} vanished inside its transaction")
        message = decision.message
        edited = response.get("args")
        self._append_audit(fields.hitl_id, decision.kind.value, reviewer, ms, fields.arguments, edited, message)

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
        encoded = encode_value(shown_args)
        shown_ref = f"{encoded[0]}:{self._put_blob(encoded[1])}" if encoded is not None else None
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

    def _put_blob(self, raw: bytes) -> str:
        """A blob row as ``persistence/store/blobstore.py`` writes it (by SHA-256, zlib when it pays), once."""
        sha = digest(raw)
        if self.connection.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (sha,)).fetchone() is None:
            codec, data = pack(raw)
            self.connection.execute(
                "INSERT INTO blobs (sha256, codec, size, data) VALUES (?, ?, ?, ?) ON CONFLICT (sha256) DO NOTHING",
                (sha, codec, len(raw), data),
            )
        return sha

    def _chain_meta(self) -> dict[str, str]:
        keys = (AUDIT_HEAD_KEY, AUDIT_KEY_ID_KEY, AUDIT_KEYED_FROM_KEY, DATABASE_ID_KEY)
        rows = self.connection.execute(
            "SELECT key, value FROM reviewer_meta WHERE key IN (?, ?, ?, ?)", keys
        ).fetchall()
        return {str(k): str(v) for k, v in rows}

    def anchor_committed(self) -> None:
        """After COMMIT: append the new chain head to the anchor file, as the store does after its commits."""
        step, self._anchor = self._anchor, None
        if step is not None:
            self.seal.anchor(step.database_id, step.position, step.row_hash, str(self.path.resolve()))
