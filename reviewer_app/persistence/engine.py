"""Engine set-up: one place that knows SQLite's pragmas and its locking rules.

SQLite writers take the write lock up front (``BEGIN IMMEDIATE``): a deferred
transaction that reads and then writes can fail with "database is locked" even
with ``busy_timeout``, because SQLite cannot wait out a lock upgrade.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from reviewer_app.domain.limits import decode_stored_json

BUSY_TIMEOUT_MS = 30_000
CHANGES_CHANNEL = "reviewer_changes"  # PostgreSQL: every write transaction NOTIFYs it (see pg_notify)
CHANGED_PAYLOAD = "changed"
"""The payload of a write transaction's notification: its writer names its decisions (no payload: a writer that
does not, such as an older version, whose decisions waiters find by looking every waiter up)."""
DECIDED_PREFIX = "decided:"
"""A decision's own notification: this prefix and the decided request's id."""
MAX_NOTIFY_PAYLOAD = 7999
"""PostgreSQL refuses a notification payload of 8000 bytes or more (a decision naming a longer id names none)."""


def database_url(target: str | os.PathLike[str]) -> str:
    """A SQLAlchemy URL for a path or URL; plain paths become SQLite files.

    A path is not a URL: its ``%`` and ``?`` are escaped, or SQLAlchemy would decode ``%41`` or cut the path at ``?``
    and open another file.
    """
    text = os.fspath(target)
    if "://" in text:
        return text
    path = str(Path(text).expanduser().resolve())
    return "sqlite:///" + path.replace("%", "%25").replace("?", "%3F")


def sqlite_path(url: str) -> Path | None:
    """The database file of a SQLite URL (None for other databases and in-memory)."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite"):
        return None
    if not parsed.database or parsed.database == ":memory:":
        return None
    return Path(parsed.database)


def _sqlite_connect_hook(busy_timeout_ms: int, *, autocheckpoint: bool = True) -> Any:
    def on_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
        _on_sqlite_connect(dbapi_connection, busy_timeout_ms)
        if not autocheckpoint:  # whoever opened it checkpoints the log off the commit path (hitl/wal_checkpoints.py)
            dbapi_connection.execute("PRAGMA wal_autocheckpoint = 0")

    return on_connect


def _on_sqlite_connect(dbapi_connection: sqlite3.Connection, busy_timeout_ms: int) -> None:
    # Let SQLAlchemy, not pysqlite, decide when transactions begin.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.close()


def _on_loop_writer_connect(dbapi_connection: sqlite3.Connection, _record: Any) -> None:
    _on_sqlite_connect(dbapi_connection, 0)
    # A checkpoint syncs the disk: never on the loop's thread (a thread of the backend runs it: hitl.wal_checkpoints).
    dbapi_connection.execute("PRAGMA wal_autocheckpoint = 0")


def create_loop_writer(url: str) -> Engine:
    """An engine for writes on an event loop's own thread (SQLite files only): a ``BEGIN IMMEDIATE`` that finds the
    write lock taken fails at once (``busy_timeout`` 0) instead of waiting, and a commit never checkpoints."""
    engine = create_engine(
        url,
        connect_args={"timeout": 0, "check_same_thread": False},
        json_deserializer=decode_stored_json,
    )
    event.listen(engine, "connect", _on_loop_writer_connect)
    event.listen(engine, "begin", _on_sqlite_begin)
    return engine.execution_options(sqlite_begin="IMMEDIATE")


def _on_sqlite_begin(connection: Connection) -> None:
    driver = connection.connection.driver_connection
    if driver.in_transaction:  # type: ignore[union-attr]
        # The store's fast path began this transaction on the driver itself (BEGIN IMMEDIATE, see
        # store._HeldConnection); SQLAlchemy joins it instead of beginning a second one.
        return
    mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
    # Straight to the driver: BEGIN is on every transaction's path and needs none of
    # SQLAlchemy's statement machinery.
    driver.execute(f"BEGIN {mode}")  # type: ignore[union-attr]


@dataclass(frozen=True)
class Engines:
    """A reader engine and a writer view of it (``BEGIN IMMEDIATE`` on SQLite)."""

    url: str
    reader: Engine
    writer: Engine

    @property
    def is_sqlite(self) -> bool:
        return self.reader.dialect.name == "sqlite"

    @property
    def dialect(self) -> str:
        return self.reader.dialect.name

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A short write transaction, committed on exit.

        On PostgreSQL it also sends ``NOTIFY reviewer_changes``: queued inside the
        transaction, it is delivered to listeners only if the transaction commits.
        """
        with self.writer.begin() as connection:
            yield connection
            if self.dialect == "postgresql":
                connection.exec_driver_sql(f"NOTIFY {CHANGES_CHANNEL}, '{CHANGED_PAYLOAD}'")

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.reader.connect() as connection:
            yield connection

    def dispose(self) -> None:
        self.reader.dispose()


def create_engines(url: str, *, busy_timeout_ms: int = BUSY_TIMEOUT_MS, autocheckpoint: bool = True) -> Engines:
    """Engines for ``url`` with Reviewer's pragmas and locking rules applied.

    ``autocheckpoint`` False: SQLite commits never checkpoint the write-ahead log (a checkpoint syncs the disk);
    the caller must checkpoint it (``Store.checkpoint``) or the log grows without bound.
    """
    parsed = make_url(url)
    if parsed.drivername.startswith("sqlite"):
        path = sqlite_path(url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url,
            connect_args={"timeout": busy_timeout_ms / 1000, "check_same_thread": False},
            poolclass=None if path is not None else StaticPool,
            json_deserializer=decode_stored_json,  # a row other programs wrote never breaks a listing
        )
        event.listen(engine, "connect", _sqlite_connect_hook(busy_timeout_ms, autocheckpoint=autocheckpoint))
        event.listen(engine, "begin", _on_sqlite_begin)
        writer: Engine = engine.execution_options(sqlite_begin="IMMEDIATE")
    else:
        engine = create_engine(
            url, pool_pre_ping=True, pool_size=5, max_overflow=5, json_deserializer=decode_stored_json
        )
        writer = engine
    return Engines(url=url, reader=engine, writer=writer)
