"""The change feed turned into small increments for the window's models.

Whenever the database changes (a commit in this process, or another process's
commit seen through ``PRAGMA data_version``), one refresh reads only what changed:
request summaries updated since a watermark (minus two seconds of slack for
commits that were stamped before they landed), runs updated since theirs, and the
shown invocation's events after its last ``seq``. At most one refresh is in flight;
changes that arrive meanwhile make it run once more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

from PySide6.QtCore import QObject, Signal

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import RequestQuery, RequestSummary
from reviewer_app.ui.inbox_model import Scope

SLACK_MS = 2_000
HISTORY_LIMIT = 20_000
RUNS_LIMIT = 2_000


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


class LiveController(QObject):
    """Owns the feed subscription and the watermarks; emits increments on the GUI thread.

    Signals:
        requestsLoaded(list, str): every request of a scope (first load or scope change), and the scope.
        requestsChanged(list): summaries changed since the last refresh, any status.
        pendingCountChanged(int): the number of pending requests in the database.
        newPending(list): summaries that became pending after the first load (for notifications).
        runsLoaded(list): the newest runs (first load).
        runsChanged(list): runs changed since the last refresh.
        eventsLoaded(str, list): all events of the watched invocation (after watching it).
        eventsAppended(str, list): its new events.
        failed(str): a refresh failed; the message is for the banner.
        refreshed(): a refresh finished (tests and the status bar use it).
    """

    requestsLoaded = Signal(list, str)
    requestsChanged = Signal(list)
    pendingCountChanged = Signal(int)
    newPending = Signal(list)
    runsLoaded = Signal(list)
    runsChanged = Signal(list)
    eventsLoaded = Signal(str, list)
    eventsAppended = Signal(str, list)
    failed = Signal(str)
    refreshed = Signal()

    def __init__(self, backend: SQLHITLBackend, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self.scope = Scope.PENDING
        self.pending_ids: set[str] = set()
        self._request_wm = 0
        self._run_wm = 0
        self._watched: str | None = None
        self._watched_seq = 0
        self._loaded = False
        self._dirty = False
        self._refresh_task: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._closed = False
        self._loaded_event: asyncio.Event | None = None
        self.refresh_count = 0
        self.last_refresh_ms = 0.0

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Subscribe to the feed and load everything once (call with the qasync loop running)."""
        self._loaded_event = asyncio.Event()
        self._unsubscribe = self.backend.feed.subscribe(self.request_refresh)
        self.spawn(self._load_all())

    async def wait_loaded(self, timeout: float | None = None) -> bool:
        """Until the first load finished (or failed); False on timeout."""
        if self._loaded_event is None:
            return False
        try:
            await asyncio.wait_for(self._loaded_event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    def close(self) -> None:
        self._closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        for task in list(self._tasks):
            task.cancel()
        if self._refresh_task is not None:
            self._refresh_task.cancel()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` on the loop, keeping a strong reference until it ends."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def busy(self) -> bool:
        return bool(self._tasks) or (self._refresh_task is not None and not self._refresh_task.done())

    # -- requests from the window ------------------------------------------------------------
    def request_refresh(self) -> None:
        """Something changed: refresh soon, coalescing bursts into one refresh in flight."""
        if self._closed:
            return
        self._dirty = True
        if self._loaded and (self._refresh_task is None or self._refresh_task.done()):
            self._refresh_task = asyncio.ensure_future(self._refresh_loop())

    def set_scope(self, scope: Scope) -> None:
        """Load another scope (pending, decided history, all) from the store."""
        self.scope = scope
        self.spawn(self._load_scope(scope))

    def watch_invocation(self, invocation_id: str | None) -> None:
        """Follow this invocation's timeline (None: none)."""
        if invocation_id == self._watched:
            return
        self._watched = invocation_id
        self._watched_seq = 0
        if invocation_id is None:
            self.eventsLoaded.emit("", [])
            return
        self.spawn(self._load_events(invocation_id))

    @property
    def watched_invocation(self) -> str | None:
        return self._watched

    # -- loading ---------------------------------------------------------------------------
    async def _guard(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not self._closed:
                self.failed.emit(f"Could not {what}: {exc}")

    async def _load_all(self) -> None:
        async def work() -> None:
            started = wall_ms()
            pending = await self.backend.list_summaries(RequestQuery(statuses=(HITLStatus.PENDING.value,)))
            runs = await self.backend.list_runs(limit=RUNS_LIMIT)
            self._request_wm = started
            self._run_wm = started
            self.pending_ids = {s.hitl_id for s in pending}
            if self.scope is Scope.PENDING:
                self.requestsLoaded.emit(pending, self.scope.value)
            else:
                await self._load_scope(self.scope)
            self.pendingCountChanged.emit(len(self.pending_ids))
            self.runsLoaded.emit(runs)
            self._loaded = True

        await self._guard(work(), "load the requests")
        if self._loaded_event is not None:
            self._loaded_event.set()
        self.refreshed.emit()
        if self._dirty:
            self.request_refresh()

    async def _load_scope(self, scope: Scope) -> None:
        async def work() -> None:
            limit = None if scope is Scope.PENDING else HISTORY_LIMIT
            rows = await self.backend.list_summaries(
                RequestQuery(statuses=scope.statuses, limit=limit, newest_first=limit is not None)
            )
            if scope is self.scope:
                self.requestsLoaded.emit(rows, scope.value)

        await self._guard(work(), f"load the {scope.value} requests")

    async def _load_events(self, invocation_id: str) -> None:
        async def work() -> None:
            events = await self.backend.events(invocation_id)
            if invocation_id != self._watched:
                return
            self._watched_seq = max((e.seq for e in events), default=0)
            self.eventsLoaded.emit(invocation_id, events)

        await self._guard(work(), "load the timeline")

    # -- increments ------------------------------------------------------------------------
    async def _refresh_loop(self) -> None:
        while self._dirty and not self._closed:
            self._dirty = False
            started = time.perf_counter()
            try:
                await self._refresh_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.failed.emit(f"Could not refresh from the database: {exc}")
                await asyncio.sleep(0.5)  # do not spin on a persistent error
            self.refresh_count += 1
            self.last_refresh_ms = (time.perf_counter() - started) * 1000
            self.refreshed.emit()

    async def _refresh_once(self) -> None:
        started = wall_ms()
        changed = await self.backend.list_summaries(
            RequestQuery(statuses=(), updated_since_ms=self._request_wm - SLACK_MS)
        )
        self._request_wm = started
        if changed:
            self._merge_requests(changed)
        run_started = wall_ms()
        runs = await self.backend.list_runs(updated_since_ms=self._run_wm - SLACK_MS, limit=None)
        self._run_wm = run_started
        if runs:
            self.runsChanged.emit(runs)
        invocation_id = self._watched
        if invocation_id is not None:
            after = self._watched_seq
            events = await self.backend.events(invocation_id, after_seq=after)
            if events and invocation_id == self._watched and after == self._watched_seq:
                self._watched_seq = max(e.seq for e in events)
                self.eventsAppended.emit(invocation_id, events)

    def _merge_requests(self, changed: list[RequestSummary]) -> None:
        arrived = []
        count_before = len(self.pending_ids)
        for summary in changed:
            if summary.status == HITLStatus.PENDING.value:
                if summary.hitl_id not in self.pending_ids:
                    self.pending_ids.add(summary.hitl_id)
                    arrived.append(summary)
            else:
                self.pending_ids.discard(summary.hitl_id)
        self.requestsChanged.emit(changed)
        if len(self.pending_ids) != count_before or arrived:
            self.pendingCountChanged.emit(len(self.pending_ids))
        if arrived:
            self.newPending.emit(arrived)
