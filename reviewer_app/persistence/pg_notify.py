"""PostgreSQL's change feed: LISTEN on a connection owned by a daemon thread.

Every write transaction sends ``NOTIFY reviewer_changes, 'changed'`` (see
:meth:`reviewer_app.persistence.engine.Engines.write`), and each decision one more
whose payload is ``decided:`` and its request's id; PostgreSQL delivers them only
when the transaction commits, so a woken waiter always finds the change. A
notification without payload comes from a writer that names no decisions (an
older version, a statement typed by hand).
The listener runs in a thread rather than on the event loop because psycopg's
async mode refuses the Windows Proactor loop that qasync uses; the thread hands
each batch of notifications to the loop with ``call_soon_threadsafe``. It
reconnects after a lost connection, and wakes waiters once it listens again so
that they re-check what they may have missed. The requests notifications name are
first handed to the listener look-ups (:meth:`FeedBase.add_listener_look_up`) on
this thread: a waiting agent's decision is read here and reaches the loop in one
hand-over.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
import socket
import threading
from typing import Any

import psycopg

from reviewer_app.persistence.changes import FeedBase
from reviewer_app.persistence.engine import CHANGES_CHANNEL, DECIDED_PREFIX, Engines

log = logging.getLogger(__name__)

# libpq defaults (a URL may override them): notice a silently dropped link (a laptop leaving the VPN) within ~30 s.
KEEPALIVES = {
    "connect_timeout": 5,
    "keepalives": 1,
    "keepalives_idle": 15,
    "keepalives_interval": 5,
    "keepalives_count": 3,
}


class PostgresChangeFeed(FeedBase):
    """The :class:`~reviewer_app.persistence.changes.ChangeFeed` of a PostgreSQL database.

    The LISTEN connection opens on the first :meth:`wait` or :meth:`subscribe`
    (a command that never waits never holds one) and closes with :meth:`close`.
    A ``decided:<id>`` payload is a decision naming its request (``Statements.name_decided``), and no payload a
    writer that names none: both are handed to :meth:`subscribe_decided` listeners as hints only, since anyone
    connected can send any notification.
    """

    names_decisions = True

    def __init__(self, engines: Engines, *, health_interval: float = 10.0, max_retry_delay: float = 2.0) -> None:
        super().__init__()
        args, kwargs = engines.reader.dialect.create_connect_args(engines.reader.url)
        kwargs.pop("context", None)  # SQLAlchemy's adapters: not needed to LISTEN
        self._connect_args: tuple[list[Any], dict[str, Any]] = (list(args), {**KEEPALIVES, **kwargs})
        self.health_interval = health_interval
        self.max_retry_delay = max_retry_delay
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        self._stop = threading.Event()
        # Writing a byte to this socket pair interrupts the listener's select() at once on close.
        self._interrupt: tuple[socket.socket, socket.socket] | None = None
        self.listener_pid: int | None = None  # server process of the LISTEN connection, while connected
        self.connects = 0  # how many times LISTEN was established (reconnects included)

    # -- FeedBase -------------------------------------------------------------------------
    def _start_watcher(self, loop: asyncio.AbstractEventLoop) -> None:
        with self._thread_lock:
            if self._thread is None and not self._stop.is_set():
                self._interrupt = socket.socketpair()
                self._thread = threading.Thread(
                    target=self._listen_forever,
                    args=(self._interrupt[0].fileno(),),
                    name="reviewer-pg-listen",
                    daemon=True,
                )
                self._thread.start()

    def _stop_watcher(self) -> None:
        self._stop.set()
        with self._thread_lock:
            thread, self._thread = self._thread, None
            interrupt, self._interrupt = self._interrupt, None
        if interrupt is None:
            return
        with contextlib.suppress(OSError):
            interrupt[1].send(b"x")
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        for sock in interrupt:
            sock.close()

    # -- the listener thread --------------------------------------------------------------
    def _listen_forever(self, interrupt: int) -> None:
        delay = 0.05
        while not self._stop.is_set():
            try:
                connection = psycopg.connect(*self._connect_args[0], autocommit=True, **self._connect_args[1])
            except psycopg.Error as exc:
                log.warning("cannot open the LISTEN connection (%s); retrying in %.2f s", exc, delay)
                self._stop.wait(delay)
                delay = min(delay * 2, self.max_retry_delay)
                continue
            try:
                with connection:
                    connection.execute(f"LISTEN {CHANGES_CHANNEL}")
                    self.listener_pid = connection.info.backend_pid
                    self.connects += 1
                    delay = 0.05
                    self._remote_change(unseen=True)  # commits before LISTEN took effect: let waiters re-check
                    self._pump(connection, interrupt)
            except psycopg.Error as exc:
                if not self._stop.is_set():
                    log.warning("lost the LISTEN connection (%s); reconnecting", exc)
                    self._stop.wait(delay)
            except OSError:
                if self._stop.is_set():  # closed while connecting: the interrupt socket is gone
                    return
                raise
            finally:
                self.listener_pid = None

    def _pump(self, connection: psycopg.Connection[Any], interrupt: int) -> None:
        """Forward notifications until asked to stop; raises :class:`psycopg.Error` when the link breaks."""
        fd = connection.fileno()
        while not self._stop.is_set():
            readable, _, _ = select.select([fd, interrupt], [], [], self.health_interval)
            if interrupt in readable:
                return
            if not readable:
                connection.execute("SELECT 1")  # idle: prove the link is alive (notices that come along are kept)
            payloads = [notice.payload for notice in connection.notifies(timeout=0)]
            if payloads:
                named = {payload[len(DECIDED_PREFIX) :] for payload in payloads if payload.startswith(DECIDED_PREFIX)}
                if named:  # read on this thread at once, rather than after two more hand-overs between threads
                    named -= self._looked_up_here(frozenset(named))
                self._remote_change(named, unnamed="" in payloads)
