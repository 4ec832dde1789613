"""The SQLite connection fast path: statements compiled once, a held connection, BEGIN IMMEDIATE on the driver.

PostgreSQL and the pooled fall-back keep plain SQLAlchemy; the rows written and read are the same either way.
"""

from __future__ import annotations

import contextlib
import operator
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from sqlalchemy import Connection, Engine
from sqlalchemy.dialects import sqlite
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.sql import sqltypes


class _TransactionSource(Protocol):
    """What :class:`_Write` needs of the store: the pooled path, and a transaction object on a held connection."""

    def _pooled_transaction(self) -> AbstractContextManager[Any]: ...

    def _held_tx(self, connection: Connection, driver: sqlite3.Connection) -> Any: ...


@cache
def _insert_ignore_statement(table: Any, index: tuple[str, ...], dialect: str) -> Any:
    """``INSERT .. ON CONFLICT DO NOTHING`` for ``table``, built once per dialect."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql  # ~45 ms of imports that SQLite users never need

        return postgresql.insert(table).on_conflict_do_nothing(index_elements=list(index))
    if dialect == "sqlite":
        return sqlite.insert(table).on_conflict_do_nothing(index_elements=list(index))
    raise NotImplementedError(dialect)  # pragma: no cover - other dialects are not supported


class EncodedJSON(str):
    """A JSON column's value already encoded (``json.dumps``, as its bind would): the fast path stores the text as
    it is. Made only by :meth:`Statements.json_value`, which the SQLAlchemy path never gets (it would store a
    JSON string)."""

    __slots__ = ()


def _passing_encoded(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A JSON column's bind processor that stores :class:`EncodedJSON` text as it is (and None as the column's own
    processor stores it, worked out once)."""
    null = process(None)

    def bind(value: Any) -> Any:
        if value is None:
            return null
        return value if value.__class__ is EncodedJSON else process(value)

    return bind


def _result_processor(column_type: Any, dialect: Dialect) -> Callable[[Any], Any] | None:
    """A column's result processor; for JSON, stored ``null`` (a pending request's response and tool state) is
    None without the decoder, as the decoder would give it."""
    process: Callable[[Any], Any] | None = column_type.dialect_impl(dialect).result_processor(dialect, None)
    if process is None or not isinstance(column_type, sqltypes.JSON):
        return process

    def result(value: Any) -> Any:
        return None if value is None or value == "null" else process(value)

    return result


