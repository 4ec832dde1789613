"""The runtime: runs agents on asyncio, suspends them at the approval gate, resumes them exactly once.

Rules the code below keeps:

* A decision is committed (``backend.decide``) before anything acts on it. One made here for a run waiting
  here is committed in the same transaction as the call it lets run (resume.py); else the runner reads it.
* The gate writes a turn's requests, their ``hitl`` blocks, the ``tool_use`` blocks and the checkpoint
  in one transaction, then the run waits on a future: no thread, no slot of the concurrency cap.
* A call is committed as ``running`` before its tool executes and ``done`` after. A process that dies
  in between leaves ``running`` behind; recovery then marks the run interrupted instead of guessing.
* Every write checks, in the same transaction, that this process still owns the run and that nobody
  cancelled it, so two processes never drive one run.

This module is the runtime's public API (``Runtime``: start/stop, start/retry/follow up/cancel a run,
re-run or abort an interrupted one, wait for a run, decide and resume). ``Runtime`` holds three parts, each with a
public interface and one concept per module: the driver (``RunDriver``, turns.py: driving runs, where the rules above
are kept), the supervisor (``RunSupervisor``, supervision.py: recovery, heartbeats, expiry) and the gate
(``TurnGate``, turn_gate.py: a turn's calls gated, decisions applied). driven_run.py says what a run in memory is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.hitl import HITLRecord, HITLStatus
from reviewer_app.domain.limits import check_json_value
from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState, RunStateConflict
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.hitl import SQLHITLBackend, WriteRetriesExhausted
from reviewer_app.persistence.store import StoreTx, now_ms
from reviewer_app.runtime.agents import AgentCatalog, AgentSpec
from reviewer_app.runtime.checkpoint import CallStatus, Checkpoint
from reviewer_app.runtime.driven_run import DrivenRun
from reviewer_app.runtime.idle_runs import IdleRun, configured_limits
from reviewer_app.runtime.recovery import new_owner_id
from reviewer_app.runtime.supervision import RunSupervisor
from reviewer_app.runtime.tools import ToolRegistry, builtin_tools
from reviewer_app.runtime.turn_gate import TurnGate
from reviewer_app.runtime.turns import RunDriver
from reviewer_app.runtime.watcher import wait_for_change

log = logging.getLogger(__name__)


def finished_run_refusal(record: RunRecord, allowed: Sequence[RunState], *, has_checkpoint: bool) -> str | None:
    """Why a finished run cannot be retried or followed up (None: it can): the one predicate for both."""
    if RunState(record.state) not in allowed:
        names = "/".join(s.value for s in allowed)
        return f"run {record.id} is {record.state}; only a {names} run can be used here"
    if not has_checkpoint:
        return f"run {record.id} has no checkpoint (it was not started by this app)"
    return None


def _rerun_refusal(run: DrivenRun) -> str | None:
    """Interrupted calls may run again only when every one of them is declared idempotent."""
    running = run.ckpt.running_calls()
    refused = [c.name for c in running if c.name not in run.tools or not run.tools.get(c.name).idempotent]
    if refused:
        return (
            f"cannot re-run {', '.join(sorted(set(refused)))}: not declared idempotent "
            "(it may have had its effect already); abort instead"
        )
    return None


class Runtime:
    """Owns the runs of one process: starting, gating, resuming, expiring, recovering, cancelling.

    Its parts: ``driver`` drives the runs, ``supervisor`` watches over them (recovery, heartbeats, expiry),
    ``gate`` gates their calls. The CLI and the GUI each own one. The UI gets no callbacks: it watches the
    database, which every write here goes through (``backend.write``), so the change feed wakes in-process
    listeners at once.
    """

    def __init__(
        self,
        backend: SQLHITLBackend,
        catalog: AgentCatalog,
        *,
        workspaces_dir: Path,
        max_concurrent_runs: int = 16,
        owner: str | None = None,
        tools: ToolRegistry | None = None,
        expiry_interval_s: float = 1.0,
        recovery_interval_s: float | None = None,
        heartbeat_interval_s: float = 1.0,
        idle_limits_s: tuple[float, float] | None = None,
    ) -> None:
        if max_concurrent_runs < 1:
            raise ValueError("max_concurrent_runs must be at least 1")
        self.backend = backend
        self.catalog = catalog
        self.workspaces_dir = Path(workspaces_dir)
        self.owner = owner or new_owner_id()
        self.tools = tools or builtin_tools()
        self.gate = TurnGate()
        self.driver = RunDriver(
            backend,
            catalog,
            self.tools,
            self.gate,
            owner=self.owner,
            workspaces_dir=self.workspaces_dir,
            max_concurrent_runs=max_concurrent_runs,
        )
        self.supervisor = RunSupervisor(
            backend,
            catalog,
            self.driver,
            owner=self.owner,
            expiry_interval_s=expiry_interval_s,
            recovery_interval_s=recovery_interval_s,
            heartbeat_interval_s=heartbeat_interval_s,
            # (idle after, ended after) for external runs with no sign of life: see idle_runs.py
            idle_limits_s=idle_limits_s or configured_limits(),
        )
        self._started = False

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self, *, recover: bool = True) -> None:
        """Start the decision watcher and the expiry loop; take over runs whose process died."""
        if self._started:
            return
        self._started = True
        self.driver.start()
        await self.supervisor.start(recover=recover)

    async def stop(self) -> None:
        """Stop every task; runs stay resumable in the database and are released for another process."""
        if not self._started:
            return
        self._started = False
        await self.supervisor.stop()
        driven = await self.driver.stop()
        if driven:

            def release(tx: StoreTx) -> None:
                for invocation_id in driven:
                    tx.runs.claim(invocation_id, None, expected_owner=self.owner)

            try:
                await self.backend.write(release)
            except Exception:
                log.exception("could not release this process's runs; recovery will take them when it exits")

    def _require_started(self) -> None:
        if not self._started or not self.driver.started:
            raise RuntimeError("the runtime is not started (await runtime.start() first)")

    def active_runs(self) -> list[str]:
        """Invocations this runtime is driving right now (running, queued for a slot or waiting)."""
        return self.driver.active_runs()

    async def recover(self) -> list[str]:
        """Take over resumable runs whose process is gone; returns the invocations taken over."""
        self._require_started()
        return await self.supervisor.recover()

    async def sweep_idle_runs(self, *, force: bool = False) -> list[IdleRun]:
        """External runs whose host is gone: idle, then ended (at most once a minute unless ``force``)."""
        return await self.supervisor.sweep_idle_runs(force=force)

    @property
    def agents(self) -> list[str]:
        return self.catalog.names()

    def tool_schema(self, tool_name: str) -> dict[str, Any] | None:
        if tool_name not in self.tools:
            return None
        return self.tools.get(tool_name).parameters

    # -- starting runs --------------------------------------------------------------------------
    async def start_run(self, agent: str, prompt: str, *, session_id: str | None = None, script: Any = None) -> str:
        """Create a queued run and start driving it; returns its invocation id.

        A prompt or script that could not be stored and shown raises :class:`RequestRejected` (a ValueError).
        """
        check_json_value({"prompt": prompt, "script": script}, "run")
        spec = self.catalog.get(agent)
        messages = [{"role": "system", "content": spec.system_prompt}, {"role": "user", "content": prompt}]
        ckpt = Checkpoint(agent=agent, messages=messages, prompt_index=1, script=script)
        return await self._create_run(spec, prompt, ckpt, session_id=session_id, parent_id=None)

    async def retry_run(self, invocation_id: str) -> str:
        """A failed run again, from its prompt, as a new invocation in the same session."""
        record, ckpt = await self._finished_run(invocation_id, allowed=(RunState.FAILED,))
        spec = self.catalog.get(ckpt.agent)
        messages = ckpt.messages[: ckpt.prompt_index + 1]
        fresh = Checkpoint(agent=ckpt.agent, messages=messages, prompt_index=ckpt.prompt_index, script=ckpt.script)
        return await self._create_run(
            spec, record.prompt or "", fresh, session_id=record.session_id, parent_id=invocation_id
        )

    async def follow_up(self, invocation_id: str, prompt: str) -> str:
        """A new invocation in the same session that continues the finished run's conversation."""
        check_json_value({"prompt": prompt}, "follow-up")
        record, ckpt = await self._finished_run(
            invocation_id, allowed=(RunState.DONE, RunState.FAILED, RunState.CANCELLED)
        )
        spec = self.catalog.get(ckpt.agent)
        messages = ckpt.conversation_for_follow_up(f"run {invocation_id} ended before this call finished")
        messages.append({"role": "user", "content": prompt})
        fresh = Checkpoint(agent=ckpt.agent, messages=messages, prompt_index=len(messages) - 1, script=ckpt.script)
        return await self._create_run(spec, prompt, fresh, session_id=record.session_id, parent_id=invocation_id)

    async def _finished_run(self, invocation_id: str, *, allowed: Sequence[RunState]) -> tuple[RunRecord, Checkpoint]:
        record = await self.backend.get_run(invocation_id)
        if record is None:
            raise KeyError(f"no run with id {invocation_id!r}")
        latest = await self.backend.latest_checkpoint(invocation_id) if RunState(record.state) in allowed else None
        refusal = finished_run_refusal(record, allowed, has_checkpoint=latest is not None)
        if refusal is not None or latest is None:
            raise ValueError(refusal)
        return record, Checkpoint.from_json(latest[1])

    async def _create_run(
        self, spec: AgentSpec, prompt: str, ckpt: Checkpoint, *, session_id: str | None, parent_id: str | None
    ) -> str:
        self._require_started()
        model = self.catalog.build_model(spec.name, ckpt.script)  # bad scripts fail here, before any write
        tools = self.tools.subset(spec.tools)
        invocation_id = f"inv_{uuid.uuid4().hex[:16]}"
        session_id = session_id or f"ses_{uuid.uuid4().hex[:16]}"
        info = await self.backend.session_info(session_id)
        workspace = Path(info["workspace"]) if info and info.get("workspace") else self.workspaces_dir / session_id
        workspace.mkdir(parents=True, exist_ok=True)
        ckpt_id = ckpt.next_id(invocation_id)
        state = ckpt.to_state()

        def create(tx: StoreTx) -> None:
            tx.runs.ensure_session(session_id, agent=spec.name, workspace=str(workspace))
            tx.runs.ensure(
                invocation_id,
                session_id,
                agent=spec.name,
                prompt=prompt,
                state=RunState.QUEUED,
                parent_id=parent_id,
                owner=self.owner,
            )
            tx.checkpoints.save(ckpt_id, invocation_id, session_id, state, ckpt.messages, first_index=0)

        await self.backend.write(create)
        run = DrivenRun(
            invocation_id=invocation_id,
            session_id=session_id,
            agent=spec,
            model=model,
            tools=tools,
            ctx=self.driver.tool_context(spec, workspace, session_id, invocation_id),
            ckpt=ckpt,
            db_state=RunState.QUEUED,
            saved_messages=len(ckpt.messages),
        )
        self.driver.spawn(run)
        return invocation_id

    # -- decisions, cancel, interrupted runs ---------------------------------------------------------
    async def decide_and_resume(self, hitl_id: str, decision: Decision) -> HITLRecord:
        """Commit a decision (:meth:`SQLHITLBackend.decide`) and resume the run waiting for it.

        A run this process drives and that waits for this request is handed the decision: it commits the decision
        and the call it lets run in one transaction (resume.py) and starts the call. Otherwise the decision is
        committed alone and the waiting run resumes from the database: at once when it is driven here, through
        the decision watcher of whichever process drives it.
        """
        handed = self.driver.hand_decision(hitl_id, decision)
        if handed is not None:
            taken = await handed
            if taken is not None:
                return taken
        record = await self.backend.decide(hitl_id, decision)
        watcher = self.driver.watcher
        if watcher is not None:
            watcher.resolve([record])
        return record

    async def cancel_run(self, invocation_id: str) -> None:
        """Stop the run and cancel its pending requests; works for runs driven by other processes too."""
        task = self.driver.task_of(invocation_id)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        reviewer = self.backend.reviewer
        record = await self.backend.get_run(invocation_id)
        if record is None:
            raise KeyError(f"no run with id {invocation_id!r}")
        end = BlockEvent(
            block_id=f"{invocation_id}:end",
            kind=BlockKind.END,
            op=BlockOp.APPLY,
            data={"state": RunState.CANCELLED.value, "reason": f"cancelled by {reviewer}"},
            session_id=record.session_id,
            invocation_id=invocation_id,
            ts_ms=now_ms(),
        )

        def cancel(tx: StoreTx) -> None:
            current = tx.runs.state_and_owner(invocation_id)
            if current is None:
                raise KeyError(f"no run with id {invocation_id!r}")
            if current[0].finished:
                raise ValueError(f"run {invocation_id} is already {current[0].value}")
            # Read under the write lock: no request of this run can be created before the commit.
            for pending in tx.requests.pending(invocation_id=invocation_id):
                tx.requests.decide(
                    pending["hitl_id"],
                    None,
                    status=HITLStatus.CANCELLED,
                    reviewer=reviewer,
                    decision=DecisionKind.CANCEL.value,
                    message="run cancelled",
                )
            tx.runs.set_state(invocation_id, RunState.CANCELLED, error=f"cancelled by {reviewer}")
            tx.timeline.append([end])

        try:
            await self.backend.write(cancel)
        except RunStateConflict as exc:
            raise ValueError(f"run {invocation_id} changed while it was being cancelled; try again ({exc})") from exc

    async def rerun_or_abort(
        self, invocation_id: str, action: Literal["rerun", "abort"], reason: str = "aborted by operator"
    ) -> None:
        """The calls a dead process left running: re-run them (idempotent tools only) or abort them."""
        self._require_started()
        if action not in ("rerun", "abort"):
            raise ValueError("action must be 'rerun' or 'abort'")
        if self.driver.is_driving(invocation_id):
            raise ValueError(self._driven_here(invocation_id))
        record = await self.backend.get_run(invocation_id)
        if record is None:
            raise KeyError(f"no run with id {invocation_id!r}")
        if record.state != RunState.INTERRUPTED.value:
            raise ValueError(f"run {invocation_id} is {record.state}, not interrupted")
        run = await self.driver.load_run(record)
        running = run.ckpt.running_calls()
        if action == "rerun":
            refusal = _rerun_refusal(run)
            if refusal is not None:
                raise ValueError(refusal)
        claimed = await self.backend.write(
            lambda tx: tx.runs.claim(invocation_id, self.owner, expected_owner=record.owner)
        )
        if not claimed:
            raise ValueError(f"run {invocation_id} was taken over by another process meanwhile")
        events = []
        for call in running:
            if action == "rerun":
                call.status = CallStatus.APPROVED
                events.append(
                    run.event(run.tool_block(call.call_id), BlockKind.TOOL_USE, BlockOp.PATCH, {"rerun": True})
                )
            else:
                call.status = CallStatus.ABORTED
                call.result = f"<aborted: {reason}>"
                call.ok = False
                events.append(run.tool_finished_event(call, duration_ms=None))
        await self.driver.commit(run, RunState.QUEUED, events=events)
        self.driver.spawn(run)

    # -- waiting for runs -----------------------------------------------------------------------
    async def wait_for_run(self, invocation_id: str, timeout: float | None = None) -> RunRecord:
        """The run's record once it is finished (done, failed or cancelled), whichever process drove it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        feed = self.backend.feed
        task = self.driver.task_of(invocation_id)
        if task is not None:  # driven here: no need to re-read the run on every database change
            await asyncio.wait({task}, timeout=timeout)
            given_up = self.driver.given_up_reason(invocation_id)
            if given_up is not None:
                raise WriteRetriesExhausted(f"run {invocation_id} given up: {given_up}")
        while True:
            token = feed.token()
            record = await self.backend.get_run(invocation_id)
            if record is None:
                raise KeyError(f"no run with id {invocation_id!r}")
            if RunState(record.state).finished:
                return record
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError(f"run {invocation_id} is still {record.state} after {timeout} s")
            await wait_for_change(feed, token, 1.0 if remaining is None else min(remaining, 1.0))

    def _driven_here(self, invocation_id: str) -> str:
        return f"run {invocation_id} is being driven by this process"

    async def retry_refusal(self, invocation_id: str) -> str | None:
        """Why Retry would be refused for this run now, or None when it would be accepted.

        Retry is :meth:`retry_run` for a failed run and :meth:`rerun_or_abort` ("rerun") for an
        interrupted one; this asks the same questions they do, in the same words, without acting.
        """
        record = await self.backend.get_run(invocation_id)
        if record is None:
            return f"no run with id {invocation_id!r}"
        if record.state == RunState.INTERRUPTED.value:
            if self.driver.is_driving(invocation_id):
                return self._driven_here(invocation_id)
            try:
                run = await self.driver.load_run(record)
            except Exception as exc:
                return f"run {invocation_id} cannot be loaded: {exc}"
            return _rerun_refusal(run)
        has_checkpoint = (
            record.state == RunState.FAILED.value and await self.backend.latest_checkpoint(invocation_id) is not None
        )
        return finished_run_refusal(record, (RunState.FAILED,), has_checkpoint=has_checkpoint)
