"""The runtime: runs agents on asyncio, suspends them at the approval gate, resumes them exactly once.

Rules the code below keeps:

* A decision is committed (``backend.decide``) before anything acts on it; the runner only reads it.
* The gate writes a turn's requests, their ``hitl`` blocks, the ``tool_use`` blocks and the checkpoint
  in one transaction, then the run waits on a future: no thread, no slot of the concurrency cap.
* A call is committed as ``running`` before its tool executes and ``done`` after. A process that dies
  in between leaves ``running`` behind; recovery then marks the run interrupted instead of guessing.
* Every write checks, in the same transaction, that this process still owns the run and that nobody
  cancelled it, so two processes never drive one run.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLRecord, HITLStatus, HITLType
from reviewer_app.domain.limits import check_json_value, scrub_text
from reviewer_app.domain.records import NewRequest, RunRecord
from reviewer_app.domain.rule_outcome import verdict_message
from reviewer_app.domain.runs import RunState, RunStateConflict
from reviewer_app.domain.sanitize import redact_secrets
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp, ToolStatus
from reviewer_app.hitl import SQLHITLBackend, WriteRetriesExhausted
from reviewer_app.persistence.blobs import STATE_FORMAT
from reviewer_app.persistence.store import StoreTx, now_ms
from reviewer_app.runtime.agents import AgentCatalog, AgentSpec
from reviewer_app.runtime.checkpoint import CallStatus, Checkpoint, PendingCall
from reviewer_app.runtime.gate import GateResult, RuleSettlement, apply_outcome, gate_call, result_text, screen_turn
from reviewer_app.runtime.liveness import settle_dead_owners
from reviewer_app.runtime.models import ModelClient, ModelTurn, ToolCall
from reviewer_app.runtime.process_groups import kill_process_group
from reviewer_app.runtime.recovery import new_owner_id, owner_is_gone
from reviewer_app.runtime.tools import ToolContext, ToolRegistry, builtin_tools
from reviewer_app.runtime.watcher import DecisionWatcher, wait_for_change

log = logging.getLogger(__name__)

RESUMABLE = (RunState.QUEUED, RunState.RUNNING, RunState.WAITING, RunState.INTERRUPTED)
STREAM_FLUSH_S = 0.25


class RunStopped(Exception):
    """The run was cancelled or taken over elsewhere: stop driving it without writing anything more."""


class BudgetExceeded(Exception):
    """The agent used up its wall-time budget (time waiting for a reviewer does not count)."""


@dataclass(frozen=True)
class _Step:
    """What one commit moves a run to: its state, and the timeline events and requests written with it."""

    state: RunState
    events: Sequence[BlockEvent] = ()
    requests: Sequence[NewRequest] = ()
    settled: Sequence[RuleSettlement] = ()
    """Calls a persistent rule decided: each request is recorded already decided, with its audit row."""


@dataclass
class _Run:
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
    # together with the call they let run (see Runtime._settle).
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


class Runtime:
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
        self._slots: asyncio.Semaphore | None = None
        self._watcher: DecisionWatcher | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._service_tasks: list[asyncio.Task[None]] = []
        self._started = False
        self.heartbeat_interval_s = heartbeat_interval_s
        self._process_groups: dict[str, set[int]] = {}  # per run: shell tools running now (see liveness.py)
        self._given_up: dict[str, str] = {}  # runs whose state the database could not record (see _give_up)

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
                    tx.claim_run(invocation_id, None, expected_owner=self.owner)

            try:
                await self.backend.write(release)
            except Exception:
                log.exception("could not release this process's runs; recovery will take them when it exits")

    @property
    def agents(self) -> list[str]:
        return self.catalog.names()

    def active_runs(self) -> list[str]:
        """Invocations this runtime is driving right now (running, queued for a slot or waiting)."""
        return [inv for inv, task in self._tasks.items() if not task.done()]

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
            tx.ensure_session(session_id, agent=spec.name, workspace=str(workspace))
            tx.ensure_invocation(
                invocation_id,
                session_id,
                agent=spec.name,
                prompt=prompt,
                state=RunState.QUEUED,
                parent_id=parent_id,
                owner=self.owner,
            )
            tx.save_run_state(ckpt_id, invocation_id, session_id, state, ckpt.messages, first_index=0)

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

    def _tool_context(self, spec: AgentSpec, workspace: Path, session_id: str, invocation_id: str) -> ToolContext:
        return ToolContext(
            workspace=workspace,
            session_id=session_id,
            invocation_id=invocation_id,
            shell_timeout_s=spec.shell_timeout_s,
            process_groups=self._process_groups.setdefault(invocation_id, set()),
        )

    def _spawn(self, run: _Run) -> None:
        task = asyncio.get_running_loop().create_task(self._drive(run), name=f"run-{run.invocation_id}")
        self._tasks[run.invocation_id] = task

        def forget(done: asyncio.Task[None]) -> None:
            if self._tasks.get(run.invocation_id) is done:
                del self._tasks[run.invocation_id]
                self._process_groups.pop(run.invocation_id, None)

        task.add_done_callback(forget)

    def _require_started(self) -> None:
        if not self._started or self._slots is None or self._watcher is None:
            raise RuntimeError("the runtime is not started (await runtime.start() first)")

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
            current = tx.run_state_and_owner(invocation_id)
            if current is None:
                raise KeyError(f"no run with id {invocation_id!r}")
            if current[0].finished:
                raise ValueError(f"run {invocation_id} is already {current[0].value}")
            # Read under the write lock: no request of this run can be created before the commit.
            for pending in tx.pending_records(invocation_id=invocation_id):
                tx.settle(
                    pending["hitl_id"],
                    None,
                    status=HITLStatus.CANCELLED,
                    reviewer=reviewer,
                    decision=DecisionKind.CANCEL.value,
                    message="run cancelled",
                )
            tx.set_run_state(invocation_id, RunState.CANCELLED, error=f"cancelled by {reviewer}")
            tx.append_events([end])

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
            lambda tx: tx.claim_run(invocation_id, self.owner, expected_owner=record.owner)
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

    # -- recovery --------------------------------------------------------------------------------
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
        claimed = await self.backend.write(lambda tx: tx.claim_run(record.id, self.owner, expected_owner=record.owner))
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
            tx.set_run_state(record.id, RunState.FAILED, error=f"cannot resume: {exc}")

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
        if record.get("hitl_type") == HITLType.ASK_USER.value:
            return DecisionKind.REJECT.value  # a question cannot be approved
        agent = (record.get("metadata") or {}).get("agent")
        if isinstance(agent, str) and agent in self.catalog:
            return self.catalog.get(agent).policy.default_on_expiry
        return DecisionKind.REJECT.value

    async def _expiry_loop(self) -> None:
        while True:
            try:
                expired = await self.backend.expire_due(default_decision=self._expiry_default)
                if expired and self._watcher is not None:
                    self._watcher.resolve(expired)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("expiry check failed; trying again")
            await asyncio.sleep(self.expiry_interval_s)

    # -- driving one run --------------------------------------------------------------------------
    async def _drive(self, run: _Run) -> None:
        try:
            if run.db_state is RunState.QUEUED:
                # Queued for a slot (new, re-queued after a decision, or resolved after an interruption):
                # take the slot first; a run that still needs a reviewer then goes running -> waiting.
                await self._activate(run, checkpoint=False)
            while True:
                if run.ckpt.pending:
                    await self._settle(run)
                    run.ckpt.close_turn()
                await self._activate(run)
                remaining = run.remaining_s()
                if remaining is not None and remaining <= 0:
                    raise BudgetExceeded(f"wall-time budget of {run.agent.time_budget_s:g} s used up")
                if run.ckpt.turn >= run.agent.max_turns:
                    raise RuntimeError(f"stopped after {run.agent.max_turns} model turns (the agent's max_turns)")
                turn = await self._ask_model(run)
                if not turn.tool_calls:
                    await self._finish(run, turn)
                    return
                await self._gate(run, turn)
        except RunStopped as stopped:
            log.info("stopped driving %s", stopped)
        except WriteRetriesExhausted as exc:
            await self._give_up(run, exc)
        except Exception as exc:
            await self._fail(run, exc)
        finally:
            self._release(run)
            closer = getattr(run.model, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    result = closer()
                    if inspect.isawaitable(result):
                        await result

    async def _activate(self, run: _Run, *, events: Sequence[BlockEvent] = (), checkpoint: bool = True) -> None:
        """Hold a slot of the concurrency cap and be ``running`` (``queued`` while no slot is free)."""
        await self._hold_slot(run)
        await self._commit(run, RunState.RUNNING, events=events, checkpoint=checkpoint)

    async def _hold_slot(self, run: _Run) -> None:
        """Take a slot of the concurrency cap, committing ``queued`` first while none is free."""
        assert self._slots is not None
        if not run.holds_slot:
            if self._slots.locked() and run.db_state is not RunState.QUEUED:
                await self._commit(run, RunState.QUEUED, checkpoint=False)
            await self._slots.acquire()
            run.holds_slot = True

    def _release(self, run: _Run) -> None:
        if run.holds_slot and self._slots is not None:
            self._slots.release()
            run.holds_slot = False

    async def _commit(
        self,
        run: _Run,
        state: RunState,
        *,
        events: Sequence[BlockEvent] = (),
        checkpoint: bool = True,
        requests: Sequence[NewRequest] = (),
        error: str | None = None,
        plan: Callable[[StoreTx], _Step] | None = None,
    ) -> None:
        """One transaction: ownership check, run state, requests, timeline events and checkpoint.

        ``plan``, when given, decides the step inside the transaction (after the ownership check) and
        replaces ``state``, ``events`` and ``requests``: the gate reads the session rules there, so a
        turn costs one database round trip and the rules cannot change between reading and writing.
        """
        if run.clock_started is not None:
            now = time.monotonic()
            elapsed = int((now - run.clock_started) * 1000)
            run.ckpt.active_ms += elapsed
            run.unsaved_ms += elapsed
            run.clock_started = now
        add_ms = run.unsaved_ms
        buffered = list(run.stream_events)
        fixed = _Step(state, events, requests)
        ckpt_id = run.ckpt.next_id(run.invocation_id) if checkpoint else None
        # Append-only: the conversation's new messages and the small state, never the whole conversation again.
        saved = run.saved_messages
        new_messages = run.ckpt.messages[saved:] if checkpoint else []
        ckpt_state = run.ckpt.to_state() if checkpoint and plan is None else None
        owner = self.owner

        def work(tx: StoreTx) -> str | _Step:
            current = tx.run_state_and_owner(run.invocation_id)
            if current is None:
                return "the run no longer exists"
            db_state, db_owner = current
            if db_owner != owner:
                return f"run taken over by {db_owner or 'nobody'}"
            step = plan(tx) if plan is not None else fixed
            if db_state.finished and db_state is not step.state:
                return f"run is {db_state.value}"
            tx.set_run_state(run.invocation_id, step.state, error=error, add_active_ms=add_ms, current=db_state)
            for request in step.requests:
                # The invocation was just read above, so its session exists too: no INSERT OR IGNORE for them.
                tx.create_request(dataclasses.replace(request, checkpoint_id=ckpt_id), ensure_parents=False)
            for decided in step.settled:
                arguments = decided.request.data.get("arguments")
                tx.settle_by_rule(decided.request, decided.verdict, arguments, ensure_parents=False)
            all_events = [*buffered, *step.events] if buffered else step.events
            if all_events:
                tx.append_events(all_events)
            if ckpt_id is not None:
                state_json = ckpt_state if ckpt_state is not None else run.ckpt.to_state()
                tx.save_run_state(
                    ckpt_id, run.invocation_id, run.session_id, state_json, new_messages, first_index=saved
                )
            return step

        try:
            outcome = await self.backend.write(work)
        except RunStateConflict as exc:  # a cancel (or another writer) committed after our read: it stands
            raise RunStopped(f"{run.invocation_id}: {exc}") from exc
        if isinstance(outcome, str):
            raise RunStopped(f"{run.invocation_id}: {outcome}")
        state = outcome.state
        del run.stream_events[: len(buffered)]  # what was committed (nothing else appends meanwhile, but be exact)
        run.saved_messages = saved + len(new_messages)
        run.unsaved_ms -= add_ms
        run.db_state = state
        if state is RunState.RUNNING:
            if run.clock_started is None:
                run.clock_started = time.monotonic()
        else:
            run.clock_started = None

    async def _ask_model(self, run: _Run) -> ModelTurn:
        turn_index = run.ckpt.turn
        blocks = {
            "text": f"{run.invocation_id}:t{turn_index}:text",
            "thinking": f"{run.invocation_id}:t{turn_index}:thinking",
        }
        started: set[str] = set()
        buffered: dict[str, str] = {}
        last_flush = time.monotonic()

        def drain() -> None:
            for kind, text in buffered.items():
                if text:
                    run.stream_events.append(run.event(blocks[kind], BlockKind(kind), BlockOp.DELTA, {"text": text}))
            buffered.clear()

        async def on_delta(kind: str, delta: str) -> None:
            nonlocal last_flush
            if kind not in blocks or not delta:
                return
            delta = scrub_text(delta)
            if kind not in started:
                started.add(kind)
                run.stream_events.append(run.event(blocks[kind], BlockKind(kind), BlockOp.APPLY, {"text": delta}))
            else:
                buffered[kind] = buffered.get(kind, "") + delta
            if time.monotonic() - last_flush >= STREAM_FLUSH_S:
                drain()
                batch, run.stream_events = run.stream_events, []
                try:
                    await self.backend.append_blocks(batch)
                except BaseException:
                    run.stream_events[:0] = batch  # not written: kept for the commit that records the failure
                    raise
                last_flush = time.monotonic()

        remaining = run.remaining_s()
        messages = [dict(m) for m in run.ckpt.messages]
        try:
            async with asyncio.timeout(remaining):
                turn = await run.model.complete(messages, run.tools.schemas(), on_delta=on_delta)
        except BaseException as exc:
            # Everything said before the failure reaches the timeline, committed with the run's error.
            drain()
            self._keep_partial_calls(run, turn_index)
            if isinstance(exc, TimeoutError) and remaining is not None and (run.remaining_s() or 0.0) <= 0:
                raise BudgetExceeded(f"wall-time budget of {run.agent.time_budget_s:g} s used up") from exc
            raise
        drain()
        for kind, text in (("thinking", turn.thinking), ("text", turn.text)):
            if text and kind not in started:
                run.stream_events.append(
                    run.event(blocks[kind], BlockKind(kind), BlockOp.APPLY, {"text": scrub_text(text)})
                )
        run.ckpt.turn += 1
        return turn

    def _keep_partial_calls(self, run: _Run, turn_index: int) -> None:
        """Tool calls a broken answer had begun: on the timeline as calls that did not run, with their fragments."""
        fragments = getattr(run.model, "partial_calls", ())
        for index, fragment in enumerate(fragments):
            call_id = scrub_text(str(fragment.get("id") or f"call_{index}"))
            run.stream_events.append(
                run.event(
                    f"{run.invocation_id}:t{turn_index}:partial:{index}",
                    BlockKind.TOOL_USE,
                    BlockOp.APPLY,
                    {
                        "name": scrub_text(str(fragment.get("name") or "")),
                        "call_id": call_id,
                        "arguments": {},
                        "partial_arguments": scrub_text(str(fragment.get("arguments") or "")),
                        "status": ToolStatus.ERROR.value,
                        "result": "not run: the model's answer broke off before this call was complete",
                    },
                )
            )

    async def _gate(self, run: _Run, turn: ModelTurn) -> None:
        """Record the assistant turn and its calls; requests for gated ones, all in one transaction.

        The session rules are read in that transaction (``plan``), under its write lock: a rule added
        meanwhile cannot be missed, and the turn costs one round trip to the database thread.
        """
        screened, refused_by_id = screen_turn(turn)  # poison arguments become error results, never a crash
        turn = _with_run_unique_call_ids(screened, run.ckpt.messages)
        refused = {  # the same calls in the same order, some renamed
            unique.id: refused_by_id[original.id]
            for original, unique in zip(screened.tool_calls, turn.tool_calls, strict=True)
            if original.id in refused_by_id
        }
        run.ckpt.add_assistant_turn(turn)

        def plan(tx: StoreTx) -> _Step:
            rules = tx.session_rule_entries(run.session_id)
            policy_rules = tx.active_policy_rules(time.time())
            workspace = str(run.ctx.workspace)
            settled: list[RuleSettlement] = []
            events: list[BlockEvent] = []
            requests: list[NewRequest] = []
            pending: list[PendingCall] = []
            for call in turn.tool_calls:
                tool_block = run.tool_block(call.id)
                result = gate_call(
                    call,
                    tools=run.tools,
                    policy=run.agent.policy,
                    rules=rules,
                    agent=run.agent.name,
                    session_id=run.session_id,
                    invocation_id=run.invocation_id,
                    block_id=run.hitl_block(call.id),
                    refused=refused.get(call.id),
                    policy_rules=policy_rules,
                    cwd=workspace,
                )
                pending.append(result.call)
                waived_by = _record_waiver(tx, result)
                events.append(
                    run.event(
                        tool_block,
                        BlockKind.TOOL_USE,
                        BlockOp.APPLY,
                        {
                            "name": call.name,
                            "call_id": call.id,
                            "arguments": call.arguments,
                            "status": ToolStatus.PENDING.value,
                            "gated": result.request is not None,
                            **({"waived_by": waived_by} if waived_by else {}),
                        },
                    )
                )
                if result.request is not None:
                    requests.append(result.request)
                    events.append(
                        run.event(
                            run.hitl_block(call.id),
                            BlockKind.HITL,
                            BlockOp.APPLY,
                            {
                                "hitl_id": result.request.hitl_id,
                                "hitl_type": result.request.hitl_type,
                                "tool_name": call.name,
                                "call_id": call.id,
                                "arguments": call.arguments,
                                "question": call.arguments.get("question") if call.name == "ask_user" else None,
                                "status": "pending",
                                "expires_at": result.request.expires_at,
                            },
                            parent_id=tool_block,
                        )
                    )
                elif result.settled is not None:
                    settled.append(result.settled)
                    events.append(self._rule_decided_event(run, call, result.settled, parent_id=tool_block))
                if result.request is None and result.call.status.resolved:
                    events.append(self._tool_finished_event(run, result.call, duration_ms=0))
            run.ckpt.pending = pending
            runs_now = any(c.status is CallStatus.APPROVED for c in pending)
            state = RunState.WAITING if requests and not runs_now else RunState.RUNNING
            return _Step(state, events, requests, settled)

        await self._commit(run, RunState.RUNNING, plan=plan)

    @staticmethod
    def _rule_decided_event(run: _Run, call: ToolCall, settled: RuleSettlement, *, parent_id: str) -> BlockEvent:
        """The timeline's record of a call a persistent rule decided (no human was asked)."""
        verdict = settled.verdict
        return run.event(
            run.hitl_block(call.id),
            BlockKind.HITL,
            BlockOp.APPLY,
            {
                "hitl_id": settled.request.hitl_id,
                "hitl_type": settled.request.hitl_type,
                "tool_name": call.name,
                "call_id": call.id,
                "arguments": call.arguments,
                "status": "decided",
                "decision": "approve" if verdict.effect == "allow" else "reject",
                "reviewer": verdict.decided_by,
                "message": verdict_message(verdict),
            },
            parent_id=parent_id,
        )

    async def _settle(self, run: _Run) -> None:
        """Run approved calls, wait for decisions, until every call of the turn is resolved."""
        assert self._watcher is not None
        while True:
            approved = [c for c in run.ckpt.pending if c.status is CallStatus.APPROVED]
            for call in approved:
                await self._execute(run, call)
            awaiting = [c for c in run.ckpt.pending if c.status is CallStatus.AWAITING_DECISION]
            if not awaiting:
                return
            if run.db_state is not RunState.WAITING:
                await self._commit(run, RunState.WAITING, checkpoint=False)
            self._release(run)
            decided = await self._watcher.wait_any([c.hitl_id for c in awaiting if c.hitl_id])
            events = []
            resolved_ms = now_ms()
            for call in awaiting:
                record = decided.get(call.hitl_id or "")
                if record is None:
                    continue
                apply_outcome(call, record)
                response = record.get("user_response") or {}
                patch: dict[str, Any] = {
                    "status": "decided",
                    "decision": call.decision,
                    "resolved_ms": resolved_ms,
                    "reviewer": response.get("reviewer") if isinstance(response, dict) else None,
                }
                if record.get("status") == HITLStatus.EXPIRED.value:
                    patch["expired"] = True
                if isinstance(response, dict) and response.get("message"):
                    patch["message"] = response["message"]
                if call.run_arguments is not None:
                    patch["edited_arguments"] = call.run_arguments
                events.append(run.event(run.hitl_block(call.call_id), BlockKind.HITL, BlockOp.PATCH, patch))
                if call.status.resolved:
                    events.append(self._tool_finished_event(run, call, duration_ms=0))
            if any(c.status is CallStatus.APPROVED for c in run.ckpt.pending):
                # A call may run now: the outcomes ride on its ``running`` commit (one transaction, not two).
                run.stream_events.extend(events)
            elif events:
                await self._activate(run, events=events)

    async def _execute(self, run: _Run, call: PendingCall) -> None:
        """Exactly once: ``running`` is committed before the tool starts, ``done`` and its result after."""
        remaining = run.remaining_s()
        if remaining is not None and remaining <= 0:
            raise BudgetExceeded(f"wall-time budget of {run.agent.time_budget_s:g} s used up")
        args = call.run_arguments if call.run_arguments is not None else call.arguments
        await self._hold_slot(run)
        call.status = CallStatus.RUNNING
        patch: dict[str, Any] = {"status": ToolStatus.RUNNING.value}
        if call.run_arguments is not None:
            patch["edited_arguments"] = call.run_arguments
        # One commit: the run is running (it holds a slot), this call is ``running`` in the checkpoint,
        # and any decision outcomes waiting in ``stream_events`` are written with it.
        await self._commit(
            run,
            RunState.RUNNING,
            events=[run.event(run.tool_block(call.call_id), BlockKind.TOOL_USE, BlockOp.PATCH, patch)],
        )
        started = time.monotonic()
        try:
            async with asyncio.timeout(remaining):
                outcome = await run.tools.execute(
                    call.name, args, run.ctx, validated=call.validated and args is call.arguments
                )
        except TimeoutError as exc:
            call.status = CallStatus.ABORTED
            call.result = "<aborted: the agent's wall-time budget ran out while it was running>"
            call.ok = False
            duration = int((time.monotonic() - started) * 1000)
            await self._commit(run, RunState.RUNNING, events=[self._tool_finished_event(run, call, duration)])
            raise BudgetExceeded(f"wall-time budget of {run.agent.time_budget_s:g} s used up") from exc
        call.status = CallStatus.DONE
        call.ok = outcome.ok
        call.result = result_text(call, outcome.output)
        await self._commit(run, RunState.RUNNING, events=[self._tool_finished_event(run, call, outcome.duration_ms)])

    def _tool_finished_event(self, run: _Run, call: PendingCall, duration_ms: int | None) -> BlockEvent:
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
        return run.event(run.tool_block(call.call_id), BlockKind.TOOL_USE, BlockOp.PATCH, data)

    async def _finish(self, run: _Run, turn: ModelTurn) -> None:
        turn, _ = screen_turn(turn)
        run.ckpt.add_assistant_turn(turn)
        end = run.event(
            f"{run.invocation_id}:end",
            BlockKind.END,
            BlockOp.APPLY,
            {"state": RunState.DONE.value, "active_ms": run.active_ms_now(), "turns": run.ckpt.turn},
        )
        await self._commit(run, RunState.DONE, events=[end])

    async def _give_up(self, run: _Run, exc: WriteRetriesExhausted) -> None:
        """The database cannot record this run's state: never call it failed; release it for another process."""
        log.error("giving up run %s: the database cannot record its state (%s)", run.invocation_id, exc)
        self._given_up[run.invocation_id] = str(exc)
        with contextlib.suppress(Exception):  # one try: when it fails too, recovery sees this process gone later
            await self.backend.write(
                lambda tx: tx.claim_run(run.invocation_id, None, expected_owner=self.owner), retry=False
            )

    async def _fail(self, run: _Run, exc: BaseException) -> None:
        message = redact_secrets(str(exc) or type(exc).__name__)  # stored, shown and logged: never a credential
        if not isinstance(exc, BudgetExceeded | RuntimeError | ValueError):
            log.warning("run %s failed: %s: %s", run.invocation_id, type(exc).__name__, message)
        events = [
            run.event(
                f"{run.invocation_id}:error:{run.ckpt.seq}",
                BlockKind.ERROR,
                BlockOp.APPLY,
                {"message": message, "type": type(exc).__name__},
            ),
            run.event(
                f"{run.invocation_id}:end",
                BlockKind.END,
                BlockOp.APPLY,
                {"state": RunState.FAILED.value, "error": message, "active_ms": run.active_ms_now()},
            ),
        ]
        try:
            await self._commit(run, RunState.FAILED, events=events, error=message)
        except RunStopped:
            pass
        except WriteRetriesExhausted as unavailable:
            await self._give_up(run, unavailable)
        except Exception:
            log.exception("could not record the failure of run %s", run.invocation_id)

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


