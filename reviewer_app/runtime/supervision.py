"""Supervision of the runs beside the ones being driven: recovery, heartbeats and expiry.

Takes over runs whose process died (and rebuilds a run from its checkpoint), tells other processes this one
lives, and expires requests nobody decided in time. These loops run beside the runs, never inside one, so
they are kept apart from the driver (turns.py), to which they hand the runs they take over.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLRecord, HITLType
from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockKind, BlockOp
from reviewer_app.hitl import SQLHITLBackend, WriteRetriesExhausted
from reviewer_app.persistence.store import StoreTx
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.idle_runs import IdleRun, sweep_idle_external_runs
from reviewer_app.runtime.liveness import interrupt_dead_owners
from reviewer_app.runtime.process_groups import kill_process_group
from reviewer_app.runtime.recovery import owner_is_gone
from reviewer_app.runtime.turns import RunDriver

log = logging.getLogger(__name__)

IDLE_SWEEP_INTERVAL_S = 60.0
RESUMABLE = (RunState.QUEUED, RunState.RUNNING, RunState.WAITING, RunState.INTERRUPTED)


class RunSupervisor:
    """Recovery, heartbeat and expiry for one ``Runtime`` (a part of it); runs taken over are handed to its driver."""

    def __init__(
        self,
        backend: SQLHITLBackend,
        catalog: AgentCatalog,
        driver: RunDriver,
        *,
        owner: str,
        expiry_interval_s: float,
        recovery_interval_s: float | None,
        heartbeat_interval_s: float,
        idle_limits_s: tuple[float, float],
    ) -> None:
        self.backend = backend
        self.catalog = catalog
        self.driver = driver
        self.owner = owner
        self.expiry_interval_s = expiry_interval_s
        self.recovery_interval_s = recovery_interval_s
        self.heartbeat_interval_s = heartbeat_interval_s
        self.idle_limits_s = idle_limits_s
        self._idle_swept_at = float("-inf")
        self._tasks: list[asyncio.Task[None]] = []

    async def start(self, *, recover: bool) -> None:
        """Start the expiry and heartbeat loops; with ``recover``, take over runs of dead processes now and (with a
        recovery interval) keep doing so."""
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._expiry_loop(), name="reviewer-expiry"))
        self._tasks.append(loop.create_task(self._heartbeat_loop(), name="reviewer-heartbeat"))
        if recover:
            await self.recover()
            if self.recovery_interval_s:
                self._tasks.append(loop.create_task(self._recovery_loop(), name="reviewer-recovery"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()

    async def recover(self) -> list[str]:
        """Take over resumable runs whose process is gone; returns the invocations taken over."""
        records = await self.backend.list_runs(states=[s.value for s in RESUMABLE], limit=None)
        taken = []
        for record in sorted(records, key=lambda r: (r.created_at, r.id)):
            if record.external or self.driver.is_driving(record.id) or record.owner == self.owner:
                continue
            if record.agent not in self.catalog:
                log.warning(
                    "run %s belongs to unknown agent %r; left for a process that knows it", record.id, record.agent
                )
                continue
            if not owner_is_gone(record.owner):
                continue
            if await self._take_over(record):
                taken.append(record.id)
        return taken

    async def _take_over(self, record: RunRecord) -> bool:
        claimed = await self.backend.write(lambda tx: tx.runs.claim(record.id, self.owner, expected_owner=record.owner))
        if not claimed:
            return False  # another process was quicker
        kill_process_group(record.process_group)  # whatever tool the dead owner was running ends now
        try:
            run = await self.driver.load_run(record)
        except Exception as exc:
            log.exception("cannot resume run %s", record.id)
            await self._fail_unloadable(record, exc)
            return True
        running = run.ckpt.running_calls()
        if record.state == RunState.INTERRUPTED.value:
            return True  # waits for rerun_or_abort
        if running:
            names = ", ".join(c.name for c in running)
            events = [
                run.event(run.tool_block(c.call_id), BlockKind.TOOL_USE, BlockOp.PATCH, {"interrupted": True})
                for c in running
            ]
            events.append(
                run.event(
                    f"{run.invocation_id}:interrupted:{run.ckpt.seq}",
                    BlockKind.ERROR,
                    BlockOp.APPLY,
                    {
                        "message": f"the process driving this run stopped while {names} was running; "
                        "re-run it (idempotent tools only) or abort it",
                        "interrupted": True,
                    },
                )
            )
            await self.driver.commit(
                run, RunState.INTERRUPTED, events=events, checkpoint=False, error=f"interrupted while running {names}"
            )
            return True
        self.driver.spawn(run)
        return True

    async def _fail_unloadable(self, record: RunRecord, exc: Exception) -> None:
        def fail(tx: StoreTx) -> None:
            tx.runs.set_state(record.id, RunState.FAILED, error=f"cannot resume: {exc}")

        with contextlib.suppress(Exception):
            await self.backend.write(fail)

    async def _recovery_loop(self) -> None:
        assert self.recovery_interval_s
        while True:
            await asyncio.sleep(self.recovery_interval_s)
            try:
                await interrupt_dead_owners(self.backend)  # kills a dead owner's tool group, interrupts its run
                await self.recover()
            except Exception:
                log.exception("recovery sweep failed; trying again later")

    async def _heartbeat_loop(self) -> None:
        """Tell other processes this owner lives (and which tool process group each run has): see liveness.py."""
        while True:
            await asyncio.sleep(self.heartbeat_interval_s)
            groups = self.driver.tool_process_groups()
            if not groups:
                continue
            try:
                await self.backend.write(functools.partial(record_heartbeat, self.owner, groups))
            except asyncio.CancelledError:
                raise
            except WriteRetriesExhausted as exc:
                log.warning("heartbeat not recorded: %s", exc)
            except Exception:
                log.exception("heartbeat failed; trying again")

    # -- expiry ---------------------------------------------------------------------------------
    def _expiry_default(self, record: HITLRecord) -> str:
        """The operator's configured default for a call one of this runtime's runs asked; reject for anything else.

        The agent is the one this runtime runs the call for (its ``agents.toml`` entry), never the name a request
        carries in its metadata: an outside request naming a lenient agent expires rejected.
        """
        if record.get("hitl_type") == HITLType.ASK_USER.value:
            return DecisionKind.REJECT.value  # a question cannot be approved
        run = self.driver.driven_run(str(record.get("invocation_id")))
        if run is None or record.get("hitl_id") not in {call.hitl_id for call in run.ckpt.pending}:
            return DecisionKind.REJECT.value
        return run.agent.policy.default_on_expiry

    async def _expiry_loop(self) -> None:
        while True:
            try:
                # First the requests whose hook already answered and is gone: "answered elsewhere", not expired.
                await self.backend.settle_abandoned_hooks()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("settling the requests of gone hooks failed; trying again later")
            try:
                expired = await self.backend.expire_due(default_decision=self._expiry_default)
                watcher = self.driver.watcher
                if expired and watcher is not None:
                    watcher.resolve(expired)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("expiry check failed; trying again")
            await self.sweep_idle_runs()
            await asyncio.sleep(self.expiry_interval_s)

    async def sweep_idle_runs(self, *, force: bool = False) -> list[IdleRun]:
        """External runs whose host is gone: idle, then ended (at most once a minute unless ``force``)."""
        clock = asyncio.get_running_loop().time()
        if not force and clock - self._idle_swept_at < IDLE_SWEEP_INTERVAL_S:
            return []
        self._idle_swept_at = clock
        idle_after, end_after = self.idle_limits_s
        try:
            return await sweep_idle_external_runs(self.backend, idle_after_s=idle_after, end_after_s=end_after)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("checking for idle external runs failed; trying again later")
            return []


def record_heartbeat(owner: str, groups: dict[str, int | None], tx: StoreTx) -> int:
    """In a write transaction: ``owner`` lives, and each of its runs runs a tool in this process group (or none)."""
    return tx.runs.heartbeat(owner, groups)
