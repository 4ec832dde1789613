"""aury-agent in Reviewer's inbox: a middleware that asks Reviewer before each tool call and obeys the decision.

::

    from reviewer_app.integrations.aury import reviewer_middleware

    agent = ReactAgent.create(llm=llm, tools=tools, middlewares=[reviewer_middleware(db="reviews.db")])
    async for event in agent.run("Tidy my notes"):
        ...

Why a middleware and not aury's own suspend path: ``Backends(hitl=SQLHITLBackend(...))`` stores aury's requests,
but aury (0.0.23) never reads an answer back when the run resumes (``agent.run(answer)`` does not run the tool),
and its ``AskUserTool``/``ConfirmTool`` fail before asking (``execute`` is called without the ``ctx=`` keyword
they expect). ``Middleware.on_tool_call`` runs before every tool and may skip it or change its arguments, which
carries every decision: approve and approve-for-session run the tool; edit runs it with the edited arguments;
reject, steer and expiry skip it and the model reads the reason as the tool's result; an answer is the result.
Calls to ``ask_user`` and ``confirm`` are answered by the middleware itself (a question, a confirmation), so the
broken ``execute`` is never reached.

Runs wait inside the process; aury keeps no tool-level checkpoint a reviewer's decision could resume after a
crash (a new run asks again, under the same request when the session, invocation and call ids repeat).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLType
from reviewer_app.integrations.core import Database, ExternalCall, LazyClient, Outcome, stable_id
from reviewer_app.integrations.versions import require_version

DISTRIBUTION = "aury-agent"
SUPPORTED = ("0.0.13", "0.0.24")
"""Releases whose ``Middleware.on_tool_call`` contract the middleware was tried with (lowest, first unknown)."""
QUESTION_TOOLS = frozenset({"ask_user"})
CONFIRM_TOOLS = frozenset({"confirm"})


def reviewer_middleware(
    *,
    db: Database,
    agent_name: str = "aury-agent",
    tools: Collection[str] | None = None,
    timeout: float | None = None,
) -> Any:
    """A middleware for ``ReactAgent.create(middlewares=[...])`` that puts each tool call before a reviewer.

    ``tools``: the tool names to review (default: every tool). ``db``: an open backend (borrowed) or a path or
    URL (opened on first use, in the agent's loop). ``timeout``: seconds to wait for a decision (default: none).
    """
    require_version(DISTRIBUTION, *SUPPORTED)
    from aury.agents.middleware.base import BaseMiddleware

    class ReviewerMiddleware(BaseMiddleware):  # type: ignore[misc]  # aury ships no type information
        """Asks Reviewer in ``on_tool_call``; see the module docstring for what each decision does."""

        def __init__(self) -> None:
            super().__init__()
            self.client = LazyClient(db, agent=agent_name).get

        async def on_tool_call(self, tool: Any, params: dict[str, Any]) -> Any:
            if tools is not None and tool.name not in tools:
                return _hook("proceed")
            outcome = await self.client().review(_call_of(tool, params, agent_name), timeout=timeout)
            return _hook_for(tool.name, outcome)

    return ReviewerMiddleware()


def _call_of(tool: Any, params: dict[str, Any], agent_name: str) -> ExternalCall:
    """The tool call as Reviewer records it, keyed by aury's session, invocation and call ids."""
    from aury.agents.core.context import get_current_ctx_or_none

    ctx = get_current_ctx_or_none()
    session_id = str(ctx.session_id) if ctx is not None else "aury-no-session"
    invocation_id = str(ctx.invocation_id) if ctx is not None else "aury-no-invocation"
    call_id = str(getattr(ctx, "tool_call_id", None) or "") if ctx is not None else ""
    hitl_id = stable_id("aury", session_id, invocation_id, call_id or f"{tool.name}:{params!r}")
    name = str(tool.name)
    ids: dict[str, Any] = {
        "hitl_id": hitl_id,
        "agent": agent_name,
        "session_id": session_id,
        "invocation_id": invocation_id,
    }
    if name in QUESTION_TOOLS:
        question = {"question": str(params.get("question", "")), "options": list(params.get("options") or [])}
        hitl_type = HITLType.ASK_USER.value
        return ExternalCall(**ids, tool_name=name, arguments=question, hitl_type=hitl_type,
                            tool_call_id=call_id or None, description=params.get("context"))  # fmt: skip
    allowed = (DecisionKind.APPROVE, DecisionKind.REJECT, DecisionKind.STEER) if name in CONFIRM_TOOLS else None
    return ExternalCall(
        **ids,
        tool_name=name,
        arguments=dict(params),
        tool_call_id=call_id or None,
        description=getattr(tool, "description", None),
        schema=getattr(tool, "parameters", None),
        allowed_decisions=allowed,
    )


def _hook_for(tool_name: str, outcome: Outcome) -> Any:
    """The ``HookResult`` that makes aury do what the reviewer decided."""
    if tool_name in QUESTION_TOOLS:
        return _hook("skip", outcome.message or outcome.text_for_model())
    if tool_name in CONFIRM_TOOLS:
        confirmed = "The user confirmed the action."
        return _hook("skip", confirmed if outcome.runs_tool else outcome.text_for_model())
    if outcome.kind is DecisionKind.EDIT:
        return _hook("retry", data=dict(outcome.arguments))
    if outcome.runs_tool:
        return _hook("proceed")
    return _hook("skip", outcome.text_for_model())


def _hook(action: str, message: str | None = None, *, data: dict[str, Any] | None = None) -> Any:
    from aury.agents.middleware.types import HookResult

    if action == "proceed":
        return HookResult.proceed()
    if action == "retry":  # aury's "run it with these parameters instead"
        return HookResult.retry(modified_data=data)
    return HookResult.skip(message=message)
