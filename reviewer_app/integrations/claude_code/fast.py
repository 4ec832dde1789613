"""Calls a rule settles, answered with the standard library's ``sqlite3``: no ORM on every tool call.

PreToolUse fires before every tool Claude runs; importing SQLAlchemy alone costs more than the 100 ms a
rule-settled answer may take. This module reads the session's rules and writes the rule-decided request and its
audit row on the same schema as :mod:`reviewer_app.persistence.store`, statement for statement (its
``ensure_session``, ``ensure_invocation``, ``create_request``, ``decide`` and ``append_audit``), with the audit
chain from :mod:`reviewer_app.domain.audit`. A test writes the same call both ways and compares the rows.

It only runs on a SQLite file at the schema revision it was written for; anything else (PostgreSQL, a new or
older database, a lock it cannot get) returns None and the caller takes the full backend path. The statements
themselves are :class:`.lean_store.LeanStore`'s, shared with the hook's lean path; this module adds the typed request
and decision and every rule and waiver (:func:`hook_settlement`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from reviewer_app.domain.lean_settlement import RULE_COLUMNS, may_concern
from reviewer_app.domain.settlement import Settlement, settlement_for
from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.integrations.claude_code.lean_store import BUSY_TIMEOUT_MS, SCHEMA_REVISION, LeanStore, sqlite_file

if TYPE_CHECKING:
    from reviewer_app.domain.decisions import Decision
    from reviewer_app.domain.rules import Rule
    from reviewer_app.domain.waivers import SessionRule
    from reviewer_app.integrations.claude_code.request import RequestFields

__all__ = ["BUSY_TIMEOUT_MS", "SCHEMA_REVISION", "FastStore", "hook_settlement", "sqlite_file"]


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


class FastStore(LeanStore):
    """One short-lived ``sqlite3`` connection to Reviewer's database, for the rule-settled path."""

    def session_rules(self, session_id: str, tool_name: str) -> list[tuple[int, SessionRule]]:
        """The session's waivers for this tool (no other can cover its call) with their row ids, read as the store
        reads them (:meth:`SessionRule.from_stored`); the waiver matcher is loaded only when there is one."""
        rows = self.waiver_rows(session_id, tool_name)
        if not rows:
            return []
        from reviewer_app.domain.waivers import SessionRule

        found = ((rule_id, SessionRule.from_stored(tool, scope)) for rule_id, tool, scope in rows)
        return [(rule_id, rule) for rule_id, rule in found if rule is not None]

    def policy_rules(self, now: float, tool_name: str) -> list[Rule]:
        """The persistent rules in force that may concern this tool (:func:`may_concern`), oldest first, read as the
        store reads them (``rule_from_row``): a rule about another tool is never built (nor its pattern parsed)."""
        pattern = RULE_COLUMNS.index("pattern")
        rows = [
            row
            for row in self.rule_rows(RULE_COLUMNS, now)
            if isinstance(row[pattern], str) and may_concern(row[pattern], tool_name)
        ]
        if not rows:
            return []
        from reviewer_app.domain.rule_outcome import rule_from_row

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
        response = decision.to_user_response()
        reviewer = decision.reviewer or "rule"

        def write() -> bool:
            self._ensure_parents(fields, workspace)
            if not self.create_request(_row(fields)):
                return False
            self.decide(fields.hitl_id, fields.arguments, decision.kind.value, response, reviewer, decision.message)
            if rule_id is not None:
                self.record_hit(rule_id)
            return True

        if not self.transaction(write):
            return False
        self.committed()
        return True

    def create_pending(self, fields: RequestFields, *, workspace: str | None) -> bool:
        """Create the waiting request (with its session and run) in one transaction, as ``ReviewClient.submit``
        would: an open window shows it before this hook has even loaded the backend that waits on it.

        False when a request with this id exists already; ``RequestRejected`` as :meth:`settle`.
        """
        fields.check_limits()

        def write() -> bool | None:
            self._ensure_parents(fields, workspace)
            return self.create_request(_row(fields)) or None  # None: nothing new, but the parents are committed

        created = self.transaction(write) is True
        if created:
            self.committed()
        return created

    def _ensure_parents(self, fields: RequestFields, workspace: str | None) -> None:
        self.ensure_session(fields.session_id, fields.agent, workspace)
        self.ensure_invocation(fields.invocation_id, fields.session_id, fields.agent, fields.title)


def _row(fields: RequestFields) -> dict[str, Any]:
    """The request's columns as :meth:`LeanStore.create_request` takes them."""
    return {
        "hitl_id": fields.hitl_id,
        "hitl_type": fields.hitl_type,
        "session_id": fields.session_id,
        "invocation_id": fields.invocation_id,
        "data": fields.request_data(),
        "metadata": fields.request_metadata(),
        "tool_name": fields.tool_name,
        "tool_call_id": fields.tool_call_id,
        "expires_at": fields.expires_at,
        "agent": fields.agent,
    }
