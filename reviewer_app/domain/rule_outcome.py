"""What a persistent rule's verdict becomes on the record: the decision, its message, and rules read from rows.

Why: the runtime's gate, the hook's standard-library fast path, the hook's backend path and the adapters all
record an automatic decision the same way (a request decided by ``rule:<id>``); the wording and the decision
kind live here once. Plain Python, so the fast path can use it without the ORM.

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
from typing import Any

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLType
from reviewer_app.domain.rules import Rule, RuleError, Verdict
from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.domain.waivers import SessionRule

RULE_COLUMNS = ("id", "effect", "pattern", "scope", "expires_at", "note", "created_at")


def rule_from_row(row: Mapping[str, Any]) -> Rule | None:
    """A stored rule; a row this version cannot read (a newer pattern form) decides nothing and is left out."""
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
    """The reason the record and the agent are given for an automatic decision."""
    verb = {"allow": "allowed", "deny": "denied", "ask": "asked"}[verdict.effect]
    text = f"{verb} by rule {verdict.rule.id}: {verdict.rule.pattern}"
    if verdict.rule.note:
        text += f" ({verdict.rule.note})"
    return text


def verdict_decision(verdict: Verdict, arguments: Any) -> Decision:
    """The decision an allow or deny rule makes, naming the arguments it judged."""
    if verdict.effect == "ask":
        raise ValueError("an ask rule decides nothing: the call goes to a human")
    kind = DecisionKind.APPROVE if verdict.effect == "allow" else DecisionKind.REJECT
    return Decision(
        kind, message=verdict_message(verdict), args_sha256=args_digest(arguments), reviewer=verdict.decided_by
    )


def call_of_record(record: Mapping[str, Any]) -> ToolCall | None:
    """A stored request as the call a rule judges (None for a request that is not a tool call)."""
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
    label = f"session-rule:{rule_id}"
    message = f"waived by this session's rule: {rule.describe()}"
    return Decision(DecisionKind.APPROVE, message=message, args_sha256=args_digest(arguments), reviewer=label)
