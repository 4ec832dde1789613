"""Undo (issue 14): a decision made in the window waits out its grace period before it is committed."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.dialogs.reject import RejectDialog
from reviewer_app.ui.window.main_window import MainWindow
from reviewer_app.ui.window.settings import DEFAULT_UNDO_GRACE_S, HOLD_APPROVALS_KEY, UNDO_GRACE_KEY, undo_grace_seconds
from tests.ui.conftest import OpenMainWindow, run_async
from tests.ui.triage_helpers import shell, show, status, triage_models


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> Iterator[MainWindow]:
    win = open_main_window(checked=triage_models)
    yield win
    win.close()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def with_grace(win: MainWindow, seconds: float) -> FakeClock:
    clock = FakeClock()
    win.triage.undo.clock = clock
    win.triage.set_grace(seconds)
    win.triage.set_hold_approvals(True)  # these tests undo approvals: held only when the operator asks for it
    return clock


def test_the_default_grace_is_5_s_and_the_setting_is_remembered(tmp_path: Any) -> None:
    settings = QSettings(str(tmp_path / "fresh.ini"), QSettings.Format.IniFormat)
    assert undo_grace_seconds(settings) == DEFAULT_UNDO_GRACE_S == 5.0
    settings.setValue(UNDO_GRACE_KEY, "nonsense")
    assert undo_grace_seconds(settings) == 5.0
    settings.setValue(UNDO_GRACE_KEY, 0)
    assert undo_grace_seconds(settings) == 0.0


def test_undo_before_the_countdown_ends_decides_nothing(
    window: MainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    clock = with_grace(window, 5)
    assert undo_grace_seconds(ui_settings) == 5  # the menu's choice is the setting
    first = shell(qtbot, qt_backend, "h1", "git status")
    second = shell(qtbot, qt_backend, "h2", "git log")
    qtbot.waitUntil(lambda: window.inbox.model.index_for(second).isValid(), timeout=10_000)  # loaded under load too
    show(qtbot, window, first)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_A)
    # The next request is shown at once; the decided one left the inbox; nothing is in the database yet.
    assert window.detail.hitl_id == second
    assert not window.inbox.model.index_for(first).isValid()
    assert window.triage.undo_bar.isVisible()
    assert "commits in 5 s" in window.triage.undo_bar.label.text()
    assert "Approved" in window.triage.undo_bar.label.text()
    clock.now += 2
    qtbot.waitUntil(lambda: "commits in 3 s" in window.triage.undo_bar.label.text())
    assert status(qtbot, qt_backend, first)[0] == "pending"
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.triage.undo.held == []
    assert not window.triage.undo_bar.isVisible()
    assert window.inbox.model.index_for(first).isValid()  # back in the inbox, selected again
    assert window.detail.hitl_id == first
    clock.now += 10  # long after the countdown would have ended
    qtbot.wait(300)
    assert status(qtbot, qt_backend, first)[0] == "pending"
    assert run_async(qtbot, qt_backend.audit(first)) == []


def test_the_decision_commits_when_the_countdown_ends(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    clock = with_grace(window, 5)
    first = shell(qtbot, qt_backend, "h1", "git status")
    show(qtbot, window, first)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_R)  # reject: its reason dialog first
    qtbot.waitUntil(lambda: bool(window.dialogs.open_dialogs))
    dialog = window.dialogs.open_dialogs[0]
    dialog.editor.setPlainText("not now")
    dialog.try_submit()
    assert window.triage.undo.held_ids == {first}
    assert status(qtbot, qt_backend, first)[0] == "pending"
    clock.now += 5.01
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, first)[:2] == ("completed", "reject"), timeout=10_000)
    assert not window.triage.undo_bar.isVisible()
    audit = run_async(qtbot, qt_backend.audit(first))
    assert [entry.message for entry in audit] == ["not now"]
    # Ctrl+Z after the commit undoes nothing.
    assert window.triage.undo.undo_last() is None
    assert status(qtbot, qt_backend, first)[1] == "reject"


def test_grace_zero_commits_at_once(window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any) -> None:
    with_grace(window, 0)
    first = shell(qtbot, qt_backend, "h1", "git status")
    show(qtbot, window, first)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_A)
    assert window.triage.undo.held == []
    assert not window.triage.undo_bar.isVisible()
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, first)[:2] == ("completed", "approve"), timeout=10_000)


def test_closing_the_window_commits_what_is_still_held(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    win = open_main_window(checked=triage_models)
    with_grace(win, 10)
    first = shell(qtbot, qt_backend, "h1", "git status")
    second = shell(qtbot, qt_backend, "h2", "git log")
    show(qtbot, win, first)
    win.inbox.view.setFocus()
    qtbot.keyClick(win.inbox.view, Qt.Key.Key_A)
    show(qtbot, win, second)
    for _ in range(2):  # Shift+A twice: the first press says what the waiver covers
        qtbot.keyClick(win.inbox.view, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    assert win.triage.undo.held_ids == {first, second}
    assert status(qtbot, qt_backend, first)[0] == "pending"
    win.close()
    run_async(qtbot, win.triage.undo.drain())  # what the app awaits before it closes the backend
    assert status(qtbot, qt_backend, first)[:2] == ("completed", "approve")
    assert status(qtbot, qt_backend, second)[:2] == ("completed", "approve_for_session")


def test_approve_for_session_from_the_window_settles_the_identical_siblings(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    first = shell(qtbot, qt_backend, "h1", "npm test")
    twin = shell(qtbot, qt_backend, "h2", "npm test", invocation="i2")
    other = shell(qtbot, qt_backend, "h3", "npm publish", invocation="i2")
    show(qtbot, window, first)
    window.inbox.view.setFocus()
    for _ in range(2):  # Shift+A twice: the first press says what the waiver covers
        qtbot.keyClick(window.inbox.view, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, twin)[0] == "completed", timeout=10_000)
    assert status(qtbot, qt_backend, first)[:2] == ("completed", "approve_for_session")
    assert status(qtbot, qt_backend, twin)[:2] == ("completed", "approve")
    assert status(qtbot, qt_backend, other)[0] == "pending"
    qtbot.waitUntil(lambda: not window.inbox.model.index_for(twin).isValid(), timeout=10_000)  # gone from the inbox
    assert window.inbox.model.index_for(other).isValid()


def test_the_title_counts_what_the_inbox_lists_while_a_decision_is_held(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen in use: the title said "8 pending" while the inbox listed 7 during the undo countdown."""
    with_grace(window, 5)
    first = shell(qtbot, qt_backend, "h1", "git status")
    shell(qtbot, qt_backend, "h2", "git log")
    show(qtbot, window, first)
    qtbot.waitUntil(lambda: window.windowTitle() == "Reviewer (2 pending)")
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_A)
    assert status(qtbot, qt_backend, first)[0] == "pending"  # held, not committed
    assert window.windowTitle() == "Reviewer (1 pending)"
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.windowTitle() == "Reviewer (2 pending)"


