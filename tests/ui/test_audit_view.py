"""The audit window (issue 19): paging through the log, Verify (OK and a tampered row), Export to JSONL and CSV."""

from __future__ import annotations

import csv
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtTest import QAbstractItemModelTester

from reviewer_app.domain.decisions import args_digest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.audit.model import COL_WHAT
from reviewer_app.ui.audit.window import AuditWindow
from tests.ui.conftest import run_async

SECRET = "sk-ant-abcdefghijklmnopqrstuvwxyz0123"


async def decide_many(backend: SQLHITLBackend, count: int) -> None:
    for index in range(count):
        hitl_id = f"h{index:04d}"
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": {"n": index}},
            tool_name="run_shell",
        )
        await backend.respond(hitl_id, {"decision": "reject", "message": f"no {index}"})


async def decide_hostile(backend: SQLHITLBackend) -> None:
    """Messages a spreadsheet would run, and credentials in a message and in edited arguments."""
    shown = {"command": "deploy", "password": "x"}
    messages = ['=HYPERLINK("http://evil","x")', "+1+2", "-rf /", "@SUM(A1)", f"key is {SECRET}"]
    for index, message in enumerate(messages):
        hitl_id = f"x{index}"
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": shown},
            tool_name="run_shell",
        )
        await backend.respond(hitl_id, {"decision": "reject", "message": message})
    await backend.create(
        hitl_id="edit",
        hitl_type="tool_approval",
        session_id="s",
        invocation_id="i",
        data={"arguments": shown},
        tool_name="run_shell",
    )
    edited = {"command": "=cmd|' /C calc'!A0", "password": "hunter22", "url": "https://bob:pw123456@example.com/x"}
    await backend.respond("edit", {"decision": "edit", "args": edited, "args_sha256": args_digest(shown)})


def open_window(qtbot: Any, backend: SQLHITLBackend, page_size: int = 100) -> AuditWindow:
    window = AuditWindow(backend, page_size=page_size)
    qtbot.addWidget(window)
    QAbstractItemModelTester(window.model, QAbstractItemModelTester.FailureReportingMode.Fatal)
    window.show()
    return window


def test_pages_through_the_log(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, decide_many(qt_backend, 250), timeout=60_000)
    window = open_window(qtbot, qt_backend)
    qtbot.waitUntil(lambda: window.model.rowCount() == 100)
    assert [e.id for e in window.model.entries] == list(range(1, 101))
    assert window.model.canFetchMore()
    window.view.scrollToBottom()  # the view asks for the next page near the end
    qtbot.waitUntil(lambda: window.model.rowCount() == 200)
    window.view.scrollToBottom()
    qtbot.waitUntil(lambda: window.model.rowCount() == 250)
    qtbot.waitUntil(lambda: not window.model.loading)
    assert window.model.exhausted and not window.model.canFetchMore()
    assert window.model.index(249, 0).data() == "250" and window.model.index(0, 2).data() == "Rejected"
    assert "250 rows" in window.windowTitle()
    what = window.model.index(0, COL_WHAT)  # a call in a narrow column keeps its end (``| sh``)
    assert window.view.itemDelegateForIndex(what).__class__.__name__ == "MiddleElision"


def test_verify_ok(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, decide_many(qt_backend, 12))
    window = open_window(qtbot, qt_backend)
    with qtbot.waitSignal(window.verified, timeout=15_000) as signal:
        window.verify_action.trigger()
    assert signal.args[0].ok
    assert window.verdict.text().startswith("✔ Chain OK: 12 rows checked")
    assert window.model.broken_id is None


