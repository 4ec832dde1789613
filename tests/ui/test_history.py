"""The History tab in the real window: decisions in words, the edited approval's diff, reasons, rules, search,
paging as the view scrolls, and the keyboard flow from the search box into the results.

The history model runs under QAbstractItemModelTester throughout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.history import HistoryEntry
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rules import Rule
from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.history.model import COL_BY, COL_DECISION, COL_REASON, COL_SUMMARY, PAGE_SIZE, HistoryModel
from reviewer_app.ui.window.main_window import HISTORY_TAB, MainWindow
from tests.ui.conftest import OpenMainWindow, run_async

SHOWN = {"path": "notes.txt", "content": "line one\nline two\n"}
EDITED = {"path": "notes.txt", "content": "line one\nline two, reviewed\n"}


async def _ask(
    backend: SQLHITLBackend,
    hitl_id: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    agent: str = "coder",
    expires_at: int | None = None,
) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s1",
        invocation_id="i1",
        data={"arguments": arguments},
        metadata={"agent": agent},
        tool_name=tool,
        expires_at=expires_at,
    )


async def _seed(backend: SQLHITLBackend, approvals: int) -> str:
    """``approvals`` plain approvals, then an edited write_file, a rejection with a reason and a rule's denial."""
    for i in range(approvals):
        args = {"command": f"echo item{i}"}
        await _ask(backend, f"h{i:04d}", "run_shell", args)
        await backend.decide(f"h{i:04d}", Decision(DecisionKind.APPROVE, args_sha256=args_digest(args)))
    await _ask(backend, "h-edit", "write_file", SHOWN)
    await backend.decide("h-edit", Decision(DecisionKind.EDIT, edited_args=EDITED, args_sha256=args_digest(SHOWN)))
    await _ask(backend, "h-reject", "run_shell", {"command": "rm -rf build"})
    await backend.decide("h-reject", Decision(DecisionKind.REJECT, message="build is shared with the CI cache"))
    stored = await backend.add_rule(Rule.create("deny", "Bash(curl:*)", now=time.time()))
    request = NewRequest(
        hitl_id="h-rule",
        hitl_type="tool_approval",
        session_id="s1",
        invocation_id="i1",
        data={"arguments": {"command": "curl https://example.invalid/upload"}},
        tool_name="Bash",
    )
    call = ToolCall(tool_name="Bash", arguments={"command": "curl https://example.invalid/upload"})
    assert await backend.settle_by_rules(request, call) is not None
    return stored.rule.id


def history_model(window: MainWindow) -> tuple[Any, ...]:
    return (window.history.model,)


@pytest.fixture
def seeded(qt_backend: SQLHITLBackend, qtbot: Any) -> str:
    return run_async(qtbot, _seed(qt_backend, approvals=3))


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, seeded: str, ui_settings: QSettings, qtbot: Any
) -> Iterator[MainWindow]:
    win = open_main_window(checked=history_model)
    yield win
    win.close()


