"""Why a request reached a person: which rule, risk or host asked, in plain words.

Why: an operator who knows why a call was stopped ("an ask rule", "a prefix rule would have allowed it but the
call is high risk") judges it faster and sees when a rule is missing. The reasons are computed when they are
shown, from the rules in force then, the request's own metadata and the call's risk: a request row does not
store them, because a hook's fast path, the MCP proxy, the adapters and the runtime all create requests and not
all of them evaluate rules first. ``why_asked`` says which reasons are known from the record and which are
computed now.

Public API:

- ``why_asked(record, *, rules, expired_rules=(), session_rules=(), risk, now) -> tuple[str, ...]``
- ``PreviewInputs``: what the database holds for one request's preview (read by ``persistence.preview_inputs``)
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reviewer_app.domain.hitl import HITLRecord, HITLType
from reviewer_app.domain.risk import Risk
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.domain.rules import Rule, evaluate, overridden_by_risk
from reviewer_app.domain.shell_scopes import why_not_waivable
from reviewer_app.domain.toolcall import command_of, is_shell_tool
from reviewer_app.domain.waivers import SessionRule


@dataclass(frozen=True, slots=True)
class PreviewInputs:
    """The record, the rules in force and expired, the session's waivers and the workspace, read in one go."""

    record: HITLRecord
    rules: tuple[Rule, ...] = ()
    expired_rules: tuple[Rule, ...] = ()
    session_rules: tuple[SessionRule, ...] = ()
    workspace: str | None = None


_HOST_EVENTS = {
    "PermissionRequest": (
        "the host asked: Claude Code's own permission check wanted a person for this call (PermissionRequest)"
    ),
    "PreToolUse": "the host sent the call before running it (Claude Code's PreToolUse hook) and no rule settled it",
}


def _stamp(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime(seconds))


def _rule_text(rule: Rule) -> str:
    """``allow rule R, Bash(npm test), `` : the pattern between commas, since it brings its own brackets."""
    scope = "" if rule.scope == "global" else f" in scope {rule.scope}"
    return f"{rule.effect} rule {rule.id}, {rule.pattern}{scope},"


def _source(record: Mapping[str, Any]) -> list[str]:
    """What the record itself says about who sent the request."""
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
    assert isinstance(data, dict) and isinstance(metadata, dict)
    reasons: list[str] = []
    event = data.get("hook_event")
    if isinstance(event, str):
        reasons.append(_HOST_EVENTS.get(event, f"the host sent the call from its {event} hook"))
        mode = data.get("permission_mode")
        if isinstance(mode, str) and mode != "default":
            reasons.append(f"the host's permission mode was {mode}")
    elif metadata.get("framework"):
        reasons.append(f"the agent framework {metadata['framework']} interrupted for a human decision")
    elif data.get("annotations") is not None or str(record.get("tool_name") or "").startswith("mcp__"):
        reasons.append("the MCP proxy gates every tool call of the server it wraps")
    elif not metadata.get("external"):
        reasons.append("Reviewer's runtime gates this tool: the agent's policy asks before it runs")
    return reasons


def _risk_reasons(risk: Risk | None) -> list[str]:
    if risk is None or risk.level == "low":
        return []
    return [f"risk {risk.level}, the highest of its signals: " + "; ".join(risk.reasons)]


def _expired(call: Any, expired_rules: Iterable[Rule], created_at: float) -> list[str]:
    """Allow rules that would have settled the call but had expired when it was asked (expiry re-ask)."""
    reasons: list[str] = []
    for rule in expired_rules:
        if rule.effect != "allow" or rule.expires_at is None or rule.expires_at > max(created_at, 0):
            continue
        if evaluate([rule], call, rule.expires_at - 1) is not None:
            reasons.append(
                f"{_rule_text(rule)} would have allowed it but expired at {_stamp(rule.expires_at)}: asked again"
            )
    return reasons


def _session(call: Any, session_rules: Sequence[SessionRule]) -> list[str]:
    """Approve-for-session waivers of this tool that do not cover this call, and why."""
    same_tool = [rule for rule in session_rules if rule.tool_name == call.tool_name]
    if not same_tool or any(rule.matches(call.tool_name, call.arguments, cwd=call.cwd) for rule in same_tool):
        return []
    granted = "; ".join(rule.describe() for rule in same_tool[:3])
    reasons = [f"this session's approval does not cover this call: it covers {granted}"]
    command = command_of(call.tool_name, call.arguments) if is_shell_tool(call.tool_name) else None
    if command is not None:
        reasons += [f"no waiver can cover it: {text}" for text in why_not_waivable(command)]
    return reasons


def why_asked(
    record: Mapping[str, Any],
    *,
    rules: Sequence[Rule],
    expired_rules: Sequence[Rule] = (),
    session_rules: Sequence[SessionRule] = (),
    risk: Risk | None,
    now: float,
) -> tuple[str, ...]:
    """The reasons ``record`` went to a person, most telling first (never empty).

    ``rules`` are the persistent rules in force at ``now``; ``expired_rules`` those that have expired;
    ``session_rules`` the approve-for-session waivers of the request's session; ``risk`` the call's risk.
    """
    if record.get("hitl_type") == HITLType.ASK_USER.value:
        return ("the agent asked a question (ask_user): only a person answers it, never a rule",)
    call = call_of_record(record)
    if call is None:
        return (f"a {record.get('hitl_type') or 'request'} of a kind no rule settles",)
    reasons: list[str] = []
    verdict = evaluate(rules, call, now, risk=risk)
    if verdict is not None and verdict.effect == "ask":
        reasons.append(f"{_rule_text(verdict.rule)} sends it to a person")
    elif verdict is not None:
        verb = "allows" if verdict.effect == "allow" else "denies"
        reasons.append(f"{_rule_text(verdict.rule)} {verb} it now: the rule did not exist or apply when it was asked")
    else:
        blocked = overridden_by_risk(rules, call, now, risk=risk)
        for rule in blocked:
            reasons.append(
                f"{_rule_text(rule)} would have allowed it, but the call is high risk: "
                "only an exact-match rule settles a high-risk call"
            )
        if not blocked:
            reasons.append("no rule matched")
    reasons += _expired(call, expired_rules, float(record.get("created_at") or now))
    reasons += _risk_reasons(risk)
    reasons += _session(call, session_rules)
    reasons += _source(record)
    return tuple(dict.fromkeys(reasons))
