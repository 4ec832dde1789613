"""What every aggregate holds: :class:`Statements` (one transaction's connection) or :class:`Reader` (the store's
reads).

Both answer :class:`RowSource` (``rows`` and ``reading``), so a lookup an aggregate makes on either side (a request
by id, a session's waivers) is written once and runs on whichever the aggregate was given.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Protocol, TypeVar, cast

from sqlalchemy import Connection, text

from reviewer_app.domain.identity import recorded_reviewer
from reviewer_app.persistence.audit_seal import AuditSeal
from reviewer_app.persistence.blobs import ValueMemo
from reviewer_app.persistence.engine import CHANGES_CHANNEL, DECIDED_PREFIX, MAX_NOTIFY_PAYLOAD, Engines
from reviewer_app.persistence.store.fastpath import EncodedJSON, _HeldConnection, _insert_ignore_statement, _Prepared
from reviewer_app.persistence.store.records import CreationClock


class RowSource(Protocol):
    """Where an aggregate's lookups run: a transaction (:class:`Statements`) or the store's reads (:class:`Reader`)."""

    @property
    def dialect(self) -> str: ...

    def rows(self, stmt: Any, values: Mapping[str, Any]) -> list[Mapping[str, Any]]: ...

    def reading(self) -> AbstractContextManager[Connection]: ...


_NOTIFY_DECIDED = text("SELECT pg_notify(:channel, :payload)")
_READS_CLOCK = CreationClock()
"""The clock of a :class:`Statements` no store set one on (reads: they stamp nothing)."""


class Statements:
    """One transaction's connection and the statement plumbing every aggregate's writes run through.

    The store makes one per transaction (see :class:`reviewer_app.persistence.store.database.StoreTx`) and hands
    it to each aggregate's write side; reads on one connection use it too (:meth:`Reader.rows`).
    """

    # What a write transaction needs of its store, set by the Store on each one (see Store._prepare_tx); class
    # defaults, so a read's Statements (made for every read) assigns none of them.
    seal: AuditSeal | None = None
    creation_clock: CreationClock = _READS_CLOCK  # the Store's own on writes: stamps that never repeat
    database_url = ""
    login: str | None = None  # PostgreSQL: session_user (see recorded)
    blob_memo: ValueMemo | None = None  # the Store's (see ValueMemo)

    def __init__(
        self,
        connection: Connection,
        dialect: str,
        prepared: dict[Any, _Prepared] | None = None,
        driver: sqlite3.Connection | None = None,
    ) -> None:
        self.connection = connection
        self.dialect = dialect
        self._on_commit: dict[str, Callable[[], None]] = {}
        # SQLite only: statements compiled once per Store (see _Prepared); None means plain SQLAlchemy.
        self._prepared = prepared if dialect == "sqlite" else None
        self._driver_connection = driver

    def recorded(self, reviewer: str) -> str:
        """The name a decision is recorded under: on PostgreSQL always under this connection's login.

        The same string goes into ``decided_by`` and the audit row's hash, and it is what migration 0006's
        triggers accept, so a client never records a name its login does not back.
        """
        return reviewer if self.login is None else recorded_reviewer(self.login, reviewer)

    def name_decided(self, hitl_id: str) -> None:
        """PostgreSQL: a notification whose payload names the decided request (``decided:<id>``), delivered with the
        commit, so a process looks up only the waiters a decision names (:mod:`reviewer_app.persistence.pg_notify`)."""
        payload = DECIDED_PREFIX + hitl_id
        if self.dialect == "postgresql" and len(payload.encode()) <= MAX_NOTIFY_PAYLOAD:
            self.connection.execute(_NOTIFY_DECIDED, {"channel": CHANGES_CHANNEL, "payload": payload})

    def after_commit(self, name: str, action: Callable[[], None]) -> None:
        """Run ``action`` once this transaction has committed (the last one registered under ``name`` wins)."""
        self._on_commit[name] = action

    def committed(self) -> None:
        """Called by the transaction's owner after COMMIT succeeded."""
        actions, self._on_commit = list(self._on_commit.values()), {}
        for action in actions:
            action()

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """This transaction's connection: a lookup inside it sees its own writes, under its write lock."""
        yield self.connection

    def _prepared_for(self, stmt: Any, values: Mapping[str, Any]) -> _Prepared:
        assert self._prepared is not None
        key = (stmt, tuple(values))
        prepared = self._prepared.get(key)
        if prepared is None:
            prepared = self._prepared[key] = _Prepared.build(stmt, key[1], self.connection.dialect)
        return prepared

    def rows(self, stmt: Any, values: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """Rows of a SELECT or of a statement with RETURNING, as mappings."""
        cache = self._prepared
        if cache is None:
            return [cast(Mapping[str, Any], row._mapping) for row in self.connection.execute(stmt, values)]
        # _prepared_for and _driver inline: every statement of the fast path passes here or in write().
        prepared = cache.get((stmt, tuple(values))) or self._prepared_for(stmt, values)
        driver = self._driver_connection or self._driver()
        rows: list[Any] = prepared.rows(prepared.execute(driver, values))  # no cast(): a Python call per read
        return rows

    def write(self, stmt: Any, values: Mapping[str, Any]) -> int:
        """Run a write; returns the rows it changed."""
        cache = self._prepared
        if cache is None:
            # preserve_rowcount: SQLAlchemy keeps an INSERT's rowcount only when asked (psycopg reports -1 otherwise).
            result = self.connection.execute(stmt, values, execution_options={"preserve_rowcount": True})
            return int(result.rowcount or 0)
        prepared = cache.get((stmt, tuple(values))) or self._prepared_for(stmt, values)
        driver = self._driver_connection or self._driver()
        return int(prepared.execute(driver, values).rowcount or 0)

    def json_value(self, value: Any, text: str) -> Any:
        """What to bind to a JSON column for ``value`` whose ``json.dumps`` text the caller already made (to learn
        its size): that text on the SQLite fast path, so it is not encoded twice; ``value`` itself elsewhere."""
        return value if self._prepared is None else EncodedJSON(text)

    def write_many(self, stmt: Any, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run a write once per row (all rows with the same keys) as one ``executemany``; nothing is read back."""
        if not rows:
            return
        if self._prepared is None:
            self.connection.execute(stmt, list(rows))
            return
        self._prepared_for(stmt, rows[0]).execute_many(self._driver(), rows)

    def _driver(self) -> sqlite3.Connection:
        """The pysqlite connection under this transaction (already begun)."""
        driver = self._driver_connection
        if driver is None:
            driver = self._driver_connection = cast(sqlite3.Connection, self.connection.connection.driver_connection)
        return driver

    def insert_ignore(self, table: Any, values: dict[str, Any], index: Sequence[str]) -> int:
        """INSERT that does nothing when the key exists; returns rows inserted."""
        return self.write(_insert_ignore_statement(table, tuple(index), self.dialect), values)


T = TypeVar("T")

# What pysqlite says when a TEXT value holds bytes that are not UTF-8 (another program wrote them).
_UNDECODABLE_TEXT = "Could not decode to UTF-8"


def _lenient_text(raw: bytes) -> str:
    """TEXT as str, invalid UTF-8 shown as U+FFFD instead of failing the whole query."""
    return raw.decode("utf-8", "replace")


def is_undecodable_text(error: BaseException) -> bool:
    """True when ``error`` (pysqlite's or SQLAlchemy's wrapper) is a TEXT value that is not UTF-8."""
    return _UNDECODABLE_TEXT in str(error)


class _LenientRetry(threading.local):
    """Per thread: the connections :meth:`Reader.tolerating_bad_text`'s retry made lenient (None: not retrying).

    A class default, so asking on a thread that never retried raises no AttributeError (every transaction asks)."""

    touched: list[sqlite3.Connection] | None = None


class Reader:
    """The store's reads: a held reader connection (SQLite files) or the pool, each read in its own transaction.

    Every aggregate's read side holds the store's one :class:`Reader`.

    pysqlite refuses a TEXT value that is not valid UTF-8 and fails the whole query with it, so one row
    another program wrote could hide every request. A tolerant ``text_factory`` on every read would cost
    about half of a 100,000-row listing, so :meth:`tolerating_bad_text` retries only the read that failed,
    with invalid bytes shown as U+FFFD.
    """

    _lenient = _LenientRetry()

    def __init__(
        self,
        engines: Engines,
        prepared: dict[Any, _Prepared],
        held: _HeldConnection | None,
        lookup_connections: Sequence[_HeldConnection] = (),
    ) -> None:
        self.engines = engines
        self._prepared = prepared
        self._held_reader = held
        self._lookup_connections = tuple(lookup_connections)
        self._shared = threading.local()  # this thread's connection inside sharing_one_connection()

    @property
    def dialect(self) -> str:
        return self.engines.dialect

    def tolerating_bad_text(self, work: Callable[[], T]) -> T:
        """``work()``; if a stored TEXT value is not UTF-8, ``work()`` again decoding TEXT leniently.

        ``work`` may be a read or a whole write transaction (a decision reads the row it settles): the
        failed attempt changed nothing, and every connection the retry used is strict again afterwards.
        """
        try:
            return work()
        except Exception as exc:
            if not (self.engines.is_sqlite and is_undecodable_text(exc)):
                raise
        touched: list[sqlite3.Connection] = []
        self._lenient.touched = touched
        try:
            return work()
        finally:
            self._lenient.touched = None
            for driver in touched:
                driver.text_factory = str

    def decode_leniently_if_retrying(self, connection: Any) -> None:
        """Inside :meth:`tolerating_bad_text`'s retry: this connection decodes invalid UTF-8 as U+FFFD."""
        touched = self._lenient.touched
        if touched is None or not self.engines.is_sqlite:
            return
        driver = cast(sqlite3.Connection, connection.connection.driver_connection)
        driver.text_factory = _lenient_text
        touched.append(driver)

    @contextmanager
    def sharing_one_connection(self) -> Iterator[None]:
        """Reads on this thread inside the block share one connection, such as a waiting agent's look-up with its
        audit check.

        On PostgreSQL the connection autocommits: no ``BEGIN`` before the reads and no ``ROLLBACK`` after them. Each
        read sees what was committed when it ran, as each statement of a ``READ COMMITTED`` transaction
        (PostgreSQL's default) does anyway. It is one of the store's kept look-up connections when one is free:
        no pool checkout and so no liveness ping (a round trip that cost tens of milliseconds on a loaded server);
        a read on a connection the server dropped fails and is retried on a new one.
        """
        if getattr(self._shared, "connection", None) is not None:
            yield
            return
        for holder in self._lookup_connections:
            connection = holder.acquire()
            if connection is not None:
                break
        else:
            with self.reading() as pooled:
                self._autocommit(pooled)  # reset when the pool takes it back
                self._shared.connection = pooled
                try:
                    yield
                finally:
                    self._shared.connection = None
            return
        try:
            self._autocommit(connection)
            self._shared.connection = connection
            yield
        finally:
            self._shared.connection = None
            try:
                if connection.in_transaction():  # SQLAlchemy's bookkeeping: no round trip while autocommitting
                    connection.rollback()
            except Exception:
                connection.invalidate()
            finally:
                holder.release()

    def _autocommit(self, connection: Connection) -> None:
        if self.engines.dialect != "postgresql":
            return
        if connection.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            connection.execution_options(isolation_level="AUTOCOMMIT")

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        shared: Connection | None = getattr(self._shared, "connection", None)
        if shared is not None:
            yield shared
            return
        held = self._held_reader
        connection = held.acquire() if held is not None else None
        if held is None or connection is None:
            with self.engines.read() as pooled:
                self.decode_leniently_if_retrying(pooled)
                yield pooled
            return
        try:
            self.decode_leniently_if_retrying(connection)
            yield connection
        finally:
            try:
                if connection.in_transaction():  # what the pool's reset-on-return did: end the read
                    connection.rollback()
            except Exception:
                connection.invalidate()
            finally:
                held.release()

    def rows(self, stmt: Any, values: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """One prebuilt read (on SQLite a single autocommit SELECT on the DB-API connection, see _Prepared)."""
        with self.reading() as connection:
            return self.on(connection).rows(stmt, values)

    def on(self, connection: Connection) -> Statements:
        """Prebuilt statements on a connection this reader handed out (several reads in one)."""
        return Statements(connection, self.engines.dialect, self._prepared)
