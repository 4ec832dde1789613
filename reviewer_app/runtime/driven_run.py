"""A run this process drives, in memory (``DrivenRun``), and what one commit moves it to (``RunStep``).

Its own module because every part of the runtime handles runs: starting them (runner.py), driving them
(turns.py), gating their calls (turn_gate.py) and taking them over from a dead process (supervision.py); none
of them should have to import another just to know what a run is.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp, ToolStatus
from reviewer_app.persistence.store import now_ms
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
