"""Driving the runs of one process (``RunDriver``), turn by turn: ask the model, gate its calls, wait for decisions,
dispatch the approved calls, commit each step.

The exactly-once rules listed in runner.py are kept here: every step is one :meth:`RunDriver.commit` transaction
that checks this process still owns the run, a call is committed ``running`` before its tool starts and ``done``
after, and a decision is only read from the database, never acted on before it is committed there.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from reviewer_app.domain.decisions import Decision
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.limits import scrub_text
from reviewer_app.domain.records import NewRequest, RunRecord
from reviewer_app.domain.runs import RunState, RunStateConflict
from reviewer_app.domain.sanitize import redact_secrets
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp, ToolStatus
from reviewer_app.hitl import SQLHITLBackend, WriteRetriesExhausted
from reviewer_app.persistence.blobs import STATE_FORMAT
from reviewer_app.persistence.store import StoreTx
from reviewer_app.runtime.agents import AgentCatalog, AgentSpec
from reviewer_app.runtime.checkpoint import CallStatus, Checkpoint, PendingCall
from reviewer_app.runtime.driven_run import DrivenRun, RunStep, StepCommit
from reviewer_app.runtime.gate import result_text, screen_turn
from reviewer_app.runtime.llm_clients import ModelTurn
from reviewer_app.runtime.resume import DecisionHandoff, copied_calls, decided_step
from reviewer_app.runtime.tools import ToolContext, ToolRegistry
from reviewer_app.runtime.turn_gate import TurnGate
from reviewer_app.runtime.watcher import DecisionWatcher

log = logging.getLogger(__name__)

STREAM_FLUSH_S = 0.25


class RunStopped(Exception):
    """The run was cancelled or taken over elsewhere: stop driving it without writing anything more."""


class BudgetExceeded(Exception):
    """The agent used up its wall-time budget (time waiting for a reviewer does not count)."""


class RunDriver:
    """Drives the runs of one process: each in its own task, from queued to done, failed or stopped.

    A part of ``Runtime``: it owns the concurrency cap, the decision watcher and the tasks of the runs driven here;
    the supervisor hands it the runs it takes over, the public API the runs it starts.
    """

    def __init__(
        self,
        backend: SQLHITLBackend,
        catalog: AgentCatalog,
        tools: ToolRegistry,
        gate: TurnGate,
        *,
        owner: str,
        workspaces_dir: Path,
        max_concurrent_runs: int,
    ) -> None:
        self.backend = backend
        self.catalog = catalog
        self.tools = tools
        self.gate = gate
        self.owner = owner
        self.workspaces_dir = workspaces_dir
        self.max_concurrent_runs = max_concurrent_runs
        self._slots: asyncio.Semaphore | None = None
        self._watcher: DecisionWatcher | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._driven: dict[str, DrivenRun] = {}  # the runs of _tasks: whose agent (the operator's configuration) asked
        self._process_groups: dict[str, set[int]] = {}  # per run: shell tools running now (see liveness.py)
        self._given_up: dict[str, str] = {}  # runs whose state the database could not record (see _give_up)
        self._waiting_on: dict[str, DrivenRun] = {}  # request id -> the run waiting here for its decision
        self._handoffs: dict[str, DecisionHandoff] = {}  # per run: a decision handed to it (see resume.py)

    # -- lifecycle and what other parts may ask ---------------------------------------------------
    def start(self) -> None:
        """Create the concurrency cap and start the decision watcher."""
        self._slots = asyncio.Semaphore(self.max_concurrent_runs)
        self._watcher = DecisionWatcher(self.backend)
        self._watcher.start()

    async def stop(self) -> list[str]:
        """Cancel every run task and stop the watcher; returns the runs that were driven (to release them)."""
        driven = list(self._tasks)
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        self._tasks.clear()
        if self._watcher is not None:
            await self._watcher.stop()
        return driven

    @property
    def started(self) -> bool:
        return self._slots is not None and self._watcher is not None

    @property
    def watcher(self) -> DecisionWatcher | None:
        """The decision watcher (None before :meth:`start`): hand it decisions committed here to wake runs at once."""
        return self._watcher

    def active_runs(self) -> list[str]:
        """Invocations driven right now (running, queued for a slot or waiting)."""
        return [inv for inv, task in self._tasks.items() if not task.done()]

    def is_driving(self, invocation_id: str) -> bool:
        return invocation_id in self._tasks

    def task_of(self, invocation_id: str) -> asyncio.Task[None] | None:
        return self._tasks.get(invocation_id)

    def driven_run(self, invocation_id: str) -> DrivenRun | None:
        return self._driven.get(invocation_id)

    def given_up_reason(self, invocation_id: str) -> str | None:
        """Why a run was given up (the database could not record its state), or None."""
        return self._given_up.get(invocation_id)

    def tool_process_groups(self) -> dict[str, int | None]:
        """Per active run, the process group of the shell tool it runs now (None: none), for the heartbeat."""
        return {inv: min(self._process_groups.get(inv) or (0,)) or None for inv in self.active_runs()}

    def tool_context(self, spec: AgentSpec, workspace: Path, session_id: str, invocation_id: str) -> ToolContext:
        return ToolContext(
            workspace=workspace,
            session_id=session_id,
            invocation_id=invocation_id,
            shell_timeout_s=spec.shell_timeout_s,
            process_groups=self._process_groups.setdefault(invocation_id, set()),
        )

    async def load_run(self, record: RunRecord) -> DrivenRun:
        """A stored run rebuilt from its latest checkpoint, ready to be driven here."""
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
        return DrivenRun(
            invocation_id=record.id,
            session_id=record.session_id,
            agent=spec,
            model=self.catalog.build_model(spec.name, ckpt.script),
            tools=self.tools.subset(spec.tools),
            ctx=self.tool_context(spec, workspace, record.session_id, record.id),
            ckpt=ckpt,
            db_state=RunState(record.state),
            saved_messages=saved,
        )

    def waits_for(self, hitl_id: str) -> bool:
        """Whether a run driven here is waiting for a decision on ``hitl_id`` now (one would be handed to it)."""
        return hitl_id in self._waiting_on

    def hand_decision(self, hitl_id: str, decision: Decision) -> asyncio.Future[HITLRecord | None] | None:
        """Hand a decision to the run waiting here for ``hitl_id``, which commits it with the call it lets run, in
        one transaction (resume.py). Returns the future of the decided record (None: declined, decide it the
        ordinary way), or None when no run here waits for that request."""
        run = self._waiting_on.get(hitl_id)
        if run is None or run.invocation_id in self._handoffs or self._watcher is None:
            return None
        handoff = DecisionHandoff(hitl_id, decision)
        self._handoffs[run.invocation_id] = handoff
        self._watcher.wake_without_record(hitl_id)
        return handoff.answer

    def spawn(self, run: DrivenRun) -> None:
        """Drive ``run`` in its own task until it ends or is stopped."""
        task = asyncio.get_running_loop().create_task(self._drive(run), name=f"run-{run.invocation_id}")
        self._tasks[run.invocation_id] = task
        self._driven[run.invocation_id] = run

        def forget(done: asyncio.Task[None]) -> None:
            if self._tasks.get(run.invocation_id) is done:
                del self._tasks[run.invocation_id]
                self._driven.pop(run.invocation_id, None)
                self._process_groups.pop(run.invocation_id, None)

        task.add_done_callback(forget)

    # -- driving one run --------------------------------------------------------------------------
    async def _drive(self, run: DrivenRun) -> None:
        try:
            if run.db_state is RunState.QUEUED:
                # Queued for a slot (new, re-queued after a decision, or rerun after an interruption):
                # take the slot first; a run that still needs a reviewer then goes running -> waiting.
                await self._activate(run, checkpoint=False)
            while True:
                if run.ckpt.pending:
                    await self._dispatch(run)
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
                await self.commit(run, RunState.RUNNING, plan=self.gate.plan_turn(run, turn))
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

    async def _activate(self, run: DrivenRun, *, events: Sequence[BlockEvent] = (), checkpoint: bool = True) -> None:
        """Hold a slot of the concurrency cap and be ``running`` (``queued`` while no slot is free)."""
        await self._hold_slot(run)
        await self.commit(run, RunState.RUNNING, events=events, checkpoint=checkpoint)

    async def _hold_slot(self, run: DrivenRun) -> None:
        """Take a slot of the concurrency cap, committing ``queued`` first while none is free."""
        assert self._slots is not None
        if not run.holds_slot:
            if self._slots.locked() and run.db_state is not RunState.QUEUED:
                await self.commit(run, RunState.QUEUED, checkpoint=False)
            await self._slots.acquire()
            run.holds_slot = True

    def _release(self, run: DrivenRun) -> None:
        if run.holds_slot and self._slots is not None:
            self._slots.release()
            run.holds_slot = False

    async def commit(
        self,
        run: DrivenRun,
        state: RunState,
        *,
        events: Sequence[BlockEvent] = (),
        checkpoint: bool = True,
        requests: Sequence[NewRequest] = (),
        error: str | None = None,
        plan: Callable[[StoreTx], RunStep] | None = None,
    ) -> None:
        """One transaction: ownership check, run state, requests, timeline events and checkpoint.

        ``plan``, when given, decides the step inside the transaction (after the ownership check) and
        replaces ``state``, ``events`` and ``requests``: the gate reads the session rules there, so a
        turn costs one database round trip and the rules cannot change between reading and writing.
        """
        commit = StepCommit(
            run, RunStep(state, events, requests), owner=self.owner, checkpoint=checkpoint, error=error, plan=plan
        )
        try:
            outcome = await self.backend.write(commit.write)
        except RunStateConflict as exc:  # a cancel (or another writer) committed after our read: it stands
            raise RunStopped(f"{run.invocation_id}: {exc}") from exc
        if isinstance(outcome, str):
            raise RunStopped(f"{run.invocation_id}: {outcome}")
        commit.committed(outcome)

    async def _ask_model(self, run: DrivenRun) -> ModelTurn:
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

    def _keep_partial_calls(self, run: DrivenRun, turn_index: int) -> None:
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

    async def _dispatch(self, run: DrivenRun) -> None:
        """Run the turn's approved calls and wait for decisions, until every call of the turn is finished."""
        assert self._watcher is not None
        while True:
            approved = [c for c in run.ckpt.pending if c.status is CallStatus.APPROVED]
            for call in approved:
                await self._execute(run, call)
            awaiting = [c for c in run.ckpt.pending if c.status is CallStatus.AWAITING_DECISION]
            if not awaiting:
                return
            if run.db_state is not RunState.WAITING:
                await self.commit(run, RunState.WAITING, checkpoint=False)
            self._release(run)
            decided, handoff = await self._wait_for_decisions(run, [c.hitl_id for c in awaiting if c.hitl_id])
            if handoff is not None:
                if decided:  # another decision came at the same moment: the caller decides the ordinary way
                    handoff.decline()
                else:
                    await self._decide_and_dispatch(run, handoff)
                    continue
            unsigned = await self.backend.unsigned_decisions(decided.values())  # what runs is what was signed
            for problem in unsigned.values():
                log.error("run %s: %s", run.invocation_id, problem)
            events = self.gate.apply_decisions(run, awaiting, decided, unsigned)
            if any(c.status is CallStatus.APPROVED for c in run.ckpt.pending):
                # A call may run now: the outcomes ride on its ``running`` commit (one transaction, not two).
                run.stream_events.extend(events)
            elif events:
                await self._activate(run, events=events)

    async def _wait_for_decisions(
        self, run: DrivenRun, hitl_ids: list[str]
    ) -> tuple[dict[str, HITLRecord], DecisionHandoff | None]:
        """Wait until one of ``hitl_ids`` is decided, or a decision on one is handed to this run (hand_decision)."""
        assert self._watcher is not None
        for hitl_id in hitl_ids:
            self._waiting_on[hitl_id] = run
        try:
            decided = await self._watcher.wait_any(hitl_ids)
        except BaseException:
            stranded = self._handoffs.pop(run.invocation_id, None)
            if stranded is not None:
                stranded.decline()  # the run stops: nobody here will take this decision
            raise
        finally:
            for hitl_id in hitl_ids:
                if self._waiting_on.get(hitl_id) is run:
                    del self._waiting_on[hitl_id]
        return decided, self._handoffs.pop(run.invocation_id, None)

    async def _decide_and_dispatch(self, run: DrivenRun, handoff: DecisionHandoff) -> None:
        """Write the handed decision and the call it lets run (or its outcome) in one transaction, then run it."""
        assert self._slots is not None
        call = next((c for c in run.ckpt.pending if c.hitl_id == handoff.hitl_id), None)
        remaining = run.remaining_s()
        if (
            call is None
            or call.status is not CallStatus.AWAITING_DECISION
            or (remaining is not None and remaining <= 0)
            or (not run.holds_slot and self._slots.locked())
        ):
            handoff.decline()  # the ordinary path handles these (queued for a slot, budget used up)
            return
        await self._hold_slot(run)  # a slot is free: taken at once
        pending_before = copied_calls(run.ckpt.pending)
        commit = StepCommit(
            run,
            RunStep(RunState.RUNNING),
            owner=self.owner,
            plan=lambda tx: decided_step(self.gate, run, handoff.hitl_id, pending_before, record_box[-1]),
        )
        record_box: list[HITLRecord] = []
        outcome_box: list[str | RunStep] = []

        def then(tx: StoreTx, record: HITLRecord) -> None:
            record_box.append(record)
            outcome_box.append(commit.write(tx))

        try:
            record = await self.backend.decide(handoff.hitl_id, handoff.decision, then=then)
        except RunStateConflict as exc:  # nothing was written; a cancel stands
            run.ckpt.pending = copied_calls(pending_before)
            handoff.decline()
            raise RunStopped(f"{run.invocation_id}: {exc}") from exc
        except BaseException as exc:  # the decision was refused or not written: the run waits on
            run.ckpt.pending = copied_calls(pending_before)
            handoff.fail(exc)
            if not isinstance(exc, Exception):  # cancelled (the run stops), or the process is exiting
                raise
            return
        handoff.done(record)
        if self._watcher is not None:
            self._watcher.resolve([record])  # anyone else here waiting on it
        outcome = outcome_box[-1]
        if isinstance(outcome, str):
            raise RunStopped(f"{run.invocation_id}: {outcome}")
        commit.committed(outcome)
        started = next(c for c in run.ckpt.pending if c.hitl_id == handoff.hitl_id)
        if started.status is CallStatus.RUNNING:
            await self._run_tool(run, started, remaining)

    async def _execute(self, run: DrivenRun, call: PendingCall) -> None:
        """Exactly once: ``running`` is committed before the tool starts, ``done`` and its result after."""
        remaining = run.remaining_s()
        if remaining is not None and remaining <= 0:
            raise BudgetExceeded(f"wall-time budget of {run.agent.time_budget_s:g} s used up")
        await self._hold_slot(run)
        call.status = CallStatus.RUNNING
        # One commit: the run is running (it holds a slot), this call is ``running`` in the checkpoint,
        # and any decision outcomes waiting in ``stream_events`` are written with it.
        await self.commit(run, RunState.RUNNING, events=[run.call_running_event(call)])
        await self._run_tool(run, call, remaining)

    async def _run_tool(self, run: DrivenRun, call: PendingCall, remaining: float | None) -> None:
        """The tool of a call committed ``running``; ``done`` (or aborted) with its result committed after."""
        args = call.run_arguments if call.run_arguments is not None else call.arguments
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
            await self.commit(run, RunState.RUNNING, events=[run.tool_finished_event(call, duration)])
            raise BudgetExceeded(f"wall-time budget of {run.agent.time_budget_s:g} s used up") from exc
        call.status = CallStatus.DONE
        call.ok = outcome.ok
        call.result = result_text(call, outcome.output)
        await self.commit(run, RunState.RUNNING, events=[run.tool_finished_event(call, outcome.duration_ms)])

    async def _finish(self, run: DrivenRun, turn: ModelTurn) -> None:
        turn, _ = screen_turn(turn)
        run.ckpt.add_assistant_turn(turn)
        end = run.event(
            f"{run.invocation_id}:end",
            BlockKind.END,
            BlockOp.APPLY,
            {"state": RunState.DONE.value, "active_ms": run.active_ms_now(), "turns": run.ckpt.turn},
        )
        await self.commit(run, RunState.DONE, events=[end])

    async def _give_up(self, run: DrivenRun, exc: WriteRetriesExhausted) -> None:
        """The database cannot record this run's state: never call it failed; release it for another process."""
        log.error("giving up run %s: the database cannot record its state (%s)", run.invocation_id, exc)
        self._given_up[run.invocation_id] = str(exc)
        with contextlib.suppress(Exception):  # one try: when it fails too, recovery sees this process gone later
            await self.backend.write(
                lambda tx: tx.runs.claim(run.invocation_id, None, expected_owner=self.owner), retry=False
            )

    async def _fail(self, run: DrivenRun, exc: BaseException) -> None:
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
            await self.commit(run, RunState.FAILED, events=events, error=message)
        except RunStopped:
            pass
        except WriteRetriesExhausted as unavailable:
            await self._give_up(run, unavailable)
        except Exception:
            log.exception("could not record the failure of run %s", run.invocation_id)
