"""One decision watcher per runtime, so hundreds of waiting runs cost one query per database change.

Waiting runs register the request ids they wait for; on every change the feed reports (a commit by
this process, or by any other: the CLI, another window, a PostgreSQL peer) the watcher asks the store
once which of those ids are no longer pending and resolves their futures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable

from reviewer_app.domain.hitl import HITLRecord, HITLStatus
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.hitl.waiting import drop_waiter
from reviewer_app.persistence.changes import ChangeFeed

log = logging.getLogger(__name__)


async def wait_for_change(feed: ChangeFeed, token: int, timeout: float | None) -> int:
    """``feed.wait`` that never swallows a cancellation.

    Python 3.11's ``asyncio.wait_for`` returns normally when its inner future completes at the same
    moment the waiting task is cancelled; a loop around it would then wait forever under a pending
    cancel. The task still says it is ``cancelling()``, so honour that here.
    """
    result = await feed.wait(token, timeout)
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError
    return result


class DecisionWatcher:
    """Resolves per-request futures when their requests are decided, expired or cancelled."""

    def __init__(self, backend: SQLHITLBackend) -> None:
        self._backend = backend
        self._futures: dict[str, list[asyncio.Future[HITLRecord]]] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self.queries = 0  # how many look-ups it made (for the benchmark figures)

    def start(self) -> None:
        if self._task is not None:
            return
        self._unsubscribe = self._backend.feed.subscribe(self._on_change)
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="reviewer-decision-watcher")

    async def stop(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for futures in self._futures.values():
            for future in futures:
                future.cancel()
        self._futures.clear()

    def _on_change(self) -> None:
        # Nobody waiting, nothing to look up (a new waiter looks once itself, see wait_any).
        if self._futures:
            self._changed.set()

    async def wait_any(self, hitl_ids: Iterable[str]) -> dict[str, HITLRecord]:
        """Wait until at least one of ``hitl_ids`` is decided; returns every one decided by then."""
        loop = asyncio.get_running_loop()
        mine: dict[str, asyncio.Future[HITLRecord]] = {}
        for hitl_id in hitl_ids:
            future: asyncio.Future[HITLRecord] = loop.create_future()
            self._futures.setdefault(hitl_id, []).append(future)
            mine[hitl_id] = future
        if not mine:
            return {}
        self._changed.set()  # look once now: the decision may already be in the database
        try:
            if len(mine) == 1:  # the usual case: awaited directly, the run wakes one loop turn sooner
                (only,) = mine.values()
                try:
                    await only
                except asyncio.CancelledError:
                    task = asyncio.current_task()
                    if task is not None and task.cancelling():
                        raise
                    # the future alone was cancelled (stop()): return nothing, as asyncio.wait would
            else:
                await asyncio.wait(mine.values(), return_when=asyncio.FIRST_COMPLETED)
        finally:
            for hitl_id, future in mine.items():
                drop_waiter(self._futures, hitl_id, future)
        return {hitl_id: f.result() for hitl_id, f in mine.items() if f.done() and not f.cancelled()}

    async def _loop(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            ids = list(self._futures)
            if not ids:
                continue
            try:
                self.queries += 1
                records = await self._backend.decided_among(ids)
            except asyncio.CancelledError:
                raise
            except Exception:  # a transient database error must not kill every waiting run
                log.exception("decision watcher: look-up failed; retrying on the next change")
                await asyncio.sleep(0.5)
                self._changed.set()
                continue
            self.resolve(records)

    def wake_without_record(self, hitl_id: str) -> None:
        """Wake the runs waiting for ``hitl_id`` with nothing decided: their run was handed the decision itself
        (see resume.py) and commits it; ``wait_any`` returns without that request."""
        for future in self._futures.pop(hitl_id, []):
            future.cancel()

    def resolve(self, records: Iterable[HITLRecord]) -> None:
        """Hand decided (committed) requests to the runs waiting for them.

        The runtime calls this with a decision it has just committed, so the run resumes without
        waiting for the look-up after the next change; each waiter is resolved once, since it is
        removed here, and a later look-up that still finds the id decided has nobody left to wake.
        """
        for record in records:
            if record.get("status") == HITLStatus.PENDING.value:
                continue
            for future in self._futures.pop(record["hitl_id"], []):
                if not future.done():
                    future.set_result(record)
