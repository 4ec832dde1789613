"""The decision audit log is append-only and hash-chained; verify finds tampering."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend

pytestmark = pytest.mark.asyncio


async def decided_log(db_path: Path, count: int = 5) -> None:
    backend = SQLHITLBackend(db_path, reviewer="auditor")
    try:
        for index in range(count):
            await backend.create(
                hitl_id=f"h{index}",
                hitl_type="tool_approval",
                session_id="s",
                invocation_id="i",
                data={"arguments": {"n": index}},
                tool_name="t",
            )
            await backend.respond(f"h{index}", {"decision": "reject", "message": f"no {index}"})
        report = await backend.verify_audit()
        assert report.ok and report.rows_checked == count
        entries = await backend.audit()
        assert [e.prev_hash for e in entries[1:]] == [e.row_hash for e in entries[:-1]]
        assert all(e.reviewer == "auditor" and e.decision == "reject" for e in entries)
    finally:
        await backend.aclose()


async def verify(db_path: Path):
    backend = SQLHITLBackend(db_path)
    try:
        return await backend.verify_audit()
    finally:
        await backend.aclose()


def tamper(db_path: Path, sql: str) -> None:
    raw = sqlite3.connect(db_path)
    with raw:
        raw.execute(sql)
    raw.close()


async def test_edited_row_is_reported(db_path: Path) -> None:
    await decided_log(db_path)
    tamper(db_path, "UPDATE audit_log SET decision = 'approve' WHERE id = 3")
    report = await verify(db_path)
    assert not report.ok and report.first_bad_id == 3 and "edited" in (report.problem or "")


async def test_edited_shown_arguments_are_reported(db_path: Path) -> None:
    await decided_log(db_path)
    tamper(db_path, "UPDATE audit_log SET shown_args = '{\"n\": 99}' WHERE id = 2")
    report = await verify(db_path)
    assert not report.ok and report.first_bad_id == 2


async def test_deleted_row_is_reported(db_path: Path) -> None:
    await decided_log(db_path)
    tamper(db_path, "DELETE FROM audit_log WHERE id = 2")
    report = await verify(db_path)
    assert not report.ok and report.first_bad_id == 3 and "missing" in (report.problem or "")


async def test_deleted_last_row_is_reported(db_path: Path) -> None:
    await decided_log(db_path)
    tamper(db_path, "DELETE FROM audit_log WHERE id = 5")
    report = await verify(db_path)
    assert not report.ok and "removed" in (report.problem or "")
