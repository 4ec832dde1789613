"""The waiting hook on ``sqlite3`` alone: after the lean path wrote a waiting request (:class:`.lean.Handover`), wait
for its decision and answer, without loading SQLAlchemy, asyncio or the backend.

Why: a permission hook that nothing settles used to load the full backend (~0.3-0.45 s of CPU) only to wait; an
agent's hook storm and the test suite start hundreds of them. This waiter keeps every guarantee of the full path's
wait (:func:`.hook.review_event`), with the same rows:

1. the timeline: Claude's transcript copied in and the request's ``hitl`` block shown, its settlement patched
   (:class:`reviewer_app.integrations.hosts.lean_session.SessionWrites`' statements; ``TimelineWriter``'s data).
   Narration only: a failure is said on stderr, never decides the answer;
2. the wait itself: ``PRAGMA data_version`` every :data:`POLL_S` (the SQLite change feed's interval) or at once on
   a wake-up hint (:mod:`reviewer_app.persistence.wakeup`), then the request's status;
3. a decided request acted on only as its audit row signed it (:func:`reviewer_app.domain.audit.
   decided_audit_problems`, the store's own check): an unsigned or changed decision is an error (said on the
   timeline and on stderr) and the ``--on-error`` answer, never an allow;
4. the decision mapped by :func:`.answers.answer_parts`, the full path's own mapping;
5. at the budget, the compare-and-set expiry with its audit row; a decision that won meanwhile stands;
6. on SIGTERM, SIGHUP or SIGINT, the host's stdout closing or the parent leaving: the request withdrawn as answered
   elsewhere, then the fallback answer;
7. locks, a full disk and a read-only database ridden out with the one retry policy
   (:mod:`reviewer_app.persistence.retry`) inside the budget counted from the process's start, said on stderr;
8. the watchdog stopped only once answered: an error, or a crash of this process, leaves it to withdraw the request.

Whatever it is unsure of before it waits goes to the full path as before (:func:`wait_here` returns None): the
switch :data:`WAITER_ENV` set to ``full`` (tests run both waiters), a request this process did not write (its id
existed), a database it cannot open as the lean path did. Tests run the fault tests against both waiters and
compare every row the two leave.

Standard library and cheap domain code only (no SQLAlchemy, asyncio, argparse).
"""

from __future__ import annotations

import gc
import os
import select
import signal
import sys
import time
from pathlib import Path

from reviewer_app.integrations.claude_code.lean import Handover, stop_watchdog
from reviewer_app.integrations.claude_code.lean_store import LeanStore

TYPE_CHECKING = False  # no ``typing`` at run time
if TYPE_CHECKING:
    from typing import Any

    from reviewer_app.domain.outcome import Outcome

WAITER_ENV = "REVIEWER_HOOK_WAITER"
"""``full``: the full path waits for a request the lean path wrote, as before this module (tests compare the two)."""
POLL_S = 0.05
"""``SqliteChangeFeed``'s interval: how often ``PRAGMA data_version`` is read when no hint comes."""
BUSY_TIMEOUT_MS = 2_000
"""``hook.BACKEND_BUSY_TIMEOUT_MS``: one statement's wait for the write lock, then the retry policy."""
STOP_SIGNALS = ("SIGTERM", "SIGHUP", "SIGINT")
HOST_STOPPED_READING = "the host stopped reading the answer"
HOST_EXITED = "the host process exited"


def wait_here(handover: Handover) -> str | Handover:
    """The answer's stdout text (``""``: print nothing) once this waiter settled the call; ``handover`` itself when
    the full path must wait (nothing written here then)."""
    options, event = handover.options, handover.event
    if (
        os.environ.get(WAITER_ENV, "lean") == "full"
        or not handover.created
        or options is None
        or event is None
        or handover.row is None
    ):
        return handover
    try:
        store = LeanStore.open(handover.database)
        if store is None:
            return handover
        waiter = LeanWaiter(handover, store)
    except Exception as exc:  # nothing written yet: the full path waits
        _say(f"reviewer-app hook: lean waiter: {type(exc).__name__}: {exc}")
        return handover
    gc.enable()  # it may wait for minutes
    return waiter.answer()


def _say(message: str) -> None:
    try:
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


