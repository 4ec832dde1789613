"""Busy and disk-full writes are retried with backoff and reported; anything else is raised at once."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from reviewer_app.domain.hitl import WriteRetriesExhausted
from reviewer_app.persistence.retry import BUSY, DISK_FULL, transient_reason, with_retry
from reviewer_app.persistence.store import Store


@pytest.fixture
def impatient_store(db_path: Path) -> Store:
    opened = Store.open(db_path, busy_timeout_ms=50)
    yield opened
    opened.close()


def _write(store: Store) -> None:
    with store.transaction() as tx:
        tx.runs.ensure_session("s-retry")


def test_a_lock_held_past_busy_timeout_is_retried_with_backoff_and_reported(
    impatient_store: Store, db_path: Path
) -> None:
    locker = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)  # released from a timer
    locker.execute("BEGIN IMMEDIATE")
    release = threading.Timer(1.0, lambda: locker.execute("ROLLBACK"))
    statuses: list[str | None] = []
    delays: list[float] = []

    def sleep(seconds: float) -> None:
        delays.append(seconds)
        time.sleep(seconds)

    release.start()
    try:
        began = time.monotonic()
        with_retry(lambda: _write(impatient_store), on_status=statuses.append, sleep=sleep, retry_for_s=30)
        took = time.monotonic() - began
    finally:
        release.join()
        locker.close()
    assert statuses == [BUSY, None]
    assert delays[:4] == [0.05, 0.1, 0.2, 0.4]  # doubling from 50 ms, capped at 2 s
    assert impatient_store.runs.session_info("s-retry") is not None
    print(f"\nlock released after 1.0 s; the write landed after {took:.2f} s, backoff {delays}")


def test_a_lock_that_is_never_released_gives_up_after_the_budget(impatient_store: Store, db_path: Path) -> None:
    locker = sqlite3.connect(db_path, isolation_level=None)
    locker.execute("BEGIN IMMEDIATE")
    statuses: list[str | None] = []
    try:
        with pytest.raises(WriteRetriesExhausted, match="database busy for"):
            with_retry(lambda: _write(impatient_store), on_status=statuses.append, retry_for_s=0.3)
    finally:
        locker.execute("ROLLBACK")
        locker.close()
    assert statuses == [BUSY, None]
    _write(impatient_store)  # the store is usable again afterwards
    assert impatient_store.runs.session_info("s-retry") is not None


def test_other_errors_are_not_retried(impatient_store: Store) -> None:
    calls = []

    def broken() -> None:
        calls.append(1)
        with impatient_store.transaction() as tx:
            tx.connection.exec_driver_sql("INSERT INTO no_such_table VALUES (1)")

    with pytest.raises(OperationalError, match="no such table"):
        with_retry(broken, on_status=lambda _s: None)
    assert calls == [1]


def test_the_reasons_are_told_apart() -> None:
    assert transient_reason(sqlite3.OperationalError("database is locked")) == BUSY
    assert transient_reason(sqlite3.OperationalError("database or disk is full")) == DISK_FULL
    assert transient_reason(OSError(28, "No space left on device")) == DISK_FULL
    assert transient_reason(sqlite3.OperationalError("no such table: x")) is None
    assert transient_reason(ValueError("database is locked")) is None
