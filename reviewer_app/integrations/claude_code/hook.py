"""The hook process: one event in, a rule or a reviewer decides, one answer out — and never fails open.

Order of business: read and check the event; if a rule settles it, answer from :mod:`.fast` (standard library
only); otherwise open the full backend, create the request (a watchdog process standing by in case this one is
killed), copy Claude's transcript into the run's timeline, and wait for a decision, a signal, the host going
away or the time-out. Anything that goes wrong on the way becomes the configured fallback answer, with the
reason on stderr: the host's own prompt (``ask``) by default, or ``deny``.

The time-out is a budget measured from the process's start (:func:`budget_deadline`), not from when the backend
finished loading. Database trouble that may pass (a lock, a full disk, a read-only moment, a PostgreSQL restart)
is ridden out within that budget with the one retry policy (:mod:`reviewer_app.persistence.retry`), saying so on
stderr. Writes that are only narration (the run's timeline) never decide the answer. A request this hook leaves
without a decision is settled "answered elsewhere" by its watchdog, or by the next process that opens the database.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

from reviewer_app.integrations.claude_code.events import (
    Answer,
    HookEvent,
    HookInputError,
    Host,
    Verdict,
    read_stdin_bytes,
)
from reviewer_app.integrations.claude_code.request import RequestFields, hook_process_metadata, request_fields

if TYPE_CHECKING:
    from reviewer_app.domain.hitl import HITLRecord
    from reviewer_app.hitl import SQLHITLBackend
    from reviewer_app.integrations.claude_code.host_watch import StdoutWatch
    from reviewer_app.integrations.core import Outcome, ReviewClient
    from reviewer_app.persistence.store import StoreTx

DEFAULT_TIMEOUT_S = 55.0
"""Just under Claude Code's default hook time-out (60 s); ``hook install`` sets both explicitly."""
EXPIRY_GRACE_S = 3
"""``expires_at`` lies this far past the hook's own time-out, so the hook's default answer is what gets recorded."""
LIVENESS_POLL_S = 0.25
BACKEND_BUSY_TIMEOUT_MS = 2_000
"""One statement's wait for SQLite's write lock on the hook's backend path (the app's is 30 s): then the retry
policy takes over, which says so on stderr and stops at the hook's budget."""
_IMPORTED_AT = time.monotonic()


@dataclass(frozen=True)
class HookOptions:
    host: Host
    database: str
    timeout: float = DEFAULT_TIMEOUT_S
    on_error: Verdict = Verdict.ASK
    on_timeout: Verdict = Verdict.ASK
    allow_tools: tuple[str, ...] = ()
    state_dir: Path | None = None
    fast_path: bool = True
    watchdog: bool = True
    transcript: bool = True
    exit_fast: bool = False
    """The caller ends the process right after the answer (``os._exit``): the fast path skips its close-time
    WAL checkpoint (see :meth:`.fast.FastStore.close`)."""
    reviewer_command: tuple[str, ...] = field(default_factory=tuple)
    """How to start ``reviewer-app`` again (the watchdog); empty: this interpreter with ``-m reviewer_app``."""
    started: float | None = None
    """``time.monotonic()`` at the process's start (the command line computes it); None: when hook.py loaded."""
    handover: Any = None
    """The waiting request the lean path created (:class:`.lean.Handover`): this process waits on it."""


def budget_deadline(options: HookOptions) -> float:
    """The ``time.monotonic()`` by which the hook answers: its time-out counted from the process's start."""
    return (options.started if options.started is not None else _IMPORTED_AT) + options.timeout


def _retry_status(stderr: TextIO, deadline: float) -> Any:
    """What the retry policy's status becomes on the hook's stderr (the operator's terminal or the host's log)."""

    def say(status: str | None) -> None:
        if status is not None:  # None: the trouble passed, or the retries ended (the outcome is said after)
            left = max(deadline - time.monotonic(), 0.0)
            _say(stderr, f"reviewer-app hook: {status} (for up to {left:.0f} s more before falling back)")

    return say


def fallback(verdict: Verdict, reason: str) -> Answer:
    """The answer when Reviewer cannot decide: the host's own prompt, or a deny that says why
    (:func:`.answers.fallback_parts`, which the lean waiter answers with too)."""
    from reviewer_app.integrations.claude_code.answers import fallback_parts

    value, text = fallback_parts(verdict.value, reason)
    return Answer(Verdict(value), text)


