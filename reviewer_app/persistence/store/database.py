"""The store: one object to open the database and read or write every aggregate through.

Callers group writes with :meth:`Store.transaction`, which yields a :class:`StoreTx`; on SQLite it is a
``BEGIN IMMEDIATE`` transaction, so compare-and-set decisions and the audit chain never race. Async code reaches
the store through :class:`reviewer_app.hitl.SQLHITLBackend`, which runs these methods on one database thread.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DatabaseError, OperationalError

from reviewer_app.domain.hitl import (
    DatabaseUnavailable,
    SchemaError,
)
from reviewer_app.domain.sanitize import redact_url
from reviewer_app.persistence import migrate
from reviewer_app.persistence.audit_seal import AuditSeal
from reviewer_app.persistence.blobs import ValueMemo
from reviewer_app.persistence.engine import (
    BUSY_TIMEOUT_MS,
    Engines,
    create_engines,
    create_loop_writer,
    database_url,
    sqlite_path,
)
from reviewer_app.persistence.store.audit import AuditReads, AuditWrites
from reviewer_app.persistence.store.base import Reader, Statements
from reviewer_app.persistence.store.blobstore import BlobWrites
from reviewer_app.persistence.store.checkpoints import CheckpointReads, CheckpointWrites
from reviewer_app.persistence.store.fastpath import WriterBusy, _HeldConnection, _Prepared, _Write
from reviewer_app.persistence.store.history import HistoryReads
from reviewer_app.persistence.store.records import CreationClock
from reviewer_app.persistence.store.requests import RequestReads, RequestWrites
from reviewer_app.persistence.store.rules import RuleReads, RuleWrites
from reviewer_app.persistence.store.runs import RunReads, RunWrites
from reviewer_app.persistence.store.stats import StatsReads
from reviewer_app.persistence.store.timeline import TimelineReads, TimelineWrites
from reviewer_app.persistence.store.waivers import WaiverReads, WaiverWrites

T = TypeVar("T")


A = TypeVar("A")


class _Aggregate(Generic[A]):
    """A transaction's aggregate, made on first use: most transactions touch two or three of them, and the
    SQLite fast path's short transactions would otherwise pay for all of them."""

    def __init__(self, make: Callable[[StoreTx], A]) -> None:
        self._make = make
        self._slot = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = f"_{name}"

    @overload
    def __get__(self, tx: None, owner: type) -> _Aggregate[A]: ...

    @overload
    def __get__(self, tx: StoreTx, owner: type | None = None) -> A: ...

    def __get__(self, tx: StoreTx | None, owner: type | None = None) -> A | _Aggregate[A]:
        if tx is None:  # looked up on the class (documentation tools)
            return self
        made: A | None = getattr(tx, self._slot)  # None until made (StoreTx.__init__): no AttributeError to catch
        if made is None:
            made = self._make(tx)
            setattr(tx, self._slot, made)
        return made


class StoreTx:
    """One write transaction: the write side of every aggregate, on one connection. From :meth:`Store.transaction`.

    ``tx.requests.decide(...)``, ``tx.timeline.append(...)``: each aggregate holds this transaction's
    :class:`Statements` and the other aggregates it writes through (a decision appends its audit row).
    """

    __slots__ = (
        "_audit",
        "_blobs",
        "_checkpoints",
        "_requests",
        "_rules",
        "_runs",
        "_timeline",
        "_waivers",
        "statements",
    )
    statements: Statements

    blobs = _Aggregate(lambda tx: BlobWrites(tx.statements))
    audit = _Aggregate(lambda tx: AuditWrites(tx.statements, tx.blobs))
    runs = _Aggregate(lambda tx: RunWrites(tx.statements))
    checkpoints = _Aggregate(lambda tx: CheckpointWrites(tx.statements, tx.blobs))
    timeline = _Aggregate(lambda tx: TimelineWrites(tx.statements, tx.blobs))
    requests = _Aggregate(lambda tx: RequestWrites(tx.statements, tx))
    rules = _Aggregate(lambda tx: RuleWrites(tx.statements, tx.requests, tx.audit))
    waivers = _Aggregate(lambda tx: WaiverWrites(tx.statements, tx.requests))

    def __init__(self, statements: Statements) -> None:
        self.statements = statements
        self._audit = self._blobs = self._checkpoints = self._requests = None
        self._rules = self._runs = self._timeline = self._waivers = None

    @property
    def connection(self) -> Connection:
        """The transaction's connection (for statements no aggregate offers: tests, migrations' checks)."""
        return self.statements.connection

    def recorded(self, reviewer: str) -> str:
        """The name a decision is recorded under (see :meth:`Statements.recorded`)."""
        return self.statements.recorded(reviewer)

    def committed(self) -> None:
        """Called by the transaction's owner after COMMIT succeeded."""
        self.statements.committed()


