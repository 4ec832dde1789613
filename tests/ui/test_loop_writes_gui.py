"""The window's loop never writes to the database itself: a backend made with ``writes_on_loop`` (for processes with
no GUI) still sends every write to its database thread when the running loop is Qt's (qasync, as the window runs)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

from reviewer_app.domain.records import NewRequest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import StoreTx
from tests.conftest import at_schema_head
from tests.ui.conftest import run_async


def test_on_the_qt_loop_writes_go_to_the_database_thread(
    qtbot: Any, qloop: Any, db_path: Path, migrated_sqlite: Path
) -> None:
    threads: list[str] = []

    def create(tx: StoreTx) -> None:
        threads.append(threading.current_thread().name)
        tx.requests.create(
            NewRequest(hitl_id="h1", hitl_type="tool_approval", session_id="s1", invocation_id="i1", data={})
        )

    async def write_there() -> str:
        backend = SQLHITLBackend(at_schema_head(db_path, migrated_sqlite), reviewer="tester", writes_on_loop=True)
        try:
            await backend.write(create)
            record = await backend.get("h1")
            assert record is not None
        finally:
            await backend.aclose()
        return type(asyncio.get_running_loop()).__module__

    assert run_async(qtbot, write_there()).startswith("qasync")
    assert threads == ["reviewer-db"]
