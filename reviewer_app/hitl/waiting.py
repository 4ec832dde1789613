"""Outside agents waiting in one process (``wait_for_response``), looked up together.

One ``decided_among`` query per change the feed reports serves every waiter of the process, and only the waiters
whose request was decided wake, their audit check in the same job, on the backend's look-up thread (never queued
behind the process's own writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from reviewer_app.domain.hitl import DecisionNotOnRecord, HITLRecord
from reviewer_app.persistence.changes import ChangeFeed

log = logging.getLogger(__name__)


class WaitingBackend(Protocol):
    """What the shared look-up needs of the backend."""

    feed: ChangeFeed

    @property
    def closed(self) -> bool: ...

    async def signed_decided_among(self, hitl_ids: Sequence[str]) -> tuple[list[HITLRecord], dict[str, str]]: ...


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
    seen seconds after its commit. (The runtime's own runs wait through ``runtime/watcher.py`` the same way.)
    """

    def __init__(self, backend: WaitingBackend) -> None:
        self._backend = backend
        self._futures: dict[str, list[asyncio.Future[HITLRecord]]] = {}
        self._changed: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None

    async def wait(self, hitl_id: str, timeout: float | None) -> HITLRecord | None:
        """The request's record once it is no longer pending, checked against its audit row (else
        :class:`DecisionNotOnRecord`); None when ``timeout`` seconds pass first."""
        loop = asyncio.get_running_loop()
        changed = self._watching(loop)
        future: asyncio.Future[HITLRecord] = loop.create_future()
        self._futures.setdefault(hitl_id, []).append(future)
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
            self._unsubscribe = self._backend.feed.subscribe(self._on_change)
            self._task = loop.create_task(self._watch(self._changed), name="reviewer-wait-for-response")
        return self._changed

    def _on_change(self) -> None:
        if self._futures and self._changed is not None:
            self._changed.set()

    async def _watch(self, changed: asyncio.Event) -> None:
        while True:
            await changed.wait()
            changed.clear()
            ids = list(self._futures)
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
            for record in records:
                hitl_id = str(record["hitl_id"])
                problem = problems.get(hitl_id)
                if problem is not None:
                    log.error("%s", problem)
                for future in self._futures.pop(hitl_id, []):
                    if future.done():
                        continue
                    if problem is None:
                        future.set_result(record)
                    else:
                        future.set_exception(DecisionNotOnRecord(hitl_id, problem))

    def stop(self) -> None:
        """Stop watching (the backend closes); waiters still waiting are cancelled."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
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