def run_hook(options: HookOptions, stdin: BinaryIO, stdout: TextIO, stderr: TextIO) -> int:
    """The whole hook: an answer in the host's format (its profile's), or none for PermissionRequest ``ask``."""
    from reviewer_app.integrations.hosts.registry import profile_for

    profile = profile_for(options.host)
    event_name = profile.default_event
    try:
        payload = read_stdin_bytes(stdin)
        event_name = profile.event_name_in(payload)
        event = profile.parse(payload)
        answer = answer_event(event, options, stderr)
    except HookInputError as exc:
        _say(stderr, f"reviewer-app hook: bad event: {exc}")
        answer = fallback(options.on_error, str(exc))
    except BaseException as exc:  # the one place every failure ends: never a crash into "proceed"
        _say(stderr, f"reviewer-app hook: {type(exc).__name__}: {exc}")
        answer = fallback(options.on_error, f"{type(exc).__name__}: {exc}")
    reply = profile.render(answer, event_name)
    try:
        if reply.stdout is not None:
            stdout.write(reply.stdout + "\n")
        stdout.flush()
    except (BrokenPipeError, OSError):  # the host stopped listening: nothing left to tell it
        pass
    return reply.exit_code


def _say(stderr: TextIO, message: str) -> None:
    try:
        stderr.write(message + "\n")
        stderr.flush()
    except (OSError, ValueError):
        pass


def answer_event(event: HookEvent, options: HookOptions, stderr: TextIO) -> Answer:
    prepared = None
    if options.handover is not None:  # the lean path created the waiting request: wait on it
        lean = options.handover
        diff = (lean.row or {}).get("data", {}).get("diff")
        fields = request_fields(
            event,
            hitl_id=lean.hitl_id,
            title=lean.title,
            extra={"diff": diff} if diff is not None else None,
            metadata=lean.metadata,
            expires_at=lean.expires_at,
        )
        prepared = Prepared(fields, lean.watcher)
    elif options.fast_path:
        settled, prepared = answer_fast(event, options, stderr)
        if settled is not None:
            return settled
    import asyncio

    return asyncio.run(review_event(event, options, stderr, prepared))


@dataclass
class Prepared:
    """A waiting request the fast path already created (and the watchdog it started first)."""

    fields: RequestFields
    watcher: Any = None


def _waiting_fields(event: HookEvent, options: HookOptions, title: str | None) -> tuple[RequestFields, int]:
    from reviewer_app.integrations.claude_code.diffs import diff_for

    extra: dict[str, Any] = {}
    diff = diff_for(event.tool_name, event.tool_input, event.cwd)
    if diff is not None:
        extra["diff"] = diff
    left = budget_deadline(options) - time.monotonic()
    expires_at = int(time.time() + left) + EXPIRY_GRACE_S
    fields = request_fields(event, title=title, extra=extra, metadata=hook_process_metadata(), expires_at=expires_at)
    return fields, expires_at


