"""External runs whose host is gone: marked idle after a while without any sign of life, then ended.

A host that exits without its end event (a closed terminal, a killed agent, a hook not installed) leaves its run
"running" forever. The supervision loop of the window and the workers calls :func:`sweep_idle_external_runs`:
a run of an outside agent with nothing pending (a pending request has its own hook, expiry and sweep) and no
activity on its row, timeline or requests for ``idle_after_s`` gets an idle note on its timeline; after
``end_after_s`` it is ended ``done`` with the reason on its timeline and as its error.

Sooner where the evidence is certain: a host whose runs are one per prompt (Claude Code's ``prompt_id``, Codex's
``turn_id``) names every event of a prompt with its id until the next prompt, so once a newer run of the same
session exists, an older one with nothing pending gets no more calls: it is ended after ``MOVED_ON_AFTER_S``
without activity (room for a last tool result still on its way). A run with a pending request is never ended here.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass

from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import StoreTx, now_ms

log = logging.getLogger(__name__)

IDLE_AFTER_S = 30 * 60.0
END_AFTER_S = 4 * 60 * 60.0
IDLE_ENV = "REVIEWER_RUN_IDLE_MINUTES"
END_ENV = "REVIEWER_RUN_END_MINUTES"
OPEN_STATES = (RunState.QUEUED.value, RunState.RUNNING.value, RunState.WAITING.value)
MOVED_ON_AFTER_S = 2 * 60.0
PROMPT_RUN_AGENTS = frozenset({"claude-code", "codex", "qwen", "factory"})
"""Hosts whose runs are one per prompt (or turn), in order within a session: see the module's docstring."""
IDLE = "idle"
ENDED = "ended"


def _minutes(name: str, default_s: float) -> float:
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default_s
    return value * 60 if value > 0 else default_s


def configured_limits() -> tuple[float, float]:
    """``(idle_after_s, end_after_s)``: 30 minutes and 4 hours unless the environment says otherwise."""
    idle = _minutes(IDLE_ENV, IDLE_AFTER_S)
    return idle, max(idle, _minutes(END_ENV, END_AFTER_S))


def idle_block_id(invocation_id: str) -> str:
    return f"{invocation_id}:idle"


@dataclass(frozen=True, slots=True)
class IdleRun:
    invocation_id: str
    outcome: str  # IDLE or ENDED
    reason: str


def _quiet_for(ms: int) -> str:
    minutes = ms // 60_000
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"


def _newest_prompt_runs(runs: list[RunRecord]) -> dict[str, int]:
    """Per session of a one-run-per-prompt host, when its newest open run started (s)."""
    newest: dict[str, int] = {}
    for run in runs:
        if run.external and run.agent in PROMPT_RUN_AGENTS:
            newest[run.session_id] = max(newest.get(run.session_id, run.created_at), run.created_at)
    return newest


async def sweep_idle_external_runs(
    backend: SQLHITLBackend,
    *,
    idle_after_s: float,
    end_after_s: float,
    now: int | None = None,
    moved_on_after_s: float = MOVED_ON_AFTER_S,
) -> list[IdleRun]:
    """Mark idle, then end, the open external runs nothing has happened on for that long, and end sooner the
    prompt runs their session has moved on from; returns what it did."""
    moment = now_ms() if now is None else now
    swept: list[IdleRun] = []
    runs = await backend.list_runs(states=list(OPEN_STATES), limit=None)
    newest = _newest_prompt_runs(runs)
    for run in runs:
        if not run.external or run.pending:
            continue
        marker = idle_block_id(run.id)
        last, marked = await backend.last_activity_ms(run.id, ignoring_block=marker)
        quiet = moment - last
        moved_on = run.agent in PROMPT_RUN_AGENTS and newest.get(run.session_id, 0) > run.created_at
        reason: str | None = None
        if quiet >= end_after_s * 1000:
            reason = f"ended: no activity from its host for {_quiet_for(quiet)} (the host is gone)"
        elif moved_on and quiet >= moved_on_after_s * 1000:
            reason = "ended: its session moved on to a later prompt, with nothing pending here"
        if reason is not None:
            if await backend.write(functools.partial(_end, run.id, run.session_id, reason, moment)):
                swept.append(IdleRun(run.id, ENDED, reason))
        elif quiet >= idle_after_s * 1000 and not marked:
            reason = (
                f"idle: no activity from its host for {_quiet_for(quiet)}; "
                f"ended if nothing happens for {_quiet_for(int(end_after_s * 1000))}"
            )
            note = BlockEvent(
                marker,
                BlockKind.ERROR,
                BlockOp.APPLY,
                {"message": reason, "idle": True},
                run.session_id,
                run.id,
                moment,
            )
            await backend.append_blocks([note])
            swept.append(IdleRun(run.id, IDLE, reason))
    for done in swept:
        log.info("run %s %s", done.invocation_id, done.reason)
    return swept


def _end(invocation_id: str, session_id: str, reason: str, moment: int, tx: StoreTx) -> bool:
    """In one transaction: the run still open, its end block with the reason, and its state done."""
    found = tx.runs.state_and_owner(invocation_id)
    if found is None or found[0].value not in OPEN_STATES:
        return False
    current = found[0]
    if current is RunState.WAITING:
        tx.runs.set_state(invocation_id, RunState.RUNNING, current=current)
        current = RunState.RUNNING
    data = {"state": RunState.DONE.value, "error": reason, "idle": True}
    tx.timeline.append(
        [BlockEvent(f"{invocation_id}:end", BlockKind.END, BlockOp.APPLY, data, session_id, invocation_id, moment)]
    )
    tx.runs.set_state(invocation_id, RunState.DONE, error=reason, current=current)
    return True
