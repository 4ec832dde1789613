"""react-agent-harness agents under review: Reviewer answers the harness's approval prompt.

::

    from reviewer_app.integrations.react_agent_harness import install_approver

    install_approver(db="reviews.db")       # before the run; the agent lists its gated tools in hitl_tools
    result = await runtime.run_agent("notes", "Tidy my notes")
    ...                                       # after a crash: runtime.resume(key) finds the decision

The harness has no approval hook: every gated call goes through the module function
``harness.hitl.request_approval``, which reads the terminal. :func:`install_approver` replaces that function
(checked against the releases below, restored by the callable it returns) with one that files a request and
waits for its decision. The harness writes its checkpoint before it asks, and the request is keyed by the
checkpoint's resume key and the action's approval id, so after a crash ``runtime.resume(key)`` asks again and
gets the decision already made: the tool runs once.

What each decision becomes in the harness's ``ApprovalResponse`` (which has no reason and no arguments field):
approve and approve-for-session → approved (Reviewer's own waiver settles the next identical call; the harness's
allow-list, which covers every command with the same first word, is not used); steer → a correction, which skips
the call and tells the model ``Human guidance: <text>``; reject with a reason → the same correction path carrying
``rejected by reviewer: <reason>`` (the harness drops the rest of that step's calls and the model plans again);
reject without a reason → not approved (the model reads the harness's "Tool rejected by human"). Edit rewrites
the request's ``args`` in place: the harness passes the action's own dictionary, checkpoints it before running,
and runs the tool with what the reviewer approved.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.hitl import RequestQuery
from reviewer_app.integrations.core import (
    TOOL_DECISIONS,
    Database,
    ExternalCall,
    LazyClient,
    Outcome,
    open_client,
    stable_id,
)
from reviewer_app.integrations.versions import require_version

DISTRIBUTION = "react-agent-harness"
SUPPORTED = ("0.0.2", "0.15")
"""Releases whose ``request_approval(req, guard)`` and ``ApprovalResponse`` were tried (lowest, first unknown)."""
ALLOWED = TOOL_DECISIONS
"""A tool call has no "answer instead" in the harness."""


def install_approver(
    *, db: Database, agent_name: str = "react-agent-harness", timeout: float | None = None
) -> Callable[[], None]:
    """Answer the harness's approval prompts from Reviewer in this process; returns the undo."""
    require_version(DISTRIBUTION, *SUPPORTED)
    from harness import hitl

    terminal_prompt = hitl.request_approval
    client = LazyClient(db, agent=agent_name).get

    async def request_approval(req: Any, guard: Any) -> Any:
        guard.suspend()  # the budget clock does not run while a human decides, as with the terminal prompt
        try:
            outcome = await client().review(_call_of(req, agent_name), timeout=timeout)
        finally:
            guard.resume()
        return _response(hitl, req, outcome)

    hitl.request_approval = request_approval

    def uninstall() -> None:
        hitl.request_approval = terminal_prompt

    return uninstall


def _call_of(req: Any, agent_name: str) -> ExternalCall:
    resume_key = str(req.run_id or req.agent_id)
    return ExternalCall(
        hitl_id=stable_id("react-agent-harness", resume_key, str(req.approval_id)),
        agent=agent_name,
        session_id=f"rah-{resume_key}",
        invocation_id=stable_id("react-agent-harness", resume_key, str(req.agent_id)),
        tool_name=str(req.tool),
        arguments=dict(req.args),
        tool_call_id=str(req.approval_id),
        allowed_decisions=ALLOWED,
        metadata={"resume_key": resume_key, "step": req.step},
    )


def _response(hitl: Any, req: Any, outcome: Outcome) -> Any:
    respond = hitl.ApprovalResponse
    if outcome.kind is DecisionKind.EDIT:
        req.args.clear()  # the action's own dict: the harness runs (and checkpoints) what was approved
        req.args.update(outcome.arguments)
        return respond(approval_id=req.approval_id, approved=True)
    if outcome.runs_tool:
        return respond(approval_id=req.approval_id, approved=True)
    if outcome.kind is DecisionKind.STEER and outcome.message:  # the harness says "Human guidance: <text>"
        return respond(approval_id=req.approval_id, approved=True, correction=outcome.message)
    if outcome.message:  # a reason has no field of its own: it travels as guidance, and the call is skipped
        return respond(approval_id=req.approval_id, approved=True, correction=outcome.text_for_model())
    return respond(approval_id=req.approval_id, approved=False)


async def last_resume_key(db: Database, *, agent_name: str = "react-agent-harness") -> str | None:
    """The harness resume key of this agent's newest reviewed call (for ``runtime.resume(key)`` after a crash)."""
    query = RequestQuery(statuses=tuple(status.value for status in HITLStatus))
    async with open_client(db, agent=agent_name) as client:
        records = await client.backend.list_records(query)
    keys = [
        str(record["metadata"]["resume_key"])
        for record in records
        if (record.get("metadata") or {}).get("agent") == agent_name and record["metadata"].get("resume_key")
    ]
    return keys[-1] if keys else None