def open_history(qtbot: Any, win: MainWindow) -> None:
    """Ctrl+3, as the operator would, then the first page."""
    win.inbox.view.setFocus()
    qtbot.keyClick(win.inbox.view, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
    assert win.left_tabs.currentIndex() == HISTORY_TAB
    qtbot.waitUntil(lambda: win.history.model.loaded_once and not win.history.model.loading)


def row_of(win: MainWindow, hitl_id: str) -> int:
    model = win.history.model
    return next(i for i in range(model.rowCount()) if model.entry(i).hitl_id == hitl_id)  # type: ignore[union-attr]


def cell(win: MainWindow, row: int, column: int) -> str:
    model = win.history.model
    return str(model.data(model.index(row, column)))


def select(qtbot: Any, win: MainWindow, hitl_id: str) -> Any:
    row = row_of(win, hitl_id)
    win.history.view.setCurrentIndex(win.history.model.index(row, 0))
    qtbot.waitUntil(
        lambda: win.history.detail.prepared is not None and win.history.detail.prepared.entry.hitl_id == hitl_id
    )
    return win.history.detail.prepared


def test_decisions_read_in_words_newest_first(window: MainWindow, qtbot: Any) -> None:
    open_history(qtbot, window)
    model = window.history.model
    ids = [model.entry(i).hitl_id for i in range(model.rowCount())]  # type: ignore[union-attr]
    assert ids == ["h-rule", "h-reject", "h-edit", "h0002", "h0001", "h0000"]
    words = {cell(window, row, COL_DECISION) for row in range(model.rowCount())}
    assert words == {"Approved", "Approved with edited arguments", "Rejected"}
    for row in range(model.rowCount()):  # never a stored kind name
        assert "_" not in cell(window, row, COL_DECISION)
    assert cell(window, row_of(window, "h-reject"), COL_REASON) == "build is shared with the CI cache"
    assert cell(window, row_of(window, "h0000"), COL_BY) == "tester"
    assert window.history.status_label.text() == "6 decisions shown"
    # What was decided keeps its end (``| sh``) in a narrow column; the reason (prose) is cut at its end.
    view = window.history.view
    for column, mode in ((COL_SUMMARY, "ElideMiddle"), (COL_REASON, "ElideRight")):
        index = window.history.model.index(0, column)
        option = QStyleOptionViewItem()
        option.textElideMode = view.textElideMode()
        view.itemDelegateForIndex(index).initStyleOption(option, index)
        assert option.textElideMode.name == mode
    assert not window.detail.isVisible()  # History shows its own detail across the whole window
    qtbot.keyClick(window.history.view, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert window.left_tabs.currentIndex() == 0 and window.detail.isVisible()


def test_an_edited_approval_diffs_what_was_shown_against_what_was_approved(window: MainWindow, qtbot: Any) -> None:
    open_history(qtbot, window)
    prepared = select(qtbot, window, "h-edit")
    detail = window.history.detail
    diff = detail.diff_view.toPlainText()
    # from the arguments as shown (-) to as edited (+): the reviewer's edit, never the reverse
    assert "-line two\n+line two, reviewed" in diff
    assert diff.index("--- content (as shown)") < diff.index("+++ content (as edited)")
    assert "line two, reviewed" in detail.edited_view.toPlainText()
    assert "line two, reviewed" not in detail.shown_view.toPlainText()
    assert detail.tabs.currentWidget() is detail.diff_view and detail.tabs.isTabVisible(2)
    header = detail.header.text()
    assert "Approved with edited arguments" in header and "tester" in header
    assert prepared.entry.edited


def test_a_rejection_shows_its_reason_and_no_edit_tabs(window: MainWindow, qtbot: Any) -> None:
    open_history(qtbot, window)
    select(qtbot, window, "h-reject")
    detail = window.history.detail
    assert "<b>Rejected</b>" in detail.header.text()
    assert "Reason: <i>build is shared with the CI cache</i>" in detail.header.text()
    assert "rm -rf build" in detail.shown_view.toPlainText()
    assert not detail.tabs.isTabVisible(0) and not detail.tabs.isTabVisible(2)


def test_a_rule_decision_names_the_rule_and_its_pattern(window: MainWindow, seeded: str, qtbot: Any) -> None:
    open_history(qtbot, window)
    assert cell(window, row_of(window, "h-rule"), COL_BY) == f"rule:{seeded} (Bash(curl:*))"
    select(qtbot, window, "h-rule")
    header = window.history.detail.header.text()
    assert f"Decided by rule:{seeded} (deny) <code>Bash(curl:*)</code>" in header


def test_search_filters_and_hostile_text_is_just_words(window: MainWindow, qtbot: Any) -> None:
    open_history(qtbot, window)
    history = window.history
    model = history.model

    def shown_ids() -> list[str]:
        return [model.entry(i).hitl_id for i in range(model.rowCount())]  # type: ignore[union-attr]

    history.search_box.setText("reviewed")  # a word only the edited arguments hold
    qtbot.waitUntil(lambda: shown_ids() == ["h-edit"])
    history.search_box.setText("ci cache")  # words of the reject reason
    qtbot.waitUntil(lambda: shown_ids() == ["h-reject"])
    history.search_box.setText('"(NEAR* OR \x00')
    qtbot.waitUntil(lambda: not model.loading and model.rowCount() == 0)
    assert history.status_label.text() == "No decisions match."
    history.search_box.clear()
    qtbot.waitUntil(lambda: model.rowCount() == 6)
    history.decision_combo.setCurrentText("Rejected")
    qtbot.waitUntil(lambda: sorted(shown_ids()) == ["h-reject", "h-rule"])


def test_slash_focuses_the_search_and_down_or_return_moves_into_the_results(window: MainWindow, qtbot: Any) -> None:
    open_history(qtbot, window)
    history = window.history
    history.view.setFocus()
    qtbot.keyClick(history.view, Qt.Key.Key_Slash)
    assert QApplication.focusWidget() is history.search_box
    assert window.left_tabs.currentIndex() == HISTORY_TAB  # "/" searches the tab in front
    qtbot.keyClicks(history.search_box, "echo")
    qtbot.waitUntil(lambda: history.model.rowCount() == 3 and not history.model.loading)
    qtbot.keyClick(history.search_box, Qt.Key.Key_Down)
    assert QApplication.focusWidget() is history.view
    assert history.view.currentIndex().row() == 0
    assert history.search_box.text() == "echo"  # the filter is kept
    qtbot.waitUntil(lambda: history.detail.prepared is not None)
    qtbot.keyClick(history.view, Qt.Key.Key_Down)  # the arrows move through the results
    assert history.view.currentIndex().row() == 1
    qtbot.keyClick(history.view, Qt.Key.Key_Slash)
    assert QApplication.focusWidget() is history.search_box
    qtbot.keyClick(history.search_box, Qt.Key.Key_Return)
    assert QApplication.focusWidget() is history.view and history.search_box.text() == "echo"


def test_pages_come_in_as_the_view_scrolls(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    """Without the model tester (it calls fetchMore itself, see the next test) only scrolling asks for pages."""
    run_async(qtbot, _seed(qt_backend, approvals=2 * PAGE_SIZE + 30), timeout=60_000)
    win = open_main_window()
    try:
        open_history(qtbot, win)
        model = win.history.model
        qtbot.wait(200)  # nothing more is read while the operator does not scroll
        assert model.rowCount() == PAGE_SIZE and model.has_more
        assert "more as you scroll" in win.history.status_label.text()
        for expected in (2 * PAGE_SIZE, 2 * PAGE_SIZE + 33):
            win.history.view.scrollToBottom()  # the view asks fetchMore at the end
            qtbot.waitUntil(lambda expected=expected: model.rowCount() == expected, timeout=10_000)
        assert not model.has_more and not model.canFetchMore()
        assert win.history.status_label.text() == f"{2 * PAGE_SIZE + 33} decisions shown"
        _assert_every_decision_once(win, 2 * PAGE_SIZE + 30)
    finally:
        win.close()


def test_paging_under_the_model_tester(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    """The same under QAbstractItemModelTester (which also calls fetchMore itself after every change)."""
    run_async(qtbot, _seed(qt_backend, approvals=2 * PAGE_SIZE + 30), timeout=60_000)
    win = open_main_window(checked=history_model)
    try:
        open_history(qtbot, win)
        model = win.history.model
        while model.has_more:
            rows = model.rowCount()
            win.history.view.scrollToBottom()
            qtbot.waitUntil(lambda rows=rows: model.rowCount() > rows, timeout=10_000)
        _assert_every_decision_once(win, 2 * PAGE_SIZE + 30)
    finally:
        win.close()


def _assert_every_decision_once(win: MainWindow, approvals: int) -> None:
    model = win.history.model
    ids = [model.entry(i).hitl_id for i in range(model.rowCount())]  # type: ignore[union-attr]
    expected = ["h-rule", "h-reject", "h-edit", *(f"h{i:04d}" for i in reversed(range(approvals)))]
    assert ids == expected


def test_a_decision_made_meanwhile_appears_at_the_top(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    open_history(qtbot, window)
    args = {"command": "echo late"}
    run_async(qtbot, _ask(qt_backend, "h-late", "run_shell", args))
    run_async(qtbot, qt_backend.decide("h-late", Decision(DecisionKind.APPROVE, args_sha256=args_digest(args))))
    window.live.request_refresh()
    qtbot.waitUntil(lambda: window.history.model.rowCount() == 7, timeout=10_000)
    assert window.history.model.entry(0).hitl_id == "h-late"  # type: ignore[union-attr]


async def _no_pages(*_: Any) -> Any:
    raise AssertionError("no page is read")


def test_an_age_reads_the_same_until_the_model_says_it_changed(qtbot: Any) -> None:
    """A cell's text may only change with dataChanged: the model tester compares reads across a second's edge."""
    entry = HistoryEntry(1, int(time.time() * 1000), "h1", "approve", "ann", None, False, tool_name="Bash")
    model = HistoryModel(_no_pages, lambda coroutine: coroutine.close())
    model._entries = [entry]  # a row held in memory, as a first page would put it
    first = model.data(model.index(0, 0))
    time.sleep(1.1)
    assert model.data(model.index(0, 0)) == first
    with qtbot.waitSignal(model.dataChanged) as changed:
        model.refresh_ages()
    assert changed.args[0].column() == 0 and model.data(model.index(0, 0)) != first


def test_a_search_that_leaves_the_shown_decision_out_clears_the_detail(window: MainWindow, qtbot: Any) -> None:
    open_history(qtbot, window)
    select(qtbot, window, "h-edit")
    history = window.history
    history.search_box.setText("ci cache")  # only the rejection matches
    qtbot.waitUntil(lambda: history.model.rowCount() == 1 and not history.model.loading, timeout=10_000)
    # the detail never shows a decision the list no longer holds (issue 25 triage)
    assert history.detail.prepared is None
    assert "Select a decision" in history.detail.header.text()


def test_j_and_k_move_through_the_decisions_as_on_the_other_tabs(window: MainWindow, qtbot: Any) -> None:
    """Seen triaging by keyboard: after Ctrl+3, j did nothing on the History tab (j/k move on every other list)."""
    open_history(qtbot, window)
    history = window.history
    focused = QApplication.focusWidget()
    assert focused is history.view, focused  # Ctrl+3 leaves the keys with the decisions, as Ctrl+1/2 do
    qtbot.keyClick(focused, Qt.Key.Key_J)
    assert history.view.currentIndex().row() == 0
    qtbot.waitUntil(lambda: history.detail.prepared is not None)
    qtbot.keyClick(focused, Qt.Key.Key_J)
    assert history.view.currentIndex().row() == 1
    qtbot.keyClick(focused, Qt.Key.Key_K)
    assert history.view.currentIndex().row() == 0


def wide_history(open_main_window: OpenMainWindow, qtbot: Any, seed: Any, *, rows: int) -> MainWindow:
    """The window at 1,920 px on its History tab once ``seed`` (a coroutine) has made ``rows`` decisions."""
    run_async(qtbot, seed)
    win = open_main_window(checked=history_model)
    win.resize(1920, 1050)
    qtbot.waitUntil(lambda: (win.width(), win.height()) == (1920, 1050))
    open_history(qtbot, win)
    qtbot.waitUntil(lambda: win.history.model.rowCount() == rows)
    qtbot.wait(50)
    return win


def test_the_agent_and_decision_columns_fit_their_words_on_a_wide_window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    """Seen at 1,920 px: History's Agent column read "external-p…" and an expiry's decision would be cut, with
    the summary and reason wide and mostly empty. The short columns fit their words (up to a share of the view)."""
    from reviewer_app.ui.history.model import COL_AGENT
    from tests.ui.test_inbox_columns import drawn_text

    async def seed() -> None:
        for hitl_id, expires in (("h-late", int(time.time()) - 1), ("h-now", None)):
            agent = "external-python-agent"
            await _ask(qt_backend, hitl_id, "Bash", {"command": "ls"}, agent=agent, expires_at=expires)
        await qt_backend.expire_due()
        await qt_backend.decide("h-now", Decision(DecisionKind.REJECT, message="no"))

    win = wide_history(open_main_window, qtbot, seed(), rows=2)
    view, model = win.history.view, win.history.model
    late = row_of(win, "h-late")
    assert drawn_text(view, model.index(late, COL_AGENT)) == "external-python-agent"
    assert drawn_text(view, model.index(late, COL_DECISION)) == "Expired without a decision (so rejected)"
    win.close()


def test_an_mcp_tool_reads_as_in_the_inbox(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    """Seen at 1,920 px: History's Tool column read "mcp__postg…" and "mcp__githu…" where the inbox had said
    "query · postgres": the tool by its own name and server, whole; the tooltip has the name the agent sent."""
    from reviewer_app.ui.history.model import COL_TOOL
    from tests.ui.test_inbox_columns import drawn_text

    async def seed() -> None:
        await _ask(qt_backend, "h-mcp", "mcp__github_enterprise__create_issue", {"title": "flaky"})
        await qt_backend.decide("h-mcp", Decision(DecisionKind.REJECT, message="no"))

    win = wide_history(open_main_window, qtbot, seed(), rows=1)
    index = win.history.model.index(0, COL_TOOL)
    assert drawn_text(win.history.view, index) == "create_issue · github_enterprise"
    assert index.data(Qt.ItemDataRole.ToolTipRole) == "mcp__github_enterprise__create_issue"
    win.close()
