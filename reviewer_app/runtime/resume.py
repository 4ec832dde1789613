"""Resume in one transaction: a decision made in this process, for a run this process drives, is handed to that run,
which writes the decision and what it lets happen (the call ``running``, its outcome on the timeline) together.

Exactly once still holds after a crash: before that commit nothing of the decision exists (the request is pending,
the call awaits it); after it the call is ``running`` in the checkpoint, so a crash before the tool ends makes the
run interrupted, never runs it again unasked. The record the run acts on is the one its own transaction wrote with
its audit row, so no other writer can have changed it in between (the check a decision read back needs).
A decision the run cannot take (no slot free, budget used up, another decision arrived at the same moment) is
declined: the caller decides the ordinary way (two transactions, as a decision made by another process is).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from reviewer_app.domain.decisions import Decision
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.runtime.checkpoint import CallStatus, PendingCall
from reviewer_app.runtime.driven_run import DrivenRun, RunStep
from reviewer_app.runtime.turn_gate import TurnGate


def _new_future() -> asyncio.Future[HITLRecord | None]:
    return asyncio.get_running_loop().create_future()


@dataclass
class DecisionHandoff:
    """A decision handed to the run waiting for its request; ``answer`` gets the decided record, or None when the
    run declined it (then the caller decides the ordinary way), or the exception that refused it."""

    hitl_id: str
    decision: Decision
    answer: asyncio.Future[HITLRecord | None] = field(default_factory=_new_future)

    def decline(self) -> None:
        if not self.answer.done():
            self.answer.set_result(None)

    def fail(self, error: BaseException) -> None:
        if self.answer.done():
            return
        if isinstance(error, asyncio.CancelledError):  # the run stopped while the decision was being written
            error = RuntimeError(
                f"the run stopped while the decision on {self.hitl_id} was being recorded; "
                "the request shows whether it was"
            )
        self.answer.set_exception(error)

    def done(self, record: HITLRecord) -> None:
        if not self.answer.done():
            self.answer.set_result(record)


def decided_step(
    gate: TurnGate, run: DrivenRun, hitl_id: str, pending_before: Sequence[PendingCall], record: HITLRecord
) -> RunStep:
    """In the decision's transaction: the run's calls as the decided ``record`` leaves them, and the step to write.

    Built afresh from ``pending_before`` (the calls as they were before the transaction) each time, so a write tried
    again, or rolled back, never leaves a call changed in memory by an attempt that did not commit.
    """
    pending = copied_calls(pending_before)
    call = next(c for c in pending if c.hitl_id == hitl_id)
    events = gate.apply_decisions(run, [call], {hitl_id: record}, {})
    if call.status is CallStatus.APPROVED:
        call.status = CallStatus.RUNNING  # committed before the tool starts: the exactly-once rule
        events.append(run.call_running_event(call))
    run.ckpt.pending = pending
    return RunStep(RunState.RUNNING, events)


def copied_calls(calls: Sequence[PendingCall]) -> list[PendingCall]:
    """Copies of a turn's calls, to change without touching the originals (what a call was validated for stays)."""
    return [dataclasses.replace(call) for call in calls]
