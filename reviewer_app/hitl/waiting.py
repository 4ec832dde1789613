"""Outside agents waiting in one process (``wait_for_response``), looked up together.

One ``decided_among`` query serves the waiters of the process, and only the waiters whose request was decided wake,
their audit check in the same job, on the backend's look-up thread (never queued behind the process's own writes).
Where the feed names the decided requests (PostgreSQL) only the waiters a decision named are looked up, at once;
every waiter is looked up when the feed listens again, and at most every :data:`FALLBACK_INTERVAL` seconds while
writers that name no decisions commit (an older version, a statement typed by hand). Elsewhere every change looks
up all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from reviewer_app.domain.hitl import DecisionNotOnRecord, HITLRecord
from reviewer_app.persistence.changes import ChangeFeed, DecidedHint

log = logging.getLogger(__name__)

FALLBACK_INTERVAL = 1.0
"""Seconds: where decisions name their requests, commits by writers that name none look every waiter up at most this
often."""


class WaitingBackend(Protocol):
    """What the shared look-up needs of the backend."""

    feed: ChangeFeed

    @property
    def closed(self) -> bool: ...

    async def signed_decided_among(self, hitl_ids: Sequence[str]) -> tuple[list[HITLRecord], dict[str, str]]: ...

    def signed_decided_among_now(self, hitl_ids: Sequence[str]) -> tuple[list[HITLRecord], dict[str, str]]: ...


def drop_waiter(
    futures: dict[str, list[asyncio.Future[HITLRecord]]], hitl_id: str, future: asyncio.Future[HITLRecord]
) -> None:
    """Take a finished wait's future off the table of waiters (and cancel it if nothing resolved it)."""
    waiting = futures.get(hitl_id)
    if waiting is not None:
        with contextlib.suppress(ValueError):
            waiting.remove(future)
        if not waiting:
            del futures[hitl_id]
    if not future.done():
        future.cancel()