class LeanWaiter:
    """One waiting request's wait, settlement and answer (see the module docstring)."""

    def __init__(self, handover: Handover, store: LeanStore) -> None:
        assert handover.options is not None and handover.event is not None and handover.row is not None
        self.handover = handover
        self.options: dict[str, Any] = handover.options
        self.event: dict[str, Any] = handover.event
        self.row: dict[str, Any] = handover.row
        self.host: str = self.options["host"]
        self.hitl_id = handover.hitl_id
        self.deadline = handover.deadline
        self.reader = store
        self.stopped_by: list[str] = []
        self._wake_read, self._wake_write = os.pipe()
        os.set_blocking(self._wake_read, False)
        os.set_blocking(self._wake_write, False)
        self._old_handlers: dict[int, Any] = {}

    # -- the whole wait ----------------------------------------------------------------------------------------
    def answer(self) -> str:
        from reviewer_app.integrations.claude_code.answers import fallback_parts
        from reviewer_app.integrations.hosts.lean_wire import render

        answered = False
        try:
            self._watch_stops()
            verdict, reason, updated_input = self._wait()
            answered = True
        except BaseException as exc:  # the one place every failure ends: never a crash into "proceed"
            _say(f"reviewer-app hook: {type(exc).__name__}: {exc}")
            verdict, reason = fallback_parts(self.options.get("--on-error", "ask"), f"{type(exc).__name__}: {exc}")
            updated_input = None
        finally:
            self._unwatch_stops()
            # Failed on the way (the request may still be pending): the watchdog outlives this process and
            # withdraws it as answered elsewhere. Answered: nothing is left for the watchdog to do.
            if answered and self.handover.watcher is not None:
                stop_watchdog(self.handover.watcher)
        return render(self.host, verdict, reason, updated_input, self.event["event"]) or ""

    def _wait(self) -> tuple[str, str, dict[str, Any] | None]:
        from reviewer_app.integrations.claude_code.answers import answer_parts, fallback_parts

        takes_edits = self.event["event"] in _edit_events(self.host)
        self._shown()
        outcome = self._decided()
        if outcome is not None:
            self._settled(outcome)
            return answer_parts(outcome, takes_edits=takes_edits)
        outcome_or_why = self._until_decided()
        if isinstance(outcome_or_why, str):  # stopped: withdraw as answered elsewhere
            why = outcome_or_why
            _say(f"reviewer-app hook: {why}: the request leaves the inbox (answered elsewhere)")
            if self._withdraw(why):
                return (*fallback_parts(self.options.get("--on-error", "ask"), f"the hook was stopped ({why})"), None)
            outcome = self._decided()
            if outcome is None:  # neither pending nor decided: cannot be
                raise LookupError(f"request {self.hitl_id} is neither pending nor decided")
            return answer_parts(outcome, takes_edits=takes_edits)
        if outcome_or_why is None:  # the budget is spent
            outcome = self._expire()
            self._settled(outcome)
            if outcome is None:
                timeout = self.options["timeout"]
                verdict = self.options.get("--on-timeout", "ask")
                return (*fallback_parts(verdict, f"no reviewer decided within {timeout:g} s"), None)
            return answer_parts(outcome, takes_edits=takes_edits)
        self._settled(outcome_or_why)
        return answer_parts(outcome_or_why, takes_edits=takes_edits)

    def _until_decided(self) -> Outcome | str | None:
        """The decided outcome; why the hook was stopped; None at the budget."""
        from reviewer_app.persistence.wakeup import WakeListener

        listener = WakeListener.open(self.reader.path)
        parent = os.getppid()
        try:
            version = self._data_version()
            outcome = self._decided()  # decided between the first look and the version read
            while outcome is None:
                if os.getppid() != parent:
                    self.stopped_by.append(HOST_EXITED)
                if self.stopped_by:
                    return self.stopped_by[0]
                left = self.deadline - time.monotonic()
                if left <= 0:
                    return None
                waiting = [self._wake_read] if listener is None else [self._wake_read, listener.fileno()]
                ready, _, _ = select.select(waiting, [], [], min(POLL_S, left))
                if self._wake_read in ready:
                    _drain(self._wake_read)
                if listener is not None and listener.fileno() in ready:
                    listener.drain()
                seen = self._data_version()
                if seen != version:
                    version = seen
                    outcome = self._decided()
            return outcome
        finally:
            if listener is not None:
                listener.close()

    # -- reads ----------------------------------------------------------------------------------------------------
    def _data_version(self) -> int:
        return int(self._retried(lambda: self.reader.connection.execute("PRAGMA data_version").fetchone()[0]))

    def _decided(self) -> Outcome | None:
        """The request's outcome once it is no longer pending, checked against its audit row
        (:class:`~reviewer_app.domain.hitl.DecisionNotOnRecord` otherwise, said on the timeline); None while
        pending."""
        found = self._retried(lambda: self.reader.decided_record(self.hitl_id))
        if found is None:
            return None
        record, audit_rows, meta = found
        from reviewer_app.domain.audit import decided_audit_problems
        from reviewer_app.domain.hitl import DecisionNotOnRecord
        from reviewer_app.domain.outcome import Outcome

        key = self.reader.seal.existing_key()
        problem = decided_audit_problems([record], audit_rows, meta, key, self.reader.audit_position).get(self.hitl_id)
        if problem is not None:
            error = DecisionNotOnRecord(self.hitl_id, problem)
            self._narrate(
                lambda writes: writes.append(
                    str(record["invocation_id"]),
                    _random_block_id(),
                    "error",
                    "apply",
                    {"message": str(error), "hitl_id": self.hitl_id},
                ),
                record_ids=(str(record["session_id"]), str(record["invocation_id"])),
            )
            raise error
        return Outcome.from_record(record)

    # -- writes ---------------------------------------------------------------------------------------------------
    def _retried(self, work: Any) -> Any:
        """``work()`` under the one retry policy, within the budget, each trouble said on stderr."""
        from reviewer_app.persistence.retry import with_retry

        return with_retry(work, on_status=self._status, deadline=self.deadline)

    def _status(self, status: str | None) -> None:
        if status is not None:  # None: the trouble passed, or the retries ended (the outcome is said after)
            left = max(self.deadline - time.monotonic(), 0.0)
            _say(f"reviewer-app hook: {status} (for up to {left:.0f} s more before falling back)")

    def _transaction(self, write: Any) -> Any:
        """``write(store)`` in one ``BEGIN IMMEDIATE`` transaction on a connection opened for it, retried; its
        result. (SQLite reuses the process's open descriptor of the file: a file made read-only after this process
        opened it is written all the same, as by the backend's pooled connections.)"""

        def once(store: LeanStore) -> Any:
            result = store.transaction(lambda: write(store))
            try:
                store.committed()
            except Exception:  # committed all the same: an open window sees it at its next poll
                pass
            return result

        return self._retried(lambda: self._on_writer(once))

    def _on_writer(self, work: Any) -> Any:
        """``work(store)`` on a connection opened for it (a write waits for the lock as the backend's statements
        do), closed after."""
        store = LeanStore.open(self.handover.database)
        if store is None:
            raise OSError(f"cannot open {self.handover.database} as the lean path did")
        try:
            store.connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            return work(store)
        finally:
            store.connection.close()

    def _narrate(self, write: Any, record_ids: tuple[str, str] | None = None) -> None:
        """A timeline write (``write(SessionWrites)``): its failure is said, never the hook's answer."""
        from reviewer_app.integrations.hosts.lean_session import SessionWrites

        session_id = record_ids[0] if record_ids is not None else self.event["session_id"]
        try:
            self._transaction(lambda store: write(SessionWrites(store, self.host, {"session_id": session_id})))
        except Exception as exc:
            _say(f"reviewer-app hook: not recorded on the timeline ({type(exc).__name__}: {exc})")

    def _shown(self) -> None:
        """``TimelineWriter.request_shown``: the transcript copied in (an unreadable one never stops the request),
        then the request's ``hitl`` block."""
        transcript = self.event["transcript_path"]
        if transcript and not self.options.get("--no-transcript"):
            try:
                from reviewer_app.integrations.claude_code.transcript import read_new

                with read_new(Path(transcript), self.event["session_id"], self._state_dir()) as chunk:
                    self._transaction(
                        lambda store: _session_writes(store, self.host, self.event).copy_transcript(chunk)
                    )
            except Exception:  # as the full path: the request goes on without the transcript's new lines
                pass
        row = self.row
        data = {
            "hitl_id": self.hitl_id,
            "hitl_type": row["hitl_type"],
            "tool_name": row["tool_name"],
            "call_id": row["tool_call_id"],
            "arguments": row["data"]["arguments"],
            "status": "pending",
            "expires_at": row["expires_at"],
        }
        self._narrate(lambda writes: writes.append(self.event["run_id"], self._block_id, "hitl", "apply", data))

    @property
    def _block_id(self) -> str:
        return f"hitl_{self.hitl_id}"

    def _state_dir(self) -> Path:
        """``command._state_dir``: ``--state-dir``, else ``hook-state`` beside the database."""
        if self.options.get("--state-dir"):
            return Path(self.options["--state-dir"])
        return self.reader.path.parent / "hook-state"

    def _settled(self, outcome: Outcome | None) -> None:
        """``TimelineWriter.settled``: the block patched with the outcome (None: the hook's own expiry). Its failure
        is silent, as there."""
        from reviewer_app.domain.outcome import settled_block_patch

        patch = settled_block_patch(outcome, time.time_ns() // 1_000_000)
        try:
            self._transaction(
                lambda store: _session_writes(store, self.host, self.event).append(
                    self.event["run_id"], self._block_id, "hitl", "patch", patch
                )
            )
        except Exception:
            pass

    def _expire(self) -> Outcome | None:
        """``hook._expire``: the time-out recorded as an expiry with the configured default, by compare-and-set;
        None once recorded, else the decision that won meanwhile (it stands)."""
        from reviewer_app.integrations.claude_code.answers import expiry_response

        response = expiry_response(self.options.get("--on-timeout", "ask"), self.options["timeout"])
        if self._transaction(lambda store: store.expire(self.hitl_id, response)):
            return None
        outcome = self._decided()
        if outcome is None:
            raise LookupError(f"request {self.hitl_id} is neither pending nor decided")
        return outcome

    def _withdraw(self, why: str) -> bool:
        """``ReviewClient.abandon`` and ``TimelineWriter.abandoned`` in one transaction: the request cancelled as
        answered elsewhere, retried until it lands within the budget; False when it was decided meanwhile."""
        from reviewer_app.domain.hook_lease import ANSWERED_ELSEWHERE, answered_elsewhere

        def withdraw() -> bool:
            done: bool | None = self._on_writer(
                lambda store: store.withdraw(
                    self.hitl_id, f"system:{self.host}", ANSWERED_ELSEWHERE, note=answered_elsewhere(why)
                )
            )
            if done is None:
                raise LookupError(f"request {self.hitl_id} cannot be withdrawn here")
            return done

        return bool(self._retried(withdraw))

    # -- what stops the wait ----------------------------------------------------------------------------------------
    def _stop(self, why: str) -> None:
        """From a signal handler or the stdout watch's thread: end the wait with ``why``."""
        if not self.stopped_by:
            self.stopped_by.append(why)
        try:
            os.write(self._wake_write, b"!")
        except OSError:  # full: a wake-up is pending already
            pass

    def _on_signal(self, name: str) -> Any:
        def handler(_signum: int, _frame: Any) -> None:
            self._stop(name)

        return handler

    def _watch_stops(self) -> None:
        """Signals, the host's stdout closing (the lean path's watch taken over) and, in the wait, the parent."""
        for name in STOP_SIGNALS:
            signum = getattr(signal, name, None)
            if signum is None:  # pragma: no cover - Windows
                continue
            self._old_handlers[signum] = signal.signal(signum, self._on_signal(name))
        watch = self.handover.stdout_watch
        if watch is None or not watch.retarget(lambda: self._stop(HOST_STOPPED_READING)):
            from reviewer_app.integrations.claude_code.host_watch import StdoutWatch

            self.handover.stdout_watch = StdoutWatch.start(lambda: self._stop(HOST_STOPPED_READING))

    def _unwatch_stops(self) -> None:
        if self.handover.stdout_watch is not None:
            self.handover.stdout_watch.stop()  # the answer is this process's now, whoever reads it
        for signum, handler in self._old_handlers.items():
            try:
                signal.signal(signum, handler)
            except (TypeError, ValueError):
                pass


def _edit_events(host: str) -> Any:
    from reviewer_app.integrations.hosts.host_tables import HOST_TABLES

    return HOST_TABLES[host]["edit_events"]


def _session_writes(store: LeanStore, host: str, event: dict[str, Any]) -> Any:
    from reviewer_app.integrations.hosts.lean_session import SessionWrites

    return SessionWrites(store, host, {"session_id": event["session_id"]})


def _random_block_id() -> str:
    """``TimelineWrites``' id for a block named by nobody (``blk_`` and 16 hex digits of a random UUID)."""
    return "blk_" + os.urandom(8).hex()


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 64):
            pass
    except (BlockingIOError, OSError):
        pass


__all__ = ["WAITER_ENV", "LeanWaiter", "wait_here"]
