"""Write transactions on the event loop's own thread (``SQLHITLBackend(..., writes_on_loop=True)``, for processes
with no GUI): they run there only when nothing can make them wait, and otherwise go to the database thread as before.
Real SQLite files; the write lock is taken by a second real connection."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from reviewer_app.domain.records import NewRequest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import StoreTx
from tests.conftest import at_schema_head

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def loop_backend(db_path: Path, migrated_sqlite: Path) -> AsyncIterator[SQLHITLBackend]:
    opened = SQLHITLBackend(at_schema_head(db_path, migrated_sqlite), reviewer="tester", writes_on_loop=True)
    assert opened._loop_writes is not None
    opened._loop_writes.SLOW_S = 10.0  # a loaded test machine pausing the test is not a slow write
    yield opened
    await opened.aclose()


def creating(hitl_id: str, threads: list[str]):  # type: ignore[no-untyped-def]
    """A write that creates request ``hitl_id`` and notes the thread it ran on."""

    def write(tx: StoreTx) -> None:
        threads.append(threading.current_thread().name)
        tx.requests.create(
            NewRequest(hitl_id=hitl_id, hitl_type="tool_approval", session_id="s1", invocation_id="i1", data={})
        )

    return write


def committed_ids(db_path: Path) -> list[str]:
    """The requests another connection sees committed, in the order they were created."""
    with sqlite3.connect(db_path) as other:
        return [row[0] for row in other.execute("SELECT hitl_id FROM hitl_requests ORDER BY rowid")]


async def test_without_the_option_every_write_runs_on_the_database_thread(backend: SQLHITLBackend) -> None:
    threads: list[str] = []
    await backend.write(creating("h1", threads))
    assert threads == ["reviewer-db"]
    assert backend.writes_committed_on_loop is None


async def test_a_loop_write_commits_on_the_callers_thread_before_it_returns(
    loop_backend: SQLHITLBackend, db_path: Path
) -> None:
    threads: list[str] = []
    await loop_backend.write(creating("h1", threads))
    assert threads == [threading.current_thread().name]
    assert committed_ids(db_path) == ["h1"]  # durable for every other connection once write() returns
    assert loop_backend.writes_committed_on_loop == 1
    record = await loop_backend.get("h1")
    assert record is not None and record["status"] == "pending"


async def test_the_loop_writers_connection_never_waits_and_never_checkpoints(loop_backend: SQLHITLBackend) -> None:
    await loop_backend.write(creating("h1", []))
    with loop_backend.store.loop_transaction() as tx:
        pragmas = {
            name: tx.connection.exec_driver_sql(f"PRAGMA {name}").scalar_one()
            for name in ("busy_timeout", "wal_autocheckpoint", "journal_mode", "synchronous", "foreign_keys")
        }
    assert pragmas == {
        "busy_timeout": 0,
        "wal_autocheckpoint": 0,
        "journal_mode": "wal",
        "synchronous": 1,
        "foreign_keys": 1,
    }


async def test_with_the_write_lock_taken_the_write_waits_on_the_database_thread_and_the_loop_runs_on(
    loop_backend: SQLHITLBackend, db_path: Path
) -> None:
    await loop_backend.write(creating("h0", []))  # the loop writer's connection is open
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process is writing
    threads: list[str] = []
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.01)

    ticking = asyncio.create_task(ticker())
    write = asyncio.create_task(loop_backend.write(creating("h1", threads)))
    await asyncio.sleep(0.3)
    assert not write.done()
    assert ticks >= 10  # the loop was never blocked by the wait for the lock
    other.execute("COMMIT")
    other.close()
    await asyncio.wait_for(write, 10)
    ticking.cancel()
    assert threads[-1] == "reviewer-db"  # the loop's try began nothing; the database thread wrote it
    assert committed_ids(db_path) == ["h0", "h1"]


async def test_a_write_handed_to_the_database_thread_is_never_overtaken_by_a_later_one(
    loop_backend: SQLHITLBackend, db_path: Path
) -> None:
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    threads: list[str] = []
    first = asyncio.create_task(loop_backend.write(creating("first", threads)))
    await asyncio.sleep(0.1)  # it tried on the loop, met the lock and waits on the database thread
    second = asyncio.create_task(loop_backend.write(creating("second", threads)))
    await asyncio.sleep(0.1)
    other.execute("COMMIT")
    other.close()
    await asyncio.wait_for(asyncio.gather(first, second), 10)
    assert committed_ids(db_path) == ["first", "second"]
    assert threads[-2:] == ["reviewer-db", "reviewer-db"]
    after: list[str] = []
    await loop_backend.write(creating("third", after))  # the queue is empty again: back on the loop
    assert after == [threading.current_thread().name]


async def test_a_failing_write_raises_once_and_leaves_nothing(loop_backend: SQLHITLBackend, db_path: Path) -> None:
    runs: list[str] = []

    def failing(tx: StoreTx) -> None:
        creating("h1", runs)(tx)
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        await loop_backend.write(failing)
    assert runs == [threading.current_thread().name]  # not run again on the database thread
    assert committed_ids(db_path) == []
    await loop_backend.write(creating("h2", []))  # the connection is usable again
    assert committed_ids(db_path) == ["h2"]


async def test_a_loop_write_busy_for_long_sends_the_next_writes_to_the_database_thread(
    loop_backend: SQLHITLBackend,
) -> None:
    assert loop_backend._loop_writes is not None
    loop_backend._loop_writes.SLOW_S = 0.02
    threads: list[str] = []

    def busy(tx: StoreTx) -> None:
        creating("busy", threads)(tx)
        spent = time.thread_time()
        while time.thread_time() - spent < 0.03:  # its own work: a huge row encoded, say
            pass

    await loop_backend.write(creating("first", threads))  # opening the connection is never counted as slow
    await loop_backend.write(busy)
    await loop_backend.write(creating("next", threads))
    here = threading.current_thread().name
    assert threads == [here, here, "reviewer-db"]


async def test_a_loop_write_blocked_for_long_sends_the_next_writes_to_the_database_thread(
    loop_backend: SQLHITLBackend,
) -> None:
    assert loop_backend._loop_writes is not None
    loop_backend._loop_writes.SLOW_S = 0.02
    await loop_backend.write(creating("first", []))
    here = threading.current_thread().name
    for attempt in range(5):  # a write the system also preempted (a loaded test machine) is not judged: again
        threads: list[str] = []

        def blocked(tx: StoreTx, attempt: int = attempt, threads: list[str] = threads) -> None:
            creating(f"blocked{attempt}", threads)(tx)
            time.sleep(0.05)  # waiting on a slow disk, say

        await loop_backend.write(blocked)
        await loop_backend.write(creating(f"next{attempt}", threads))
        if threads == [here, "reviewer-db"]:
            return
        assert threads == [here, here]
    pytest.fail("a write blocked for 50 ms never paused the loop writes")


def checkpointed_ids(db_path: Path) -> list[str]:
    """The requests in the database file itself, ignoring its write-ahead log (what a checkpoint copied there)."""
    with sqlite3.connect(f"file:{db_path}?immutable=1", uri=True) as main_file:
        return [row[0] for row in main_file.execute("SELECT hitl_id FROM hitl_requests ORDER BY rowid")]


async def test_loop_writes_are_checkpointed_off_the_loop(loop_backend: SQLHITLBackend, db_path: Path) -> None:
    loop_writes, wal = loop_backend._loop_writes, loop_backend.wal_checkpoints
    assert loop_writes is not None and wal is not None
    loop_writes.CHECKPOINT_EVERY = 5
    threads: list[str] = []
    for i in range(4):
        await loop_backend.write(creating(f"h{i}", threads))
    assert wal.drain(5)  # whatever the checkpoint thread was asked has run
    assert checkpointed_ids(db_path) == []  # all in the log: a loop commit never checkpoints
    await loop_backend.write(creating("h4", threads))  # the fifth: the checkpoint thread is asked
    assert wal.drain(5)
    assert checkpointed_ids(db_path) == [f"h{i}" for i in range(5)]
    assert set(threads) == {threading.current_thread().name}


async def test_an_in_memory_database_writes_on_its_one_connection(tmp_path: Path) -> None:
    backend = SQLHITLBackend("sqlite://", reviewer="tester", writes_on_loop=True)
    try:
        threads: list[str] = []
        await backend.write(creating("h1", threads))
        assert threads == ["reviewer-db"]
        assert await backend.get("h1") is not None
    finally:
        await backend.aclose()


async def test_the_headless_commands_backend_writes_on_the_loop(db_path: Path, migrated_sqlite: Path) -> None:
    from reviewer_app.cli.context import open_backend
    from reviewer_app.config import AppContext

    backend = open_backend(AppContext(database=at_schema_head(db_path, migrated_sqlite), reviewer="tester"))
    try:
        threads: list[str] = []
        await backend.write(creating("h1", threads))
        assert threads == [threading.current_thread().name]
    finally:
        await backend.aclose()


async def test_a_log_past_its_limit_sends_the_next_write_to_the_database_thread_to_catch_up(
    loop_backend: SQLHITLBackend, db_path: Path
) -> None:
    """Loop commits never checkpoint, and the database thread's catch-up runs only after a commit of its own: with
    every write on the loop the log grew without end (~90 MB after 200 gated calls, every commit slower)."""
    loop_writes, wal = loop_backend._loop_writes, loop_backend.wal_checkpoints
    assert loop_writes is not None and wal is not None
    loop_writes.CHECKPOINT_EVERY, wal.LIMIT_FRAMES = 2, 1
    threads: list[str] = []
    for i in range(2):
        await loop_backend.write(creating(f"h{i}", threads))
    assert wal.drain(5)
    assert wal.catch_up_due  # the log holds more frames than the limit
    await loop_backend.write(creating("h2", threads))
    assert wal.catch_ups == 1 and not wal.catch_up_due
    assert checkpointed_ids(db_path) == ["h0", "h1", "h2"]  # copied before the write returned
    await loop_backend.write(creating("h3", threads))  # caught up: back on the loop
    loop_thread = threading.current_thread().name
    assert threads[0] == threads[1] == threads[3] == loop_thread and threads[2] != loop_thread
