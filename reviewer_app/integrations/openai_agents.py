"""OpenAI Agents SDK agents in Reviewer's inbox: each tool approval the run stops on is a request.

::

    from reviewer_app.integrations.openai_agents import resume_reviewed, run_reviewed

    result = await run_reviewed(agent, "Tidy my folder", db=DB, session_id="tidy-1")
    # … after a crash, in a new process:
    result = await resume_reviewed(agent, db=DB, session_id="tidy-1")

Tools declared with ``needs_approval`` stop the run with ``result.interruptions`` (``ToolApprovalItem``: tool name,
JSON arguments, call id). Each becomes a request; the run's ``RunState`` (``to_json``) is stored with them, in the
requests' ``tool_state``, so :func:`resume_reviewed` can continue after a restart without asking again. Decisions:
approve → ``state.approve(item)``, approve for the session → ``always_approve=True``, reject and steer →
``state.reject(item, rejection_message=…)``. The SDK cannot run a call with other arguments, so these requests do
not allow edit (nor answer). The SDK is imported when a run starts, not with this module.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.runs import RunState
from reviewer_app.integrations.core import (
    Database,
    ExternalCall,
    Outcome,
    ReviewClient,
    Said,
    ToolCalled,
    ToolReturned,
    TranscriptEntry,
    block_id_for,
    new_session_id,
    open_client,
    saved_state,
    stable_id,
)

HOST = "openai-agents"
ALLOWED = (DecisionKind.APPROVE, DecisionKind.APPROVE_FOR_SESSION, DecisionKind.REJECT, DecisionKind.STEER)
"""What a reviewer may decide: the SDK approves or rejects a call as the model made it, nothing else."""


async def run_reviewed(
    agent: Any,
    input: Any,
    *,
    db: Database,
    session_id: str | None = None,
    timeout: float | None = None,
    **run_kwargs: Any,
) -> Any:
    """``Runner.run(agent, input, **run_kwargs)`` with every approval decided in Reviewer; returns the final result.

    ``session_id`` names the Reviewer session (pass your own to :func:`resume_reviewed` after a restart; default:
    a new one). ``timeout`` bounds each wait (:class:`TimeoutError`; the requests and saved state stay).
    """
    from agents import Runner

    session_id = session_id or new_session_id(HOST)
    async with open_client(db, agent=_agent_name(agent)) as client:
        invocation_id, round_ = await client.start_paused_run(session_id, HOST, title=_title(input))
        try:
            result = await Runner.run(agent, input, **run_kwargs)
        except Exception as exc:
            await client.finish_run(session_id, invocation_id, RunState.FAILED, error=str(exc) or type(exc).__name__)
            raise
        return await _review_until_done(client, agent, result, session_id, invocation_id, round_, timeout, run_kwargs)


async def resume_reviewed(
    agent: Any, *, db: Database, session_id: str, timeout: float | None = None, **run_kwargs: Any
) -> Any:
    """Continue the session's paused run from its saved ``RunState``: decided requests apply at once.

    Raises :class:`LookupError` when the session has no paused run (it finished, or never stopped).
    """
    from agents import RunState

    async with open_client(db, agent=_agent_name(agent)) as client:
        batch = await client.paused_batch(session_id, HOST, dict, "OpenAI Agents")
        state = await RunState.from_json(agent, batch.state)
        return await _review_state(
            client, agent, state, session_id, batch.invocation_id, batch.round, timeout, run_kwargs, []
        )


async def _review_until_done(
    client: ReviewClient,
    agent: Any,
    result: Any,
    session_id: str,
    invocation_id: str,
    round_: int,
    timeout: float | None,
    run_kwargs: dict[str, Any],
) -> Any:
    await client.narrate_transcript(session_id, invocation_id, _transcript(result.new_items, set()))
    if not result.interruptions:
        await client.finish_run(session_id, invocation_id)
        return result
    return await _review_state(
        client, agent, result.to_state(), session_id, invocation_id, round_, timeout, run_kwargs, result.new_items
    )


async def _review_state(
    client: ReviewClient,
    agent: Any,
    state: Any,
    session_id: str,
    invocation_id: str,
    round_: int,
    timeout: float | None,
    run_kwargs: dict[str, Any],
    items: Sequence[Any],
) -> Any:
    """Ask about the state's interruptions, apply the decisions, run on; repeat until the run ends."""
    from agents import Runner

    not_run: set[str] = set()
    while True:
        interruptions = state.get_interruptions()
        saved = state.to_json()
        calls = [
            _call(item, index, agent, session_id, invocation_id, round_, saved)
            for index, item in enumerate(interruptions)
        ]
        outcomes = await client.review_batch(calls, timeout=timeout)
        for item, outcome in zip(interruptions, outcomes, strict=True):
            if not _apply(state, item, outcome):
                not_run.add(str(item.call_id))
        try:
            result = await Runner.run(agent, state, **run_kwargs)
        except Exception as exc:
            await client.finish_run(session_id, invocation_id, RunState.FAILED, error=str(exc) or type(exc).__name__)
            raise
        await client.narrate_transcript(session_id, invocation_id, _transcript([*items, *result.new_items], not_run))
        if not result.interruptions:
            await client.finish_run(session_id, invocation_id)
            return result
        state, round_, items = result.to_state(), round_ + 1, []


