"""Run states (langgraph-stream-parser's task board) and their allowed transitions."""

from __future__ import annotations

from enum import StrEnum


class RunState(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"  # review needed
    INTERRUPTED = "interrupted"  # the process died inside a tool call
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in FINISHED


FINISHED = frozenset({RunState.DONE, RunState.FAILED, RunState.CANCELLED})

TRANSITIONS: dict[RunState, frozenset[RunState]] = {
    RunState.QUEUED: frozenset({RunState.RUNNING, RunState.WAITING, RunState.CANCELLED, RunState.FAILED}),
    RunState.RUNNING: frozenset(
        {RunState.WAITING, RunState.DONE, RunState.FAILED, RunState.CANCELLED, RunState.INTERRUPTED, RunState.QUEUED}
    ),
    RunState.WAITING: frozenset({RunState.RUNNING, RunState.CANCELLED, RunState.FAILED, RunState.QUEUED}),
    RunState.INTERRUPTED: frozenset({RunState.RUNNING, RunState.CANCELLED, RunState.FAILED, RunState.QUEUED}),
    RunState.DONE: frozenset(),
    RunState.FAILED: frozenset({RunState.QUEUED}),  # retry
    RunState.CANCELLED: frozenset(),
}


class InvalidTransition(ValueError):
    pass


class RunStateConflict(RuntimeError):
    """The run's state changed after it was read in this transaction: the write was not applied."""


def check_transition(current: RunState, new: RunState) -> None:
    if new is current:
        return
    if new not in TRANSITIONS[current]:
        raise InvalidTransition(f"a run cannot go from {current.value} to {new.value}")