def _beat(owner: str, groups: dict[str, int | None], tx: StoreTx) -> int:
    return tx.heartbeat(owner, groups)


def _with_run_unique_call_ids(turn: ModelTurn, messages: Sequence[dict[str, Any]]) -> ModelTurn:
    """The turn with every call id unique within the run, before anything is recorded under it.

    Servers stream calls without ids, or number them per message (``call_0`` every turn); blocks, requests
    and tool results are keyed by call id, so a repeat would overwrite an earlier call's record. A missing or
    repeated id is replaced by a fresh one, which is also what the server gets back with the call's result.
    """
    used = {
        str(call.get("id"))
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
    }
    calls = []
    for call in turn.tool_calls:
        call_id = call.id
        if not call_id or call_id in used:
            call_id = f"call_{uuid.uuid4().hex[:24]}"
        used.add(call_id)
        calls.append(call if call_id == call.id else dataclasses.replace(call, id=call_id))
    return dataclasses.replace(turn, tool_calls=tuple(calls))


def _record_waiver(tx: StoreTx, result: GateResult) -> str | None:
    """A gated call a session rule let through, put on the record in the turn's transaction: a request already
    decided (approve) by ``session-rule:<id>``, with its audit row. Returns who decided, or None."""
    if result.waiver is None or result.waived_by is None:
        return None
    rule_id, rule = result.waived_by
    label = f"session-rule:{rule_id}"
    message = f"waived by this session's rule: {rule.describe()}"
    decision = Decision(
        DecisionKind.APPROVE, message=message, args_sha256=args_digest(result.call.arguments), reviewer=label
    )
    tx.create_request(result.waiver, ensure_parents=False)  # the run exists: its session does too
    tx.settle(result.waiver.hitl_id, decision.to_user_response(), reviewer=label, message=message)
    return label
