"""The window's first screen read with the standard library's ``sqlite3``: no SQLAlchemy, no tables module.

The window paints the first page of the pending inbox and its count from here while the persistence layer
imports and the backend opens (~1 s of imports on a quiet machine). The read is read-only (a ``mode=ro``
URI: it never creates, migrates or locks for writing) and happens only on a SQLite file already at this
build's schema revision; anything else (PostgreSQL, a new or older database, any error) answers None and the
window waits for the backend as before. The page's SQL and the conversion of its rows are the ones
``store.requests.summary_page`` uses on SQLite, so the first screen shows exactly what the full inbox shows.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from sys import intern
from typing import Any
from urllib.parse import quote

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import RequestSummary
from reviewer_app.persistence.bundled_head import bundled_head_cheaply

REQUESTS_TABLE = "hitl_requests"
# The columns of an inbox row, in RequestSummary's order (tests check them against tables.py).
SUMMARY_COLUMN_NAMES = (
    "hitl_id",
    "hitl_type",
    "session_id",
    "invocation_id",
    "tool_name",
    "summary",
    "agent",
    "status",
    "created_at",
    "expires_at",
    "updated_at_ms",
    "decision",
    "decided_by",
    "external",
)
BUSY_TIMEOUT_S = 0.2  # a writer holding the file (rollback journal) makes the first screen wait for the backend
_SQLITE_URL = re.compile(r"sqlite(?:\+pysqlite)?:///([^?]+)")


@cache
def summary_page_sql(statuses: int, after: bool, limit: bool) -> str:
    """SQLite text of ``summary_page`` (row values need SQLite >= 3.15)."""
    columns = ", ".join(SUMMARY_COLUMN_NAMES)
    sql = f"SELECT {columns} FROM {REQUESTS_TABLE} WHERE status IN ({', '.join('?' * statuses)})"
    if after:  # the created_at bound lets SQLite seek in ix_hitl_status_created
        sql += " AND created_at >= ? AND (created_at, updated_at_ms, hitl_id) > (?, ?, ?)"
    sql += " ORDER BY created_at, updated_at_ms, hitl_id"
    return sql + (" LIMIT ?" if limit else "")


def summaries_from_rows(raw: Iterable[Sequence[Any]]) -> list[RequestSummary]:
    """Inbox rows from the columns above; the values many rows repeat are shared strings (~35 MB less at 100k)."""
    return [
        RequestSummary(
            hitl_id,
            intern(hitl_type),
            intern(session_id),
            intern(invocation_id),
            None if tool_name is None else intern(tool_name),
            summary,
            None if agent is None else intern(agent),
            intern(status),
            created_at,
            expires_at,
            updated_at_ms,
            None if decision is None else intern(decision),
            None if decided_by is None else intern(decided_by),
            bool(external),
        )
        for (
            hitl_id,
            hitl_type,
            session_id,
            invocation_id,
            tool_name,
            summary,
            agent,
            status,
            created_at,
            expires_at,
            updated_at_ms,
            decision,
            decided_by,
            external,
        ) in raw
    ]


@dataclass(frozen=True, slots=True)
class FirstScreen:
    """The oldest pending requests (up to the page size) and how many are pending, read in one snapshot."""

    summaries: list[RequestSummary]
    pending_count: int


def sqlite_file(database: str) -> Path | None:
    """The file a ``--db`` value names when it is a SQLite file (a path or a plain ``sqlite:///`` URL), else None.

    A name with ``%`` or ``?`` is left to the backend: its URL form decodes or cuts them, so the file it opens may
    not be the file named here, and the first screen must show the backend's database or nothing.
    """
    if "://" in database:
        match = _SQLITE_URL.fullmatch(database)
        if match is None or match.group(1) == ":memory:":
            return None  # PostgreSQL, in-memory, or a URL with options: the backend's own path
        database = match.group(1)
    if "%" in database or "?" in database:
        return None
    try:
        return Path(database).expanduser().resolve()
    except (OSError, RuntimeError):  # no home directory, a symlink loop: the backend says what is wrong
        return None


def is_sqlite_file(path: Path) -> bool:
    """An existing regular file (a folder we may not read is "no", not an error: the backend reports it)."""
    try:
        return path.is_file()
    except OSError:
        return False


def read_first_screen(path: Path, limit: int) -> FirstScreen | None:
    """The first page of the pending inbox and the pending count, or None when only the backend should read."""
    head = bundled_head_cheaply()
    if head is None or not is_sqlite_file(path):
        return None
    try:
        connection = sqlite3.connect(
            f"file:{quote(path.as_posix())}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None
        )
    except sqlite3.Error:
        return None
    try:
        connection.execute("BEGIN")  # one snapshot: the count and the page agree
        versions = [row[0] for row in connection.execute("SELECT version_num FROM alembic_version")]
        if versions != [head]:
            return None  # older (the backend migrates it) or newer (the backend refuses it)
        pending = HITLStatus.PENDING.value
        (count,) = connection.execute(f"SELECT count(*) FROM {REQUESTS_TABLE} WHERE status = ?", (pending,)).fetchone()
        rows = connection.execute(summary_page_sql(1, False, True), (pending, limit)).fetchall()
        return FirstScreen(summaries_from_rows(rows), int(count))
    except (sqlite3.Error, TypeError, ValueError):  # a damaged or hostile file: the backend reports it properly
        return None
    finally:
        connection.close()
