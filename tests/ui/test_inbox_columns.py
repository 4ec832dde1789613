"""The inbox's columns at a small window: the summary (what a call does) keeps the room and spends none of it on
what the request column says, and the request column still shows a request's tool name whole."""

from __future__ import annotations

import time
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QStyle, QStyleOptionViewItem

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.inbox.cells import COL_AGE, COL_AGENT, COL_REQUEST, COL_SUMMARY, HEADERS
from reviewer_app.ui.inbox.model import InboxModel
from reviewer_app.ui.inbox.queue import COL_WHO, request_text
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


AGENTS = (("h-cc", "claude-code", True), ("h-py", "external-python-agent", False))
SESSION = "5c2a7e1e-9d8b-4c3f-a1b2-3e4f5a6b7c8d"


def _window_with(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any, size: Any, requests: list[dict[str, Any]]
) -> Any:
    """The main window at ``size`` once it lists ``requests`` (keyword arguments of ``create`` beyond the type)."""
    window = open_main_window()
    for request in requests:
        run_async(qtbot, qt_backend.create(hitl_type="tool_approval", **request))
    model = window.inbox.model
    qtbot.waitUntil(lambda: all(model.index_for(r["hitl_id"]).isValid() for r in requests), timeout=10_000)
    window.resize(*size)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == size)
    qtbot.wait(50)
    return window


def _two_agents(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any, size: Any, expires_at: int | None = None
) -> Any:
    """Requests from claude-code and external-python-agent; ``expires_at``: claude-code's expiry (a hook's)."""
    requests = [
        {
            "hitl_id": hitl_id,
            "session_id": f"{SESSION}-{agent}",
            "invocation_id": f"i-{agent}",
            "data": {"arguments": {"command": "ls"}},
            "metadata": {"agent": agent, "external": external},
            "tool_name": "Bash",
            "expires_at": expires_at if agent == "claude-code" else None,
        }
        for hitl_id, agent, external in AGENTS
    ]
    return _window_with(open_main_window, qt_backend, qtbot, size, requests)


def drawn_text(view: Any, index: Any) -> str:
    """The text the view paints in the cell at ``index`` (elided as its delegate and the view's mode say)."""
    option = QStyleOptionViewItem()
    view.initViewItemOption(option)
    view.itemDelegateForIndex(index).initStyleOption(option, index)
    margin = view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1
    room = (
        view.visualRect(index).width()
        - 2 * margin
        - (option.decorationSize.width() + 4 if not option.icon.isNull() else 0)
    )
    return view.fontMetrics().elidedText(option.text, option.textElideMode, room)


@pytest.mark.parametrize("size", [(1920, 1050), (1024, 640)])
def test_the_agent_column_shows_the_agents_names(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any, size: Any
) -> None:
    """Seen: the inbox's Agent column showed an icon and "cla…" even at 1920 px (64 px whatever the names), then
    still "claud…" at 1,024 px. It is as wide as the names while the summary keeps the room (the largest column, at
    least 42% of the list), and the list has the room for both at 1,024 px; the tooltip has the agent."""
    window = _two_agents(open_main_window, qt_backend, qtbot, size)
    view, model = window.inbox.view, window.inbox.model
    for hitl_id, agent, _external in AGENTS:  # the whole name where it fits, else its start (Qt's own cut)
        drawn = drawn_text(view, model.index_for(hitl_id, COL_AGENT))
        cut = drawn[:3] == agent[:3] and drawn.endswith("…")
        assert drawn == agent if agent == "claude-code" else drawn == agent or cut, drawn
    assert "agent external-python-agent" in model.index_for("h-py", COL_AGENT).data(Qt.ItemDataRole.ToolTipRole)
    widths = [view.header().sectionSize(c) for c in range(view.header().count()) if not view.isColumnHidden(c)]
    assert view.header().sectionSize(COL_SUMMARY) == max(widths)  # the summary keeps the room
    assert view.header().sectionSize(COL_SUMMARY) >= 0.42 * view.viewport().width(), widths


