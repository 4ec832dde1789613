"""The runtime: runs agents on asyncio, suspends them at the approval gate, resumes them exactly once.

Rules the code below keeps:

* A decision is committed (``backend.decide``) before anything acts on it; the runner only reads it.
* The gate writes a turn's requests, their ``hitl`` blocks, the ``tool_use`` blocks and the checkpoint
  in one transaction, then the run waits on a future: no thread, no slot of the concurrency cap.
* A call is committed as ``running`` before its tool executes and ``done`` after. A process that dies
  in between leaves ``running`` behind; recovery then marks the run interrupted instead of guessing.
* Every write checks, in the same transaction, that this process still owns the run and that nobody
  cancelled it, so two processes never drive one run.

This module is the runtime's public API (``Runtime``: start/stop, start/retry/follow up/cancel a run,
settle an interrupted one, wait for a run, decide and resume). ``Runtime`` is assembled from one concept
per module: run_state.py (a run in memory), core.py (the attributes its parts share), turns.py (driving
one run: the rules above are kept there) and supervision.py (recovery, heartbeats, expiry).
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
from reviewer_app.runtime.idle_runs import configured_limits
from reviewer_app.runtime.recovery import new_owner_id
from reviewer_app.runtime.run_state import _Run, _Step
from reviewer_app.runtime.supervision import RESUMABLE, RunSupervisor, _beat
from reviewer_app.runtime.tools import ToolRegistry, builtin_tools
from reviewer_app.runtime.turns import (
    STREAM_FLUSH_S,
    BudgetExceeded,
    RunStopped,
    _record_waiver,
    _with_run_unique_call_ids,
)
from reviewer_app.runtime.watcher import DecisionWatcher, wait_for_change

log = logging.getLogger(__name__)

# Names defined here before the runtime was split by concept (run_state, core, turns, supervision): still importable.
__all__ = [
    "RESUMABLE",
    "STREAM_FLUSH_S",
    "BudgetExceeded",
    "RunStopped",
    "Runtime",
    "_Run",
    "_Step",
    "_beat",
    "_record_waiver",
    "_with_run_unique_call_ids",
    "finished_run_refusal",
]


def finished_run_refusal(record: RunRecord, allowed: Sequence[RunState], *, has_checkpoint: bool) -> str | None:
    """Why a finished run cannot be retried or followed up (None: it can): the one predicate for both."""
    if RunState(record.state) not in allowed:
        names = "/".join(s.value for s in allowed)
        return f"run {record.id} is {record.state}; only a {names} run can be used here"
    if not has_checkpoint:
        return f"run {record.id} has no checkpoint (it was not started by this app)"
    return None


def _rerun_refusal(run: _Run) -> str | None:
    """Interrupted calls may run again only when every one of them is declared idempotent."""
    running = run.ckpt.running_calls()
    refused = [c.name for c in running if c.name not in run.tools or not run.tools.get(c.name).idempotent]
    if refused:
        return (
            f"cannot re-run {', '.join(sorted(set(refused)))}: not declared idempotent "
            "(it may have had its effect already); abort instead"
        )
    return None


class Runtime(RunSupervisor):
    """Owns the runs of one process: starting, gating, resuming, expiring, recovering, cancelling.

    The CLI and the GUI each own one. The UI gets no callbacks: it watches the database, which every
    write here goes through (``backend.write``), so the change feed wakes in-process listeners at once.
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
        self.max_concurrent_runs = max_concurrent_runs
        self.owner = owner or new_owner_id()
        self.tools = tools or builtin_tools()
        self.expiry_interval_s = expiry_interval_s
        self.recovery_interval_s = recovery_interval_s
        self._slots = None
        self._watcher = None
        self._tasks = {}
        self._driven = {}
        self._service_tasks = []
        self._started = False
        self.heartbeat_interval_s = heartbeat_interval_s
        # (idle after, ended after) for external runs with no sign of life: see idle_runs.py
        self.idle_limits_s = idle_limits_s or configured_limits()
        self._idle_swept_at = float("-inf")
        self._process_groups = {}
        self._given_up = {}

    # -- lifecycle -----------------------------------------------------------------------------
    async def start(self, *, recover: bool = True) -> None:
        """Start the decision watcher and the expiry loop; take over runs whose process died."""
        if self._started:
            return
        self._started = True
        self._slots = asyncio.Semaphore(self.max_concurrent_runs)
        self._watcher = DecisionWatcher(self.backend)
        self._watcher.start()
        loop = asyncio.get_running_loop()
        self._service_tasks.append(loop.create_task(self._expiry_loop(), name="reviewer-expiry"))
        self._service_tasks.append(loop.create_task(self._heartbeat_loop(), name="reviewer-heartbeat"))
        if recover:
            await self.recover()
            if self.recovery_interval_s:
                self._service_tasks.append(loop.create_task(self._recovery_loop(), name="reviewer-recovery"))

    async def stop(self) -> None:
        """Stop every task; runs stay resumable in the database and are released for another process."""
        if not self._started:
            return
        self._started = False
        for task in self._service_tasks:
            task.cancel()
        driven = list(self._tasks)
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._service_tasks, *self._tasks.values(), return_exceptions=True)
        self._service_tasks.clear()
        self._tasks.clear()
        if self._watcher is not None:
            await self._watcher.stop()
        if driven:

            def release(tx: StoreTx) -> None:
                for invocation_id in driven:
                    tx.runs.claim(invocation_id, None, expected_owner=self.owner)

            try:
                await self.backend.write(release)
            except Exception:
                log.exception("could not release this process's runs; recovery will take them when it exits")

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
        run = _Run(
            invocation_id=invocation_id,
            session_id=session_id,
            agent=spec,
            model=model,
            tools=tools,
            ctx=self._tool_context(spec, workspace, session_id, invocation_id),
            ckpt=ckpt,
            db_state=RunState.QUEUED,
            saved_messages=len(ckpt.messages),
        )
        self._spawn(run)
        return invocation_id

    # -- decisions, cancel, interrupted runs ---------------------------------------------------------
    async def decide_and_resume(self, hitl_id: str, decision: Decision) -> HITLRecord:
        """Commit a decision (:meth:`SQLHITLBackend.decide`), then hand it to the waiting run at once.

        The run (in this or any process) resumes from the database.

        A run this process drives resumes at once with the committed record; the decision watcher
        still wakes runs in other processes (and here, for decisions made elsewhere).
        """
        record = await self.backend.decide(hitl_id, decision)
        if self._watcher is not None:
            self._watcher.resolve([record])
        return record

    async def cancel_run(self, invocation_id: str) -> None:
        """Stop the run and cancel its pending requests; works for runs driven by other processes too."""
        task = self._tasks.get(invocation_id)
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

    async def resolve_interrupted(
        self, invocation_id: str, action: Literal["rerun", "abort"], reason: str = "aborted by operator"
    ) -> None:
        """Settle the calls a dead process left running: re-run them (idempotent tools only) or abort them."""
        self._require_started()
        if action not in ("rerun", "abort"):
            raise ValueError("action must be 'rerun' or 'abort'")
        if invocation_id in self._tasks:
            raise ValueError(self._driven_here(invocation_id))
        record = await self.backend.get_run(invocation_id)
        if record is None:
            raise KeyError(f"no run with id {invocation_id!r}")
        if record.state != RunState.INTERRUPTED.value:
            raise ValueError(f"run {invocation_id} is {record.state}, not interrupted")
        run = await self._load(record)
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
                events.append(self._tool_finished_event(run, call, duration_ms=None))
        await self._commit(run, RunState.QUEUED, events=events)
        self._spawn(run)

    # -- waiting for runs -----------------------------------------------------------------------
    async def wait_for_run(self, invocation_id: str, timeout: float | None = None) -> RunRecord:
        """The run's record once it is finished (done, failed or cancelled), whichever process drove it."""
        deadline = None if timeout is None else time.monotonic() + timeout
        feed = self.backend.feed
        task = self._tasks.get(invocation_id)
        if task is not None:  # driven here: no need to re-read the run on every database change
            await asyncio.wait({task}, timeout=timeout)
            if invocation_id in self._given_up:
                raise WriteRetriesExhausted(f"run {invocation_id} given up: {self._given_up[invocation_id]}")
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

        Retry is :meth:`retry_run` for a failed run and :meth:`resolve_interrupted` ("rerun") for an
        interrupted one; this asks the same questions they do, in the same words, without acting.
        """
        record = await self.backend.get_run(invocation_id)
        if record is None:
            return f"no run with id {invocation_id!r}"
        if record.state == RunState.INTERRUPTED.value:
            if invocation_id in self._tasks:
                return self._driven_here(invocation_id)
            try:
                run = await self._load(record)
            except Exception as exc:
                return f"run {invocation_id} cannot be loaded: {exc}"
            return _rerun_refusal(run)
        has_checkpoint = (
            record.state == RunState.FAILED.value and await self.backend.latest_checkpoint(invocation_id) is not None
        )
        return finished_run_refusal(record, (RunState.FAILED,), has_checkpoint=has_checkpoint)
