"""Change feeds: tell waiters cheaply that the database changed, whichever process wrote.

The database is the bus. On SQLite a dedicated read-only connection polls
``PRAGMA data_version`` (it changes whenever another connection commits; a few
microseconds, no table scan), and between polls waits on this process's socket of
the database's wake-up channel (:mod:`reviewer_app.persistence.wakeup`), where
writers in other processes send a hint right after each commit: a decision wakes
other processes in well under a millisecond, and a lost hint costs at most the
poll interval. On PostgreSQL every write transaction sends
``NOTIFY reviewer_changes`` (delivered only on commit) and a listener thread
wakes the loop (:mod:`reviewer_app.persistence.pg_notify`). Writers in this
process also call :meth:`ChangeFeed.notify` so that local waiters wake at once.
There each decision also names its request in a notification of its own, so waiting agents look up only the
requests a decision named (:meth:`ChangeFeed.subscribe_decided`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from reviewer_app.persistence.engine import Engines, sqlite_path
from reviewer_app.persistence.wakeup import WakeListener, WakeSender
from reviewer_app.persistence.wakeup import supported as wake_supported

Listener = Callable[[], None]


@dataclass(frozen=True)
class DecidedHint:
    """What a feed learnt of decisions since it last told: a hint, since anyone connected can send notifications.
    Re-read the rows it points at; trust nothing more."""

    named: frozenset[str] = frozenset()
    """Requests decisions named."""
    unseen: bool = False
    """Any request may have been decided unseen (the watcher listens again after losing its connection)."""
    unnamed: bool = False
    """A writer that names no decisions committed (an older version, a statement typed by hand)."""


DecidedListener = Callable[[DecidedHint], None]
ListenerLookUp = Callable[[frozenset[str]], Collection[str]]
StatusListener = Callable[[str | None], None]
L = TypeVar("L")
log = logging.getLogger(__name__)


class ChangeFeed(Protocol):
    """Wakes waiters when anything was committed to the database."""

    def token(self) -> int:
        """A value that differs after any commit (from any process) once waiters have been woken."""
        ...

    async def wait(self, since: int, timeout: float | None = None) -> int:
        """Return the new token once it differs from ``since`` (or when ``timeout`` passes)."""
        ...

    def notify(self) -> None:
        """A writer in this process committed: wake waiters now."""
        ...

    def committed(self) -> None:
        """Called right after each commit (on the writing thread): tell other processes' waiters, where that
        is not the database's own doing (the SQLite wake-up channel; PostgreSQL's NOTIFY needs nothing)."""
        ...

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` on the waiters' loop after each change; returns an unsubscribe function."""
        ...

    def subscribe_status(self, listener: StatusListener) -> Callable[[], None]:
        """Call ``listener`` on the loop with a message while the watcher is failing and retrying, None once well."""
        ...

    @property
    def names_decisions(self) -> bool:
        """Whether :meth:`subscribe_decided` listeners hear of every decision (PostgreSQL); else only changes."""
        ...

    def subscribe_decided(self, listener: DecidedListener) -> Callable[[], None]:
        """Call ``listener`` on the loop with a :class:`DecidedHint` of what came since the last call."""
        ...

    def add_listener_look_up(self, look_up: ListenerLookUp) -> Callable[[], None]:
        """Where the feed names decisions: ``look_up(named)`` runs on the feed's listening thread as soon as
        notifications name decided requests, before the loop hears of them, and returns the names it dealt with
        (their waiters are resolved from what it read); :meth:`subscribe_decided` listeners do not hear of those.
        Returns the function that removes it."""
        ...

    def close(self) -> None: ...


def _added(listeners: list[L], listener: L) -> Callable[[], None]:
    """``listener`` appended to ``listeners``; returns the function that takes it off again."""
    listeners.append(listener)

    def unsubscribe() -> None:
        if listener in listeners:
            listeners.remove(listener)

    return unsubscribe


