"""The SQLite change feed: cheap, cross-process, and well-behaved under cancellation."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
from pathlib import Path

import pytest

from reviewer_app.persistence.changes import SQLiteChangeFeed
from reviewer_app.persistence.store import Store

pytestmark = pytest.mark.asyncio


async def test_cancel_in_the_same_turn_as_a_wake_up_is_honoured(store: Store, db_path: Path) -> None:
    feed = SQLiteChangeFeed(db_path)
    try:
        await feed.wait(feed.token(), timeout=0.2)  # let the watcher start and report once
        token = feed.token()
        waiter = asyncio.create_task(feed.wait(token, timeout=5))
        await asyncio.sleep(0.1)  # parked on the feed
        feed.notify()
        waiter.cancel()  # the same loop turn as the wake-up
        with pytest.raises(asyncio.CancelledError):
            await waiter
    finally:
        feed.close()


async def test_commit_on_another_connection_wakes_a_waiter(store: Store, db_path: Path) -> None:
    feed = SQLiteChangeFeed(db_path)
    try:
        await feed.wait(feed.token(), timeout=0.2)  # let the watcher start and settle
        token = feed.token()
        waiter = asyncio.create_task(feed.wait(token, timeout=5))
        await asyncio.sleep(0.1)
        with store.transaction() as tx:  # a separate connection, as another process would be
            tx.runs.ensure_session("someone-else")
        new_token = await asyncio.wait_for(waiter, 2)
        assert new_token != token
    finally:
        feed.close()


async def test_wait_times_out_quietly(store: Store, db_path: Path) -> None:
    feed = SQLiteChangeFeed(db_path)
    try:
        await feed.wait(feed.token(), timeout=0.2)
        token = feed.token()
        assert await feed.wait(token, timeout=0.2) == token
    finally:
        feed.close()


class _FlakyFeed(SQLiteChangeFeed):
    """The real feed whose probe raises once (as a locked or vanished database would), and notes its threads."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.threads: set[int] = set()
        self.raise_on_call = 3
        self.calls = 0

    def _probe(self) -> int:
        self.threads.add(threading.get_ident())
        self.calls += 1
        if self.calls == self.raise_on_call:
            raise sqlite3.OperationalError("disk I/O error")
        return super()._probe()


async def test_a_probe_that_raises_once_recovers_and_still_sees_another_process(store: Store, db_path: Path) -> None:
    feed = _FlakyFeed(db_path)
    statuses: list[str | None] = []
    feed.subscribe_status(statuses.append)
    try:
        await feed.wait(feed.token(), timeout=0.2)  # the watcher starts, probes and fails once
        while not (statuses and statuses[-1] is None):  # failed, said so, and recovered (reported on the loop)
            await feed.wait(feed.token(), timeout=0.05)
        assert feed.probe_errors == 1 and feed.status is None
        assert statuses[0] is not None and "retrying" in statuses[0]  # what the window's status bar shows
        assert statuses[-1] is None  # and cleared once it sees again
        token = feed.token()
        waiter = asyncio.create_task(feed.wait(token, timeout=30))
        await asyncio.sleep(0.1)
        other = await asyncio.create_subprocess_exec(  # another process commits
            sys.executable,
            "-c",
            f"import sqlite3; c = sqlite3.connect({str(db_path)!r}); "
            "c.execute(\"INSERT INTO sessions (id, external, created_at, updated_at) VALUES ('x', 0, 0, 0)\"); "
            "c.commit()",
        )
        assert await other.wait() == 0
        assert await asyncio.wait_for(waiter, 10) != token
        assert threading.get_ident() not in feed.threads  # never probed on the loop's (the Qt) thread
    finally:
        feed.close()
