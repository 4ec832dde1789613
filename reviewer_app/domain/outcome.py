"""How a decided request reads for whoever acts on it: the decision, the arguments that run, the message, who.

One reading for every integration (:class:`reviewer_app.integrations.core.ReviewClient` hands it out) and for the
hook's lean waiter (:mod:`reviewer_app.integrations.claude_code.lean_wait`), which waits without the backend.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.hitl import HITLRecord, HITLStatus, shown_arguments

__all__ = ["Outcome", "settled_block_patch"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a call was settled, read back from the committed record."""

    record: HITLRecord
    kind: DecisionKind
    arguments: Any
    """What runs if :attr:`runs_tool`: the shown arguments, or the reviewer's edit."""
    message: str | None
    reviewer: str | None

    @property
    def runs_tool(self) -> bool:
        return self.kind.runs_tool

    @property
    def hitl_id(self) -> str:
        return str(self.record["hitl_id"])

    def text_for_model(self) -> str:
        """What the agent's model should read when the call does not run (or the answer, for a question)."""
        if self.kind is DecisionKind.STEER:
            return f"Reviewer guidance: {self.message or ''}".strip()
        if self.kind is DecisionKind.RESPOND:
            return self.message or ""
        if self.kind is DecisionKind.REJECT:
            if (self.reviewer or "").startswith("rule:") and self.message:  # "denied by rule <id>: <pattern>"
                return self.message
            return f"rejected by reviewer: {self.message}" if self.message else "rejected by reviewer"
        if self.kind is DecisionKind.EXPIRE or self.record.get("status") == HITLStatus.EXPIRED.value:
            return "no reviewer decided in time; the call was not run"
        if self.kind is DecisionKind.CANCEL:
            return "the request was cancelled; the call was not run"
        return ""

    @classmethod
    def from_record(cls, record: HITLRecord) -> Outcome:
        status = record.get("status")
        response = record.get("user_response")
        if status == HITLStatus.CANCELLED.value or (response is None and status != HITLStatus.PENDING.value):
            kind = DecisionKind.EXPIRE if status == HITLStatus.EXPIRED.value else DecisionKind.CANCEL
            return cls(record, kind, None, None, None)
        decision = Decision.from_user_response(response)
        kind = decision.kind
        if status == HITLStatus.EXPIRED.value and kind.runs_tool is False:
            kind = DecisionKind.REJECT if kind is DecisionKind.REJECT else kind
        shown = shown_arguments(record)
        arguments = decision.edited_args if kind is DecisionKind.EDIT and decision.edited_args is not None else shown
        return cls(record, kind, arguments, decision.message, decision.reviewer)


def settled_block_patch(outcome: Outcome | None, resolved_ms: int) -> dict[str, Any]:
    """The run timeline's ``hitl`` block patched with how its request was settled (None: the waiting hook's own
    expiry): one shape for both hook waiters, whose rows a test compares."""
    patch: dict[str, Any] = {"resolved_ms": resolved_ms}
    if outcome is None:
        patch.update(status="expired", decision="expire")
    else:
        patch.update(
            status=str(outcome.record.get("status")),
            decision=outcome.kind.value,
            reviewer=outcome.reviewer,
            message=outcome.message,
        )
    return patch
