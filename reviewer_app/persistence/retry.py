"""Database trouble that passes: a write lock held past ``busy_timeout``, a full disk. Retried, reported, bounded.

Another process may hold SQLite's write lock longer than ``busy_timeout`` (a long migration, a stuck tool
holding ``BEGIN IMMEDIATE``), and a disk may fill up and be freed again. Neither is the run's fault: the
transaction is rolled back and run again with backoff (:data:`FIRST_DELAY_S` doubling to :data:`MAX_DELAY_S`)
for up to :data:`RETRY_FOR_S`, while a status says why ("database busy — retrying", "disk full"). Only then
:class:`WriteRetriesExhausted` is raised, so the caller can give its work up cleanly instead of hanging or
recording a failure it could not record anyway.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from sqlalchemy.exc import OperationalError

from reviewer_app.domain.hitl import WriteRetriesExhausted

T = TypeVar("T")
log = logging.getLogger(__name__)

BUSY = "database busy — retrying"
DISK_FULL = "disk full — retrying"
RETRY_FOR_S = 120.0
FIRST_DELAY_S = 0.05
MAX_DELAY_S = 2.0
REPORT_EVERY_S = 5.0


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)  # SQLAlchemy's wrapper around the driver's error
        if isinstance(orig, BaseException):
            yield orig
        current = current.__cause__ or current.__context__


def transient_reason(exc: BaseException) -> str | None:
    """:data:`BUSY` or :data:`DISK_FULL` when ``exc`` is trouble that may pass; None for anything else."""
    if not isinstance(exc, OperationalError | sqlite3.OperationalError | OSError):
        return None
    for error in _chain(exc):
        if isinstance(error, sqlite3.OperationalError):
            name = getattr(error, "sqlite_errorname", "") or ""
            text = str(error).lower()
            if name.startswith("SQLITE_FULL") or "database or disk is full" in text:
                return DISK_FULL
            if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
                return BUSY
        elif isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
            return DISK_FULL
    return None


def with_retry(
    work: Callable[[], T],
    *,
    on_status: Callable[[str | None], None],
    retry_for_s: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``work()`` (one whole transaction), run again while it fails with busy or disk-full errors.

    ``on_status`` gets the reason at the first failure and None once it succeeds. Raises
    :class:`WriteRetriesExhausted` after ``retry_for_s`` seconds of trying (default :data:`RETRY_FOR_S`, or the
    environment's ``REVIEWER_DB_RETRY_S``, read at each call).
    """
    if retry_for_s is None:
        try:
            retry_for_s = float(os.environ.get("REVIEWER_DB_RETRY_S") or RETRY_FOR_S)
        except ValueError:
            retry_for_s = RETRY_FOR_S
    started = time.monotonic()
    delay = FIRST_DELAY_S
    reported_at: float | None = None
    while True:
        try:
            result = work()
        except (OperationalError, sqlite3.OperationalError, OSError) as exc:
            reason = transient_reason(exc)
            if reason is None:
                raise
            now = time.monotonic()
            waited = now - started
            if waited >= retry_for_s:
                on_status(None)
                raise WriteRetriesExhausted(
                    f"{reason.split(' — ')[0]} for {waited:.0f} s; gave up ({exc.__class__.__name__}: {exc})"
                ) from exc
            if reported_at is None or now - reported_at >= REPORT_EVERY_S:
                log.warning("%s (%.1f s so far, next try in %.2f s): %s", reason, waited, delay, exc)
                reported_at = now
                on_status(reason)
            sleep(delay)
            delay = min(delay * 2, MAX_DELAY_S)
            continue
        if reported_at is not None:
            log.warning("database writable again after %.1f s", time.monotonic() - started)
            on_status(None)
        return result
