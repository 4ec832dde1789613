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
from pathlib import Path

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.hitl import HITLRecord, HITLType
from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockKind, BlockOp
from reviewer_app.hitl import WriteRetriesExhausted
from reviewer_app.persistence.blobs import STATE_FORMAT
from reviewer_app.persistence.store import StoreTx
from reviewer_app.runtime.checkpoint import Checkpoint
from reviewer_app.runtime.idle_runs import IdleRun, settle_idle_external_runs
from reviewer_app.runtime.liveness import settle_dead_owners
from reviewer_app.runtime.process_groups import kill_process_group
from reviewer_app.runtime.recovery import owner_is_gone
from reviewer_app.runtime.run_state import _Run
from reviewer_app.runtime.turns import RunDriver

log = logging.getLogger(__name__)

IDLE_SWEEP_INTERVAL_S = 60.0
RESUMABLE = (RunState.QUEUED, RunState.RUNNING, RunState.WAITING, RunState.INTERRUPTED)


class RunSupervisor(RunDriver):
    """Recovery, heartbeat and expiry for one ``Runtime``; runs taken over are handed to ``RunDriver``."""

    async def recover(self) -> list[str]:
        """Take over resumable runs whose process is gone; returns the invocations taken over."""
        self._require_started()
        records = await self.backend.list_runs(states=[s.value for s in RESUMABLE], limit=None)
        taken = []
        for record in sorted(records, key=lambda r: (r.created_at, r.id)):
            if record.external or record.id in self._tasks or record.owner == self.owner:
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
            run = await self._load(record)
        except Exception as exc:
            log.exception("cannot resume run %s", record.id)
            await self._fail_unloadable(record, exc)
            return True
        running = run.ckpt.running_calls()
        if record.state == RunState.INTERRUPTED.value:
            return True  # waits for resolve_interrupted
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
            await self._commit(
                run, RunState.INTERRUPTED, events=events, checkpoint=False, error=f"interrupted while running {names}"
            )
            return True
        self._spawn(run)
        return True

    async def _load(self, record: RunRecord) -> _Run:
        latest = await self.backend.latest_checkpoint(record.id)
        if latest is None:
            raise ValueError(f"run {record.id} has no checkpoint")
        ckpt = Checkpoint.from_json(latest[1])
        # Format 2 checkpoints (append-only) have their messages stored; an older one is written out in full
        # by the run's next commit.
        saved = len(ckpt.messages) if latest[1].get("format") == STATE_FORMAT else 0
        spec = self.catalog.get(ckpt.agent)
        workspace = Path(record.workspace) if record.workspace else self.workspaces_dir / record.session_id
        workspace.mkdir(parents=True, exist_ok=True)
        return _Run(
            invocation_id=record.id,
            session_id=record.session_id,
            agent=spec,
            model=self.catalog.build_model(spec.name, ckpt.script),
            tools=self.tools.subset(spec.tools),
            ctx=self._tool_context(spec, workspace, record.session_id, record.id),
            ckpt=ckpt,
            db_state=RunState(record.state),
            saved_messages=saved,
        )

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
                await settle_dead_owners(self.backend)  # kills a dead owner's tool group, interrupts its run
                await self.recover()
            except Exception:
                log.exception("recovery sweep failed; trying again later")

    async def _heartbeat_loop(self) -> None:
        """Tell other processes this owner lives (and which tool process group each run has): see liveness.py."""
        while True:
            await asyncio.sleep(self.heartbeat_interval_s)
            groups = {inv: min(self._process_groups.get(inv) or (0,)) or None for inv in self.active_runs()}
            if not groups:
                continue
            try:
                await self.backend.write(functools.partial(_beat, self.owner, groups))
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
        run = self._driven.get(str(record.get("invocation_id")))
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
                if expired and self._watcher is not None:
                    self._watcher.resolve(expired)
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
            return await settle_idle_external_runs(self.backend, idle_after_s=idle_after, end_after_s=end_after)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("checking for idle external runs failed; trying again later")
            return []


def _beat(owner: str, groups: dict[str, int | None], tx: StoreTx) -> int:
    return tx.runs.heartbeat(owner, groups)