@pytest.mark.parametrize("size", [(1920, 1050), (1024, 640)])
def test_a_hooks_countdown_takes_the_waiting_column_and_leaves_the_agent_whole(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any, size: Any
) -> None:
    """Seen at 1,024 px: beside an Expires column (a Claude Code hook's requests expire) the Agent column read
    "cla…". The countdown takes the Waiting column's place, as in the flat queue (an expiring request shows how long
    it has left, the others how long they have waited), so no column is added and both stay whole."""
    window = _two_agents(open_main_window, qt_backend, qtbot, size, expires_at=int(time.time()) + 3599)
    view, model = window.inbox.view, window.inbox.model
    assert model.headerData(COL_AGE, Qt.Orientation.Horizontal) == "Waiting"
    assert "Expires" not in HEADERS
    assert drawn_text(view, model.index_for("h-cc", COL_AGENT)) == "claude-code"
    countdown = drawn_text(view, model.index_for("h-cc", COL_AGE))
    assert countdown.startswith("in 59:") and "…" not in countdown, countdown
    assert drawn_text(view, model.index_for("h-py", COL_AGE)).endswith("s")  # waited seconds, not a countdown
    assert "expires" in model.index_for("h-cc", COL_AGE).data(Qt.ItemDataRole.ToolTipRole)
    assert view.header().sectionSize(COL_SUMMARY) >= 0.42 * view.viewport().width()
    assert window.minimumSizeHint().width() <= 1024  # the room is the list's own: the window fits a 1,024 px screen


@pytest.mark.parametrize("size", [(1920, 1050), (1024, 640)])
def test_the_queues_agent_and_session_keep_the_agent_whole_and_the_titles_start(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any, size: Any
) -> None:
    """Seen: the flat queue's "Agent · session" cut in the middle ("claude-…changes"): neither the agent nor the
    session could be read. The agent stays whole and the session (its title, a prompt, or its id) keeps its start."""
    window = _two_agents(open_main_window, qt_backend, qtbot, size)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Q)
    queue = window.inbox.queue
    qtbot.waitUntil(lambda: queue.model.rowCount() == 2, timeout=10_000)
    qtbot.wait(50)
    for row in range(2):
        index = queue.model.index(row, COL_WHO)
        agent = queue.model.rows[row].agent
        drawn = drawn_text(queue.view, index)
        whole = size[0] >= 1920 or agent == "claude-code"  # else wider than a third of the list: its start stays
        assert drawn.startswith(f"{agent} · {SESSION[:4]}" if whole else agent[:15]), drawn
        assert f"{SESSION}-{agent}" in index.data(Qt.ItemDataRole.ToolTipRole)


@pytest.mark.parametrize("size", [(1920, 1050), (1024, 640)])
def test_the_request_column_shows_whole_tool_names_where_there_is_room(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any, size: Any
) -> None:
    """Seen at 1,920 px: the Request column read "WebFet…", "create_…" and "query ·…" beside a summary with room to
    spare (it was as wide as "write_file" whatever the tools). It is as wide as the tools' names while the summary
    keeps its share; at 1,024 px it keeps its width and the summary its room."""
    tools = {"h-web": "WebFetch", "h-mcp": "mcp__github__create_issue", "h-sh": "run_shell"}
    requests = [
        {
            "hitl_id": hitl_id,
            "session_id": f"s-{hitl_id}",
            "invocation_id": f"i-{hitl_id}",
            "data": {"arguments": {"url": "https://example.com/a"}},
            "metadata": {"agent": "claude-code" if hitl_id != "h-sh" else "codex"},
            "tool_name": tool,
        }
        for hitl_id, tool in tools.items()
    ]
    window = _window_with(open_main_window, qt_backend, qtbot, size, requests)
    view, model = window.inbox.view, window.inbox.model
    drawn = {hitl_id: drawn_text(view, model.index_for(hitl_id, COL_REQUEST)) for hitl_id in tools}
    if size[0] >= 1920:
        assert drawn == {"h-web": "WebFetch", "h-mcp": "create_issue · github", "h-sh": "run_shell"}, drawn
    assert drawn["h-sh"] == "run_shell"
    assert drawn_text(view, model.index_for("h-web", COL_AGENT)) == "claude-code"
    widths = [view.header().sectionSize(c) for c in range(view.header().count()) if not view.isColumnHidden(c)]
    assert view.header().sectionSize(COL_SUMMARY) == max(widths)  # the summary keeps the room
    assert view.header().sectionSize(COL_SUMMARY) >= 0.42 * view.viewport().width(), widths
