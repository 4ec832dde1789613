"""The SQLite change feed: cheap, cross-process, and well-behaved under cancellation."""

from __future__ import annotations

import asyncio
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
            tx.ensure_session("someone-else")
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
