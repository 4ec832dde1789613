"""The backend's commits never checkpoint the write-ahead log: a thread of its own does, off the commit path
(``hitl/wal_checkpoints.py``). Real SQLite files; what a checkpoint copied is read from the database file itself."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.hitl.wal_checkpoints import BackgroundWalCheckpoints
from reviewer_app.persistence.store import StoreTx
from tests.conftest import at_schema_head
from tests.persistence.test_loop_writes import checkpointed_ids, creating

pytestmark = pytest.mark.asyncio

CHECKPOINT_THREAD = "reviewer-wal-checkpoints"


def checkpoints_of(backend: SQLHITLBackend) -> BackgroundWalCheckpoints:
    wal = backend.wal_checkpoints
    assert wal is not None
    return wal


async def test_a_commit_never_checkpoints_the_log_itself(backend: SQLHITLBackend) -> None:
    def autocheckpoint(tx: StoreTx) -> int:
        return int(tx.connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one())

    assert await backend.write(autocheckpoint) == 0


async def test_every_hundred_commits_the_log_is_checkpointed_on_its_own_thread(
    backend: SQLHITLBackend, db_path: Path
) -> None:
    wal = checkpoints_of(backend)
    wal.EVERY = 5
    threads: list[str] = []
    for i in range(4):
        await backend.write(creating(f"h{i}", threads))
    assert wal.drain(5)
    assert checkpointed_ids(db_path) == []  # all still in the log
    await backend.write(creating("h4", threads))
    assert wal.drain(5)
    assert checkpointed_ids(db_path) == [f"h{i}" for i in range(5)]
    assert wal.runs == 1
    assert CHECKPOINT_THREAD in {thread.name for thread in threading.enumerate()}
    assert set(threads) == {"reviewer-db"}


async def test_a_write_commits_while_a_checkpoint_runs(backend: SQLHITLBackend, db_path: Path) -> None:
    wal = checkpoints_of(backend)
    started, release = threading.Event(), threading.Event()
    checkpoint = backend.store.checkpoint

    def slow_checkpoint() -> int:
        started.set()
        release.wait(10)
        return checkpoint()

    wal._checkpoint = slow_checkpoint
    try:
        wal.request()
        assert await asyncio.to_thread(started.wait, 5)
        await asyncio.wait_for(backend.write(creating("h1", [])), 5)  # not behind the checkpoint
        assert checkpointed_ids(db_path) == []
    finally:
        release.set()
    assert wal.drain(5)
    assert checkpointed_ids(db_path) == ["h1"]


async def test_a_log_past_its_limit_is_caught_up_right_after_the_next_commit(
    backend: SQLHITLBackend, db_path: Path
) -> None:
    wal = checkpoints_of(backend)
    wal.EVERY, wal.LIMIT_FRAMES = 2, 1
    for i in range(2):
        await backend.write(creating(f"h{i}", []))
    assert wal.drain(5)
    assert wal.catch_up_due  # the log holds more frames than the limit
    await backend.write(creating("h2", []))
    assert wal.catch_ups == 1 and not wal.catch_up_due
    assert checkpointed_ids(db_path) == ["h0", "h1", "h2"]  # copied before the write returned


async def test_closing_the_backend_stops_the_checkpoint_thread(backend: SQLHITLBackend) -> None:
    wal = checkpoints_of(backend)
    wal.request()
    assert wal.drain(5)
    await backend.aclose()
    assert CHECKPOINT_THREAD not in {thread.name for thread in threading.enumerate()}
    wal.request()  # after close: nothing starts again
    assert CHECKPOINT_THREAD not in {thread.name for thread in threading.enumerate()}


async def test_a_hooks_backend_checkpoints_on_commit(db_path: Path, migrated_sqlite: Path) -> None:
    hook_backend = SQLHITLBackend(at_schema_head(db_path, migrated_sqlite), checkpoint_on_commit=True)
    try:
        autocheckpoint = await hook_backend.write(
            lambda tx: tx.connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar_one()
        )
        assert autocheckpoint == 1000  # SQLite's default
    finally:
        await hook_backend.aclose()


async def test_other_processes_commits_are_checkpointed_while_the_backend_is_open(
    backend: SQLHITLBackend, db_path: Path
) -> None:
    wal = checkpoints_of(backend)
    wal.IDLE_S = 0.05
    await backend.write(creating("ours", []))  # the first commit starts the thread
    other = sqlite3.connect(db_path, isolation_level=None)
    try:
        other.execute("PRAGMA wal_autocheckpoint = 0")  # as a command that does not checkpoint on commit
        other.execute("BEGIN IMMEDIATE")
        other.execute(
            "INSERT INTO sessions (id, agent, workspace, external, created_at, updated_at)"
            " VALUES ('theirs', NULL, NULL, 0, 0, 0)"
        )
        other.execute("COMMIT")
    finally:
        other.close()
    deadline = time.monotonic() + 5
    while "theirs" not in checkpointed_session_ids(db_path):
        assert time.monotonic() < deadline, "another connection's commit was never checkpointed"
        await asyncio.sleep(0.02)


def checkpointed_session_ids(db_path: Path) -> list[str]:
    with sqlite3.connect(f"file:{db_path}?immutable=1", uri=True) as main_file:
        return [row[0] for row in main_file.execute("SELECT id FROM sessions")]
