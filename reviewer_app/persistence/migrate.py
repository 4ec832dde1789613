"""Bring a database to the app's schema: refuse newer ones, back up before changing older ones.

Migrations run on their own connection with ``foreign_keys=OFF`` (SQLite
rebuilds tables in batch mode, which foreign keys would block or cascade).

Alembic is imported only when a migration may be due: opening a database that is
already at the bundled head (every start but the first after an upgrade) reads one
row and the version files' text, and saves the window ~0.1 s of imports. A file
SQLite says is no database (or a damaged one) fails that read, and is reported
from there, as Alembic's own read of it would fail, without importing Alembic.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import inspect, text
from sqlalchemy.exc import DBAPIError

from reviewer_app.domain.hitl import SchemaError, SchemaTooNew
from reviewer_app.persistence.bundled_head import bundled_head_cheaply, migrations_dir
from reviewer_app.persistence.engine import Engines, sqlite_path

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger(__name__)


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(migrations_dir()))
    return config


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    if head is None:  # pragma: no cover - the package always ships revisions
        raise SchemaError("no migrations are bundled with this build")
    return head


def current_revision(engines: Engines) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engines.reader.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def backup_sqlite(path: Path, label: str) -> Path:
    """Copy a live SQLite database safely (the backup API, not a file copy of a WAL database)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.{label}-{stamp}.bak")
    counter = 1
    while target.exists():
        target = path.with_name(f"{path.name}.{label}-{stamp}-{counter}.bak")
        counter += 1
    source = sqlite3.connect(path)
    try:
        destination = sqlite3.connect(target)
        try:
            source.backup(destination)
        finally:
            destination.close()
    finally:
        source.close()
    return target


# pg_advisory_lock key that serialises migrations of one PostgreSQL database ("RvwMigr" in ASCII).
PG_MIGRATION_LOCK = 0x5276774D696772


def _at_bundled_head(engines: Engines) -> bool:
    """True when the database certainly is at this build's head revision (one cheap read)."""
    head = bundled_head_cheaply()
    if head is None:
        return False
    try:
        with engines.reader.connect() as connection:
            rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    except DBAPIError as exc:  # no version table yet: a new database
        if _not_a_database(exc):
            raise  # Alembic's first read of the same table fails the same way: report it before importing Alembic
        return False
    return [row[0] for row in rows] == [head]


def _not_a_database(exc: DBAPIError) -> bool:
    """SQLite's own word that the file is no database or a damaged one (``SQLITE_NOTADB``: "file is not a
    database", ``SQLITE_CORRUPT``: "database disk image is malformed"); not a lock or a missing table."""
    code = getattr(exc.orig, "sqlite_errorcode", None)
    return isinstance(exc.orig, sqlite3.DatabaseError) and code in (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT)


def upgrade(engines: Engines, target: str = "head") -> Path | None:
    """Migrate to ``target``; returns the backup made first, if any.

    Raises :class:`SchemaTooNew` when the database names a revision this build
    does not know: a newer Reviewer wrote it. On PostgreSQL an advisory lock
    makes team members who open a new database at once migrate it one at a time.
    """
    if target == "head" and _at_bundled_head(engines):
        return None  # the usual start: nothing to do, and no Alembic import
    if engines.dialect != "postgresql":
        return _upgrade(engines, target)
    with engines.reader.connect() as lock:
        lock.exec_driver_sql(f"SELECT pg_advisory_lock({PG_MIGRATION_LOCK})")
        lock.commit()
        try:
            return _upgrade(engines, target)
        finally:
            lock.exec_driver_sql(f"SELECT pg_advisory_unlock({PG_MIGRATION_LOCK})")
            lock.commit()


def _upgrade(engines: Engines, target: str) -> Path | None:
    from alembic import command
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    current = current_revision(engines)
    if current is not None:
        try:
            script.get_revision(current)
        except Exception as exc:
            raise SchemaTooNew(
                f"the database at {engines.url} has schema revision {current!r}, newer than this Reviewer "
                f"understands (its newest is {head_revision()!r}); upgrade Reviewer to open it"
            ) from exc
    wanted = script.get_current_head() if target == "head" else target
    if current == wanted:
        return None
    backup: Path | None = None
    path = sqlite_path(engines.url)
    if path is not None and path.exists() and _has_tables(engines):
        backup = backup_sqlite(path, f"pre-{wanted}")
        log.info("backed up %s to %s before migrating %s -> %s", path, backup, current, wanted)
    config = alembic_config()
    # The writer connection begins with BEGIN IMMEDIATE on SQLite: processes that open a new
    # database at once migrate it one at a time, and the later ones find it already at head.
    with engines.writer.connect() as connection:
        # PRAGMA foreign_keys is a no-op inside a transaction: set it on the raw
        # connection before SQLAlchemy begins one.
        driver = connection.connection.driver_connection if engines.is_sqlite else None
        if driver is not None:
            driver.execute("PRAGMA foreign_keys = OFF")
        try:
            config.attributes["connection"] = connection
            command.upgrade(config, target)
            connection.commit()
        finally:
            if driver is not None:
                connection.rollback()
                driver.execute("PRAGMA foreign_keys = ON")
    return backup


def _has_tables(engines: Engines) -> bool:
    with engines.reader.connect() as connection:
        return bool(inspect(connection).get_table_names())
