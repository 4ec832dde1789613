"""The main window's side of issue 19: Ctrl+5 / Ctrl+6 open the audit and statistics windows, the notification
sound is a View-menu setting, and a notification's outcome reaches the window (open selects, refusal is said)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSettings
from PySide6.QtGui import QKeySequence

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.audit.window import AuditWindow
from reviewer_app.ui.desktop.notifications import SOUND_SETTING
from reviewer_app.ui.stats.window import StatsWindow
from tests.ui.conftest import OpenMainWindow, run_async


async def seed(backend: SQLHITLBackend) -> None:
    for hitl_id in ("h1", "h2"):
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": {"command": f"echo {hitl_id}"}},
            tool_name="run_shell",
        )
    await backend.respond("h1", {"decision": "reject", "message": "no"})


def test_view_menu_opens_audit_and_statistics(
    open_main_window: OpenMainWindow, qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings
) -> None:
    run_async(qtbot, seed(qt_backend))
    window = open_main_window()
    texts = {action.text(): action.shortcut() for action in window.view_menu.actions()}
    assert texts["&Audit log"] == QKeySequence("Ctrl+5") and texts["&Statistics"] == QKeySequence("Ctrl+6")
    window.ops.audit_action.trigger()
    audit = window.ops.audit_window
    assert isinstance(audit, AuditWindow) and audit.isVisible()
    qtbot.waitUntil(lambda: audit.model.rowCount() == 1)
    window.ops.stats_action.trigger()
    stats = window.ops.stats_window
    assert isinstance(stats, StatsWindow) and stats.isVisible()
    qtbot.waitUntil(lambda: stats.stats is not None)
    assert stats.stats is not None and stats.stats.pending == 1 and stats.stats.decided == 1
    window.ops.audit_action.trigger()  # the same window again, not a second one
    assert window.ops.audit_window is audit
    window.close()
    assert not audit.isVisible() and not stats.isVisible()


def test_notification_sound_setting_and_outcomes(
    open_main_window: OpenMainWindow, qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings
) -> None:
    run_async(qtbot, seed(qt_backend))
    window = open_main_window()
    native = window.native_notifier
    assert not native.available  # no tray (tests, screenshots): no native notifications either
    sound = native.sound_action
    assert sound in window.view_menu.actions() and sound.isChecked()
    sound.trigger()
    assert ui_settings.value(SOUND_SETTING) == "false" and not native.sound_enabled
    native.actions.openRequested.emit("h2")
    assert window.inbox.view.currentIndex().data() is not None
    qtbot.waitUntil(lambda: window.detail.summary is not None and window.detail.summary.hitl_id == "h2")
    native.actions.openRequested.emit("h1")  # decided meanwhile: said, not silently ignored
    assert "h1 is no longer pending" in window.banner.label.text()
    native.actions.refused.emit("Nothing was decided from the notification: x was already reject by bob.")
    last = window.banner.label.text().splitlines()[-1]  # messages stack, the newest last
    assert last.startswith("Nothing was decided from the notification")


def test_side_windows_close_with_escape_and_switch_with_their_keys(
    open_main_window: OpenMainWindow, qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings
) -> None:
    """Seen in use: Esc left the Statistics window open and Ctrl+5 did nothing while it was in front."""
    from PySide6.QtCore import Qt

    run_async(qtbot, seed(qt_backend))
    window = open_main_window()
    stats = window.ops.show_stats()
    qtbot.waitExposed(stats)
    stats.activateWindow()
    qtbot.waitUntil(stats.isActiveWindow)
    qtbot.keyClick(stats, Qt.Key.Key_5, Qt.KeyboardModifier.ControlModifier)
    audit = window.ops.audit_window
    assert isinstance(audit, AuditWindow) and audit.isVisible()
    audit.activateWindow()
    qtbot.waitUntil(audit.isActiveWindow)
    qtbot.keyClick(audit, Qt.Key.Key_Escape)
    assert not audit.isVisible()
    stats.activateWindow()
    qtbot.waitUntil(stats.isActiveWindow)
    qtbot.keyClick(stats, Qt.Key.Key_W, Qt.KeyboardModifier.ControlModifier)
    assert not stats.isVisible()
    window.close()