def _apply(state: Any, item: Any, outcome: Outcome) -> bool:
    """Write one decision into the run state; True when the call will run."""
    if outcome.kind is DecisionKind.APPROVE:
        state.approve(item)
        return True
    if outcome.kind is DecisionKind.APPROVE_FOR_SESSION:
        state.approve(item, always_approve=True)
        return True
    if outcome.kind is DecisionKind.REJECT and not outcome.message:
        state.reject(item)  # the SDK's own "not approved" message
        return False
    if outcome.kind is DecisionKind.REJECT:
        state.reject(item, rejection_message=f"rejected by reviewer: {outcome.message}")
        return False
    text = outcome.text_for_model() or f"{outcome.kind.value} is not something this SDK can do; the call was not run"
    state.reject(item, rejection_message=text)  # steer, cancel, expire (edit and answer are not offered)
    return False


def _call(
    item: Any, index: int, agent: Any, session_id: str, invocation_id: str, round_: int, saved: dict[str, Any]
) -> ExternalCall:
    call_id = str(item.call_id or index)
    name = str(item.name or "tool")
    return ExternalCall(
        hitl_id=stable_id(HOST, session_id, str(round_), call_id),
        agent=_agent_name(agent),
        session_id=session_id,
        invocation_id=invocation_id,
        tool_name=name,
        arguments=_arguments(item.arguments),
        tool_call_id=call_id,
        schema=_tool_schema(agent, name),
        allowed_decisions=ALLOWED,
        block_id=block_id_for(invocation_id, call_id),
        tool_state=saved_state(HOST, round_, index, saved),
        metadata={"framework": HOST},
    )


def _arguments(raw: str | None) -> Any:
    """The call's JSON arguments as an object; anything else is shown as it came."""
    if raw is None:
        return {}
    try:
        parsed = json.loads(raw)
    except ValueError:
        return {"input": raw}
    return parsed if isinstance(parsed, dict) else {"input": parsed}


def _tool_schema(agent: Any, name: str) -> dict[str, Any] | None:
    for tool in getattr(agent, "tools", None) or ():
        schema = getattr(tool, "params_json_schema", None)
        if getattr(tool, "name", None) == name and isinstance(schema, dict):
            return schema
    return None


def _transcript(items: Iterable[Any], not_run: set[str]) -> list[TranscriptEntry]:
    from agents import ItemHelpers

    entries: list[TranscriptEntry] = []
    for position, item in enumerate(items):
        kind = getattr(item, "type", None)
        raw: Any = getattr(item, "raw_item", None)
        if kind == "message_output_item":
            key = getattr(raw, "id", None) or f"message-{position}"
            entries.append(Said(f"text:{key}", ItemHelpers.text_message_output(item)))
        elif kind == "tool_call_item" and getattr(raw, "call_id", None):
            name = str(getattr(raw, "name", "tool"))
            entries.append(
                ToolCalled(str(getattr(raw, "call_id", "")), name, _arguments(getattr(raw, "arguments", None)))
            )
        elif kind == "tool_call_output_item":
            output_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
            if output_id:
                entries.append(
                    ToolReturned(str(output_id), str(getattr(item, "output", "")), str(output_id) not in not_run)
                )
    return entries


def _title(input: Any) -> str | None:
    if isinstance(input, str):
        return input
    for message in input if isinstance(input, list) else ():
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return None


def _agent_name(agent: Any) -> str:
    return str(getattr(agent, "name", None) or HOST)


__all__ = ["ALLOWED", "resume_reviewed", "run_reviewed"]
