"""The approval gate applied to a driven run (``TurnGate``): a model turn in, a step with its requests out;
decisions in, the calls' next states and timeline patches out.

The pure rules (which call waits, what a decision means) are in gate.py; this part applies them to a
:class:`DrivenRun`: the turn's calls get run-unique ids, session waivers and persistent rules are read inside the
turn's transaction (``plan_turn`` returns the function that runs there), and decided requests become the calls'
outcomes (``apply_decisions``).
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from reviewer_app.domain.hitl import HITLRecord, HITLStatus
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rule_outcome import verdict_message
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp, ToolStatus
from reviewer_app.persistence.store import StoreTx, now_ms
from reviewer_app.runtime.checkpoint import CallStatus, PendingCall
from reviewer_app.runtime.driven_run import DrivenRun, RunStep
from reviewer_app.runtime.gate import (
    ASK_USER,
    GateResult,
    RuleSettlement,
    apply_outcome,
    gate_call,
    refuse_unsigned,
    screen_turn,
)
from reviewer_app.runtime.llm_clients import ModelTurn, ToolCall


class TurnGate:
    """Gates the calls of a driven run's turns and applies the decisions on them (no state of its own)."""

    def plan_turn(self, run: DrivenRun, turn: ModelTurn) -> Callable[[StoreTx], RunStep]:
        """Record the assistant turn in the run's checkpoint; returns what its transaction writes.

        The returned function reads the session waivers and persistent rules in the turn's transaction, under its
        write lock: a rule added meanwhile cannot be missed, and the turn costs one round trip to the database.
        """
        screened, refused_by_id = screen_turn(turn)  # poison arguments become error results, never a crash
        turn = with_run_unique_call_ids(screened, run.ckpt.messages)
        refused = {  # the same calls in the same order, some renamed
            unique.id: refused_by_id[original.id]
            for original, unique in zip(screened.tool_calls, turn.tool_calls, strict=True)
            if original.id in refused_by_id
        }
        run.ckpt.add_assistant_turn(turn)

        def plan(tx: StoreTx) -> RunStep:
            rules = tx.waivers.entries(run.session_id)
            policy_rules = tx.rules.active(time.time())
            workspace = str(run.ctx.workspace)
            settled: list[RuleSettlement] = []
            events: list[BlockEvent] = []
            requests: list[NewRequest] = []
            pending: list[PendingCall] = []
            for call in turn.tool_calls:
                tool_block = run.tool_block(call.id)
                result = gate_call(
                    call,
                    tools=run.tools,
                    policy=run.agent.policy,
                    rules=rules,
                    agent=run.agent.name,
                    session_id=run.session_id,
                    invocation_id=run.invocation_id,
                    block_id=run.hitl_block(call.id),
                    refused=refused.get(call.id),
                    policy_rules=policy_rules,
                    cwd=workspace,
                )
                pending.append(result.call)
                waived_by = record_waiver(tx, result)
                events.append(
                    run.event(
                        tool_block,
                        BlockKind.TOOL_USE,
                        BlockOp.APPLY,
                        {
                            "name": call.name,
                            "call_id": call.id,
                            "arguments": call.arguments,
                            "status": ToolStatus.PENDING.value,
                            "gated": result.request is not None,
                            **({"waived_by": waived_by} if waived_by else {}),
                        },
                    )
                )
                if result.request is not None:
                    requests.append(result.request)
                    events.append(_request_event(run, call, result.request, parent_id=tool_block))
                elif result.settled is not None:
                    settled.append(result.settled)
                    events.append(_rule_decided_event(run, call, result.settled, parent_id=tool_block))
                if result.request is None and result.call.status.finished:
                    events.append(run.tool_finished_event(result.call, duration_ms=0))
            run.ckpt.pending = pending
            runs_now = any(c.status is CallStatus.APPROVED for c in pending)
            state = RunState.WAITING if requests and not runs_now else RunState.RUNNING
            return RunStep(state, events, requests, settled)

        return plan

    def apply_decisions(
        self,
        run: DrivenRun,
        awaiting: Sequence[PendingCall],
        decided: Mapping[str, HITLRecord],
        unsigned: Mapping[str, str],
    ) -> list[BlockEvent]:
        """The decided requests among ``awaiting`` become their calls' next states; returns the timeline patches.

        ``unsigned``: per request, why its decision is not what the audit chain signed (that call does not run).
        """
        events: list[BlockEvent] = []
        decided_ms = now_ms()
        for call in awaiting:
            record = decided.get(call.hitl_id or "")
            if record is None:
                continue
            problem = unsigned.get(call.hitl_id or "")
            if problem is not None:
                refuse_unsigned(call, problem)
                error = {"message": f"{problem}; the call was not run", "hitl_id": call.hitl_id}
                events.append(run.event(f"{call.hitl_id}:unsigned", BlockKind.ERROR, BlockOp.APPLY, error))
            else:
                apply_outcome(call, record)
            response = record.get("user_response") or {}
            patch: dict[str, Any] = {
                "status": "decided",
                "decision": call.decision,
                "resolved_ms": decided_ms,
                "reviewer": response.get("reviewer") if isinstance(response, dict) else None,
            }
            if record.get("status") == HITLStatus.EXPIRED.value:
                patch["expired"] = True
            if isinstance(response, dict) and response.get("message"):
                patch["message"] = response["message"]
            if call.run_arguments is not None:
                patch["edited_arguments"] = call.run_arguments
            events.append(run.event(run.hitl_block(call.call_id), BlockKind.HITL, BlockOp.PATCH, patch))
            if call.status.finished:
                events.append(run.tool_finished_event(call, duration_ms=0))
        return events


