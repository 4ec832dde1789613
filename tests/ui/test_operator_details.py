"""Issue 25, the smaller items an operator met in half an hour of triage, each through the real window."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication, QLabel

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common import theme
from reviewer_app.ui.detail.header import countdown_color
from reviewer_app.ui.detail.settled import settled_phrase
from reviewer_app.ui.dialogs.edit import EditArgumentsDialog
from reviewer_app.ui.dialogs.submit import TextDialog
from reviewer_app.ui.inbox.cells import COL_AGE, COL_REQUEST
from reviewer_app.ui.window.keymap import keymap_entries
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OpenMainWindow, make_summary, run_async
from tests.ui.triage_helpers import dialog_of, shell, show, status, triage_models


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> Iterator[MainWindow]:
    win = open_main_window(checked=triage_models)
    yield win
    win.close()


def edit_command(
    qtbot: Any, win: MainWindow, backend: SQLHITLBackend, command: str
) -> tuple[str, EditArgumentsDialog, Any]:
    """A shell request ``h1`` shown and ``e`` pressed: its id, the edit dialog and the command's editor."""
    hitl_id = shell(qtbot, backend, "h1", command)
    show(qtbot, win, hitl_id)
    press(qtbot, win, Qt.Key.Key_E)
    dialog = dialog_of(qtbot, win, EditArgumentsDialog)
    return hitl_id, dialog, dialog.field_editor("command")


def edit_bash(
    qtbot: Any, win: MainWindow, backend: SQLHITLBackend, hitl_id: str, arguments: dict[str, str]
) -> EditArgumentsDialog:
    """A Claude Code Bash request with these arguments shown and ``e`` pressed: the edit dialog."""
    run_async(
        qtbot,
        backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s1",
            invocation_id="i1",
            data={"arguments": arguments, "agent": "claude-code"},
            tool_name="Bash",
        ),
    )
    show(qtbot, win, hitl_id)
    press(qtbot, win, Qt.Key.Key_E)
    return dialog_of(qtbot, win, EditArgumentsDialog)


def press(qtbot: Any, win: MainWindow, key: Any) -> None:
    win.inbox.view.setFocus()
    qtbot.keyClick(win.inbox.view, key)


