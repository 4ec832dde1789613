"""The store: one object to open the database and read or write every aggregate through.

Callers group writes with :meth:`Store.transaction`, which yields a :class:`StoreTx`; on SQLite it is a
``BEGIN IMMEDIATE`` transaction, so compare-and-set decisions and the audit chain never race. Async code reaches
the store through :class:`reviewer_app.hitl.SQLHITLBackend`, which runs these methods on one database thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import DatabaseError, OperationalError

from reviewer_app.domain.hitl import (
    DatabaseUnavailable,
    SchemaError,
)
from reviewer_app.domain.sanitize import redact_url
from reviewer_app.persistence import migrate
from reviewer_app.persistence.audit_seal import AuditSeal
from reviewer_app.persistence.blobs import ValueMemo
from reviewer_app.persistence.engine import BUSY_TIMEOUT_MS, Engines, create_engines, database_url, sqlite_path
from reviewer_app.persistence.store.audit import AuditReads
from reviewer_app.persistence.store.fastpath import _HeldConnection, _Prepared, _Write
from reviewer_app.persistence.store.history import HistoryReads
from reviewer_app.persistence.store.policy import PolicyReads, PolicyWrites
from reviewer_app.persistence.store.records import CreationClock
from reviewer_app.persistence.store.requests import RequestReads, RequestWrites
from reviewer_app.persistence.store.rule_audit import RuleEventReads
from reviewer_app.persistence.store.rules import RuleReads, RuleWrites
from reviewer_app.persistence.store.runs import RunReads
from reviewer_app.persistence.store.stats import StatsReads
from reviewer_app.persistence.store.timeline import TimelineReads, TimelineWrites


class StoreTx(PolicyWrites, RequestWrites, TimelineWrites, RuleWrites):
    """Writes inside one transaction, every aggregate's. Obtain it from :meth:`Store.transaction`."""


class Store(
    RequestReads, RunReads, TimelineReads, AuditReads, RuleReads, PolicyReads, StatsReads, HistoryReads, RuleEventReads
):
    """Reviewer's database: open (and migrate) once, then read and write through it."""

    def __init__(self, engines: Engines, *, seal: AuditSeal | None = None) -> None:
        self.engines = engines
        self._seal = seal
        self._prepared: dict[Any, _Prepared] = {}  # hot-path statements compiled for SQLite, see StoreTx
        # SQLite files: one writer and one reader connection kept out of the pool (see _HeldConnection).
        held = sqlite_path(engines.url) is not None
        self._held_writer = _HeldConnection(engines.writer) if held else None
        self._held_reader = _HeldConnection(engines.reader) if held else None
        self._login: str | None = None
        self.creation_clock = CreationClock()
        self._identity_url: str | None = None
        self._blob_memo = ValueMemo()  # used on the DB thread only (one transaction at a time)

    @classmethod
    def open(
        cls,
        target: str | Any,
        *,
        migrate_schema: bool = True,
        busy_timeout_ms: int = BUSY_TIMEOUT_MS,
        seal: AuditSeal | None = None,
    ) -> Store:
        """Open a path or SQLAlchemy URL, creating or migrating the schema first.

        Raises :class:`SchemaTooNew` for a database from a newer Reviewer and
        :class:`DatabaseUnavailable` (with the reason) when it cannot be opened.
        """
        url = database_url(target)
        engines = create_engines(url, busy_timeout_ms=busy_timeout_ms)
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

        On PostgreSQL every decision is recorded under it (:meth:`StoreTx.recorded`), whatever name a client
        asserts: the login, not the client, is the identity.
        """
        if self.engines.dialect != "postgresql":
            return None
        if self._login is None:
            with self.engines.read() as connection:
                self._login = str(connection.execute(text("SELECT session_user")).scalar_one())
        return self._login

    def _prepare_tx(self, tx: StoreTx) -> StoreTx:
        tx.seal = self.audit_seal
        tx.creation_clock = self.creation_clock
        tx.blob_memo = self._blob_memo
        tx.database_url = self.identity_url
        tx.login = self.database_login()
        self._decode_leniently_if_retrying(tx.connection)
        return tx

    def close(self) -> None:
        for held in (self._held_writer, self._held_reader):
            if held is not None:
                held.close()
        self.engines.dispose()

    def transaction(self) -> AbstractContextManager[StoreTx]:
        """One short write transaction (``BEGIN IMMEDIATE`` on SQLite)."""
        return _Write(self, self._held_writer)

    @contextmanager
    def _pooled_transaction(self) -> Iterator[StoreTx]:
        with self.engines.write() as connection:
            tx = self._prepare_tx(StoreTx(connection, self.engines.dialect, self._prepared))
            yield tx
        tx.committed()

    def _held_tx(self, connection: Connection, driver: sqlite3.Connection) -> StoreTx:
        return self._prepare_tx(StoreTx(connection, "sqlite", self._prepared, driver))
