"""The why of a request in the flat queue's tooltip (issue 26): worked out for the hovered or selected row only."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QSettings, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QApplication

from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.inbox.queue import HITL_ID_ROLE
from reviewer_app.ui.inbox.why_tips import WORKING
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OpenMainWindow, run_async
from tests.ui.triage_helpers import shell, triage_models

ROWS = 40


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any, qtmodeltester: Any
) -> Iterator[MainWindow]:
    run_async(qtbot, qt_backend.add_rule(Rule.create("ask", "Bash(make deploy:*)", now=time.time())))
    for n in range(ROWS):
        shell(qtbot, qt_backend, f"h{n:02}", f"echo {n}", session=f"s{n % 4}", invocation=f"i{n % 4}")
    shell(qtbot, qt_backend, "deploy", "make deploy --prod", session="s9", invocation="i9")
    win = open_main_window(checked=triage_models)
    qtmodeltester.check(win.inbox.queue.model)
    yield win
    win.close()


def tooltip(window: MainWindow, hitl_id: str) -> str:
    queue = window.inbox.queue
    row = queue.model.row_of(hitl_id)
    assert row is not None
    return str(queue.model.index(row, 0).data(Qt.ItemDataRole.ToolTipRole))


def hover(window: MainWindow, hitl_id: str) -> None:
    queue = window.inbox.queue
    row = queue.model.row_of(hitl_id)
    assert row is not None
    rect = queue.view.visualRect(queue.model.index(row, 0))
    viewport = queue.view.viewport()
    event = QHelpEvent(QEvent.Type.ToolTip, rect.center(), viewport.mapToGlobal(rect.center()))
    QApplication.sendEvent(viewport, event)


def test_the_why_is_worked_out_for_the_hovered_and_selected_rows_only(window: MainWindow, qtbot: Any) -> None:
    window.resize(1024, 900)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Q)
    queue = window.inbox.queue
    qtbot.waitUntil(lambda: queue.model.rowCount() == ROWS + 1, timeout=10_000)
    qtbot.wait(200)
    selected = queue.view.currentIndex().data(HITL_ID_ROLE) if queue.view.currentIndex().isValid() else None
    assert queue.whys.worked_out <= {selected}  # loading the rows asked for no why (at most the selected row's)
    assert WORKING in tooltip(window, "h07")  # not hovered: nothing worked out, the tooltip says so

    hover(window, "deploy")
    qtbot.waitUntil(lambda: queue.whys.text("deploy") is not None, timeout=10_000)
    text = tooltip(window, "deploy")
    assert "make deploy --prod" in text and "Why you are asked:" in text
    assert "Bash(make deploy:*)" in text and "sends it to a person" in text  # the ask rule is the reason
    hover(window, "h07")
    qtbot.waitUntil(lambda: queue.whys.text("h07") is not None, timeout=10_000)
    assert "Why you are asked:\n•" in tooltip(window, "h07")
    assert queue.whys.text("h08") is None and queue.whys.worked_out <= {selected, "deploy", "h07"}

    # selecting a row (keyboard) works its why out before any hover
    queue.view.setFocus()
    window.inbox.select_request("h21")
    qtbot.waitUntil(lambda: queue.whys.text("h21") is not None, timeout=10_000)
    assert queue.whys.worked_out <= {selected, "deploy", "h07", "h21"} and len(queue.whys.worked_out) <= 4


def test_a_rebuild_of_the_queue_works_the_hovered_rows_why_out_again(window: MainWindow, qtbot: Any) -> None:
    """The queue rebuilds whenever the tree changes (a new request, a re-sort once risks are known) and forgets
    every why, since rules may have changed: the row under the pointer must not be left "working it out…"."""
    window.resize(1024, 900)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Q)
    queue = window.inbox.queue
    qtbot.waitUntil(lambda: queue.model.rowCount() == ROWS + 1, timeout=10_000)
    hover(window, "deploy")
    qtbot.waitUntil(lambda: queue.whys.text("deploy") is not None, timeout=10_000)
    queue.refresh()  # answered, then rebuilt
    qtbot.waitUntil(lambda: queue.whys.text("deploy") is not None, timeout=10_000)
    hover(window, "h07")
    queue.refresh()  # rebuilt while the answer is on its way
    qtbot.waitUntil(lambda: queue.whys.text("h07") is not None, timeout=10_000)
    assert "Why you are asked:\n•" in tooltip(window, "h07")
