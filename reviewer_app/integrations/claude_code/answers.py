"""A decided request as a hook's answer, and the words of its fallback: the one mapping the hook's full path
(:func:`.hook.answer_for`, :func:`.hook.fallback`) and its lean waiter (:mod:`.lean_wait`) both answer with.

Verdicts are the plain strings ``allow``, ``deny`` and ``ask`` (``events.Verdict``'s values), so the lean waiter
imports no enum of the host's events.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLStatus

if TYPE_CHECKING:
    from reviewer_app.domain.outcome import Outcome

ALLOW, DENY, ASK = "allow", "deny", "ask"


def fallback_parts(verdict: str, reason: str) -> tuple[str, str]:
    """The answer when Reviewer cannot decide: the host's own prompt, or a deny that says why."""
    if verdict == ALLOW:  # never configurable, but never let a typo fail open either
        verdict = ASK
    return verdict, f"Reviewer could not decide: {reason}"


def expiry_response(on_timeout: str, timeout: float) -> dict[str, Any]:
    """The stored response of a waiting hook's own expiry at its budget (``--on-timeout``: ``deny`` records a
    rejection, anything else an expiry handed back to the agent's prompt); both waiters record this one."""
    kind = "reject" if on_timeout == DENY else "expire"
    what = "denied" if kind == "reject" else "handed back to the agent's own permission prompt"
    return {
        "decision": kind,
        "message": f"no decision within {timeout:g} s: {what}",
        "reviewer": "system:expiry",
        "expired": True,
    }


def answer_parts(outcome: Outcome, *, takes_edits: bool) -> tuple[str, str, dict[str, Any] | None]:
    """A decided request as the host's answer: verdict, reason, edited input. ``takes_edits``: the host's event
    runs an edited call (else an edit is a deny)."""
    who = f" by {outcome.reviewer}" if outcome.reviewer else ""
    kind = outcome.kind
    if kind in (DecisionKind.APPROVE, DecisionKind.APPROVE_FOR_SESSION):
        automatic = (outcome.reviewer or "").startswith(("rule:", "session-rule:"))  # settled: the fast path's words
        reason = outcome.message if automatic and outcome.message else ""
        scope = " for this session" if kind is DecisionKind.APPROVE_FOR_SESSION else ""
        return ALLOW, reason or f"approved in Reviewer{who}{scope}", None
    if kind is DecisionKind.EDIT:
        if not takes_edits or not isinstance(outcome.arguments, dict):
            return DENY, "the reviewer edited the call, which this agent cannot run; not run", None
        return ALLOW, f"approved in Reviewer{who} with edited input", outcome.arguments
    if outcome.record.get("status") == HITLStatus.EXPIRED.value and kind is DecisionKind.EXPIRE:
        return ASK, outcome.text_for_model(), None
    if kind is DecisionKind.CANCEL:
        return DENY, "the request was cancelled in Reviewer; the call was not run", None
    text = outcome.text_for_model() or "denied in Reviewer"
    if kind is DecisionKind.RESPOND:
        text = f"the reviewer answered instead of approving: {outcome.message or ''}"
    return DENY, text, None


__all__ = ["ALLOW", "ASK", "DENY", "answer_parts", "fallback_parts"]
