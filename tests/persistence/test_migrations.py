"""Alembic owns the schema: upgrades keep data and leave a backup; newer schemas refuse to open."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from reviewer_app.domain.hitl import DatabaseUnavailable, SchemaTooNew
from reviewer_app.persistence import migrate
from reviewer_app.persistence.engine import create_engines, database_url
from reviewer_app.persistence.search_index import include_name
from reviewer_app.persistence.store import Store
from reviewer_app.persistence.tables import metadata


def test_fresh_database_is_at_head_without_backup(db_path: Path) -> None:
    store = Store.open(db_path)
    try:
        assert migrate.current_revision(store.engines) == migrate.head_revision()
    finally:
        store.close()
    assert not list(db_path.parent.glob("*.bak"))


def test_models_match_migrations(db_path: Path) -> None:
    """The SQLModel tables and the migrations describe the same schema."""
    store = Store.open(db_path)
    try:
        with store.engines.reader.connect() as connection:
            diff = compare_metadata(
                MigrationContext.configure(connection, opts={"include_name": include_name}), metadata
            )
    finally:
        store.close()
    assert diff == []


def test_upgrade_from_older_revision_keeps_data_and_backs_up(db_path: Path) -> None:
    engines = create_engines(database_url(db_path))
    migrate.upgrade(engines, "0001")
    engines.dispose()
    raw = sqlite3.connect(db_path)
    with raw:
        raw.execute("INSERT INTO sessions VALUES ('s1', 'demo', NULL, NULL, 0, 1, 1)")
        raw.execute(
            "INSERT INTO invocations (id, session_id, agent, state, external, created_at, updated_at_ms, active_ms)"
            " VALUES ('i1', 's1', 'demo', 'waiting', 0, 1, 1000, 0)"
        )
        for hitl_id, status, response in (
            ("old-pending", "pending", None),
            ("old-done", "completed", '{"decision": "approve", "reviewer": "dana"}'),
        ):
            raw.execute(
                "INSERT INTO hitl_requests (hitl_id, hitl_type, session_id, invocation_id, data, metadata, status,"
                " resume_mode, user_response, created_at, updated_at, updated_at_ms, summary)"
                " VALUES (?, 'tool_approval', 's1', 'i1', '{\"arguments\": {\"path\": \"a\"}}', '{}', ?, 'response',"
                " ?, 1, 1, 1000, 'path: a')",
                (hitl_id, status, response),
            )
    raw.close()

    store = Store.open(db_path)
    try:
        pending = store.requests.get("old-pending")
        assert pending is not None and pending["data"] == {"arguments": {"path": "a"}}
        assert store.requests.extras("old-done") == {
            "agent": None,
            "summary": "path: a",
            "decision": "approve",
            "decided_by": "dana",
            "updated_at_ms": 1000,
        }
        assert migrate.current_revision(store.engines) == migrate.head_revision()
    finally:
        store.close()
    [backup] = db_path.parent.glob("*.bak")
    assert f"pre-{migrate.head_revision()}" in backup.name
    copy = sqlite3.connect(backup)
    try:
        assert copy.execute("SELECT version_num FROM alembic_version").fetchone() == ("0001",)
        assert copy.execute("SELECT count(*) FROM hitl_requests").fetchone() == (2,)
    finally:
        copy.close()


def test_newer_schema_refuses_to_open(db_path: Path) -> None:
    Store.open(db_path).close()
    raw = sqlite3.connect(db_path)
    with raw:
        raw.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    raw.close()
    with pytest.raises(SchemaTooNew, match="newer than this Reviewer understands"):
        Store.open(db_path)
    raw = sqlite3.connect(db_path)
    try:  # nothing was changed and no backup was made
        assert raw.execute("SELECT version_num FROM alembic_version").fetchone() == ("9999_from_the_future",)
    finally:
        raw.close()
    assert not list(db_path.parent.glob("*.bak"))


def test_pragmas(store: Store) -> None:
    with store.engines.reader.connect() as connection:
        assert connection.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert connection.exec_driver_sql("PRAGMA synchronous").scalar() == 1  # NORMAL
        assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 5000


def test_a_file_that_is_not_a_database_gives_a_clear_error(db_path: Path) -> None:
    db_path.write_bytes(b"this is a text file, not SQLite" * 100)
    with pytest.raises(DatabaseUnavailable, match="not a database"):
        Store.open(db_path)
    assert db_path.read_bytes().startswith(b"this is a text file")  # untouched


def test_a_locked_database_gives_a_clear_error(db_path: Path) -> None:
    Store.open(db_path).close()
    holder = sqlite3.connect(db_path, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(DatabaseUnavailable, match="locked"):
            Store.open(db_path, busy_timeout_ms=200)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    Store.open(db_path).close()  # usable again once the other program lets go
