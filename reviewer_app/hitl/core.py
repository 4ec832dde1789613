"""The backend's core: the store, the identity decisions are recorded as, the change feed and the database thread.

Every concept of the backend (the decision gate, rules, waivers, previews…) is a part built on this core: they
reach the database only through :meth:`BackendCore.run` (a read) and :meth:`BackendCore.write` (one write
transaction, waiters woken after the commit), so the threading and retry policy is written here once.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable
from typing import Any, Self, TypeVar

from reviewer_app.hitl.db_thread import DatabaseThread
from reviewer_app.hitl.identity import reviewer_identity
from reviewer_app.hitl.loop_writes import LoopWrites, NotRun
from reviewer_app.hitl.wal_checkpoints import BackgroundWalCheckpoints
from reviewer_app.persistence.changes import ChangeFeed, change_feed_for
from reviewer_app.persistence.engine import BUSY_TIMEOUT_MS, sqlite_path
from reviewer_app.persistence.retry import with_retry
from reviewer_app.persistence.store import Store, StoreTx

T = TypeVar("T")


class BackendCore:
    """The store on one database thread: reads with :meth:`run`, write transactions with :meth:`write`."""

    def __init__(
        self,
        target: str | os.PathLike[str] | None = None,
        *,
        store: Store | None = None,
        reviewer: str | None = None,
        feed: ChangeFeed | None = None,
        retry_until: float | None = None,
        on_db_status: Callable[[str | None], None] | None = None,
        busy_timeout_ms: int | None = None,
        writes_on_loop: bool = False,
        checkpoint_on_commit: bool = False,
    ) -> None:
        self.retry_until = retry_until
        """A ``time.monotonic()`` deadline for riding out database trouble (a hook's budget); None: the default."""
        self.on_db_status = on_db_status
        """Told each :attr:`db_status` change, on the thread that saw it (a hook prints it on stderr)."""
        self._db_status: str | None = None
        if store is None:
            if target is None:
                raise ValueError("give a database path or URL, or a Store")
            # A server restarting (or a database locked by a migration) is ridden out like any transient fault.
            # ``busy_timeout_ms``: how long one statement waits for SQLite's lock before the retry policy (and its
            # deadline and status) takes over; a hook keeps it short so its budget holds.
            wait_ms = BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
            # Its commits never checkpoint the write-ahead log: a thread of the backend does (hitl/wal_checkpoints.py),
            # unless ``checkpoint_on_commit`` (a hook: a short-lived process per tool call, see there).
            store = with_retry(
                lambda: Store.open(target, busy_timeout_ms=wait_ms, autocheckpoint=checkpoint_on_commit),
                on_status=self._set_db_status,
                deadline=retry_until,
            )
            self._owns_store = True
        else:
            self._owns_store = False
        self.store = store
        self.reviewer = reviewer_identity(store, reviewer)
        self.feed = feed or change_feed_for(store.engines)
        self._db_thread = DatabaseThread("reviewer-db")
        self._lookup_thread: DatabaseThread | None = None  # made on the first look-up (see run_lookup)
        self._closed = False
        # ``writes_on_loop``: a process with no GUI lets write transactions run on its loop's thread when that
        # cannot wait (hitl/loop_writes.py); the window never asks for it. SQLite files only.
        on_file = store.engines.is_sqlite and sqlite_path(store.url) is not None
        self._wal = BackgroundWalCheckpoints(store.checkpoint) if on_file else None
        wal = self._wal
        self._loop_writes: LoopWrites | None = None
        if writes_on_loop and wal is not None:
            self._loop_writes = LoopWrites(wal.request, lambda: wal.catch_up_due)

    async def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the database thread and await its result on the caller's loop.

        A read that meets TEXT another program stored as invalid UTF-8 is read again leniently
        (see :meth:`Store.tolerating_bad_text`), so one such row never hides the others.
        A read that meets transient trouble (a PostgreSQL restart, a lock) is tried again like a write
        (:mod:`reviewer_app.persistence.retry`).
        """
        return await self.run_soon(fn, *args, **kwargs)

    def run_soon(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> asyncio.Future[T]:
        """:meth:`run`, handed to the database thread before this returns (``run`` hands it over when first
        awaited): a task the window creates in an event handler takes its first step only after Qt has repainted,
        and the selected request is read meanwhile."""
        if self._closed:
            raise RuntimeError("the HITL backend is closed")
        return self._db_thread.submit(self._read_job(fn, *args, **kwargs))

    async def run_lookup(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """:meth:`run` on the backend's second database thread, for the reads that wake waiting agents.

        On the one thread, 50 agents of a process queued their creates and reads ahead of the look-up that would
        wake them: a decision reached its agent seconds after its commit (issue 29, team scale). The store is
        safe to read from two threads (each takes its own connection); an in-memory SQLite database has one
        connection for all, so its look-ups stay on the one thread.
        """
        if self.store.engines.is_sqlite and sqlite_path(self.store.url) is None:  # one connection shared by all
            return await self.run(fn, *args, **kwargs)
        if self._closed:
            raise RuntimeError("the HITL backend is closed")
        if self._lookup_thread is None:
            self._lookup_thread = DatabaseThread("reviewer-db-lookup")
        return await self._lookup_thread.submit(self._read_job(fn, *args, **kwargs))

    def _read_job(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> Callable[[], T]:
        """``fn`` as a read for a database thread: read leniently after bad text, retried through trouble."""
        # Partials, not lambdas: no extra Python frames under a deeply nested read (json.loads counts them).
        read = functools.partial(self.store.tolerating_bad_text, functools.partial(fn, *args, **kwargs))
        return functools.partial(self._retried, read)

    def _retried(self, work: Callable[[], T]) -> T:
        return with_retry(work, on_status=self._set_db_status, deadline=self.retry_until)

    async def write(self, fn: Callable[[StoreTx], T], *, retry: bool = True) -> T:
        """Run ``fn`` inside one write transaction on the database thread; wakes waiters after commit.

        A busy database (another process holds the write lock past ``busy_timeout``) or a full disk rolls
        the transaction back and runs it again with backoff (:mod:`reviewer_app.persistence.retry`), with
        :attr:`db_status` saying so; after the retry budget it raises ``WriteRetriesExhausted``. ``retry=False``:
        one try (heartbeats, giving a run up). A backend made with ``writes_on_loop`` first tries the transaction
        on the caller's thread when nothing can make it wait there (:mod:`reviewer_app.hitl.loop_writes`).
        """
        if self._closed:
            raise RuntimeError("the HITL backend is closed")
        store = self.store
        loop_writes = self._loop_writes
        if loop_writes is not None and loop_writes.usable():

            def on_loop() -> T:
                with store.loop_transaction() as tx:
                    result = fn(tx)
                self.feed.committed()
                return result

            outcome = loop_writes.attempt(functools.partial(store.tolerating_bad_text, on_loop))
            if not isinstance(outcome, NotRun):
                self.feed.notify()
                return outcome

        wal = self._wal

        def work() -> T:
            with store.transaction() as tx:
                result = fn(tx)
            self.feed.committed()  # other processes' waiters, straight from this thread: no hop first
            if wal is not None:
                wal.committed()
                if wal.catch_up_due:  # tested here: nearly every commit has no catch-up to run (no call then)
                    wal.after_commit()
            return result

        # with_retry itself, not _retried: one Python call less a write.
        once = (
            functools.partial(with_retry, work, on_status=self._set_db_status, deadline=self.retry_until)
            if retry
            else work
        )
        job = functools.partial(store.tolerating_bad_text, once)
        if loop_writes is None:
            result = await self._db_thread.submit(job)  # not closed: checked above, nothing awaited since
        else:
            loop_writes.thread_writes += 1  # later writes queue behind this one, none overtakes it on the loop
            try:
                result = await self._db_thread.submit(job)
            finally:
                loop_writes.thread_writes -= 1
        self.feed.notify()
        return result

    @property
    def writes_committed_on_loop(self) -> int | None:
        """How many write transactions committed on the loop's thread; None unless made with ``writes_on_loop``."""
        return None if self._loop_writes is None else self._loop_writes.committed_here

    @property
    def wal_checkpoints(self) -> BackgroundWalCheckpoints | None:
        """The thread that checkpoints the write-ahead log (SQLite files; None otherwise)."""
        return self._wal

    def _set_db_status(self, status: str | None) -> None:
        self._db_status = status
        if self.on_db_status is not None:
            self.on_db_status(status)

    @property
    def db_status(self) -> str | None:
        """Why database calls are being retried (:mod:`reviewer_app.persistence.retry`'s reasons), else None."""
        return self._db_status

    @property
    def closed(self) -> bool:
        """True once :meth:`close` ran: nothing more reaches the database."""
        return self._closed

    @property
    def database_url(self) -> str:
        """The database's URL (passwords are the caller's to mask before showing it)."""
        return self.store.url

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._db_thread.shutdown()
        if self._lookup_thread is not None:
            self._lookup_thread.shutdown()
        if self._wal is not None:
            self._wal.close()
        self.feed.close()
        if self._owns_store:
            self.store.close()

    async def aclose(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