def test_after_an_edit_the_status_line_names_what_ran_and_strikes_what_was_shown(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    hitl_id, dialog, field = edit_command(qtbot, window, qt_backend, "rm -r build")
    assert field.hasFocus() or dialog.focusWidget() is field  # the caret is in the value, ready to type
    field.setPlainText("rm -r build/tmp")
    qtbot.waitUntil(dialog.ok_button.isEnabled)
    qtbot.keyClick(field, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(dialog.diff_view, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, hitl_id)[0] == "completed", timeout=10_000)
    said = window.statusBar().currentMessage()
    assert "rm -r build/tmp" in said
    assert "r\u0336m\u0336" in said  # what was shown, struck through


def test_an_expiry_says_what_it_defaulted_to_in_words() -> None:
    now = time.time()
    expired = make_summary(1, status="expired", decision="expire", decided_by="system:expiry")
    expired = dataclasses.replace(expired, updated_at_ms=int((now - 5) * 1000))
    said = settled_phrase(expired, now)
    assert "so it was expire)" not in said and "expired at" in said


def test_the_waiting_columns_countdown_and_the_header_agree_on_the_colour(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    hitl_id = shell(qtbot, qt_backend, "h1", "make deploy")
    qtbot.waitUntil(lambda: window.inbox.model.index_for(hitl_id).isValid(), timeout=10_000)
    summary = window.inbox.model.summary(hitl_id)
    assert summary is not None
    now = time.time()
    for left in (101, 45, 5):  # 1:41 is calm in the header: so it is in the column
        moved = dataclasses.replace(summary, expires_at=int(now + left))
        window.inbox.model.apply_changes([moved])
        cell = window.inbox.model.index_for(hitl_id, COL_AGE).data(Qt.ItemDataRole.ForegroundRole)
        header = countdown_color(int(now + left), now)
        assert (cell.name() if cell is not None else None) == header


def test_the_keymap_is_sorted_by_area_and_shows_keys_as_typed(window: MainWindow) -> None:
    entries = keymap_entries(window)
    keys = [k for k, _ in entries]
    assert "a" in keys and "A" not in keys and "Shift+A" in keys
    assert keys.index("a") < keys.index("Shift+A")  # a letter, then its shifted form
    assert all(what for _, what in entries)


def test_the_audit_and_statistics_windows_fit_the_screen(window: MainWindow) -> None:
    available = (window.screen() or QApplication.primaryScreen()).availableGeometry()
    for side in (window.ops.show_audit(), window.ops.show_stats()):
        assert side.width() <= available.width() and side.height() <= available.height()
        side.close()


def test_a_diff_follows_the_theme(window: MainWindow, qtbot: Any) -> None:
    window.history.detail.diff_view.setPlainText("+added line\n-removed line\n")
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    light = theme.current().diff_add_bg.name()
    window.set_theme("dark")
    try:
        qtbot.waitUntil(lambda: theme.current().dark)

        def added_background() -> str:
            formats = window.history.detail.diff_view.document().firstBlock().layout().formats()
            return formats[0].format.background().color().name() if formats else ""

        qtbot.waitUntil(lambda: added_background() not in ("", light), timeout=3_000)
    finally:
        window.set_theme("light")


def test_the_history_counts_in_words(window: MainWindow) -> None:
    from reviewer_app.ui.history.panel import decisions_shown

    assert decisions_shown(1) == "1 decision shown"
    assert decisions_shown(2) == "2 decisions shown"


def test_undo_leaves_one_row_selected_and_the_empty_inbox_says_so(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    window.triage.set_grace(5)
    window.triage.set_hold_approvals(True)
    first = shell(qtbot, qt_backend, "h1", "git status")
    second = shell(qtbot, qt_backend, "h2", "git log")
    qtbot.waitUntil(lambda: window.inbox.model.index_for(second).isValid(), timeout=10_000)
    show(qtbot, window, first)
    press(qtbot, window, Qt.Key.Key_A)
    assert window.detail.hitl_id == second
    window.triage.undo_last()
    selected = window.inbox.view.selectionModel().selectedRows(COL_REQUEST)
    assert len(selected) == 1 and window.inbox.model.request_at(selected[0]).hitl_id == first  # type: ignore[union-attr]
    window.triage.set_grace(0)
    for hitl_id in (first, second):
        show(qtbot, window, hitl_id)
        press(qtbot, window, Qt.Key.Key_A)
        qtbot.waitUntil(lambda h=hitl_id: status(qtbot, qt_backend, h)[0] == "completed", timeout=10_000)
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 0, timeout=10_000)
    assert "No pending requests" in window.inbox.empty_text()


def test_when_a_search_hides_every_request_the_detail_says_so_not_that_none_waits(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen: with a remembered search that matched nothing, the detail pane said "No pending requests. New ones
    appear here as agents ask." beside a list that said 301 were hidden: the pane says what the list says."""
    window.inbox.search_box.setText("nothing like this")
    qtbot.waitUntil(lambda: window.inbox.filtering, timeout=10_000)
    shell(qtbot, qt_backend, "h1", "git status")
    shell(qtbot, qt_backend, "h2", "git log")
    qtbot.waitUntil(lambda: window.inbox.model.source_count == 2, timeout=10_000)
    qtbot.waitUntil(lambda: "Nothing here matches" in window.detail.empty_label.text(), timeout=5_000)
    said = window.detail.empty_label.text()
    assert not window.detail.empty_label.isHidden() and "No pending requests" not in said, said
    assert "(2 in all). Esc clears them." in said, said
    window.inbox.show_current()  # the tab comes to the front
    assert "Nothing here matches the search" in window.detail.empty_label.text()
    window.inbox.search_box.clear()
    qtbot.waitUntil(lambda: window.detail.hitl_id is not None, timeout=10_000)  # a request again


def test_after_e_the_caret_waits_at_the_end_of_the_value(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    _hitl_id, _dialog, field = edit_command(qtbot, window, qt_backend, "npm run build")
    assert field.textCursor().position() == len("npm run build")  # typing appends, it does not prepend
    qtbot.keyClicks(field, " -- --prod")
    assert field.toPlainText() == "npm run build -- --prod"


def test_after_e_tab_moves_to_review_edit_and_typing_still_lands_in_the_value(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    _hitl_id, dialog, field = edit_command(qtbot, window, qt_backend, "npm run build")
    qtbot.keyClick(dialog.focusWidget(), Qt.Key.Key_Tab)
    assert dialog.focusWidget() is dialog.ok_button  # past the last value: the button that reviews the edit
    qtbot.keyClicks(dialog.focusWidget(), " -- --prod")  # typing on the button goes to the value, not nowhere
    assert field.toPlainText() == "npm run build -- --prod"
    assert dialog.focusWidget() is field
    qtbot.keyClick(dialog.focusWidget(), Qt.Key.Key_Tab, Qt.KeyboardModifier.ShiftModifier)
    assert dialog.focusWidget() is not dialog.tabs.tabBar()  # Shift+Tab from the first value wraps to Cancel
    qtbot.keyClicks(dialog.focusWidget(), "!")
    assert field.toPlainText() == "npm run build -- --prod!"


def test_after_an_edit_history_names_what_ran_and_strikes_what_was_shown(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    hitl_id, dialog, field = edit_command(qtbot, window, qt_backend, "rm -r build")
    qtbot.keyClicks(field, "/tmp")
    qtbot.waitUntil(dialog.ok_button.isEnabled)
    qtbot.keyClick(field, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(dialog.diff_view, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, hitl_id)[0] == "completed", timeout=10_000)
    window.left_tabs.setCurrentIndex(2)  # History
    history = window.history
    qtbot.waitUntil(lambda: history.model.loaded_once and not history.model.loading, timeout=10_000)
    assert [e.hitl_id for e in history.model.entries] == [hitl_id], (
        window.left_tabs.currentIndex(),
        history.model.entries,
    )
    history.view.setCurrentIndex(history.model.index(0, 0))
    qtbot.waitUntil(lambda: history.detail.prepared is not None, timeout=10_000)
    header = history.detail.header.text()
    assert "Ran: <b>Bash “rm -r build/tmp”</b>" in header
    assert "<s>rm -r build</s>" in header  # what was shown, struck through


def test_tab_into_the_next_value_puts_the_caret_at_its_end(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    dialog = edit_bash(qtbot, window, qt_backend, "h2", {"command": "git diff --stat", "description": "step 1"})
    qtbot.keyClick(dialog.focusWidget(), Qt.Key.Key_Tab)
    assert dialog.focusWidget() is dialog.field_editor("description")
    qtbot.keyClicks(dialog.focusWidget(), " (staged)")
    qtbot.keyClick(dialog.focusWidget(), Qt.Key.Key_Tab)
    qtbot.keyClicks(dialog.focusWidget(), "!")  # on Review edit: lands at the end of the value edited last
    assert dialog.field_editor("description").toPlainText() == "step 1 (staged)!"


def test_another_runs_request_never_shows_the_previous_runs_timeline(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen in the triage session: for a moment the previous request's timeline stayed under the new header."""
    first = shell(qtbot, qt_backend, "t-first", "git status", invocation="run-a")
    second = shell(qtbot, qt_backend, "t-second", "git log -1", invocation="run-b")
    show(qtbot, window, first)
    qtbot.waitUntil(lambda: window.detail.timeline_model.invocation_id == "run-a", timeout=10_000)
    qtbot.waitUntil(lambda: window.inbox.model.index_for(second).isValid(), timeout=10_000)
    assert window.inbox.select_request(second)  # the pane shows the new header at once; the new timeline loads after
    assert window.detail.hitl_id == second
    assert window.detail.timeline_model.invocation_id != "run-a"
    qtbot.waitUntil(lambda: window.detail.timeline_model.invocation_id == "run-b", timeout=10_000)


def test_after_e_the_caret_waits_in_the_command_even_when_the_description_is_longer(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Claude Code describes its commands in more words than the command takes ("Clean build dir" for "rm -rf
    build"): the caret went to the description, which never runs, and the operator's typing edited it."""
    arguments = {"command": "rm -rf build", "description": "Remove the old build directory before rebuilding"}
    dialog = edit_bash(qtbot, window, qt_backend, "h3", arguments)
    field = dialog.field_editor("command")
    assert dialog.focusWidget() is field
    qtbot.keyClicks(field, "/tmp")
    assert field.toPlainText() == "rm -rf build/tmp"


def test_a_decision_key_on_a_group_row_says_why_nothing_happened(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """With a session or run row selected (Home goes there), ``a`` did nothing and said nothing."""
    hitl_id = shell(qtbot, qt_backend, "h1", "ls")
    show(qtbot, window, hitl_id)
    window.inbox.view.setCurrentIndex(window.inbox.model.index(0, 0))  # the session row
    qtbot.waitUntil(lambda: window.detail.summary is None, timeout=10_000)
    press(qtbot, window, Qt.Key.Key_A)
    said = window.statusBar().currentMessage()
    assert "select a request" in said.lower() and "j/k" in said
    assert status(qtbot, qt_backend, hitl_id)[0] == "pending"


@pytest.mark.parametrize(("key", "sends"), [(Qt.Key.Key_S, "Send guidance"), (Qt.Key.Key_R, "Reject")])
def test_the_steer_and_reject_dialogs_say_that_ctrl_enter_sends(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any, key: Qt.Key, sends: str
) -> None:
    """Return in the text box is a new line: the key that sends was only in the button's tooltip."""
    show(qtbot, window, shell(qtbot, qt_backend, "h1", "ls"))
    press(qtbot, window, key)
    dialog = dialog_of(qtbot, window, TextDialog)
    said = " ".join(label.text() for label in dialog.findChildren(QLabel) if label.isVisible())
    assert f"Ctrl+Enter: {sends}" in said
    dialog.reject()