# -- the fast path (standard library only) -------------------------------------------------------------------------
def answer_fast(
    event: HookEvent, options: HookOptions, stderr: TextIO | None = None
) -> tuple[Answer | None, Prepared | None]:
    """With ``sqlite3`` alone: settle the call when a rule allows it, else create its waiting request.

    ``(None, None)`` when the database cannot go this way (PostgreSQL, a new or other-revision database). Its
    writes ride out a lock or a full disk within the hook's budget, as the backend's do.
    """
    from reviewer_app.integrations.claude_code.fast import BUSY_TIMEOUT_MS, FastStore, hook_settlement
    from reviewer_app.persistence.retry import with_retry

    deadline = budget_deadline(options)
    status = _retry_status(stderr or sys.stderr, deadline)

    store = FastStore.open(options.database)
    if store is None:
        return None, None
    connection = store.connection

    def within_budget(write: Any) -> Any:
        """One try of ``write`` whose wait for the lock ends with the budget, then the retry policy's next."""
        left_ms = int(max(deadline - time.monotonic(), 0.05) * 1000)
        connection.execute(f"PRAGMA busy_timeout = {min(BUSY_TIMEOUT_MS, left_ms)}")
        return write()

    watcher = None
    skip_checkpoint = False
    try:
        # The title is the run's first prompt, read from the transcript: only a new run needs it.
        title = None if store.run_exists(event.run_id) else _title(event, options)
        now = time.time()
        settlement = hook_settlement(
            event.tool_name,
            event.tool_input,
            store.session_rules(event.session_id, event.tool_name),
            options.allow_tools,
            cwd=event.cwd,
            policy_rules=store.policy_rules(now, event.tool_name),
            agent=event.host.value,
            session_id=event.session_id,
            now=now,
        )
        if settlement is not None:
            fields = request_fields(event, title=title)
            decision = settlement.decision(fields.arguments)
            if with_retry(
                lambda: within_budget(
                    lambda: store.settle(fields, decision, workspace=event.cwd, rule_id=settlement.rule_id)
                ),
                on_status=status,
                deadline=deadline,
            ):
                skip_checkpoint = options.exit_fast
                return Answer(Verdict.ALLOW if settlement.allow else Verdict.DENY, settlement.message), None
            return None, None  # asked before under this id: the backend path reports what became of it
        fields, expires_at = _waiting_fields(event, options, title)
        if options.watchdog:  # up before the request exists: a SIGKILL from here on is noticed
            from reviewer_app.integrations.claude_code.watchdog import start_watchdog

            watcher = start_watchdog(options, fields.hitl_id, deadline=expires_at + 60)
        # An existing id: the backend path finds it.
        with_retry(
            lambda: within_budget(lambda: store.create_pending(fields, workspace=event.cwd)),
            on_status=status,
            deadline=deadline,
        )
        skip_checkpoint = options.exit_fast  # the backend opens its own connections; this one waits for the exit
        prepared = Prepared(fields, watcher)
        watcher = None
        return None, prepared
    finally:
        store.close(checkpoint=not skip_checkpoint)
        if watcher is not None:
            from reviewer_app.integrations.claude_code.watchdog import stop_watchdog

            stop_watchdog(watcher)


def _title(event: HookEvent, options: HookOptions) -> str | None:
    if not options.transcript or not event.transcript_path or event.host is not Host.CLAUDE_CODE:
        return None
    from reviewer_app.integrations.claude_code.transcript import first_prompt

    return first_prompt(Path(event.transcript_path), event.run_id)


# -- the full path -------------------------------------------------------------------------------------------------
def settle_by_rule_tx(
    tx: StoreTx, fields: RequestFields, allow_tools: tuple[str, ...], workspace: str | None
) -> HITLRecord | None:
    """In one transaction: show the session and run, and settle the call if a rule allows it (the backend's twin of
    :meth:`.fast.FastStore.settle`)."""
    from reviewer_app.domain.records import NewRequest
    from reviewer_app.integrations.claude_code.fast import hook_settlement

    fields.check_limits()  # the door every writer passes (the fast path's twin does the same)
    tx.runs.ensure_with_session(
        fields.invocation_id,
        fields.session_id,
        agent=fields.agent,
        workspace=workspace,
        prompt=fields.title,
        external=True,
    )
    now = time.time()
    settlement = hook_settlement(
        fields.tool_name,
        fields.arguments,
        tx.waivers.entries(fields.session_id),
        allow_tools,
        cwd=workspace,
        policy_rules=tx.rules.active(now),
        agent=fields.agent,
        session_id=fields.session_id,
        now=now,
    )
    if settlement is None or tx.requests.get(fields.hitl_id) is not None:
        return None
    decision = settlement.decision(fields.arguments)
    tx.requests.create(
        NewRequest(
            hitl_id=fields.hitl_id,
            hitl_type=fields.hitl_type,
            session_id=fields.session_id,
            invocation_id=fields.invocation_id,
            data=fields.request_data(),
            metadata=fields.request_metadata(),
            tool_name=fields.tool_name,
            tool_call_id=fields.tool_call_id,
            expires_at=fields.expires_at,
            external=True,
        ),
        ensure_parents=False,
    )
    assert decision.reviewer is not None
    record = tx.requests.decide(
        fields.hitl_id, decision.to_user_response(), reviewer=decision.reviewer, message=decision.message
    )
    if settlement.rule_id is not None:
        tx.rules.record_hit(settlement.rule_id)
    return record