class Store:
    """Reviewer's database: open (and migrate) once, then read through one object per aggregate
    (``store.requests.get(id)``, ``store.runs.list()``) and write in :meth:`transaction`."""

    def __init__(self, engines: Engines, *, seal: AuditSeal | None = None) -> None:
        self.engines = engines
        self._seal = seal
        self._prepared: dict[Any, _Prepared] = {}  # hot-path statements compiled for SQLite, see StoreTx
        # SQLite files: one writer and one reader connection kept out of the pool (see _HeldConnection).
        held = sqlite_path(engines.url) is not None
        self._held_writer = _HeldConnection(engines.writer) if held else None
        self._held_reader = _HeldConnection(engines.reader) if held else None
        self._loop_writer: _HeldConnection | None = None  # made on the first loop_transaction
        self._loop_engine: Engine | None = None
        self._loop_writer_lock = threading.Lock()
        self._login: str | None = None
        self.creation_clock = CreationClock()
        self._identity_url: str | None = None
        # What every write transaction's Statements is given (see _prepare_tx): seal, clock, memo, url, login.
        self._tx_settings: tuple[AuditSeal, CreationClock, ValueMemo, str, str | None] | None = None
        self._blob_memo = ValueMemo()  # used on the DB thread only (one transaction at a time)
        # PostgreSQL: the connections the waiting agents' look-ups keep (see Reader.sharing_one_connection).
        self._lookup_connections = () if engines.is_sqlite else tuple(_HeldConnection(engines.reader) for _ in "ab")
        self._reader = reader = Reader(engines, self._prepared, self._held_reader, self._lookup_connections)
        self.requests = RequestReads(reader)
        self.runs = RunReads(reader)
        self.checkpoints = CheckpointReads(reader)
        self.timeline = TimelineReads(reader)
        self.audit = AuditReads(reader, lambda: self.audit_seal, lambda: self.identity_url)
        self.rules = RuleReads(reader)
        self.waivers = WaiverReads(reader)
        self.history = HistoryReads(reader)
        self.stats = StatsReads(reader)

    @classmethod
    def open(
        cls,
        target: str | Any,
        *,
        migrate_schema: bool = True,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        seal: AuditSeal | None = None,
        autocheckpoint: bool = True,
    ) -> Store:
        """Open a path or SQLAlchemy URL, creating or migrating the schema first.

        ``autocheckpoint`` False (SQLite): commits never checkpoint the write-ahead log; the caller runs
        :meth:`checkpoint` (the backend does, on a thread of its own: ``hitl/wal_checkpoints.py``).

        Raises :class:`SchemaTooNew` for a database from a newer Reviewer and
        :class:`DatabaseUnavailable` (with the reason) when it cannot be opened.
        """
        url = database_url(target)
        engines = create_engines(url, busy_timeout_ms=busy_timeout_ms, autocheckpoint=autocheckpoint)
        try:
            if migrate_schema:
                migrate.upgrade(engines)
            else:
                with engines.read() as connection:
                    connection.exec_driver_sql("SELECT 1")
        except SchemaError:
            engines.dispose()
            raise
        except (OperationalError, DatabaseError, OSError) as exc:
            engines.dispose()
            reason = str(getattr(exc, "orig", None) or exc)
            hint = " (another program holds a lock on it; try again when it is done)" if "locked" in reason else ""
            raise DatabaseUnavailable(f"cannot open the database at {url}: {reason}{hint}") from exc
        except BaseException:
            engines.dispose()
            raise
        return cls(engines, seal=seal)

    @property
    def url(self) -> str:
        return self.engines.url

    @property
    def audit_seal(self) -> AuditSeal:
        """The audit key and anchors (the user's default unless one was given), loaded on first use."""
        if self._seal is None:
            self._seal = AuditSeal.default()
        return self._seal

    @property
    def identity_url(self) -> str:
        """The database as its anchors name it: an absolute file path, or the URL without its password.

        Worked out once: every transaction names it, and resolving the path cost ~70 µs per commit."""
        if self._identity_url is None:
            path = sqlite_path(self.engines.url)
            self._identity_url = str(Path(path).resolve()) if path is not None else redact_url(self.engines.url)
        return self._identity_url

    def database_login(self) -> str | None:
        """Who the database says is connected (PostgreSQL's ``session_user``), read once; None on SQLite.

        On PostgreSQL every decision is recorded under it (:meth:`Statements.recorded`), whatever name a client
        asserts: the login, not the client, is the identity.
        """
        if self.engines.dialect != "postgresql":
            return None
        if self._login is None:
            with self.engines.read() as connection:
                self._login = str(connection.execute(text("SELECT session_user")).scalar_one())
        return self._login

    def tolerating_bad_text(self, work: Callable[[], T]) -> T:
        """``work()``, retried decoding TEXT leniently if a stored value is not UTF-8 (see :class:`Reader`)."""
        return self._reader.tolerating_bad_text(work)

    def sharing_one_connection(self) -> AbstractContextManager[None]:
        """Reads on this thread inside the block share one connection (see :meth:`Reader.sharing_one_connection`)."""
        return self._reader.sharing_one_connection()

    def _prepare_tx(self, statements: Statements) -> StoreTx:
        settings = self._tx_settings
        if settings is None:  # worked out on the first transaction, the same for every later one
            settings = self._tx_settings = (
                self.audit_seal,
                self.creation_clock,
                self._blob_memo,
                self.identity_url,
                self.database_login(),
            )
        statements.seal, statements.creation_clock, statements.blob_memo, statements.database_url, statements.login = (
            settings
        )
        self._reader.decode_leniently_if_retrying(statements.connection)
        return StoreTx(statements)

    def close(self) -> None:
        for held in (self._held_writer, self._held_reader, self._loop_writer, *self._lookup_connections):
            if held is not None:
                held.close()
        if self._loop_engine is not None:
            self._loop_engine.dispose()
        self.engines.dispose()

    def transaction(self) -> AbstractContextManager[StoreTx]:
        """One short write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
        return _Write(self, self._held_writer)

    def loop_transaction(self) -> AbstractContextManager[StoreTx]:
        """A write transaction that never waits, for an event loop's own thread (SQLite files only).

        Its own connection (``busy_timeout`` 0, no automatic checkpoint): ``BEGIN IMMEDIATE`` raises "database is
        locked" at once when another connection writes, and :class:`WriterBusy` when this connection is in use;
        nothing was begun either way. Rows, statements and commit are those of :meth:`transaction`.
        """
        writer = self._loop_writer
        if writer is None:
            if not self.engines.is_sqlite or sqlite_path(self.engines.url) is None:
                raise WriterBusy("only a SQLite file has a loop writer")
            with self._loop_writer_lock:
                if self._loop_writer is None:
                    self._loop_engine = create_loop_writer(self.engines.url)
                    self._loop_writer = _HeldConnection(self._loop_engine)
                writer = self._loop_writer
        return _Write(self, writer, pooled_if_busy=False)

    def checkpoint(self) -> int:
        """Copy the write-ahead log into the database file without waiting on anyone (``PASSIVE``): loop writes,
        and every commit of a store opened without ``autocheckpoint``, never checkpoint, so whoever lets them calls
        this now and then, off the loop. Returns the frames the log holds (0 when none or not a SQLite file)."""
        if sqlite_path(self.engines.url) is None:
            return 0
        with self.engines.read() as connection:
            driver = cast(sqlite3.Connection, connection.connection.driver_connection)
            row = driver.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return max(0, int(row[1])) if row is not None else 0

    @contextmanager
    def _pooled_transaction(self) -> Iterator[StoreTx]:
        with self.engines.write() as connection:
            tx = self._prepare_tx(Statements(connection, self.engines.dialect, self._prepared))
            yield tx
        tx.committed()

    def _held_tx(self, connection: Connection, driver: sqlite3.Connection) -> StoreTx:
        return self._prepare_tx(Statements(connection, "sqlite", self._prepared, driver))
