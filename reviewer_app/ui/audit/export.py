"""Exporting the decision log to a file: read a page on the database thread, format and write it on a worker
thread, so neither the Qt thread nor the database thread waits on the disk; the file appears whole or not at all.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

from reviewer_app.domain.audit_export import csv_header, format_entries
from reviewer_app.domain.records import AuditEntry
from reviewer_app.hitl import SQLHITLBackend

EXPORT_PAGE = 500


def _open_beside(path: Path) -> tuple[IO[str], Path]:
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=path.parent)
    return os.fdopen(fd, "w", encoding="utf-8", newline=""), Path(name)


def _write(handle: IO[str], entries: list[AuditEntry], fmt: str) -> None:
    handle.write(format_entries(entries, fmt))


def _finish(handle: IO[str], part: Path, path: Path) -> None:
    handle.flush()
    os.fsync(handle.fileno())
    handle.close()
    os.replace(part, path)


def _abandon(handle: IO[str], part: Path) -> None:
    handle.close()
    part.unlink(missing_ok=True)


async def export_audit(
    backend: SQLHITLBackend, path: Path, fmt: str, on_progress: Callable[[int, int], None] | None = None
) -> int:
    """Write the whole log to ``path`` as ``jsonl`` or ``csv``; returns the rows written.

    ``on_progress(done, total)`` after each page. Cancelling the task (or any error) removes the partial file and
    leaves an existing ``path`` as it was.
    """
    total = await backend.audit_count()
    handle, part = await asyncio.to_thread(_open_beside, path)
    done = 0
    try:
        if fmt == "csv":
            await asyncio.to_thread(handle.write, csv_header())
        after = 0
        while page := await backend.audit_page(after_id=after, limit=EXPORT_PAGE):
            await asyncio.to_thread(_write, handle, page, fmt)
            done += len(page)
            after = page[-1].id
            if on_progress is not None:
                on_progress(done, max(total, done))
        await asyncio.to_thread(_finish, handle, part, path)
    except BaseException:
        await asyncio.shield(asyncio.to_thread(_abandon, handle, part))
        raise
    return done
