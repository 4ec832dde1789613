"""The inbox's columns at a small window: the summary (what a call does) keeps the room and spends none of it on
what the request column says, and the request column still shows a request's tool name whole."""

from __future__ import annotations

from typing import Any

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QStyle

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.inbox.cells import COL_AGENT, COL_REQUEST, COL_SUMMARY
from reviewer_app.ui.inbox.model import InboxModel
from reviewer_app.ui.inbox.queue import request_text
from tests.ui.conftest import OpenMainWindow, make_summary, run_async


@pytest.mark.parametrize("size", [(1024, 640), (1366, 768)])
def test_the_summary_column_takes_the_room_and_the_tool_name_stays_whole(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any, size: Any
) -> None:
    window = open_main_window()
    for hitl_id, tool, arguments, agent in (
        ("h-write", "write_file", {"path": "src/a.py", "content": "x"}, "claude-code"),
        ("h-other", "run_shell", {"command": "ls"}, "codex"),
    ):
        create = qt_backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id=f"s-{agent}",
            invocation_id=f"i-{agent}",
            data={"arguments": arguments},
            metadata={"agent": agent},
            tool_name=tool,
        )
        run_async(qtbot, create)
    view = window.inbox.view
    qtbot.waitUntil(lambda: window.inbox.model.index_for("h-other").isValid())
    assert not view.isColumnHidden(COL_AGENT)  # two agents: the column tells them apart
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    qtbot.wait(50)
    header = view.header()
    widths = {
        column: header.sectionSize(column) for column in range(header.count()) if not header.isSectionHidden(column)
    }
    assert max(widths, key=lambda column: widths[column]) == COL_SUMMARY
    assert widths[COL_SUMMARY] >= 0.42 * view.viewport().width(), widths
    cell = view.visualRect(window.inbox.model.index_for("h-write", COL_REQUEST))
    icon = view.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize, None, view) + 8  # and the cell's margins
    assert cell.right() <= header.sectionViewportPosition(COL_REQUEST) + widths[COL_REQUEST]
    assert cell.width() >= view.fontMetrics().horizontalAdvance("write_file") + icon, (cell, widths)


def test_a_questions_summary_starts_with_the_question() -> None:
    """The request column already says "question": its summary cell repeated "question: " and, cut in the middle
    at a small window, kept little of the question ("question: Whi…nge 2 go to?")."""
    model = InboxModel()
    asked = make_summary(0, hitl_type="ask_user", tool=None, summary="question: Which branch should change 2 go to?")
    model.set_requests([asked, make_summary(1, summary="question: keep this one, a command's summary")])
    assert model.index_for(asked.hitl_id, COL_REQUEST).data() == "question"
    assert model.index_for(asked.hitl_id, COL_SUMMARY).data() == "Which branch should change 2 go to?"
    assert model.index_for("h000001", COL_SUMMARY).data() == "question: keep this one, a command's summary"
    assert request_text(asked) == "question · Which branch should change 2 go to?"  # the flat queue's row
