"""A run this process drives, in memory (``DrivenRun``), and what one commit moves it to (``RunStep``).

Its own module because every part of the runtime handles runs: starting them (runner.py), driving them
(turns.py), gating their calls (turn_gate.py) and taking them over from a dead process (supervision.py); none
of them should have to import another just to know what a run is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp, ToolStatus
from reviewer_app.persistence.store import StoreTx, now_ms
from reviewer_app.runtime.agents import AgentSpec
from reviewer_app.runtime.checkpoint import CallStatus, Checkpoint, PendingCall
from reviewer_app.runtime.gate import RuleSettlement
from reviewer_app.runtime.llm_clients import ModelClient
from reviewer_app.runtime.tools import ToolContext, ToolRegistry


@dataclass(frozen=True)
class RunStep:
    """What one commit moves a run to: its state, and the timeline events and requests written with it."""

    state: RunState
    events: Sequence[BlockEvent] = ()
    requests: Sequence[NewRequest] = ()
    settled: Sequence[RuleSettlement] = ()
    """Calls a persistent rule decided: each request is recorded already decided, with its audit row."""


@dataclass
class DrivenRun:
    """One run this process drives: its agent, model, tools and the checkpoint being advanced."""

    invocation_id: str
    session_id: str
    agent: AgentSpec
    model: ModelClient
    tools: ToolRegistry
    ctx: ToolContext
    ckpt: Checkpoint
    db_state: RunState
    clock_started: float | None = None  # monotonic start of the current active stretch
    unsaved_ms: int = 0  # active time not yet added to the invocation row
    holds_slot: bool = False
    saved_messages: int = 0  # messages of ``ckpt`` already in the database (each commit appends the rest)
    # Events that ride on the next commit: streamed text, and decision outcomes that are committed
    # together with the call they let run (see RunDriver.dispatch in turns.py).
    stream_events: list[BlockEvent] = field(default_factory=list)

    def event(
        self, block_id: str, kind: BlockKind, op: BlockOp, data: dict[str, Any], parent_id: str | None = None
    ) -> BlockEvent:
        return BlockEvent(
            block_id=block_id,
            kind=kind,
            op=op,
            data=data,
            session_id=self.session_id,
            invocation_id=self.invocation_id,
            ts_ms=now_ms(),
            parent_id=parent_id,
        )

    def tool_block(self, call_id: str) -> str:
        return f"{self.invocation_id}:tool:{call_id}"

    def hitl_block(self, call_id: str) -> str:
        return f"{self.invocation_id}:hitl:{call_id}"

    def active_ms_now(self) -> int:
        extra = 0 if self.clock_started is None else int((time.monotonic() - self.clock_started) * 1000)
        return self.ckpt.active_ms + extra

    def remaining_s(self) -> float | None:
        if self.agent.time_budget_s is None:
            return None
        return self.agent.time_budget_s - self.active_ms_now() / 1000

    def call_running_event(self, call: PendingCall) -> BlockEvent:
        """The timeline patch that says a call's tool runs now (with the arguments a reviewer edited, if any)."""
        patch: dict[str, Any] = {"status": ToolStatus.RUNNING.value}
        if call.run_arguments is not None:
            patch["edited_arguments"] = call.run_arguments
        return self.event(self.tool_block(call.call_id), BlockKind.TOOL_USE, BlockOp.PATCH, patch)

    def tool_finished_event(self, call: PendingCall, duration_ms: int | None) -> BlockEvent:
        """The timeline patch that closes a call's ``tool_use`` block: its result, outcome and decision."""
        data: dict[str, Any] = {
            "status": ToolStatus.SUCCESS.value if call.ok else ToolStatus.ERROR.value,
            "result": call.result,
        }
        if duration_ms is not None:
            data["duration_ms"] = duration_ms
        if call.status is not CallStatus.DONE:
            data["outcome"] = call.status.value
        if call.decision:
            data["decision"] = call.decision
        return self.event(self.tool_block(call.call_id), BlockKind.TOOL_USE, BlockOp.PATCH, data)


class StepCommit:
    """One commit that advances a run: what :meth:`write` writes in a transaction, and :meth:`committed` after.

    Made just before the transaction (it stops the active-time clock there and takes the checkpoint id).
    :meth:`write` checks, in the transaction, that ``owner`` still owns the run and returns why not (a str) or the
    step it wrote: the run state, requests, rule-decided requests, timeline events and the checkpoint (append-only:
    the conversation's new messages and the small state, never the whole conversation again). ``plan``, when
    given, decides the step inside the transaction, after the ownership check.
    """

    def __init__(
        self,
        run: DrivenRun,
        step: RunStep,
        *,
        owner: str,
        checkpoint: bool = True,
        error: str | None = None,
        plan: Callable[[StoreTx], RunStep] | None = None,
    ) -> None:
        if run.clock_started is not None:
            now = time.monotonic()
            elapsed = int((now - run.clock_started) * 1000)
            run.ckpt.active_ms += elapsed
            run.unsaved_ms += elapsed
            run.clock_started = now
        self.run = run
        self.step = step
        self.owner = owner
        self.error = error
        self.plan = plan
        self.add_ms = run.unsaved_ms
        self.buffered = list(run.stream_events)
        self.ckpt_id = run.ckpt.next_id(run.invocation_id) if checkpoint else None
        self.saved = run.saved_messages
        self.new_messages = run.ckpt.messages[self.saved :] if checkpoint else []
        self.ckpt_state = run.ckpt.to_state() if checkpoint and plan is None else None

    def write(self, tx: StoreTx) -> str | RunStep:
        run = self.run
        current = tx.runs.state_and_owner(run.invocation_id)
        if current is None:
            return "the run no longer exists"
        db_state, db_owner = current
        if db_owner != self.owner:
            return f"run taken over by {db_owner or 'nobody'}"
        step = self.plan(tx) if self.plan is not None else self.step
        if db_state.finished and db_state is not step.state:
            return f"run is {db_state.value}"
        tx.runs.set_state(run.invocation_id, step.state, error=self.error, add_active_ms=self.add_ms, current=db_state)
        for request in step.requests:
            # The invocation was just read above, so its session exists too: no INSERT OR IGNORE for them.
            tx.requests.create(request, ensure_parents=False, checkpoint_id=self.ckpt_id)
        for decided in step.settled:
            arguments = decided.request.data.get("arguments")
            tx.rules.settle(decided.request, decided.verdict, arguments, ensure_parents=False)
        all_events = [*self.buffered, *step.events] if self.buffered else step.events
        if all_events:
            tx.timeline.extend(all_events)
        if self.ckpt_id is not None:
            state_json = self.ckpt_state if self.ckpt_state is not None else run.ckpt.to_state()
            tx.checkpoints.save(
                self.ckpt_id, run.invocation_id, run.session_id, state_json, self.new_messages, first_index=self.saved
            )
        return step

    def committed(self, step: RunStep) -> None:
        """After the commit: the run in memory says what the database now holds."""
        run = self.run
        del run.stream_events[: len(self.buffered)]  # what was committed (nothing else appends meanwhile)
        run.saved_messages = self.saved + len(self.new_messages)
        run.unsaved_ms -= self.add_ms
        run.db_state = step.state
        if step.state is RunState.RUNNING:
            if run.clock_started is None:
                run.clock_started = time.monotonic()
        else:
            run.clock_started = None
