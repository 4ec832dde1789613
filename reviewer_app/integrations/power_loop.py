"""power-loop agents under review: a ``TOOL_BEFORE`` gate, or a durable pause settled from another process.

The gate (every decision; the loop's process waits)::

    from reviewer_app.integrations.power_loop import review_gate

    loop = StatefulAgentLoop(llm=llm, dsn="agent.db", tool_registry=tools)
    review_gate(loop, db="reviews.db")                    # before each tool call: ask Reviewer, obey
    result = await loop.send("Tidy my notes", session_id=sid)

The durable pause (the process may exit or die while a reviewer thinks)::

    pause_for_review(loop, db="reviews.db")             # a round with tool calls files requests and stops
    await loop.send("Tidy my notes", session_id=sid)      # returns at once; the calls stay pending in power-loop
    ...                                                   # later, in any process:
    await settle_and_resume(loop, sid, db="reviews.db")   # approve → resume(); reject/steer → abort_pending(reason)

What power-loop cannot express on the pause path: ``resume()`` replays the stored arguments (so no edit: those
requests do not offer it) and settles a pending round as a whole (``resume()`` runs every call,
``abort_pending()`` aborts every call), so a round whose calls were decided differently raises
:class:`MixedDecisions`; use the gate where that matters. On the gate, edit changes the arguments
(``ctx.tool_args``), reject/steer/expiry skip the call with the reason as its result.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection, Mapping
from typing import Any

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.integrations.core import Database, ExternalCall, LazyClient, Outcome, stable_id
from reviewer_app.integrations.versions import require_version

DISTRIBUTION = "power-loop"
SUPPORTED = ("8.0.0", "9")
"""Releases whose hook points, ``get_pending``, ``resume`` and ``abort_pending`` were tried (lowest, first unknown).
0.2.0 has the same hook points but a synchronous ``get_pending``/``abort_pending`` and no named hooks."""
PAUSE_DECISIONS = (DecisionKind.APPROVE, DecisionKind.APPROVE_FOR_SESSION, DecisionKind.REJECT, DecisionKind.STEER)
"""What the pause path can carry: ``resume()`` replays the stored arguments, so edit is not offered."""


class MixedDecisions(RuntimeError):
    """A paused round whose calls were decided differently: power-loop resumes or aborts a round as a whole."""


def review_gate(
    loop: Any,
    *,
    db: Database,
    agent_name: str = "power-loop",
    tools: Collection[str] | None = None,
    timeout: float | None = None,
) -> None:
    """Register a ``TOOL_BEFORE`` hook on ``loop`` that waits for a reviewer's decision on each tool call.

    ``tools``: the tool names to review (default: all). Every decision kind works here.
    """
    require_version(DISTRIBUTION, *SUPPORTED)
    from power_loop.contracts.hooks import HookDirective, HookPoint

    client = LazyClient(db, agent=agent_name)

    async def gate(ctx: Any) -> Any:
        if tools is not None and ctx.tool_name not in tools:
            return None
        call = _call_of(_session_id(), ctx.tool_call, ctx.tool_name, ctx.tool_args, agent_name)
        outcome = await client.get().review(call, timeout=timeout)
        if outcome.kind is DecisionKind.EDIT:
            ctx.tool_args = dict(outcome.arguments)
            return None
        if outcome.runs_tool:
            return None
        ctx.output = outcome.text_for_model()
        return HookDirective.SKIP

    loop.hooks.register(HookPoint.TOOL_BEFORE, gate, name="reviewer.gate", replace=True)


def pause_for_review(
    loop: Any, *, db: Database, agent_name: str = "power-loop", tools: Collection[str] | None = None
) -> None:
    """Register a ``ROUND_DECIDE`` hook that files a request for each tool call of a round and ends the send.

    The round's calls stay pending in power-loop's own store; :func:`settle_and_resume` finishes them once
    decided, in this process or another. A round whose calls are all settled already (rules, session waivers)
    runs at once.
    """
    require_version(DISTRIBUTION, *SUPPORTED)
    from power_loop.contracts.hooks import HookDirective, HookPoint

    client = LazyClient(db, agent=agent_name)

    async def decide(ctx: Any) -> Any:
        session_id = _session_id()
        calls = [_pause_call(session_id, call, agent_name) for call in ctx.tool_calls]
        if tools is not None and all(call.tool_name not in tools for call in calls):
            return None
        outcomes = [await client.get().submit(call) for call in calls]
        if all(_runs_as_stored(record) for record in outcomes):
            return None  # nothing for a human to decide: run the round now
        return HookDirective.BREAK

    loop.hooks.register(HookPoint.ROUND_DECIDE, decide, name="reviewer.pause", replace=True)


async def settle_and_resume(
    loop: Any,
    session_id: str,
    *,
    db: Database,
    agent_name: str = "power-loop",
    wait: bool = False,
    timeout: float | None = None,
) -> Any:
    """Finish a paused round by its decisions: all approved → ``loop.resume``; none approved →
    ``loop.abort_pending`` with the reviewers' reasons, then ``loop.resume`` so the model reads them.

    Returns power-loop's result, or None when some call is still undecided (``wait=True`` waits instead, up to
    ``timeout`` seconds) or nothing is pending. Raises :class:`MixedDecisions` for a round decided both ways.
    """
    require_version(DISTRIBUTION, *SUPPORTED)
    pending = await loop.get_pending(session_id)
    calls = [call for call in (pending or {}).get("tool_calls") or [] if isinstance(call, Mapping)]
    if not calls:
        return None
    client = LazyClient(db, agent=agent_name).get()
    outcomes: list[Outcome] = []
    for call in calls:
        hitl_id = _hitl_id(session_id, call)
        record = await client.backend.get(hitl_id)
        if record is None:  # the pause died before filing it: file it now
            record = await client.submit(_pause_call(session_id, call, agent_name))
        if record["status"] == HITLStatus.PENDING.value:
            if not wait:
                return None
            outcomes.append(await client.wait(hitl_id, timeout=timeout))
        else:
            outcomes.append(Outcome.from_record(record))
    if all(outcome.runs_tool for outcome in outcomes):
        return await loop.resume(session_id)
    if any(outcome.runs_tool for outcome in outcomes):
        raise MixedDecisions(
            "power-loop resumes or aborts a paused round as a whole, and this round's calls were decided "
            "differently; use review_gate() for per-call decisions"
        )
    reason = "; ".join(dict.fromkeys(outcome.text_for_model() for outcome in outcomes))
    await loop.abort_pending(session_id, reason=reason)
    return await loop.resume(session_id)


def _runs_as_stored(record: Mapping[str, Any]) -> bool:
    if record["status"] == HITLStatus.PENDING.value:
        return False
    outcome = Outcome.from_record(dict(record))
    return outcome.runs_tool and outcome.kind is not DecisionKind.EDIT


def _session_id() -> str:
    from power_loop.core.agent_context import get_session_id

    return str(get_session_id() or "power-loop")


def _name_and_args(call: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    function = call.get("function") if isinstance(call.get("function"), Mapping) else call
    assert isinstance(function, Mapping)
    raw = function.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else dict(raw or {})
    except (ValueError, TypeError):
        arguments = {"arguments": raw}
    return str(function.get("name") or ""), arguments if isinstance(arguments, dict) else {"arguments": arguments}


def _hitl_id(session_id: str, call: Mapping[str, Any]) -> str:
    return stable_id("power-loop", session_id, str(call.get("id") or ""))


def _call_of(
    session_id: str, call: Mapping[str, Any], name: str, arguments: Mapping[str, Any], agent_name: str
) -> ExternalCall:
    return ExternalCall(
        hitl_id=_hitl_id(session_id, call),
        agent=agent_name,
        session_id=session_id,
        invocation_id=stable_id("power-loop", session_id),
        tool_name=name,
        arguments=dict(arguments),
        tool_call_id=str(call.get("id") or "") or None,
    )


def _pause_call(session_id: str, call: Mapping[str, Any], agent_name: str) -> ExternalCall:
    name, arguments = _name_and_args(call)
    gated = _call_of(session_id, call, name, arguments, agent_name)
    return dataclasses.replace(gated, allowed_decisions=PAUSE_DECISIONS)
