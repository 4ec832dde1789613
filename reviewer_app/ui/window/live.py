"""The change feed turned into small increments for the window's models.

The pending inbox loads progressively: the oldest requests first (one small page, so the
window shows them at once), then the rest page by page in arrival order (keyset paging on
the database thread, so a request decided meanwhile is never skipped or shown twice), each
page merged into the inbox as it comes. Until the last page is in, :attr:`loading` is true
and ``loadProgress`` says how far it got; the pending count comes from the database then.

Whenever the database changes (a commit in this process, or another process's commit seen
through ``PRAGMA data_version``), one refresh reads only what changed: request summaries
updated since a watermark (minus two seconds of slack for commits that were stamped before
they landed), runs updated since theirs, and the shown invocation's events after its last
``seq``. At most one refresh is in flight and refreshes start at most every 100 ms: under
load many commits make one refresh, and each refresh is work proportional to what changed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Coroutine
from typing import Any

from PySide6.QtCore import QObject, Signal

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import RequestQuery, RequestSummary
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.inbox.filters import Scope

SLACK_MS = 2_000
HISTORY_LIMIT = 20_000
RUNS_LIMIT = 2_000
FIRST_PAGE = 1_000  # the first screen shows a few dozen rows; this page costs ~10 ms to read and show
PAGE = 10_000  # then the rest, in pages that each cost the GUI thread ~10-20 ms to merge
MIN_REFRESH_INTERVAL_S = 0.1
PENDING = (HITLStatus.PENDING.value,)


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def _page_key(summary: RequestSummary) -> tuple[int, int, str]:
    return (summary.created_at, summary.updated_at_ms, summary.hitl_id)


class LiveController(QObject):
    """Owns the feed subscription and the watermarks; emits increments on the GUI thread.

    Signals:
        requestsLoaded(list, str): every request of a scope (first load or scope change), and the scope;
            for the pending scope only the first page, the others follow with requestsAppended.
        requestsAppended(list): the next page of the pending inbox (requests newer than those loaded).
        loadProgress(int, int): requests loaded so far and how many the database holds; equal when done.
        requestsChanged(list): summaries changed since the last refresh, any status.
        pendingCountChanged(int): the number of pending requests in the database.
        newPending(list): summaries that became pending after the first load (for notifications).
        runsLoaded(list): the newest runs (first load).
        runsChanged(list): runs changed since the last refresh.
        eventsLoaded(str, list): all events of the watched invocation (after watching it).
        eventsAppended(str, list): its new events.
        failed(str): a refresh failed; the message is for the banner.
        refreshed(): a refresh finished (tests and the status bar use it).
        runsNeedAction(list): messages about runs whose process died (interrupted, or released for a worker).
        feedStatus(str): the change feed cannot see other processes and is retrying (a message); "" once well.
        databaseStatus(str): writes are being retried ("database busy — retrying", "disk full — retrying");
            "" once they go through again.
    """

    requestsLoaded = Signal(list, str)
    requestsAppended = Signal(list)
    loadProgress = Signal(int, int)
    requestsChanged = Signal(list)
    pendingCountChanged = Signal(int)
    newPending = Signal(list)
    runsLoaded = Signal(list)
    runsChanged = Signal(list)
    eventsLoaded = Signal(str, list)
    eventsAppended = Signal(str, list)
    failed = Signal(str)
    refreshed = Signal()
    runsNeedAction = Signal(list)
    feedStatus = Signal(str)
    databaseStatus = Signal(str)

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
        self._loading = False  # the pending inbox is still coming in, page by page
        self._load_gen = 0
        self._load_started_s = 0
        self._expected = 0
        self._dirty = False
        self._refresh_task: asyncio.Task[None] | None = None
        self._next_refresh_at = 0.0
        self._tasks: set[asyncio.Task[Any]] = set()
        self._unsubscribe: Callable[[], None] | None = None
        self._unsubscribe_status: Callable[[], None] | None = None
        self._closed = False
        self._loaded_event: asyncio.Event | None = None
        self.refresh_count = 0
        self.refresh_failed = False  # the last refresh could not read the database
        self.last_refresh_ms = 0.0
        self.liveness_interval_s = 1.0
        self._liveness_task: asyncio.Task[None] | None = None
        self._db_status_task: asyncio.Task[None] | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        """Subscribe to the feed and load everything once (call with the qasync loop running)."""
        self._loaded_event = asyncio.Event()
        self._unsubscribe = self.backend.feed.subscribe(self.request_refresh)
        self._unsubscribe_status = self.backend.feed.subscribe_status(self._on_feed_status)
        self.spawn(self._load_all())
        self._liveness_task = asyncio.ensure_future(self._liveness_loop())
        self._db_status_task = asyncio.ensure_future(self._db_status_loop())

    async def wait_loaded(self, timeout: float | None = None) -> bool:
        """Until the whole first load finished, every page of it (or failed); False on timeout."""
        if self._loaded_event is None:
            return False
        try:
            await asyncio.wait_for(self._loaded_event.wait(), timeout)
        except TimeoutError:
            return False
        return True

    @property
    def loading(self) -> bool:
        """True while pages of the pending inbox are still to come."""
        return self._loading

    def close(self) -> None:
        self._closed = True
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        if self._unsubscribe_status is not None:
            self._unsubscribe_status()
            self._unsubscribe_status = None
        for task in list(self._tasks):
            task.cancel()
        if self._refresh_task is not None:
            self._refresh_task.cancel()
        for loop_task in (self._liveness_task, self._db_status_task):
            if loop_task is not None:
                loop_task.cancel()

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
        self._load_gen += 1  # a progressive load still running stops at its next page
        self._set_loading(False)
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

    # -- loading ---------------------------------------------------------------------------
    async def _guard(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if not self._closed:
                self.failed.emit(f"Could not {what}: {exc}")

    def _set_loading(self, loading: bool) -> None:
        was, self._loading = self._loading, loading
        if was and not loading:
            count = len(self.pending_ids) if self.scope is Scope.PENDING else self._expected
            self.loadProgress.emit(count, count)

    async def _load_all(self) -> None:
        gen = self._load_gen
        after: tuple[int, int, str] | None = None

        async def first() -> None:
            nonlocal after
            started = wall_ms()
            # Set before anything is read: what changes from now on reaches the first refresh.
            self._request_wm = self._run_wm = started
            self._load_started_s = started // 1000
            if self.scope is Scope.PENDING:
                backend = self.backend
                total = await backend.count_pending()
                page = await backend.summary_page(PENDING, limit=FIRST_PAGE)
                self.pending_ids = {s.hitl_id for s in page}
                self._expected = total
                if len(page) >= FIRST_PAGE:
                    after = _page_key(page[-1])
                    self._set_loading(True)
                self.requestsLoaded.emit(page, self.scope.value)
                self.pendingCountChanged.emit(total if self._loading else len(self.pending_ids))
                if self._loading:
                    self.loadProgress.emit(len(page), total)
            else:  # the ids of the pending requests still count them and spot new ones
                pending = await self.backend.summary_page(PENDING)
                self.pending_ids = {s.hitl_id for s in pending}
                await self._load_scope(self.scope)
                self.pendingCountChanged.emit(len(self.pending_ids))
            self._loaded = True

        await self._guard(first(), "load the requests")
        self.refreshed.emit()
        if self._dirty:
            self.request_refresh()
        # The first screen is up: the runs board and the rest of the inbox follow.
        await self._guard(self._load_runs(), "load the runs")
        if after is not None and gen == self._load_gen:
            await self._guard(self._load_rest(gen, after), "load the requests")
        if self._loaded_event is not None:
            self._loaded_event.set()

    async def _load_runs(self) -> None:
        runs = await self.backend.list_runs(limit=RUNS_LIMIT)
        if not self._closed:
            self.runsLoaded.emit(runs)

    async def _load_rest(self, gen: int, after: tuple[int, int, str]) -> None:
        """The pending requests after the first page, oldest first, one page at a time."""
        backend = self.backend
        try:
            while True:
                page = await backend.summary_page(PENDING, after=after, limit=PAGE)
                if self._closed or gen != self._load_gen:
                    return
                self.pending_ids.update(s.hitl_id for s in page)
                self.requestsAppended.emit(page)
                if len(page) < PAGE:
                    break
                after = _page_key(page[-1])
                loaded = len(self.pending_ids)
                self.loadProgress.emit(loaded, max(loaded, self._expected))
        finally:
            if gen == self._load_gen:
                self._set_loading(False)
                if not self._closed:
                    self.pendingCountChanged.emit(len(self.pending_ids))

    async def _load_scope(self, scope: Scope) -> None:
        async def work() -> None:
            limit = None if scope is Scope.PENDING else HISTORY_LIMIT
            rows = await self.backend.list_summaries(
                RequestQuery(statuses=scope.statuses, limit=limit, newest_first=limit is not None)
            )
            if scope is self.scope:
                if scope is Scope.PENDING:
                    self.pending_ids = {s.hitl_id for s in rows}
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

    def _on_feed_status(self, status: str | None) -> None:
        if not self._closed:
            self.feedStatus.emit(status or "")
            if status is None:
                self.request_refresh()  # the feed may have missed commits while it was failing

    async def _db_status_loop(self) -> None:
        """The backend's retry status, read without the database (its thread may be the one retrying)."""
        shown: str | None = None
        while not self._closed:
            status = self.backend.db_status
            if status != shown:
                shown = status
                self.databaseStatus.emit(status or "")
            await asyncio.sleep(0.5)

    # -- dead owners -----------------------------------------------------------------------
    async def _liveness_loop(self) -> None:
        """Every second: runs whose process died (stale heartbeat, pid gone) are interrupted or released.

        Not only at start-up: a runner killed while the window is open shows as needing action within seconds.
        """
        from reviewer_app.runtime.liveness import interrupt_dead_owners  # the runtime loads after the first screen

        while not self._closed:
            await asyncio.sleep(self.liveness_interval_s)
            try:
                settled = await interrupt_dead_owners(self.backend)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database may be busy: say so and try again next time
                if not self._closed:
                    self.failed.emit(f"Could not check for runs whose process died: {exc}")
                continue
            if settled and not self._closed:
                self.runsNeedAction.emit(
                    [
                        f"Run {s.invocation_id}: its process died "
                        + ("inside a tool call: re-run or abort it" if s.outcome == "interrupted" else f"({s.detail})")
                        for s in settled
                    ]
                )

    # -- increments ------------------------------------------------------------------------
    async def _refresh_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while self._dirty and not self._closed:
            wait = self._next_refresh_at - loop.time()
            if wait > 0:  # a refresh ran moments ago: gather what else changes until the next slot
                await asyncio.sleep(wait)
                if self._closed:
                    return
            self._dirty = False
            self._next_refresh_at = loop.time() + MIN_REFRESH_INTERVAL_S
            started = time.perf_counter()
            try:
                await self._refresh_once()
                self.refresh_failed = False
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self.refresh_failed = True
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
            if self._loading:  # the loaded ids are not all the pending ones yet: ask the database
                self.pendingCountChanged.emit(await self.backend.count_pending())
        run_started = wall_ms()
        runs = await self.backend.list_runs(updated_since_ms=self._run_wm - SLACK_MS, limit=None)
        self._run_wm = run_started
        # A request settled (answered elsewhere, expired, decided) changes its run's pending count without
        # writing the run's row: those runs are read again, so the board never counts what the inbox no longer has.
        settled_in = {s.invocation_id for s in changed if s.invocation_id} - {run.id for run in runs}
        if settled_in:
            runs += await self.backend.list_runs(ids=sorted(settled_in), limit=None)
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
        # While pages are still coming, an old request that changed is not new: it was not loaded yet.
        recent = self._load_started_s - SLACK_MS // 1000 if self._loading else None
        for summary in changed:
            if summary.status == HITLStatus.PENDING.value:
                if summary.hitl_id not in self.pending_ids:
                    self.pending_ids.add(summary.hitl_id)
                    if recent is None or summary.created_at >= recent:
                        arrived.append(summary)
            else:
                self.pending_ids.discard(summary.hitl_id)
        self.requestsChanged.emit(changed)
        if not self._loading and (len(self.pending_ids) != count_before or arrived):
            self.pendingCountChanged.emit(len(self.pending_ids))
        if arrived:
            self.newPending.emit(arrived)
