"""Dead owners noticed within seconds: heartbeats, the sweep that interrupts or releases their runs, tools that
die with them.

A runtime stamps ``heartbeat_ms`` on the runs it drives every :data:`HEARTBEAT_INTERVAL_S` (with the process
group of the shell tool each is running). :func:`interrupt_dead_owners` — run every second or so by the window and
by workers — looks at runs whose heartbeat is older than :data:`STALE_AFTER_S` and whose owner is certainly gone
(a pid on this host that no longer exists: :func:`~reviewer_app.runtime.recovery.owner_is_gone`). It kills the
tool process group the dead owner recorded, then in one transaction that re-checks the owner:

* a run that was inside a tool call becomes ``interrupted`` (the operator re-runs or aborts the call);
* any other run is released (no owner), so a worker — or the window's runtime — resumes it.

Shell tools also get ``PR_SET_PDEATHSIG`` on Linux (``process_groups.die_with_parent``): the shell dies with
the runtime at once, and the sweep kills whatever it left in its process group.
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import StoreTx, now_ms
from reviewer_app.runtime.checkpoint import Checkpoint
from reviewer_app.runtime.process_groups import kill_process_group
from reviewer_app.runtime.recovery import owner_is_gone

log = logging.getLogger(__name__)

HEARTBEAT_INTERVAL_S = 1.0
STALE_AFTER_S = 3.0  # three missed beats: a busy database thread may delay one or two
SWEEP_INTERVAL_S = 1.0
LIVE_STATES = (RunState.QUEUED.value, RunState.RUNNING.value, RunState.WAITING.value)


@dataclass(frozen=True)
class SweptRun:
    """What a sweep did to one run whose owner died: ``interrupted`` or ``released``."""

    invocation_id: str
    outcome: str
    owner: str
    detail: str


async def interrupt_dead_owners(
    backend: SQLHITLBackend,
    *,
    stale_after_s: float = STALE_AFTER_S,
    is_gone: Callable[[str | None], bool] = owner_is_gone,
) -> list[SweptRun]:
    """Interrupt or release the runs of owners that stopped beating and are gone; returns what was done."""
    candidates = await backend.stale_owned_runs(LIVE_STATES, stale_after_ms=int(stale_after_s * 1000))
    swept: list[SweptRun] = []
    for record in candidates:
        owner = record.owner
        if not owner or not is_gone(owner):
            continue
        kill_process_group(record.process_group)
        latest = await backend.latest_checkpoint(record.id)
        running: list[str] = []
        if latest is not None:
            with contextlib.suppress(Exception):  # an unreadable checkpoint is the resuming process's problem
                running = [call.name for call in Checkpoint.from_json(latest[1]).running_calls()]
        events: list[BlockEvent] = []
        if running:
            names = ", ".join(running)
            events.append(
                BlockEvent(
                    block_id=f"{record.id}:interrupted:{now_ms()}",
                    kind=BlockKind.ERROR,
                    op=BlockOp.APPLY,
                    data={
                        "message": f"the process driving this run ({owner}) died while {names} was running; "
                        "re-run it (idempotent tools only) or abort it",
                        "interrupted": True,
                    },
                    session_id=record.session_id,
                    invocation_id=record.id,
                    ts_ms=now_ms(),
                )
            )

        outcome = await backend.write(functools.partial(_interrupt_or_release, record.id, owner, running, events))
        if outcome is None:
            continue
        detail = f"while running {', '.join(running)}" if running else "resumable by a worker"
        log.warning("run %s: owner %s is gone; %s (%s)", record.id, owner, outcome, detail)
        swept.append(SweptRun(record.id, outcome, owner, detail))
    return swept


def _interrupt_or_release(
    invocation_id: str, owner: str, running: Sequence[str], events: Sequence[BlockEvent], tx: StoreTx
) -> str | None:
    """In one transaction that re-checks the dead owner: interrupt (inside a tool call) or release the run."""
    current = tx.runs.state_and_owner(invocation_id)
    if current is None or current[1] != owner or current[0].value not in LIVE_STATES:
        return None  # someone else interrupted or took it meanwhile
    if running and current[0] is RunState.RUNNING:
        tx.runs.set_state(
            invocation_id,
            RunState.INTERRUPTED,
            error=f"interrupted while running {', '.join(running)}",
            owner=None,
            current=current[0],
        )
        tx.timeline.append(list(events))
        return "interrupted"
    tx.runs.claim(invocation_id, None, expected_owner=owner)
    return "released"
