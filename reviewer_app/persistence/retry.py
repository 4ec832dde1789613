"""Database trouble that passes: a lock, a full disk, a read-only remount, a PostgreSQL restart. Retried, bounded.

Another process may hold SQLite's write lock longer than ``busy_timeout`` (a long migration, a stuck tool
holding ``BEGIN IMMEDIATE``), a disk may fill up and be freed again, a file system may go read-only for a
moment, and a PostgreSQL server may refuse connections or end them while it restarts. None is the caller's
fault: the transaction is rolled back and run again with backoff (:data:`FIRST_DELAY_S` doubling to
:data:`MAX_DELAY_S`) for up to :data:`RETRY_FOR_S` (or until the caller's own deadline), while a status says
why ("database busy — retrying", "disk full — retrying", …). Only then :class:`WriteRetriesExhausted` is
raised, so the caller can give its work up cleanly instead of hanging or recording a failure it could not
record anyway.

Standard library only (SQLAlchemy's and psycopg's errors are recognised by their shape): the hook's fast path
uses the same policy without importing either.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from reviewer_app.domain.hitl import WriteRetriesExhausted

if TYPE_CHECKING:
    import logging

T = TypeVar("T")


def _log() -> logging.Logger:
    """This module's logger; logging is imported when there is something to say (the hook's fast path rarely has)."""
    import logging

    return logging.getLogger(__name__)


BUSY = "database busy — retrying"
DISK_FULL = "disk full — retrying"
READ_ONLY = "database read-only — retrying"
UNREACHABLE = "database server unreachable — retrying"
RETRY_FOR_S = 120.0
READ_ONLY_RETRY_S = 5.0
"""A read-only database is ridden out this long only (a remount, a permission being fixed); after that the
original error is raised, so a database that really is read-only is said so at once, not after two minutes."""
FIRST_DELAY_S = 0.05
MAX_DELAY_S = 2.0
REPORT_EVERY_S = 5.0


def error_chain(exc: BaseException) -> Iterator[BaseException]:
    """``exc``, the driver's error inside each SQLAlchemy wrapper, the causes and contexts behind them: once each."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        orig = getattr(current, "orig", None)  # SQLAlchemy's wrapper around the driver's error
        if isinstance(orig, BaseException) and id(orig) not in seen:
            yield orig
            seen.add(id(orig))
        current = current.__cause__ or current.__context__


_PG_UNAVAILABLE_STATES = frozenset({"57P01", "57P02", "57P03", "08000", "08001", "08003", "08004", "08006"})
"""admin/crash shutdown, cannot connect now, and the connection-exception class: the server is restarting."""
_PG_UNAVAILABLE_TEXT = (
    "connection refused",
    "server closed the connection",
    "terminating connection",
    "the database system is shutting down",
    "the database system is starting up",
    "connection is closed",
    "connection failed",
    "consuming input failed",
    "no such file or directory",  # the server's Unix socket, gone while it restarts
)


def _is_operational(error: BaseException) -> bool:
    """A driver's or SQLAlchemy's ``OperationalError`` (by name: neither package is imported here)."""
    return any(cls.__name__ == "OperationalError" for cls in type(error).__mro__)


def _reason_of(error: BaseException) -> str | None:
    if isinstance(error, sqlite3.OperationalError):
        name = getattr(error, "sqlite_errorname", "") or ""
        text = str(error).lower()
        if name.startswith("SQLITE_FULL") or "database or disk is full" in text:
            return DISK_FULL
        if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
            return BUSY
        if name.startswith("SQLITE_READONLY") or "readonly database" in text:
            return READ_ONLY
        return None
    if isinstance(error, OSError):
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            return DISK_FULL
        return READ_ONLY if error.errno == errno.EROFS else None
    if type(error).__module__.split(".")[0] == "psycopg" and _is_operational(error):
        state = getattr(error, "sqlstate", None)
        text = str(error).lower()
        if state in _PG_UNAVAILABLE_STATES or (state is None and any(part in text for part in _PG_UNAVAILABLE_TEXT)):
            return UNREACHABLE
    return None


def transient_reason(exc: BaseException) -> str | None:
    """Why ``exc`` is trouble that may pass (:data:`BUSY`, :data:`DISK_FULL`, :data:`READ_ONLY`,
    :data:`UNREACHABLE`); None for anything else, which is never retried."""
    for error in error_chain(exc):  # the driver's error may be wrapped (SQLAlchemy's, the store's DatabaseUnavailable)
        reason = _reason_of(error)
        if reason is not None:
            return reason
    return None


def _give_up_at(started: float, retry_for_s: float | None, deadline: float | None) -> float:
    """When a call that began at ``started`` stops retrying: ``retry_for_s`` later (default the environment's
    ``REVIEWER_DB_RETRY_S``, else :data:`RETRY_FOR_S`), or at ``deadline`` if sooner."""
    if retry_for_s is None:
        try:
            retry_for_s = float(os.environ.get("REVIEWER_DB_RETRY_S") or RETRY_FOR_S)
        except ValueError:
            retry_for_s = RETRY_FOR_S
    give_up_at = started + retry_for_s
    return give_up_at if deadline is None else min(give_up_at, deadline)


def with_retry(
    work: Callable[[], T],
    *,
    on_status: Callable[[str | None], None],
    retry_for_s: float | None = None,
    deadline: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """``work()`` (one whole transaction, or one read), run again while it fails with a :func:`transient_reason`.

    ``on_status`` gets the reason at the first failure (and every :data:`REPORT_EVERY_S`) and None once it
    succeeds. Raises :class:`WriteRetriesExhausted` after ``retry_for_s`` seconds of trying (default
    :data:`RETRY_FOR_S`, or the environment's ``REVIEWER_DB_RETRY_S``, read at each call), or sooner at
    ``deadline`` (a ``time.monotonic()`` value: a hook's own budget).
    """
    started = time.monotonic()
    give_up_at: float | None = None  # worked out at the first failure: nearly every call succeeds at once
    delay = FIRST_DELAY_S
    reported_at: float | None = None
    while True:
        try:
            result = work()
        except Exception as exc:
            reason = transient_reason(exc)
            if reason is None:
                raise
            if give_up_at is None:
                give_up_at = _give_up_at(started, retry_for_s, deadline)
            now = time.monotonic()
            waited = now - started
            if reason == READ_ONLY and waited >= min(READ_ONLY_RETRY_S, give_up_at - started):
                on_status(None)
                raise
            if now >= give_up_at:
                on_status(None)
                raise WriteRetriesExhausted(
                    f"{reason.split(' — ')[0]} for {waited:.0f} s; gave up ({exc.__class__.__name__}: {exc})"
                ) from exc
            if reported_at is None or now - reported_at >= REPORT_EVERY_S:
                first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                _log().warning("%s (%.1f s so far, next try in %.2f s): %s", reason, waited, delay, first_line)
                reported_at = now
                on_status(reason)
            sleep(max(min(delay, give_up_at - now), 0.0))
            delay = min(delay * 2, MAX_DELAY_S)
            continue
        if reported_at is not None:
            _log().warning("database writable again after %.1f s", time.monotonic() - started)
            on_status(None)
        return result