async def review_event(
    event: HookEvent, options: HookOptions, stderr: TextIO, prepared: Prepared | None = None
) -> Answer:
    """Ask a reviewer on the full backend and wait; see the module docstring for everything that can end it."""
    from reviewer_app.integrations.claude_code.hook_backend import load_hook_backend

    backend_class = load_hook_backend()
    from reviewer_app.integrations.core import Outcome

    watcher = prepared.watcher if prepared is not None else None
    answered = False
    deadline = budget_deadline(options)
    try:
        backend = backend_class(
            options.database,
            retry_until=deadline,
            on_db_status=_retry_status(stderr, deadline),
            busy_timeout_ms=BACKEND_BUSY_TIMEOUT_MS,
            checkpoint_on_commit=True,  # one process per tool call: no thread of its own to checkpoint later
        )
        try:
            await _narrate(backend.settle_abandoned_hooks(), stderr)  # requests of hooks that died before this one
            if prepared is not None:
                fields = prepared.fields
            else:
                fields, expires_at = _waiting_fields(event, options, _title(event, options))
                settled = await backend.write(lambda tx: settle_by_rule_tx(tx, fields, options.allow_tools, event.cwd))
                if settled is not None:
                    return answer_for(Outcome.from_record(settled), event)
                if options.watchdog:
                    from reviewer_app.integrations.claude_code.watchdog import start_watchdog

                    watcher = start_watchdog(options, fields.hitl_id, deadline=expires_at + 60)
            outcome = await _wait_for_decision(backend, event, fields, options, stderr)
            answered = True
            return answer_for(outcome, event) if isinstance(outcome, Outcome) else outcome
        finally:
            await backend.aclose()
    finally:
        if options.handover is not None and options.handover.stdout_watch is not None:
            options.handover.stdout_watch.stop()  # the answer is this process's now, whoever reads it
        # Failed on the way (the request may still be pending): the watchdog outlives this process and
        # withdraws it as answered elsewhere. Answered: nothing is left for the watchdog to do.
        if watcher is not None and answered:
            from reviewer_app.integrations.claude_code.watchdog import stop_watchdog

            stop_watchdog(watcher)


async def _wait_for_decision(
    backend: SQLHITLBackend, event: HookEvent, fields: RequestFields, options: HookOptions, stderr: TextIO
) -> Outcome | Answer:
    import asyncio
    import signal

    from reviewer_app.domain.hitl import HITLStatus
    from reviewer_app.integrations.core import Outcome, ReviewClient

    client = ReviewClient(backend, agent=fields.agent)
    call = fields.external_call()
    record = await client.submit(call)
    if record["hitl_id"] != fields.hitl_id:  # its tool_use id was used by another call: asked as a new request
        import dataclasses

        fields = dataclasses.replace(fields, hitl_id=str(record["hitl_id"]))
    from reviewer_app.integrations.claude_code.timeline import TimelineWriter

    # The timeline is written even when a reviewer was quicker than this process: the fast path showed the
    # request before the backend loaded, and a decision may already be there.
    timeline = TimelineWriter(backend, event, options.state_dir if options.transcript else None)
    await _narrate(timeline.request_shown(fields), stderr)
    if record["status"] != HITLStatus.PENDING.value:
        outcome = await client.outcome_of(record)
        await _narrate(timeline.settled(outcome), stderr)
        return outcome

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    stopped_by: list[str] = []

    def on_signal(name: str) -> None:
        stopped_by.append(name)
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, on_signal, sig.name)
        except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover - Windows
            pass
    early_watch = options.handover.stdout_watch if options.handover is not None else None
    watch_host = asyncio.create_task(_watch_host(stop, stopped_by, early_watch))
    remaining = max(budget_deadline(options) - time.monotonic(), 0.0)
    waiting = asyncio.create_task(client.wait(fields.hitl_id, timeout=remaining))
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({waiting, stopping}, return_when=asyncio.FIRST_COMPLETED)
        if waiting.done():
            try:
                outcome = waiting.result()
            except TimeoutError:
                outcome_or_answer = await _expire(backend, client, fields, options)
                settled = outcome_or_answer if isinstance(outcome_or_answer, Outcome) else None
                await _narrate(timeline.settled(settled), stderr)
                return outcome_or_answer
            await _narrate(timeline.settled(outcome), stderr)
            return outcome
        why = stopped_by[0] if stopped_by else "stopped"
        _say(stderr, f"reviewer-app hook: {why}: the request leaves the inbox (answered elsewhere)")
        if await client.abandon(fields.hitl_id):
            await _narrate(timeline.abandoned(why), stderr)
            return fallback(options.on_error, f"the hook was stopped ({why})")
        return await client.outcome_of(await backend.get(fields.hitl_id) or record)
    finally:
        for task in (waiting, stopping, watch_host):
            task.cancel()
        await asyncio.gather(waiting, stopping, watch_host, return_exceptions=True)
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            try:
                loop.remove_signal_handler(sig)
            except (NotImplementedError, RuntimeError, ValueError):  # pragma: no cover
                pass


