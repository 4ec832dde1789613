"""What a persistent rule's verdict becomes on the record: the decision, its message, and rules read from rows.

Why: the runtime's gate, the hook's standard-library fast path, the hook's backend path and the adapters all
record an automatic decision the same way (a request decided by ``rule:<id>``); the wording and the decision
kind are :class:`reviewer_app.domain.settlement.Settlement`'s, which these helpers apply. Plain Python and cheap to
import (the rules engine loads when a row is read), so the fast path can use it without the ORM.

Public API:

- ``RULE_COLUMNS``: the ``policy_rules`` columns a rule is rebuilt from
- ``rule_from_row(row) -> Rule | None``: a stored row as a :class:`Rule` (None for a row this version cannot read)
- ``verdict_message(verdict) -> str``: "allowed by rule <id>: <pattern>" / "denied by rule …"
- ``verdict_decision(verdict, arguments) -> Decision``: approve for allow, reject for deny (ask decides nothing)
- ``call_of_record(record) -> ToolCall | None``: a stored request as the call a rule judges (for previews)
- ``waiver_decision(rule_id, rule, arguments) -> Decision``: the approval an approve-for-session waiver records
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from reviewer_app.domain.lean_settlement import RULE_COLUMNS
from reviewer_app.domain.settlement import Settlement

if TYPE_CHECKING:
    from reviewer_app.domain.decisions import Decision
    from reviewer_app.domain.rules import Rule, Verdict
    from reviewer_app.domain.toolcall import ToolCall
    from reviewer_app.domain.waivers import SessionRule

__all__ = ["RULE_COLUMNS", "call_of_record", "rule_from_row", "verdict_decision", "verdict_message", "waiver_decision"]


def rule_from_row(row: Mapping[str, Any]) -> Rule | None:
    """A stored rule; a row this version cannot read (a newer pattern form) decides nothing and is left out."""
    from reviewer_app.domain.rules import Rule, RuleError  # the engine, only once there is a rule to build

    try:
        return Rule(
            row["effect"],
            row["pattern"],
            row["scope"],
            row["expires_at"],
            row["note"] or "",
            row["id"],
            row["created_at"],
        )
    except (RuleError, TypeError, KeyError):
        return None


def verdict_message(verdict: Verdict) -> str:
    """The reason the record and the agent are given for an automatic decision (:class:`Settlement`'s words)."""
    return Settlement.by_rule(verdict).message


def verdict_decision(verdict: Verdict, arguments: Any) -> Decision:
    """The decision an allow or deny rule makes, naming the arguments it judged."""
    return Settlement.by_rule(verdict).decision(arguments)


def call_of_record(record: Mapping[str, Any]) -> ToolCall | None:
    """A stored request as the call a rule judges (None for a request that is not a tool call)."""
    from reviewer_app.domain.hitl import HITLType
    from reviewer_app.domain.toolcall import ToolCall

    tool_name = record.get("tool_name")
    if record.get("hitl_type") != HITLType.TOOL_APPROVAL.value or not isinstance(tool_name, str) or not tool_name:
        return None  # a question (ask_user) is answered by a person, never by a rule
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    assert isinstance(data, dict) and isinstance(metadata, dict)
    arguments = data.get("arguments")
    agent = data.get("agent") or metadata.get("agent")
    cwd = data.get("cwd")
    annotations = data.get("annotations")
    return ToolCall(
        tool_name,
        arguments if isinstance(arguments, dict) else {},
        agent=agent if isinstance(agent, str) else None,
        session_id=record.get("session_id") if isinstance(record.get("session_id"), str) else None,
        cwd=cwd if isinstance(cwd, str) else None,
        metadata={"annotations": annotations} if isinstance(annotations, dict) else {},
    )


def waiver_decision(rule_id: int, rule: SessionRule, arguments: Any) -> Decision:
    """The approval a session's waiver records for a call it covers, decided by ``session-rule:<id>``.

    One wording for the runtime's gate and for every outside call (``ReviewClient.submit``).
    """
    return Settlement.by_waiver(rule_id, rule).decision(arguments)