def test_verify_reports_the_tampered_row_and_shows_it(qtbot: Any, qt_backend: SQLHITLBackend, db_path: Path) -> None:
    run_async(qtbot, decide_many(qt_backend, 250), timeout=60_000)
    raw = sqlite3.connect(db_path)
    with raw:
        raw.execute("UPDATE audit_log SET decision = 'approve' WHERE id = 180")
    raw.close()
    window = open_window(qtbot, qt_backend)
    qtbot.waitUntil(lambda: window.model.rowCount() == 100)
    with qtbot.waitSignal(window.verified, timeout=15_000) as signal:
        window.verify()
    report = signal.args[0]
    assert not report.ok and report.first_bad_id == 180
    assert window.verdict.text() == "✘ Chain BROKEN at row #180: the row was edited after it was written"
    # The broken row was paged in, selected and marked.
    qtbot.waitUntil(lambda: window.view.currentIndex().row() == 179)
    assert window.model.index(179, 0).data() == "180"
    assert window.model.index(179, 0).data(8) is not None  # BackgroundRole: highlighted
    assert window.model.index(178, 0).data(8) is None


def test_export_jsonl_streams_every_row_redacted(qtbot: Any, qt_backend: SQLHITLBackend, tmp_path: Path) -> None:
    run_async(qtbot, decide_many(qt_backend, 620), timeout=90_000)  # more than one export page
    run_async(qtbot, decide_hostile(qt_backend))
    window = open_window(qtbot, qt_backend)
    target = tmp_path / "audit.jsonl"
    progress: list[tuple[int, int]] = []
    original = window._on_progress
    window._on_progress = lambda done, total: (progress.append((done, total)), original(done, total))  # type: ignore[method-assign]
    with qtbot.waitSignal(window.exported, timeout=30_000) as signal:
        window.start_export(target, "jsonl")
    assert signal.args == [str(target), 626]
    assert progress[-1] == (626, 626) and len(progress) == 2
    rows = [json.loads(line) for line in target.read_text(encoding="utf-8").splitlines()]
    assert [row["id"] for row in rows] == list(range(1, 627))
    text = target.read_text(encoding="utf-8")
    assert SECRET not in text and "hunter22" not in text and "pw123456" not in text
    edit = rows[-1]
    assert edit["decision"] == "edit"
    assert edit["edited_args"]["password"] == "[redacted]"
    assert edit["edited_args"]["url"] == "https://[redacted]@example.com/x"
    assert edit["edited_args"]["command"] == "=cmd|' /C calc'!A0"  # JSON is data: no formula escaping there
    assert rows[-2]["message"] == "key is [redacted]"
    assert not list(tmp_path.glob("*.part"))


def test_export_csv_escapes_formulas(qtbot: Any, qt_backend: SQLHITLBackend, tmp_path: Path) -> None:
    run_async(qtbot, decide_hostile(qt_backend))
    window = open_window(qtbot, qt_backend)
    target = tmp_path / "audit.csv"
    with qtbot.waitSignal(window.exported, timeout=30_000):
        window.start_export(target, "jsonl")  # the .csv suffix wins
    with target.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["message"] for row in rows[:5]] == [
        '\'=HYPERLINK("http://evil","x")',
        "'+1+2",
        "'-rf /",
        "'@SUM(A1)",
        "key is [redacted]",
    ]
    edited = json.loads(rows[5]["edited_args"])
    assert edited["password"] == "[redacted]" and edited["command"].startswith("=cmd")  # inside JSON: not a formula
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in rows for cell in row.values())
    assert SECRET not in target.read_text(encoding="utf-8")


def test_cancelled_export_leaves_no_file(qtbot: Any, qt_backend: SQLHITLBackend, tmp_path: Path) -> None:
    run_async(qtbot, decide_many(qt_backend, 30))
    window = open_window(qtbot, qt_backend)
    target = tmp_path / "audit.jsonl"
    target.write_text("earlier export\n", encoding="utf-8")
    window.start_export(target, "jsonl")
    window.cancel_export()
    qtbot.waitUntil(lambda: window.export_task is not None and window.export_task.done())
    assert window.export_task is not None and window.export_task.cancelled()
    assert target.read_text(encoding="utf-8") == "earlier export\n"
    assert not list(tmp_path.glob("*.part"))
    assert window.export_action.isEnabled()


@pytest.mark.parametrize("message", ["=1+1", "plain"])
def test_csv_cell_rule(message: str) -> None:
    from reviewer_app.domain.audit_export import csv_cell

    assert csv_cell(message) == ("'" + message if message.startswith("=") else message)