async def _narrate(write: Awaitable[Any], stderr: TextIO) -> None:
    """A write that only tells the story (the timeline, a sweep): its failure is said, never the hook's answer."""
    try:
        await write
    except Exception as exc:
        _say(stderr, f"reviewer-app hook: not recorded on the timeline ({type(exc).__name__}: {exc})")


async def _watch_host(stop: Any, stopped_by: list[str], early_watch: StdoutWatch | None = None) -> None:
    """Notice the host going away without a signal, as it happens: its stdout pipe closing (a thread blocked in
    ``poll`` wakes the loop), or this process re-parented (Linux: a parent-death signal; elsewhere a poll)."""
    import asyncio

    loop = asyncio.get_running_loop()
    parent = os.getppid()

    def host_left(why: str) -> None:
        if not stop.is_set():
            stopped_by.append(why)
            stop.set()

    def check_parent() -> None:
        if os.getppid() != parent:
            host_left("the host process exited")

    def stdout_closed() -> None:
        loop.call_soon_threadsafe(host_left, "the host stopped reading the answer")

    # The lean path's watch, armed when it wrote the request, is taken over; without one, a watch starts now.
    stdout_watch = early_watch if early_watch is not None and early_watch.retarget(stdout_closed) else None
    if stdout_watch is None:
        from reviewer_app.integrations.claude_code.host_watch import StdoutWatch

        stdout_watch = StdoutWatch.start(stdout_closed)
    death_signal = _parent_death_signal(loop, check_parent)
    try:
        check_parent()  # it may have died before the signal was armed
        while not stop.is_set():
            try:  # with the signal armed, the events alone end the wait; elsewhere the parent is polled
                await asyncio.wait_for(stop.wait(), None if death_signal is not None else LIVENESS_POLL_S)
            except TimeoutError:
                check_parent()
    finally:
        if stdout_watch is not None:
            stdout_watch.stop()
        if death_signal is not None:
            _set_parent_death_signal(0)
            loop.remove_signal_handler(death_signal)


_PR_SET_PDEATHSIG = 1


def _set_parent_death_signal(signum: int) -> bool:
    """``prctl(PR_SET_PDEATHSIG)`` (Linux): the kernel sends ``signum`` when the parent thread ends; 0 disarms."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        return bool(ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _parent_death_signal(loop: Any, check_parent: Any) -> int | None:
    """Arm a parent-death signal whose handler checks the parent (it also comes when only the host's spawning
    thread ended, so it never stops the hook alone); None where there is none: the caller polls."""
    import signal

    try:
        signum = int(signal.SIGUSR2)
        loop.add_signal_handler(signum, check_parent)
    except (NotImplementedError, RuntimeError, ValueError, AttributeError):  # pragma: no cover - Windows
        return None
    if _set_parent_death_signal(signum):
        return signum
    loop.remove_signal_handler(signum)
    return None


async def _expire(
    backend: SQLHITLBackend, client: ReviewClient, fields: RequestFields, options: HookOptions
) -> Outcome | Answer:
    """Record the time-out like an expiry, with the configured default; a decision that just won stands."""
    from reviewer_app.domain.hitl import HITLConflict, HITLStatus
    from reviewer_app.integrations.claude_code.answers import expiry_response

    response = expiry_response(options.on_timeout.value, options.timeout)
    try:
        await backend.write(
            lambda tx: tx.requests.decide(
                fields.hitl_id,
                response,
                status=HITLStatus.EXPIRED,
                reviewer="system:expiry",
                decision=response["decision"],
            )
        )
    except HITLConflict:
        record = await backend.get(fields.hitl_id)
        if record is not None:
            return await client.outcome_of(record)
    return fallback(options.on_timeout, f"no reviewer decided within {options.timeout:g} s")


def answer_for(outcome: Outcome, event: HookEvent) -> Answer:
    """A decided request as the host's answer (:func:`.answers.answer_parts`, the lean waiter's mapping too)."""
    from reviewer_app.integrations.claude_code.answers import answer_parts

    verdict, reason, updated_input = answer_parts(outcome, takes_edits="edit" in _decisions(event))
    return Answer(Verdict(verdict), reason, updated_input=updated_input)


def _decisions(event: HookEvent) -> tuple[str, ...]:
    from reviewer_app.integrations.hosts.registry import profile_for

    return profile_for(event.host).decisions(event.event)
