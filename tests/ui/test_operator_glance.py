"""Issue 25, "the request first": the headline, MCP tools by their own names, banners that go away.

A real window on a real SQLite file (no agent runtime).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QRect, QSettings, Qt
from PySide6.QtWidgets import QWidget

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.inbox.cells import COL_REQUEST
from reviewer_app.ui.inbox.filters import FLAT_QUEUE_KEY
from reviewer_app.ui.inbox.queue import COL_WAITING
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OpenMainWindow, run_async
from tests.ui.triage_helpers import call, shell, show, status, triage_models


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> Iterator[MainWindow]:
    win = open_main_window(checked=triage_models)
    yield win
    win.close()


def mcp(qtbot: Any, backend: SQLHITLBackend, hitl_id: str, tool: str, arguments: dict[str, Any]) -> str:
    return call(qtbot, backend, hitl_id, tool, arguments)


def on_window(widget: QWidget) -> QRect:
    return QRect(widget.mapTo(widget.window(), QPoint(0, 0)), widget.size())


def test_mcp_tools_by_their_own_names() -> None:
    from reviewer_app.ui.detail.headline import tool_label

    assert tool_label("mcp__fs__write_file") == "write_file · fs"
    assert tool_label("mcp__github_enterprise__create_issue") == "create_issue · github_enterprise"
    assert tool_label("Bash") == "Bash"
    assert tool_label(None) == ""


def test_the_headline_shows_the_command_and_the_agents_own_description(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    command = "git status && git diff --stat && git log --oneline -20 -- src/reviewer_app/ui/detail/headline.py"
    hitl_id = shell(qtbot, qt_backend, "h1", command)
    record = run_async(qtbot, qt_backend.get(hitl_id))
    assert record is not None
    described = mcp(
        qtbot, qt_backend, "h2", "Bash", {"command": "npm run build", "description": "Build the site for release"}
    )
    show(qtbot, window, hitl_id)
    headline = window.detail.headline
    assert headline.isVisible()
    assert headline.text_view.toPlainText() == command  # whole, never cut: the tail is what matters
    assert headline.text_view.font().fixedPitch() or "mono" in headline.text_view.font().family().lower()
    assert not headline.description.isVisible()
    show(qtbot, window, described)
    assert headline.text_view.toPlainText() == "npm run build"
    assert headline.description.isVisible()
    said = headline.description.text()
    assert "Build the site for release" in said and "agent's" in said.lower()
    assert window.detail.tabs.tabText(0) == "Arguments"  # the JSON, one tab away


def test_an_mcp_request_reads_by_its_tool_and_server(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    hitl_id = mcp(qtbot, qt_backend, "h1", "mcp__fs__write_file", {"path": "/srv/site/index.html", "content": "x"})
    show(qtbot, window, hitl_id)
    assert window.inbox.model.index_for(hitl_id, COL_REQUEST).data() == "write_file · fs"
    assert "write_file · fs" in window.detail.header.text()
    assert window.detail.headline.text_view.toPlainText() == "/srv/site/index.html"


def test_a_conflict_banner_never_covers_the_request_header_goes_with_esc_and_expires(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    hitl_id = shell(qtbot, qt_backend, "h1", "make deploy")
    show(qtbot, window, hitl_id)
    window.resize(1024, 700)
    window.decisions.failed.emit("Someone else decided first: was approved by alice; yours was not recorded.")
    banner = window.banner
    assert banner.isVisible()
    assert not on_window(banner).intersects(on_window(window.detail.header_box))
    assert not on_window(banner).intersects(on_window(window.detail.headline))
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Escape)
    assert not banner.isVisible()
    window.decisions.failed.emit("Your rejection was not sent: it expired.")
    assert banner.isVisible() and banner.expires  # a decision's news goes by itself
    window.show_error("The database cannot be read")
    assert not banner.expires  # an error that lasts stays until dismissed


# -- the flat queue ------------------------------------------------------------------------------------------


def test_the_flat_queue_is_one_row_per_request_most_urgent_first_and_remembered(
    open_main_window: OpenMainWindow,
    window: MainWindow,
    qt_backend: SQLHITLBackend,
    ui_settings: QSettings,
    qtbot: Any,
    qtmodeltester: Any,
) -> None:
    old = shell(qtbot, qt_backend, "h1", "ls -la", session="s1", invocation="i1")
    risky = shell(qtbot, qt_backend, "h2", "rm -rf build", session="s2", invocation="i2")
    long_command = "cd /srv/app && ./scripts/migrate.sh --all --verbose && systemctl restart the-service-that-matters"
    expiring = shell(qtbot, qt_backend, "h3", long_command, session="s3", invocation="i3")
    run_async(
        qtbot,
        qt_backend.create(
            hitl_id="h4",
            hitl_type="tool_approval",
            session_id="s3",
            invocation_id="i3",
            tool_name="Bash",
            data={"arguments": {"command": "make soon"}, "agent": "claude-code"},
            expires_at=int(time.time()) + 90,
        ),
    )
    qtbot.waitUntil(lambda: window.inbox.model.index_for("h4").isValid(), timeout=10_000)
    window.resize(1024, 700)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Q)
    queue = window.inbox.queue
    assert window.inbox.flat and queue.view.isVisible() and not window.inbox.view.isVisible()
    qtmodeltester.check(queue.model)
    qtbot.waitUntil(lambda: window.triage.risks.risk(risky) is not None, timeout=10_000)
    qtbot.waitUntil(lambda: [s.hitl_id for s in queue.model.rows] == ["h4", risky, old, expiring], timeout=10_000)
    # One row per request, at the top level; the full command is in the row, elided in the middle by the view.
    assert queue.model.rowCount() == 4 and not queue.model.hasChildren(queue.model.index(0, 0))
    row = queue.model.row_of(expiring)
    assert row is not None
    assert long_command in queue.model.index(row, 0).data()
    assert queue.view.textElideMode() == Qt.TextElideMode.ElideMiddle
    # Keys act here as in the tree: j moves in queue order, a decides and the next in queue order follows.
    queue.view.setFocus()
    window.inbox.select_request("h4")
    qtbot.waitUntil(
        lambda: window.detail.hitl_id == "h4" and window.detail.decidable() and window.detail.checked(), timeout=10_000
    )
    qtbot.keyClick(queue.view, Qt.Key.Key_J)
    qtbot.waitUntil(lambda: window.detail.hitl_id == risky, timeout=5_000)
    show(qtbot, window, old)
    queue.view.setFocus()
    qtbot.keyClick(queue.view, Qt.Key.Key_A)
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, old)[0] == "completed", timeout=10_000)
    qtbot.waitUntil(lambda: window.detail.hitl_id == expiring, timeout=5_000)
    assert ui_settings.value(FLAT_QUEUE_KEY, type=bool) is True
    again = open_main_window(show=False, start=False)
    assert again.inbox.flat  # remembered
    again.close()


def test_the_flat_queues_waiting_column_shows_an_hours_countdown_whole(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    run_async(
        qtbot,
        qt_backend.create(
            hitl_id="h1",
            hitl_type="tool_approval",
            session_id="s1",
            invocation_id="i1",
            tool_name="Bash",
            data={"arguments": {"command": "pytest -q"}, "agent": "claude-code"},
            expires_at=int(time.time()) + 3590,  # a Claude Code hook's hour: "in 59:49"
        ),
    )
    qtbot.waitUntil(lambda: window.inbox.model.index_for("h1").isValid(), timeout=10_000)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Q)
    queue = window.inbox.queue
    qtbot.waitUntil(lambda: queue.model.rowCount() == 1, timeout=10_000)
    text = queue.model.index(0, COL_WAITING).data()
    assert text.startswith("in 59:")
    # in the triage session it read "in…08": the column was narrower than its text
    assert queue.view.header().sectionSize(COL_WAITING) >= queue.view.fontMetrics().horizontalAdvance(text) + 8
