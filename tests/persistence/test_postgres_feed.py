"""Change feeds: LISTEN/NOTIFY on PostgreSQL, ``PRAGMA data_version`` on SQLite.

A second :class:`Store` stands in for another process: it has its own engine, so
its commits reach the feed only through the database, never through ``notify()``.
"""

from __future__ import annotations

import asyncio
import threading
import time

import psycopg
import pytest
from sqlalchemy import text

from reviewer_app.domain.records import NewRequest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.changes import SQLiteChangeFeed, change_feed_for
from reviewer_app.persistence.engine import CHANGES_CHANNEL
from reviewer_app.persistence.pg_notify import PostgresChangeFeed
from reviewer_app.persistence.store import Store


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


def _write(store: Store, hitl_id: str) -> None:
    with store.transaction() as tx:
        tx.requests.create(NewRequest(hitl_id=hitl_id, hitl_type="ask_user", session_id="s", invocation_id="i"))


async def _until(predicate: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


@pytest.mark.asyncio
async def test_the_right_feed_for_each_database(any_db: str) -> None:
    store = Store.open(any_db)
    feed = change_feed_for(store.engines)
    try:
        expected = PostgresChangeFeed if store.engines.dialect == "postgresql" else SQLiteChangeFeed
        assert isinstance(feed, expected)
    finally:
        feed.close()
        store.close()


@pytest.mark.asyncio
async def test_a_commit_elsewhere_wakes_a_waiter(any_db: str) -> None:
    store, other = Store.open(any_db), Store.open(any_db)
    feed = change_feed_for(store.engines)
    try:
        token = feed.token()
        token = await feed.wait(token, timeout=5)  # the watcher's start-up wake
        await asyncio.sleep(0.1)
        waiter = asyncio.ensure_future(feed.wait(token, timeout=10))
        await asyncio.sleep(0.05)
        assert not waiter.done()
        await asyncio.get_running_loop().run_in_executor(None, _write, other, "h1")
        assert await waiter != token
    finally:
        feed.close()
        other.close()
        store.close()


@pytest.mark.asyncio
async def test_a_commit_before_the_watcher_started_is_not_lost(any_db: str) -> None:
    """A waiter reads 'pending', the decision commits, then the feed starts: the waiter still wakes."""
    store, other = Store.open(any_db), Store.open(any_db)
    feed = change_feed_for(store.engines)
    try:
        token = feed.token()
        _write(other, "h1")  # nobody listens yet
        assert await feed.wait(token, timeout=10) != token
    finally:
        feed.close()
        other.close()
        store.close()


@pytest.mark.postgres
def test_notify_is_sent_on_commit_only(pg_url: str) -> None:
    store = Store.open(pg_url)
    try:
        with psycopg.connect(_libpq(pg_url), autocommit=True) as listener:
            listener.execute(f"LISTEN {CHANGES_CHANNEL}")
            with pytest.raises(RuntimeError), store.transaction() as tx:
                tx.requests.create(
                    NewRequest(hitl_id="rolled-back", hitl_type="ask_user", session_id="s", invocation_id="i")
                )
                raise RuntimeError("abort the transaction")
            assert list(listener.notifies(timeout=0.3)) == []
            assert store.requests.get("rolled-back") is None
            _write(store, "h1")
            [notice] = list(listener.notifies(timeout=5, stop_after=1))
            assert notice.channel == CHANGES_CHANNEL
    finally:
        store.close()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_listener_reconnects_after_losing_its_connection(pg_url: str) -> None:
    store, other = Store.open(pg_url), Store.open(pg_url)
    feed = PostgresChangeFeed(store.engines)
    try:
        token = await feed.wait(feed.token(), timeout=5)
        await _until(lambda: feed.listener_pid is not None)
        old_pid = feed.listener_pid
        with other.engines.write() as connection:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": old_pid})
        # The reconnect itself wakes waiters (notices may have been lost in between) ...
        token = await feed.wait(token, timeout=10)
        await _until(lambda: feed.connects >= 2 and feed.listener_pid not in (None, old_pid))
        # ... and later commits are delivered by the new connection.
        token = feed.token()
        waiter = asyncio.ensure_future(feed.wait(token, timeout=10))
        await asyncio.get_running_loop().run_in_executor(None, _write, other, "after-reconnect")
        assert await waiter != token
    finally:
        feed.close()
        other.close()
        store.close()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_subscribers_are_called_on_the_loop_thread(pg_url: str) -> None:
    store, other = Store.open(pg_url), Store.open(pg_url)
    feed = PostgresChangeFeed(store.engines)
    calls: list[str] = []
    loop_thread = threading.current_thread().name
    try:
        unsubscribe = feed.subscribe(lambda: calls.append(threading.current_thread().name))
        await _until(lambda: len(calls) >= 1)  # the start-up wake
        seen = len(calls)
        await asyncio.get_running_loop().run_in_executor(None, _write, other, "h1")
        await _until(lambda: len(calls) > seen)
        assert set(calls) == {loop_thread}
        unsubscribe()
        seen = len(calls)
        await asyncio.get_running_loop().run_in_executor(None, _write, other, "h2")
        await asyncio.sleep(0.3)
        assert len(calls) == seen
    finally:
        feed.close()
        other.close()
        store.close()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_close_stops_the_listener_at_once_and_releases_waiters(pg_url: str) -> None:
    store = Store.open(pg_url)
    feed = PostgresChangeFeed(store.engines)
    try:
        token = await feed.wait(feed.token(), timeout=5)
        thread = feed._thread
        assert thread is not None and thread.is_alive()
        waiter = asyncio.ensure_future(feed.wait(token, timeout=30))
        await asyncio.sleep(0.05)
        await asyncio.get_running_loop().run_in_executor(None, feed.close)
        await asyncio.wait_for(waiter, 2)
        assert not thread.is_alive()
        with pytest.raises(RuntimeError, match="closed"):
            await feed.wait(feed.token(), timeout=1)
    finally:
        feed.close()
        store.close()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_backend_that_never_waits_holds_no_listen_connection(pg_url: str) -> None:
    backend = SQLHITLBackend(pg_url, reviewer="cli")
    try:
        await backend.create(hitl_id="h", hitl_type="ask_user", session_id="s", invocation_id="i")
        assert isinstance(backend.feed, PostgresChangeFeed) and backend.feed._thread is None
    finally:
        await backend.aclose()
