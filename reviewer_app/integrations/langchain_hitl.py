"""LangChain's human-in-the-loop decisions and Reviewer's, both ways: one mapping for every LangChain host.

Why: ``HumanInTheLoopMiddleware`` (LangGraph agents run by :mod:`.langgraph`, and the langstage task board run by
:mod:`.langstage`) takes ``approve``/``edit``/``reject``/``respond`` decisions per action; Reviewer has more kinds
(approve-for-session, steer) that must land on one of those. Both adapters use these two functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.integrations.core import Outcome

LANGCHAIN_TO_REVIEWER: Mapping[str, tuple[DecisionKind, ...]] = {
    "approve": (DecisionKind.APPROVE, DecisionKind.APPROVE_FOR_SESSION),
    "edit": (DecisionKind.EDIT,),
    "reject": (DecisionKind.REJECT, DecisionKind.STEER),
    "respond": (DecisionKind.RESPOND,),
}
"""What a reviewer may do for each decision LangChain allows: steering is a reject that carries guidance."""


def reviewer_kinds(allowed_here: Iterable[str]) -> tuple[DecisionKind, ...]:
    """What a reviewer may decide on an action whose LangChain ``allowed_decisions`` are ``allowed_here``."""
    return tuple(kind for name in allowed_here for kind in LANGCHAIN_TO_REVIEWER.get(str(name), ()))


def langchain_decision(outcome: Outcome, name: str, allowed_here: Sequence[str]) -> dict[str, Any]:
    """Reviewer's decision in HumanInTheLoopMiddleware's words.

    A request cancelled or expired in Reviewer is a reject; where the tool allows no reject, an answer saying
    the call was not run; where it allows neither, the graph cannot be told, and this raises.
    """
    kind = outcome.kind
    if kind in (DecisionKind.CANCEL, DecisionKind.EXPIRE) and "reject" not in allowed_here:
        if "respond" not in allowed_here:
            raise RuntimeError(
                f"request {outcome.hitl_id} is {outcome.record.get('status')}, but LangChain lets {name} only be "
                f"{', '.join(allowed_here)}: the graph stays paused"
            )
        return {"type": "respond", "message": outcome.text_for_model()}
    if kind in (DecisionKind.APPROVE, DecisionKind.APPROVE_FOR_SESSION):
        return {"type": "approve"}
    if kind is DecisionKind.EDIT:
        return {"type": "edit", "edited_action": {"name": name, "args": outcome.arguments}}
    if kind is DecisionKind.RESPOND:
        return {"type": "respond", "message": outcome.message or ""}
    if kind is DecisionKind.REJECT and not outcome.message:
        return {"type": "reject"}
    if kind is DecisionKind.REJECT:
        return {"type": "reject", "message": outcome.message}
    return {"type": "reject", "message": outcome.text_for_model()}  # steer, cancel, expire
