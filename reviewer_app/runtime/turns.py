"""Driving one run, turn by turn: ask the model, gate its calls, wait for decisions, run tools, commit each step.

The exactly-once rules listed in runner.py are kept here: every step is one ``_commit`` transaction that checks
this process still owns the run, a call is committed ``running`` before its tool starts and ``done`` after, and
a decision is only read from the database, never acted on before it is committed there.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.limits import scrub_text
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rule_outcome import verdict_message
from reviewer_app.domain.runs import RunState, RunStateConflict
from reviewer_app.domain.sanitize import redact_secrets
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp, ToolStatus
from reviewer_app.hitl import WriteRetriesExhausted
from reviewer_app.persistence.store import StoreTx, now_ms
from reviewer_app.runtime.checkpoint import CallStatus, PendingCall
from reviewer_app.runtime.core import RuntimeCore
from reviewer_app.runtime.gate import (
    GateResult,
    RuleSettlement,
    apply_outcome,
    gate_call,
    refuse_unsigned,
    result_text,
    screen_turn,
)
from reviewer_app.runtime.models import ModelTurn, ToolCall
from reviewer_app.runtime.run_state import _Run, _Step

log = logging.getLogger(__name__)

STREAM_FLUSH_S = 0.25


class RunStopped(Exception):
    """The run was cancelled or taken over elsewhere: stop driving it without writing anything more."""


class BudgetExceeded(Exception):
    """The agent used up its wall-time budget (time waiting for a reviewer does not count)."""


class RunDriver(RuntimeCore):
    """Drives the runs of one ``Runtime``: each in its own task, from queued to done, failed or stopped."""

    def _spawn(self, run: _Run) -> None:
        task = asyncio.get_running_loop().create_task(self._drive(run), name=f"run-{run.invocation_id}")
        self._tasks[run.invocation_id] = task
        self._driven[run.invocation_id] = run

        def forget(done: asyncio.Task[None]) -> None:
            if self._tasks.get(run.invocation_id) is done:
                del self._tasks[run.invocation_id]
                self._driven.pop(run.invocation_id, None)
                self._process_groups.pop(run.invocation_id, None)

        task.add_done_callback(forget)

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
            current = tx.runs.state_and_owner(run.invocation_id)
            if current is None:
                return "the run no longer exists"
            db_state, db_owner = current
            if db_owner != owner:
                return f"run taken over by {db_owner or 'nobody'}"
            step = plan(tx) if plan is not None else fixed
            if db_state.finished and db_state is not step.state:
                return f"run is {db_state.value}"
            tx.runs.set_state(run.invocation_id, step.state, error=error, add_active_ms=add_ms, current=db_state)
            for request in step.requests:
                # The invocation was just read above, so its session exists too: no INSERT OR IGNORE for them.
                tx.requests.create(dataclasses.replace(request, checkpoint_id=ckpt_id), ensure_parents=False)
            for decided in step.settled:
                arguments = decided.request.data.get("arguments")
                tx.rules.settle(decided.request, decided.verdict, arguments, ensure_parents=False)
            all_events = [*buffered, *step.events] if buffered else step.events
            if all_events:
                tx.timeline.append(all_events)
            if ckpt_id is not None:
                state_json = ckpt_state if ckpt_state is not None else run.ckpt.to_state()
                tx.checkpoints.save(
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
            rules = tx.waivers.entries(run.session_id)
            policy_rules = tx.rules.active(time.time())
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
            unsigned = await self.backend.unsigned_decisions(decided.values())  # what runs is what was signed
            events = []
            resolved_ms = now_ms()
            for call in awaiting:
                record = decided.get(call.hitl_id or "")
                if record is None:
                    continue
                problem = unsigned.get(call.hitl_id or "")
                if problem is not None:
                    log.error("run %s: %s", run.invocation_id, problem)
                    refuse_unsigned(call, problem)
                    error = {"message": f"{problem}; the call was not run", "hitl_id": call.hitl_id}
                    events.append(run.event(f"{call.hitl_id}:unsigned", BlockKind.ERROR, BlockOp.APPLY, error))
                else:
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
                lambda tx: tx.runs.claim(run.invocation_id, None, expected_owner=self.owner), retry=False
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
    tx.waivers.settle(result.waiver, rule_id, rule, result.call.arguments, ensure_parents=False)
    return f"session-rule:{rule_id}"