def test_an_approval_reaches_the_agent_at_once_while_a_rejection_waits_out_its_grace(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, tmp_path: Any, qtbot: Any
) -> None:
    """Issue 25: the shipped settings. ``a`` is the key an agent waits on most; a wrong ``a`` on anything risky is
    already stopped by ``a a``, so approvals are not held. A rejection (its reason may be the wrong one) is."""
    settings = QSettings(str(tmp_path / "shipped.ini"), QSettings.Format.IniFormat)
    win = open_main_window(settings=settings, checked=triage_models)
    try:
        assert win.triage.undo.grace_s == DEFAULT_UNDO_GRACE_S and not win.triage.undo.hold_approvals
        win.triage.undo.clock = FakeClock()
        approved = shell(qtbot, qt_backend, "h1", "git status")
        rejected = shell(qtbot, qt_backend, "h2", "git log")
        show(qtbot, win, approved)
        win.inbox.view.setFocus()
        qtbot.keyClick(win.inbox.view, Qt.Key.Key_A)
        qtbot.waitUntil(lambda: status(qtbot, qt_backend, approved)[0] == "completed", timeout=5_000)
        assert not win.triage.undo.held  # nothing to wait for
        show(qtbot, win, rejected)
        qtbot.keyClick(win.inbox.view, Qt.Key.Key_R)
        dialog = next(d for d in win.dialogs.open_dialogs if isinstance(d, RejectDialog))
        qtbot.keyClick(dialog.reasons, Qt.Key.Key_1)
        qtbot.keyClick(dialog.reasons, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert win.triage.undo.held_ids == {rejected}
        assert status(qtbot, qt_backend, rejected)[0] == "pending"
        win.triage.undo_last()
        assert status(qtbot, qt_backend, rejected)[0] == "pending"
        win.triage.set_hold_approvals(True)  # the menu's choice, remembered
        assert settings.value(HOLD_APPROVALS_KEY, type=bool) is True
    finally:
        win.close()