def _request_event(run: DrivenRun, call: ToolCall, request: NewRequest, *, parent_id: str) -> BlockEvent:
    """The timeline's record of a call that waits for a human."""
    return run.event(
        run.hitl_block(call.id),
        BlockKind.HITL,
        BlockOp.APPLY,
        {
            "hitl_id": request.hitl_id,
            "hitl_type": request.hitl_type,
            "tool_name": call.name,
            "call_id": call.id,
            "arguments": call.arguments,
            "question": call.arguments.get("question") if call.name == ASK_USER else None,
            "status": "pending",
            "expires_at": request.expires_at,
        },
        parent_id=parent_id,
    )


def _rule_decided_event(run: DrivenRun, call: ToolCall, settled: RuleSettlement, *, parent_id: str) -> BlockEvent:
    """The timeline's record of a call a persistent rule decided (no human was asked)."""
    verdict = settled.verdict
    return run.event(
        run.hitl_block(call.id),
        BlockKind.HITL,
        BlockOp.APPLY,
        {
            "hitl_id": settled.request.hitl_id,
            "hitl_type": settled.request.hitl_type,
            "tool_name": call.name,
            "call_id": call.id,
            "arguments": call.arguments,
            "status": "decided",
            "decision": "approve" if verdict.effect == "allow" else "reject",
            "reviewer": verdict.decided_by,
            "message": verdict_message(verdict),
        },
        parent_id=parent_id,
    )


def with_run_unique_call_ids(turn: ModelTurn, messages: Sequence[dict[str, Any]]) -> ModelTurn:
    """The turn with every call id unique within the run, before anything is recorded under it.

    Servers stream calls without ids, or number them per message (``call_0`` every turn); blocks, requests
    and tool results are keyed by call id, so a repeat would overwrite an earlier call's record. A missing or
    repeated id is replaced by a fresh one, which is also what the server gets back with the call's result.
    """
    used = {
        str(call.get("id"))
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
    }
    calls = []
    for call in turn.tool_calls:
        call_id = call.id
        if not call_id or call_id in used:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        used.add(call_id)
        calls.append(call if call_id == call.id else dataclasses.replace(call, id=call_id))
    if all(new is old for new, old in zip(calls, turn.tool_calls, strict=True)):
        return turn  # the usual turn: every id was unique already, nothing to copy
    return dataclasses.replace(turn, tool_calls=tuple(calls))


def record_waiver(tx: StoreTx, result: GateResult) -> str | None:
    """A gated call a session rule let through, put on the record in the turn's transaction: a request already
    decided (approve) by ``session-rule:<id>``, with its audit row. Returns who decided, or None."""
    if result.waiver is None or result.waived_by is None:
        return None
    rule_id, rule = result.waived_by
    tx.waivers.settle(result.waiver, rule_id, rule, result.call.arguments, ensure_parents=False)
    return f"session-rule:{rule_id}"
