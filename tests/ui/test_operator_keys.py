"""Issue 25, "every key sends what it says": reasons, rule scopes, bulk high-risk, Shift+A, the banner.

A real window on a real SQLite file (no agent runtime); every key goes through the real shortcut map.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QLabel

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.dialogs.reasons import CANNED_REJECT_REASONS, RECENT_REASONS_KEY
from reviewer_app.ui.dialogs.reject import RejectDialog
from reviewer_app.ui.rules.editor import RuleEditorDialog
from reviewer_app.ui.triage.bulk import BulkDialog
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OpenMainWindow, run_async
from tests.ui.triage_helpers import dialog_of, shell, show, status, triage_models


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> Iterator[MainWindow]:
    win = open_main_window(checked=triage_models)
    yield win
    win.close()


def press(qtbot: Any, win: MainWindow, key: Any, modifier: Any = Qt.KeyboardModifier.NoModifier) -> None:
    win.inbox.view.setFocus()
    qtbot.keyClick(win.inbox.view, key, modifier)


# -- reasons: stable numbers, a digit picks and never types --------------------------------------------------


def test_stock_reasons_keep_their_numbers_and_digits_pick_without_typing(
    window: MainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    ui_settings.setValue(RECENT_REASONS_KEY, json.dumps(["use the staging bucket", "ask bob first"]))
    hitl_id = shell(qtbot, qt_backend, "h1", "make deploy")
    show(qtbot, window, hitl_id)
    press(qtbot, window, Qt.Key.Key_R)
    dialog = dialog_of(qtbot, window, RejectDialog)
    texts = dialog.reason_texts()
    assert texts[: len(CANNED_REJECT_REASONS)] == list(CANNED_REJECT_REASONS)  # 1-5 never move
    assert texts[len(CANNED_REJECT_REASONS) :] == ["use the staging bucket", "ask bob first"]  # 6, 7
    qtbot.keyClick(dialog.reasons, Qt.Key.Key_4)
    focused = dialog.focusWidget()
    qtbot.keyClick(focused, Qt.Key.Key_5)  # changing one's mind: 5 replaces 4, it is not typed after it
    assert dialog.editor.toPlainText() == CANNED_REJECT_REASONS[4]
    qtbot.keyClick(dialog.focusWidget(), Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, hitl_id)[0] == "completed", timeout=10_000)
    record = run_async(qtbot, qt_backend.get(hitl_id))
    assert record["user_response"]["message"] == CANNED_REJECT_REASONS[4]


def test_a_recent_reason_has_its_own_key_and_a_stock_reason_is_never_repeated(
    window: MainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    ui_settings.setValue(RECENT_REASONS_KEY, json.dumps([CANNED_REJECT_REASONS[2], "use the staging bucket"]))
    hitl_id = shell(qtbot, qt_backend, "h1", "make deploy")
    show(qtbot, window, hitl_id)
    press(qtbot, window, Qt.Key.Key_R)
    dialog = dialog_of(qtbot, window, RejectDialog)
    assert dialog.reason_texts().count(CANNED_REJECT_REASONS[2]) == 1
    assert dialog.reason_texts()[2] == CANNED_REJECT_REASONS[2]
    qtbot.keyClick(dialog.reasons, Qt.Key.Key_6)
    assert dialog.editor.toPlainText() == "use the staging bucket"


# -- bulk decisions with high-risk requests need the second key ----------------------------------------------


def test_bulk_approval_with_high_risk_requests_needs_an_explicit_second_confirmation(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    risky = shell(qtbot, qt_backend, "h1", "rm -rf build")
    forced = shell(qtbot, qt_backend, "h2", "git push --force origin main")
    calm = shell(qtbot, qt_backend, "h3", "ls")
    show(qtbot, window, calm)
    press(qtbot, window, Qt.Key.Key_W, Qt.KeyboardModifier.ShiftModifier)
    dialog = dialog_of(qtbot, window, BulkDialog)
    qtbot.waitUntil(lambda: dialog.model.rowCount() == 3, timeout=10_000)
    qtbot.keyClick(dialog.view, Qt.Key.Key_Return)  # the first press only names the high-risk requests
    qtbot.wait(200)
    assert dialog.isVisible() and dialog.confirming
    for hitl_id in (risky, forced, calm):
        assert status(qtbot, qt_backend, hitl_id)[0] == "pending"
    said = dialog.confirm_label.text()
    assert "2 HIGH RISK" in said and "rm -rf build" in said and "git push --force origin main" in said
    assert status(qtbot, qt_backend, risky)[0] == "pending"
    qtbot.keyClick(dialog.view, Qt.Key.Key_Return)  # the same key again: approved, as ``a a`` for one request
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, risky)[0] == "completed", timeout=10_000)
    assert status(qtbot, qt_backend, forced)[:2] == ("completed", "approve")


def test_typing_in_a_bulk_dialog_goes_into_the_reason(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    first = shell(qtbot, qt_backend, "h1", "ls")
    shell(qtbot, qt_backend, "h2", "pwd")
    show(qtbot, window, first)
    press(qtbot, window, Qt.Key.Key_W, Qt.KeyboardModifier.ShiftModifier)
    dialog = dialog_of(qtbot, window, BulkDialog)
    qtbot.waitUntil(lambda: dialog.model.rowCount() == 2, timeout=10_000)
    qtbot.keyClicks(dialog.view, "not today")
    assert dialog.reason.text() == "not today"


# -- Shift+A says what it waives before granting ------------------------------------------------------------


def test_shift_a_first_names_the_scope_it_will_waive(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    hitl_id = shell(qtbot, qt_backend, "h1", "npm run test")
    show(qtbot, window, hitl_id)
    press(qtbot, window, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    qtbot.wait(200)
    assert status(qtbot, qt_backend, hitl_id)[0] == "pending"
    said = window.statusBar().currentMessage()
    assert "npm run test" in said and "Shift+A again" in said
    press(qtbot, window, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, hitl_id)[0] == "completed", timeout=10_000)
    assert status(qtbot, qt_backend, hitl_id)[1] == "approve_for_session"


# -- rule scopes: picked from what is known, a scope that matches nothing is refused ---------------------------


def test_a_rule_scope_that_can_match_nothing_is_refused_and_alt_n_is_never_typed_into_it(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    hitl_id = shell(qtbot, qt_backend, "h1", "git status")
    show(qtbot, window, hitl_id)
    press(qtbot, window, Qt.Key.Key_M, Qt.KeyboardModifier.ShiftModifier)
    dialog = dialog_of(qtbot, window, RuleEditorDialog)
    scopes = [dialog.scope_combo.itemText(i) for i in range(dialog.scope_combo.count())]
    assert "agent:claude-code" in scopes and "session:s1" in scopes
    dialog.scope_combo.setCurrentText("agent:claude-codenread-only git for claude")
    dialog.refresh_preview()
    assert not dialog.ok_button.isEnabled()
    assert "no agent named" in dialog.error_label.text() and "claude-code" in dialog.error_label.text()
    dialog.try_submit()
    assert dialog.isVisible()
    assert run_async(qtbot, qt_backend.list_rules()) == []
    assert status(qtbot, qt_backend, hitl_id)[0] == "pending"

    # How that scope was typed: Alt+N (meant for the note) went into the scope field. It no longer does.
    dialog.scope_combo.setCurrentText("agent:claude-code")
    line = dialog.scope_combo.lineEdit()
    line.setFocus()
    qtbot.keyClick(line, Qt.Key.Key_N, Qt.KeyboardModifier.AltModifier)
    assert dialog.scope_combo.currentText() == "agent:claude-code"  # not "agent:claude-coden"
    labels = {label.text(): label.buddy() for label in dialog.findChildren(QLabel)}
    assert labels["&Note:"] is dialog.note_edit  # Alt+N is the note's mnemonic


# -- "similar" means the same agent and the same content ---------------------------------------------------------


def test_similar_requests_share_the_agent_and_a_write_shares_its_content(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    base = shell(qtbot, qt_backend, "h1", "git status")
    same = shell(qtbot, qt_backend, "h2", "git status", session="s2", invocation="i2")
    other_agent = shell(qtbot, qt_backend, "h3", "git status", session="s3", invocation="i3", agent="codex")
    show(qtbot, window, base)
    press(qtbot, window, Qt.Key.Key_L, Qt.KeyboardModifier.ShiftModifier)
    dialog = dialog_of(qtbot, window, BulkDialog)
    qtbot.waitUntil(dialog.approve_button.isEnabled, timeout=10_000)
    assert set(dialog.model.hitl_ids()) == {base, same}
    assert other_agent not in dialog.model.hitl_ids()
    dialog.reject()

    def write(hitl_id: str, content: str) -> str:
        run_async(
            qtbot,
            qt_backend.create(
                hitl_id=hitl_id,
                hitl_type="tool_approval",
                session_id="s9",
                invocation_id="i9",
                tool_name="Write",
                data={"arguments": {"file_path": "/work/proj/a.txt", "content": content}, "agent": "claude-code"},
            ),
        )
        return hitl_id

    first = write("w1", "hello\n")
    twin = write("w2", "hello\n")
    different = write("w3", "rm -rf /\n")
    show(qtbot, window, first)
    window.activateWindow()  # offscreen gives the window no activation back when a dialog closes; a WM does
    qtbot.waitUntil(window.isActiveWindow)
    press(qtbot, window, Qt.Key.Key_L, Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: any(isinstance(d, BulkDialog) and d.isVisible() for d in window.dialogs.open_dialogs))
    dialog = next(d for d in window.dialogs.open_dialogs if isinstance(d, BulkDialog) and d.isVisible())
    qtbot.waitUntil(dialog.approve_button.isEnabled, timeout=10_000)
    assert set(dialog.model.hitl_ids()) == {first, twin}
    assert different not in dialog.model.hitl_ids()