class SharedDecidedLookup:
    """The requests this process's ``wait_for_response`` calls await, looked up together: one ``decided_among``
    query per change the feed reports, and only the waiters whose request was decided are woken.

    Each waiter used to wake on every change (any commit, by anyone) and read its own request: with 200 agents
    waiting that was 200 wake-ups and 200 reads per commit, and under load the decision an agent waited for was
    seen seconds after its commit. Then one look-up of every waiter per change: with 20 reviewers and 200 agents
    on one server (~25 commits a second) each agent process looked up all its waiters without pause, and a decision
    waited for the look-up in flight before its own. (The runtime's own runs wait through ``runtime/watcher.py``.)
    """

    def __init__(self, backend: WaitingBackend, *, fallback_interval: float = FALLBACK_INTERVAL) -> None:
        self._backend = backend
        self.fallback_interval = fallback_interval
        self._futures: dict[str, list[asyncio.Future[HITLRecord]]] = {}
        self._changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: list[Callable[[], None]] = []
        self._named: set[str] = set()  # waiters to look up next: a decision named them, or they just began
        self._everyone = False  # look up every waiter next
        self._unnamed = False  # a writer that names no decisions committed: every waiter is looked up, in time
        self._everyone_at = 0.0  # when every waiter was last looked up

    async def wait(self, hitl_id: str, timeout: float | None) -> HITLRecord | None:
        """The request's record once it is no longer pending, checked against its audit row (else
        :class:`DecisionNotOnRecord`); None when ``timeout`` seconds pass first."""
        loop = asyncio.get_running_loop()
        changed = self._watching(loop)
        future: asyncio.Future[HITLRecord] = loop.create_future()
        self._futures.setdefault(hitl_id, []).append(future)
        self._named.add(hitl_id)
        changed.set()  # look once now: the decision may have landed since the caller's own read
        try:
            await asyncio.wait({future}, timeout=timeout)
        finally:
            drop_waiter(self._futures, hitl_id, future)
        return None if future.cancelled() else future.result()

    def _watching(self, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
        if self._loop is not loop or self._changed is None or self._task is None or self._task.done():
            self.stop()
            self._loop, self._changed = loop, asyncio.Event()
            feed = self._backend.feed
            self._unsubscribe = [feed.subscribe(self._on_change)]
            if feed.names_decisions:
                self._unsubscribe.append(feed.subscribe_decided(self._on_decided))
                self._unsubscribe.append(feed.add_listener_look_up(self._look_up_on_listener))
            self._task = loop.create_task(self._watch(self._changed), name="reviewer-wait-for-response")
        return self._changed

    def _on_change(self) -> None:
        """Any change: where the feed names decisions its hints say more (:meth:`_on_decided`), else look all up."""
        if self._futures and self._changed is not None and not self._backend.feed.names_decisions:
            self._everyone = True
            self._changed.set()

    def _look_up_on_listener(self, named: frozenset[str]) -> Collection[str]:
        """On the feed's listening thread, as soon as a burst of notifications names decided requests: read the ones
        this process waits for and hand what was decided to the loop (:meth:`_resolve`); the names dealt with.

        From the listener to the loop, then to the look-up thread and back, a decision crossed three threads, and
        on a loaded machine (20 reviewers and 200 agents on two cores) each crossing could wait a hundred
        milliseconds for a CPU: now it crosses one. Tried once: what fails, or is still pending (a forged name),
        goes on to :meth:`_on_decided` and the look-up thread, as before. ``self._futures`` is the loop's, only
        tested for membership here (atomic in CPython); a waiter added meanwhile makes its own first look.
        """
        loop = self._loop
        ids = [hitl_id for hitl_id in named if hitl_id in self._futures]
        if not ids or loop is None:
            return ()
        try:
            records, problems = self._backend.signed_decided_among_now(ids)
        except Exception as exc:  # the look-up thread's look-up (with its retries) takes them
            log.debug("look-up on the listener thread failed (%s); the look-up thread reads them again", exc)
            return ()
        if not records:
            return ()
        try:
            loop.call_soon_threadsafe(self._resolve, records, problems)
        except RuntimeError:  # the loop closed: nobody is waiting any more
            return ()
        return [str(record["hitl_id"]) for record in records]

    def _on_decided(self, hint: DecidedHint) -> None:
        """The feed's hint (forgeable: it only says which rows to read again)."""
        if not self._futures or self._changed is None:
            return
        self._everyone |= hint.unseen
        self._unnamed |= hint.unnamed
        self._named.update(hint.named.intersection(self._futures))  # names nobody here waits for cost nothing
        self._changed.set()

    def _due(self) -> list[str]:
        """The waiters to look up now (and the state reset for the next turn)."""
        now = time.monotonic()
        if self._everyone or (self._unnamed and now - self._everyone_at >= self.fallback_interval):
            self._everyone, self._unnamed, self._everyone_at = False, False, now
            self._named.clear()
            return list(self._futures)
        named, self._named = self._named, set()
        return [hitl_id for hitl_id in named if hitl_id in self._futures]

    def _fallback_delay(self) -> float | None:
        """Seconds until an unnamed writer's commits are due for a look-up of every waiter; None: none came."""
        if not self._unnamed or not self._futures:
            return None
        return max(0.0, self._everyone_at + self.fallback_interval - time.monotonic())

    async def _watch(self, changed: asyncio.Event) -> None:
        while True:
            delay = self._fallback_delay()
            if delay is None:
                await changed.wait()
            elif not changed.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(changed.wait(), delay)
            changed.clear()
            ids = self._due()
            if not ids:
                continue
            try:
                # Checked against their audit rows in the same job, all in one read, rather than by each waiter.
                records, problems = await self._backend.signed_decided_among(ids)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # past the backend's own retries: each waiter fails as its own read would have
                for hitl_id in ids:
                    for future in self._futures.pop(hitl_id, []):
                        if not future.done():
                            future.set_exception(exc)
                continue
            self._resolve(records, problems)

    def _resolve(self, records: list[HITLRecord], problems: dict[str, str]) -> None:
        """On the loop: wake the waiters of the decided ``records`` (each future once, whichever look-up found it
        first), with :class:`DecisionNotOnRecord` where ``problems`` says the audit rows do not sign it."""
        for record in records:
            hitl_id = str(record["hitl_id"])
            futures = self._futures.pop(hitl_id, [])
            problem = problems.get(hitl_id)
            if problem is not None and futures:
                log.error("%s", problem)
            for future in futures:
                if future.done():
                    continue
                if problem is None:
                    future.set_result(record)
                else:
                    future.set_exception(DecisionNotOnRecord(hitl_id, problem))

    def stop(self) -> None:
        """Stop watching (the backend closes); waiters still waiting are cancelled."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        task, self._task = self._task, None
        if task is not None and not task.done() and not task.get_loop().is_closed():
            task.get_loop().call_soon_threadsafe(self._release, task)

    def _release(self, task: asyncio.Task[None]) -> None:
        """On the loop: end the look-ups and fail the waiters left, as the feed's waits failed once it closed."""
        task.cancel()
        if not self._backend.closed:
            return  # a new loop took over: its waiters are watched by the new task
        for futures in self._futures.values():
            for future in futures:
                if not future.done():
                    future.set_exception(RuntimeError("the HITL backend is closed"))