class FeedBase:
    """Shared machinery of every feed: the token, waiters and listeners on one asyncio loop.

    A subclass supplies the *watcher* that learns about commits from other
    processes (:meth:`_start_watcher`) and reports each one with
    :meth:`_remote_change`, from any thread. A watcher reports once more as soon
    as it is watching, because a commit that landed before it started is
    otherwise lost to a waiter that read the database just before.
    """

    def __init__(self) -> None:
        self._local = 0
        self._remote = 0
        self._lock = threading.Lock()
        self._waiters: set[asyncio.Future[None]] = set()
        self._listeners: list[Listener] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._status: str | None = None
        self._status_listeners: list[StatusListener] = []
        self._decided_listeners: list[DecidedListener] = []
        self._decided: set[str] = set()  # named since the loop last took them (under _lock)
        self._decided_unseen = False  # decisions may have gone unseen (under _lock)
        self._decided_unnamed = False  # a writer that names no decisions committed (under _lock)
        self._listener_look_ups: list[ListenerLookUp] = []

    # -- for subclasses ---------------------------------------------------------------------
    def _start_watcher(self, loop: asyncio.AbstractEventLoop) -> None:  # pragma: no cover - abstract
        """Make sure something watches for other processes' commits and reports to ``loop``."""
        raise NotImplementedError

    def _stop_watcher(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _set_status(self, status: str | None) -> None:
        """The watcher is failing and retrying (a message) or well again (None); thread-safe."""
        if status == self._status:
            return
        self._status = status
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(self._tell_status, status)

    def _tell_status(self, status: str | None) -> None:
        for listener in list(self._status_listeners):
            listener(status)

    @property
    def status(self) -> str | None:
        """Why the feed cannot see other processes right now (it is retrying), or None."""
        return self._status

    names_decisions = False

    MAX_NAMED = 10_000
    """More ids named between two turns of the loop (a flood of notifications) count as "anything was decided"."""

    def _remote_change(self, decided: Iterable[str] = (), *, unseen: bool = False, unnamed: bool = False) -> None:
        """Another connection committed (thread-safe): bump the token and wake the loop. The rest is for
        :meth:`subscribe_decided`: ``decided``, the requests its decisions named; ``unseen``, decisions may have gone
        unseen (the watcher just started listening); ``unnamed``, its writer names no decisions."""
        with self._lock:
            self._remote += 1
            self._decided.update(decided)
            self._decided_unseen |= unseen or len(self._decided) > self.MAX_NAMED
            self._decided_unnamed |= unnamed
        self._schedule_wake()

    def _looked_up_here(self, named: frozenset[str]) -> set[str]:
        """The watcher's thread: hand the names to each listener look-up; the names they dealt with."""
        done: set[str] = set()
        for look_up in list(self._listener_look_ups):
            done.update(look_up(named))
        return done

    # -- the ChangeFeed protocol ------------------------------------------------------------
    def token(self) -> int:
        with self._lock:
            return self._local * 1_000_003 + self._remote

    def notify(self) -> None:
        with self._lock:
            self._local += 1
        self._schedule_wake()

    def committed(self) -> None:
        """Nothing by default: other processes learn of commits from the database itself."""

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        unsubscribe = _added(self._listeners, listener)
        self._ensure_watching()
        return unsubscribe

    def subscribe_status(self, listener: StatusListener) -> Callable[[], None]:
        return _added(self._status_listeners, listener)

    def subscribe_decided(self, listener: DecidedListener) -> Callable[[], None]:
        unsubscribe = _added(self._decided_listeners, listener)
        self._ensure_watching()
        return unsubscribe

    def add_listener_look_up(self, look_up: ListenerLookUp) -> Callable[[], None]:
        return _added(self._listener_look_ups, look_up)

    async def wait(self, since: int, timeout: float | None = None) -> int:
        if self.token() != since:
            return self.token()
        loop = self._ensure_watching()
        future: asyncio.Future[None] = loop.create_future()
        self._waiters.add(future)
        try:
            if self.token() == since:  # a change may have come while the watcher started
                # asyncio.wait neither cancels the future on timeout nor swallows a cancel that
                # lands in the same loop turn as a wake-up (wait_for(shield()) does on 3.11).
                await asyncio.wait({future}, timeout=timeout)
        finally:
            self._waiters.discard(future)
        return self.token()

    def close(self) -> None:
        """Stop watching; waiters wake (and their next wait raises), nothing waits forever."""
        self._closed = True
        self._stop_watcher()
        self._schedule_wake(listeners=False)

    # -- plumbing ---------------------------------------------------------------------------
    def _ensure_watching(self) -> asyncio.AbstractEventLoop:
        if self._closed:
            raise RuntimeError("the change feed is closed")
        loop = asyncio.get_running_loop()
        self._loop = loop
        self._start_watcher(loop)
        return loop

    def _schedule_wake(self, *, listeners: bool = True) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._wake(listeners)
            return
        try:
            loop.call_soon_threadsafe(self._wake, listeners)
        except RuntimeError:  # the loop closed in the meantime: nobody is left to wake
            pass

    def _wake(self, listeners: bool = True) -> None:
        for future in list(self._waiters):
            if not future.done():
                future.set_result(None)
        if not listeners:
            return
        for listener in list(self._listeners):
            listener()
        with self._lock:
            if not (self._decided or self._decided_unseen or self._decided_unnamed):
                return  # nothing learnt of decisions (every local commit wakes this): no hint to make
            hint = DecidedHint(frozenset(self._decided), self._decided_unseen, self._decided_unnamed)
            self._decided, self._decided_unseen, self._decided_unnamed = set(), False, False
        for decided_listener in list(self._decided_listeners):
            decided_listener(hint)


class _PollingFeed(FeedBase):
    """A poll thread that probes while anyone listens, never on the loop's thread.

    The loop is the Qt thread in the window: a probe that waits on a lock or a slow disk must not freeze it.
    A probe that raises does not end the watching: the thread says so (:attr:`status`), backs off, starts
    again (:meth:`_recover`), and reports a change once it probes again, since it may have missed commits.
    Subclasses give :meth:`_probe`, a cheap read that changes when the database does.
    """

    def __init__(self, interval: float, *, max_retry_delay: float = 2.0) -> None:
        super().__init__()
        self.interval = interval
        self.max_retry_delay = max_retry_delay
        self.probe_errors = 0
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        self._stop = threading.Event()

    def _probe(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def _recover(self) -> None:
        """After a failed probe: whatever a fresh start needs (a new connection)."""

    def _start_watcher(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._thread_lock:
            if self._thread is None and not self._stop.is_set():
                self._before_watch()
                self._thread = threading.Thread(target=self._poll_forever, name="reviewer-change-feed", daemon=True)
                self._thread.start()

    def _before_watch(self) -> None:
        """Before the poll thread's first probe (a listener bound now sees every commit after that probe)."""

    def _interrupt(self) -> None:
        """Make a pause end now (on close)."""

    def _poll_forever(self) -> None:
        last: int | None = None
        delay = self.interval
        while not self._stop.is_set():
            try:
                if last is None:
                    last = self._probe()
                    self._remote_change()  # see FeedBase: re-check whatever landed before this probe
                    self._set_status(None)
                elif self._waiters or self._listeners:
                    current = self._probe()
                    if current != last:
                        last = current
                        self._remote_change()
                delay = self.interval
            except Exception as exc:
                if self._stop.is_set():  # closed from another thread mid-probe
                    return
                self.probe_errors += 1
                last = None
                delay = min(max(delay * 2, 0.1), self.max_retry_delay)
                log.warning("the change feed's probe failed (%s); retrying in %.2f s", exc, delay)
                self._set_status(f"not seeing other processes' changes ({exc}); retrying")
                with contextlib.suppress(Exception):
                    self._recover()
            self._pause(delay)
        self._watch_ended()

    def _pause(self, delay: float) -> None:
        """Between probes: sleep ``delay`` (a subclass may return early when told of a commit)."""
        self._stop.wait(delay)

    def _watch_ended(self) -> None:
        """On the poll thread, once it stops."""

    def _stop_watcher(self) -> None:
        self._stop.set()
        self._interrupt()
        with self._thread_lock:
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)


class SQLiteChangeFeed(_PollingFeed):
    """``PRAGMA data_version`` on a connection of its own, every ``interval`` seconds or at once when a hint
    arrives on the wake-up channel (``channel=False``: polling only, as on Windows)."""

    HINT_SPACING = 0.001
    """At most one hint-driven probe per this many seconds: a flood of datagrams costs a probe per millisecond."""

    def __init__(self, path: Path, interval: float = 0.05, *, channel: bool = True) -> None:
        super().__init__(interval)
        self._path = path
        self._connection = self._connect()
        self._probe_lock = threading.Lock()
        self._sender = WakeSender(path) if channel and wake_supported() else None
        self._listener: WakeListener | None = None
        self._last_hint = 0.0
        self.hints = 0
        """Pauses a wake-up hint cut short (for tests and benchmarks)."""

    @property
    def listening(self) -> bool:
        """Whether other processes' commits wake this feed at once (else it only polls)."""
        return self._listener is not None

    def committed(self) -> None:
        if self._sender is not None:
            try:
                self._sender.send()
            except Exception as exc:  # the commit stands whatever the hint does; waiters poll
                log.warning("wake-up hint failed (%s); other processes will notice by polling", exc)

    def _before_watch(self) -> None:
        if self._sender is not None and self._listener is None:
            self._listener = WakeListener.open(self._path)
            if self._listener is not None:
                self._sender.exclude = os.fsencode(self._listener.path)

    def _pause(self, delay: float) -> None:
        listener = self._listener
        if listener is None:
            super()._pause(delay)
            return
        since = time.monotonic() - self._last_hint
        if since < self.HINT_SPACING:  # hinted a moment ago: a flood must not turn into a busy loop
            if self._stop.wait(self.HINT_SPACING - since):
                return
            delay = max(0.0, delay - (self.HINT_SPACING - since))
        try:
            readable, _, _ = select.select([listener], [], [], delay)
        except (OSError, ValueError):  # closed under us
            super()._pause(delay)
            return
        if readable and listener.drain():
            self._last_hint = time.monotonic()
            self.hints += 1

    def _interrupt(self) -> None:
        if self._listener is not None:
            self._listener.poke()

    def _watch_ended(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()

    def _connect(self) -> sqlite3.Connection:
        connection = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        connection.execute("PRAGMA busy_timeout = 1000")
        return connection

    def _probe(self) -> int:
        with self._probe_lock:
            row = self._connection.execute("PRAGMA data_version").fetchone()
        return int(row[0])

    def _recover(self) -> None:
        with self._probe_lock:
            if not self._stop.is_set():
                old, self._connection = self._connection, self._connect()
                old.close()

    def close(self) -> None:
        super().close()
        with self._probe_lock:
            self._connection.close()
        if self._thread is None:  # never watched, or joined: nobody else closes the listener
            self._watch_ended()
        if self._sender is not None:
            self._sender.close()


class MaxColumnChangeFeed(_PollingFeed):
    """For servers without a cheaper signal: the newest change stamps, read through the index."""

    def __init__(self, engines: Engines, interval: float = 0.2) -> None:
        super().__init__(interval)
        self._engines = engines

    def _probe(self) -> int:
        with self._engines.reader.connect() as connection:
            row = connection.exec_driver_sql(
                "SELECT (SELECT COALESCE(MAX(updated_at_ms), 0) FROM hitl_requests),"
                " (SELECT COALESCE(MAX(seq), 0) FROM block_events),"
                " (SELECT COALESCE(MAX(updated_at_ms), 0) FROM invocations)"
            ).one()
        return hash(tuple(row))


class LocalChangeFeed(FeedBase):
    """An in-memory SQLite database: only this process can write it, so its own commits are all there is to see.

    Nothing may probe it from another thread: its one connection is shared by every thread (``StaticPool``), and a
    probe's check-in rolled back whatever transaction the database thread had open (a decision "made" and gone).
    """

    def _start_watcher(self, loop: asyncio.AbstractEventLoop) -> None:
        """Nothing to watch: :meth:`notify` reports every commit."""

    def _stop_watcher(self) -> None:
        """Nothing was started."""


def change_feed_for(engines: Engines) -> ChangeFeed:
    """The cheapest feed the database offers: data_version on SQLite, LISTEN/NOTIFY on PostgreSQL."""
    path = sqlite_path(engines.url)
    if path is not None:
        return SQLiteChangeFeed(path)
    if engines.is_sqlite:
        return LocalChangeFeed()
    if engines.dialect == "postgresql":
        from reviewer_app.persistence.pg_notify import PostgresChangeFeed  # needs psycopg: load it only here

        return PostgresChangeFeed(engines)
    return MaxColumnChangeFeed(engines)