def _plain_booleans(process: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A boolean column's bind processor that binds ``True`` and ``False`` as the column's own processor does,
    worked out once (it is two Python calls a value); anything else goes through that processor, refusals too."""
    true, false = process(True), process(False)

    def bind(value: Any) -> Any:
        if value is True:
            return true
        if value is False:
            return false
        return process(value)

    return bind


def _bind_processor(column_type: Any, dialect: Dialect) -> Callable[[Any], Any] | None:
    process: Callable[[Any], Any] | None = column_type.dialect_impl(dialect).bind_processor(dialect)
    if process is not None and isinstance(column_type, sqltypes.JSON):
        return _passing_encoded(process)
    if process is not None and isinstance(column_type, sqltypes.Boolean):
        return _plain_booleans(process)
    return process


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A hot-path statement compiled once for SQLite, run on the DB-API connection of the open transaction.

    SQLAlchemy's per-execute machinery (events, execution context, result set-up) costs several
    times what SQLite spends on these small writes. The SQL text, the parameter order and the
    JSON/boolean conversions still come from the Core statement and its column types, so the rows
    written and read are exactly those of the SQLAlchemy path (PostgreSQL keeps that path).
    """

    sql: str
    names: tuple[str, ...]
    defaults: tuple[Any, ...]
    binds: tuple[Callable[[Any], Any] | None, ...]
    columns: tuple[str, ...]
    results: tuple[Callable[[Any], Any] | None, ...]
    take: Callable[[Mapping[str, Any]], Any] | None
    """When every parameter is one of the keys the statement was built for: their values in order, in one C call
    (then only the columns with a bind processor go through Python)."""
    bound: tuple[tuple[int, Callable[[Any], Any]], ...]
    processed: tuple[tuple[int, str, Callable[[Any], Any]], ...]
    """The result columns with a result processor (JSON, booleans): a row is the driver's values zipped with the
    column names, then only these go through Python."""

    @classmethod
    def build(cls, stmt: Any, keys: tuple[str, ...], dialect: Dialect) -> _Prepared:
        compiled = stmt.compile(dialect=dialect, column_keys=list(keys))
        if compiled.post_compile_params:  # an expanding IN (...) would be baked in once: refuse it loudly
            raise ValueError("prepared statements take one bind parameter per value, not expanding IN lists")
        names = tuple(compiled.positiontup or ())
        literals = compiled.params  # where-clause literals and scalar column defaults
        exported = list(stmt.exported_columns)
        binds = tuple(_bind_processor(compiled.binds[name].type, dialect) for name in names)
        results = tuple(_result_processor(column.type, dialect) for column in exported)
        columns = tuple(column.key for column in exported)
        take = None
        if names and set(names) <= set(keys):
            getter = operator.itemgetter(*names)
            take = getter if len(names) > 1 else (lambda values: (getter(values),))
        return cls(
            sql=str(compiled),
            names=names,
            defaults=tuple(literals.get(name) for name in names),
            binds=binds,
            columns=columns,
            results=results,
            take=take,
            bound=tuple((index, bind) for index, bind in enumerate(binds) if bind is not None),
            processed=tuple(
                (index, name, result)
                for index, (name, result) in enumerate(zip(columns, results, strict=True))
                if result is not None
            ),
        )

    def params(self, values: Mapping[str, Any]) -> list[Any]:
        """The statement's positional parameters for ``values``, each through its column type's bind processor."""
        if self.take is not None:
            params = list(self.take(values))
            for index, bind in self.bound:
                params[index] = bind(params[index])
            return params
        get = values.get
        return [
            get(name, default) if bind is None else bind(get(name, default))
            for name, default, bind in zip(self.names, self.defaults, self.binds, strict=True)
        ]

    def execute(self, connection: sqlite3.Connection, values: Mapping[str, Any]) -> sqlite3.Cursor:
        take = self.take
        if take is not None:  # params() inline: the usual statement, one Python call less
            params = list(take(values))
            for index, bind in self.bound:
                params[index] = bind(params[index])
        else:
            params = self.params(values)
        try:
            return connection.execute(self.sql, params)
        except sqlite3.Error as exc:  # the same exception classes the SQLAlchemy path raises
            raise DBAPIError.instance(self.sql, params, exc, sqlite3.Error) from exc

    def execute_many(self, connection: sqlite3.Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """One ``executemany`` of the statement for every row (rows with the keys it was built for)."""
        params = [self.params(values) for values in rows]
        try:
            connection.executemany(self.sql, params)
        except sqlite3.Error as exc:
            raise DBAPIError.instance(self.sql, params, exc, sqlite3.Error) from exc

    def rows(self, cursor: sqlite3.Cursor) -> list[dict[str, Any]]:
        # fetchall(): a RETURNING statement is finished (and reset) only once all its rows are read.
        columns, processed = self.columns, self.processed
        rows = []
        for raw in cursor.fetchall():
            row = dict(zip(columns, raw, strict=True))
            for index, name, result in processed:
                row[name] = result(raw[index])
            rows.append(row)
        return rows


def _driver_sql(driver: sqlite3.Connection, sql: str) -> None:
    """BEGIN/COMMIT/ROLLBACK on the driver, failing with the exception classes SQLAlchemy would raise."""
    try:
        driver.execute(sql)
    except sqlite3.Error as exc:
        raise DBAPIError.instance(sql, (), exc, sqlite3.Error) from exc


class _HeldConnection:
    """A SQLite connection kept checked out of the pool, used by one caller at a time.

    Checking a connection out of SQLAlchemy's pool, wrapping it and handing it back (with its reset)
    cost ~25 µs per transaction, more than SQLite spent on most of them: an empty write transaction took
    31 µs, now 5; the runtime's ``running`` commit 130 µs, now 62. A caller that finds it in use (another
    thread, or a nested call on the same thread) gets None and takes the pooled path as before, so nothing
    ever waits on this lock.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._connection: Connection | None = None
        self._closed = False
        self.driver: Any = None
        """The driver's connection under the held one (read once per connection, not per transaction)."""

    def acquire(self) -> Connection | None:
        if not self._lock.acquire(blocking=False):
            return None
        try:
            connection = self._connection
            if connection is None or connection.invalidated or connection.closed:
                if self._closed:
                    self._lock.release()
                    return None
                if connection is not None:
                    with suppress(Exception):
                        connection.close()
                    self._connection = None
                connection = self._connection = self._engine.connect()
                self.driver = connection.connection.driver_connection
            return connection
        except BaseException:
            self._lock.release()
            raise

    def release(self) -> None:
        self._lock.release()

    def close(self) -> None:
        """Close the connection (after a use in flight ends; left to the GC if that takes too long)."""
        acquired = self._lock.acquire(timeout=5)
        try:
            self._closed = True
            if acquired and self._connection is not None:
                with suppress(Exception):
                    self._connection.close()
            self._connection = None
        finally:
            if acquired:
                self._lock.release()


class WriterBusy(Exception):
    """The loop writer's connection is in use (a nested or concurrent transaction): nothing was begun."""


class _Write:
    """``Store.transaction()``: on SQLite files the held writer, ``BEGIN IMMEDIATE`` and ``COMMIT`` on the driver.

    The held connection is taken on entry; when it is in use (another thread, a nested transaction) the
    pooled path runs instead. Statements that go through SQLAlchemy inside it join the transaction (the
    engine's begin hook sees the driver already in one), so the exit then commits through SQLAlchemy.
    """

    __slots__ = ("_connection", "_driver", "_held", "_pooled", "_pooled_if_busy", "_store", "_tx")

    def __init__(self, store: _TransactionSource, held: _HeldConnection | None, *, pooled_if_busy: bool = True) -> None:
        self._store = store
        self._held = held
        self._pooled_if_busy = pooled_if_busy  # False: raise WriterBusy rather than wait on the pool's connection
        self._connection: Connection | None = None
        self._driver: sqlite3.Connection | None = None
        self._pooled: AbstractContextManager[Any] | None = None
        self._tx: Any = None

    def __enter__(self) -> Any:
        held = self._held
        connection = held.acquire() if held is not None else None
        if held is None or connection is None:
            if not self._pooled_if_busy:
                raise WriterBusy("the loop writer's connection is in use")
            self._pooled = self._store._pooled_transaction()
            return self._pooled.__enter__()
        try:
            driver: sqlite3.Connection = held.driver
            _driver_sql(driver, "BEGIN IMMEDIATE")
        except BaseException:
            held.release()
            raise
        self._connection, self._driver = connection, driver
        self._tx = self._store._held_tx(connection, driver)
        return self._tx

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: Any) -> bool | None:
        if self._pooled is not None:
            return self._pooled.__exit__(exc_type, exc, tb)
        connection, driver, held = self._connection, self._driver, self._held
        assert connection is not None and driver is not None and held is not None
        try:
            if exc_type is None:
                try:
                    if connection.in_transaction():
                        connection.commit()
                    else:
                        _driver_sql(driver, "COMMIT")
                except BaseException:
                    self._rollback(connection, driver)
                    raise
            else:
                self._rollback(connection, driver)
        finally:
            held.release()
        if exc_type is None:
            self._tx.committed()
        return None

    @staticmethod
    def _rollback(connection: Connection, driver: sqlite3.Connection) -> None:
        try:
            # Also a transaction a failed statement left inactive (a full disk): else every later statement
            # on this held connection raises PendingRollbackError.
            if connection.get_transaction() is not None:
                connection.rollback()
            if driver.in_transaction:
                _driver_sql(driver, "ROLLBACK")
        except Exception:  # a connection that cannot even roll back is not reused
            connection.invalidate()
            with contextlib.suppress(Exception):  # ends the invalid transaction: the next use reconnects
                connection.rollback()
