"""The Rules tab and "Approve and make a rule…" (issue 14), on a real SQLite file."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QMessageBox

from reviewer_app.domain.rules import Rule, parse_rule_pattern
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.rules.editor import RuleEditorDialog
from reviewer_app.ui.rules.model import (
    COL_EFFECT,
    COL_EXPIRES,
    COL_HITS,
    COL_LAST_HIT,
    COL_NOTE,
    COL_PATTERN,
    COL_SCOPE,
)
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


def cell(win: MainWindow, row: int, column: int) -> str:
    return str(win.triage.rules.model.index(row, column).data())


def rows(win: MainWindow) -> list[str]:
    model = win.triage.rules.model
    return [str(model.index(row, COL_PATTERN).data()) for row in range(model.rowCount())]


def preview_ids(dialog: RuleEditorDialog) -> set[str]:
    return set(dialog.preview_model.hitl_ids())


def wait_preview(qtbot: Any, dialog: RuleEditorDialog) -> None:
    with qtbot.waitSignal(dialog.previewed, timeout=10_000):
        dialog.refresh_preview()


def test_rules_view_lists_counts_hits_and_revokes_after_confirming(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    now = time.time()
    allow = Rule.create("allow", "Bash(git status:*)", note="read-only git", expires="1d", now=now)
    deny = Rule.create("deny", "Write(.env)", scope="agent:claude-code", now=now + 1)
    run_async(qtbot, qt_backend.add_rule(allow))
    run_async(qtbot, qt_backend.add_rule(deny))
    window.show_tab(window.left_tabs.indexOf(window.triage.rules))
    window.triage.rules.refresh()
    qtbot.waitUntil(lambda: rows(window) == ["Bash(git status:*)", "Write(.env)"])
    assert [cell(window, 0, c) for c in (COL_EFFECT, COL_SCOPE, COL_NOTE, COL_HITS, COL_LAST_HIT)] == [
        "allow",
        "global",
        "read-only git",
        "0",
        "never",
    ]
    assert cell(window, 0, COL_EXPIRES).startswith("in 23h") or cell(window, 0, COL_EXPIRES).startswith("in 1d")
    assert cell(window, 1, COL_EXPIRES) == "never" and cell(window, 1, COL_SCOPE) == "agent:claude-code"

    # A rule decides a pending request: its hit count and last hit follow the database.
    shell(qtbot, qt_backend, "h1", "git status --short")
    settled = run_async(qtbot, qt_backend.settle_pending_by_rule(allow.id))
    assert [r["hitl_id"] for r in settled] == ["h1"]
    qtbot.waitUntil(lambda: cell(window, 0, COL_HITS) == "1", timeout=10_000)
    assert cell(window, 0, COL_LAST_HIT).endswith("ago")

    # Revoke asks first; Cancel keeps the rule.
    panel = window.triage.rules
    panel.select_rule(deny.id)
    box = panel.confirm_revoke()
    assert box is not None and "Write(.env)" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.wait(100)
    assert [r.rule.id for r in run_async(qtbot, qt_backend.list_rules())] == [allow.id, deny.id]
    panel.select_rule(deny.id)
    box = panel.confirm_revoke()
    assert box is not None
    box.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: rows(window) == ["Bash(git status:*)"], timeout=10_000)
    every = {r.rule.id: r for r in run_async(qtbot, qt_backend.list_rules(include_inactive=True))}
    assert every[deny.id].revoked_at is not None and every[allow.id].revoked_at is None
    panel.inactive_check.setChecked(True)
    qtbot.waitUntil(lambda: len(rows(window)) == 2)
    assert cell(window, 1, COL_EFFECT) == "deny (revoked)"


def test_edit_is_revoke_and_add_with_the_fields_prefilled(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    old = Rule.create("ask", "Bash(npm publish:*)", scope="agent:coder", note="release", now=time.time())
    run_async(qtbot, qt_backend.add_rule(old))
    panel = window.triage.rules
    panel.refresh()
    qtbot.waitUntil(lambda: rows(window) == ["Bash(npm publish:*)"])
    panel.select_rule(old.id)
    dialog = panel.open_edit()
    assert dialog is not None
    assert dialog.effect_combo.currentText() == "ask"
    assert dialog.pattern_combo.currentText() == "Bash(npm publish:*)"
    assert dialog.scope_combo.currentText() == "agent:coder"
    assert dialog.note_edit.text() == "release"
    dialog.effect_combo.setCurrentText("deny")
    dialog.note_edit.setText("never from an agent")
    dialog.try_submit()
    qtbot.waitUntil(lambda: len(run_async(qtbot, qt_backend.list_rules())) == 1 and rows(window) != [], timeout=5000)
    active = run_async(qtbot, qt_backend.list_rules())
    assert [(r.rule.effect, r.rule.pattern, r.rule.scope, r.rule.note) for r in active] == [
        ("deny", "Bash(npm publish:*)", "agent:coder", "never from an agent")
    ]
    assert active[0].rule.id != old.id
    revoked = {r.rule.id: r for r in run_async(qtbot, qt_backend.list_rules(include_inactive=True))}[old.id]
    assert revoked.revoked_at is not None


def test_an_invalid_pattern_is_said_and_nothing_is_saved(window: MainWindow, qt_backend: SQLHITLBackend) -> None:
    dialog = window.triage.rules.open_add()
    dialog.pattern_combo.setCurrentText("Bash(git $(rm -rf /))")
    dialog.refresh_preview()
    assert dialog.error_label.isVisibleTo(dialog)
    assert "never be matched" in dialog.error_label.text()
    assert not dialog.ok_button.isEnabled()
    dialog.try_submit()
    assert dialog.isVisible()


def test_approve_and_make_a_rule_narrowest_first_widening_preview_and_settle(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    shown = shell(qtbot, qt_backend, "h1", "git status --short")
    twin = shell(qtbot, qt_backend, "h2", "git status --short", session="s2", invocation="i2")
    wider = shell(qtbot, qt_backend, "h3", "git status --long", session="s2", invocation="i2")
    chained = shell(qtbot, qt_backend, "h4", "git status --short; rm -rf x", session="s2", invocation="i2")
    past = shell(qtbot, qt_backend, "h0", "git status --short", session="s0", invocation="i0")
    run_async(qtbot, qt_backend.cancel(past, reason="old"))
    show(qtbot, window, shown)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_M, Qt.KeyboardModifier.ShiftModifier)
    dialog = dialog_of(qtbot, window, RuleEditorDialog)
    choices = [dialog.pattern_combo.itemText(i) for i in range(dialog.pattern_combo.count())]
    assert choices[0] == "Bash(git status --short)"  # the narrowest pattern is the default
    assert dialog.pattern_combo.currentText() == "Bash(git status --short)"
    assert "Bash(git status:*)" in choices and choices.index("Bash(git status:*)") > 0
    assert choices[-1] == "Bash"
    assert not dialog.pattern_combo.isEditable() and not dialog.effect_combo.isEnabled()
    assert dialog.effect_combo.currentText() == "allow"
    scopes = [dialog.scope_combo.itemText(i) for i in range(dialog.scope_combo.count())]
    # The request's own scopes first, then every other agent, session and workspace the window knows.
    assert scopes[:4] == ["global", "agent:claude-code", "workspace:/work/proj", "session:s1"]
    assert all(scope.partition(":")[0] in ("agent", "session", "workspace") for scope in scopes[4:])

    wait_preview(qtbot, dialog)
    assert preview_ids(dialog) == {shown, twin, past}  # the exact command: past and pending, never the chain
    assert dialog.pending_matches == 2
    assert "2</b> pending" in dialog.preview_label.text()

    dialog.pattern_combo.setCurrentText("Bash(git status:*)")  # widened by the operator's explicit choice
    qtbot.waitSignal(dialog.previewed, timeout=10_000).wait()
    assert preview_ids(dialog) == {shown, twin, wider, past}
    assert chained not in preview_ids(dialog)
    assert dialog.settle_check.isEnabled()
    dialog.settle_check.setChecked(True)
    dialog.try_submit()

    qtbot.waitUntil(lambda: status(qtbot, qt_backend, wider)[0] == "completed", timeout=10_000)
    rules = run_async(qtbot, qt_backend.list_rules())
    assert [(r.rule.effect, r.rule.pattern) for r in rules] == [("allow", "Bash(git status:*)")]
    rule_id = rules[0].rule.id
    assert status(qtbot, qt_backend, shown) == ("completed", "approve", "tester")  # approved by the operator
    for settled in (twin, wider):
        assert status(qtbot, qt_backend, settled) == ("completed", "approve", f"rule:{rule_id}")
    assert status(qtbot, qt_backend, chained)[0] == "pending"
    assert run_async(qtbot, qt_backend.list_rules())[0].hit_count == 2


def test_a_high_risk_request_is_offered_exact_patterns_only(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    risky = shell(qtbot, qt_backend, "h1", "rm -rf build")
    show(qtbot, window, risky)
    dialog = window.triage.open_make_rule()
    assert dialog is not None
    choices = [dialog.pattern_combo.itemText(i) for i in range(dialog.pattern_combo.count())]
    assert choices == ["Bash(rm -rf build)"]
    assert all(parse_rule_pattern(choice).exact for choice in choices)
    assert dialog.notice_label.isVisibleTo(dialog) and "High risk" in dialog.notice_label.text()
    dialog.reject()


def test_a_high_risk_mcp_call_gets_no_rule(window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any) -> None:
    run_async(
        qtbot,
        qt_backend.create(
            hitl_id="m1",
            hitl_type="tool_approval",
            session_id="s1",
            invocation_id="i1",
            data={"arguments": {"repo": "x"}, "annotations": {"destructiveHint": True}},
            tool_name="mcp__github__delete_repo",
        ),
    )
    show(qtbot, window, "m1")
    assert window.triage.open_make_rule() is None
    assert "high-risk" in window.statusBar().currentMessage()


def test_undoing_approve_and_make_a_rule_leaves_no_rule_and_no_decision(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    window.triage.set_grace(30)
    shown = shell(qtbot, qt_backend, "h1", "npm test")
    twin = shell(qtbot, qt_backend, "h2", "npm test", session="s2", invocation="i2")
    show(qtbot, window, shown)
    dialog = window.triage.open_make_rule()
    assert dialog is not None
    wait_preview(qtbot, dialog)
    dialog.settle_check.setChecked(True)
    dialog.try_submit()
    assert window.triage.undo.held_ids == {shown, twin}
    assert not window.inbox.model.index_for(twin).isValid()
    window.triage.undo_last()
    qtbot.wait(200)
    assert run_async(qtbot, qt_backend.list_rules(include_inactive=True)) == []
    assert status(qtbot, qt_backend, shown)[0] == status(qtbot, qt_backend, twin)[0] == "pending"
    assert window.inbox.model.index_for(twin).isValid()


def test_settling_now_decides_exactly_the_previewed_requests(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    shown = shell(qtbot, qt_backend, "h1", "make lint")
    previewed = shell(qtbot, qt_backend, "h2", "make lint", session="s2", invocation="i2")
    show(qtbot, window, shown)
    dialog = window.triage.open_make_rule()
    assert dialog is not None
    wait_preview(qtbot, dialog)
    assert preview_ids(dialog) == {shown, previewed}
    late = shell(qtbot, qt_backend, "h3", "make lint", session="s3", invocation="i3")  # after the preview
    dialog.settle_check.setChecked(True)
    dialog.try_submit()
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, previewed)[0] == "completed", timeout=10_000)
    assert status(qtbot, qt_backend, late)[0] == "pending"  # the operator never saw it: asked as usual


def test_add_a_rule_from_the_rules_tab(window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any) -> None:
    pending = shell(qtbot, qt_backend, "h1", "cat .env", tool="run_shell")
    window.show_tab(window.left_tabs.indexOf(window.triage.rules))
    qtbot.keyClick(window, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    assert window.left_tabs.currentWidget() is window.triage.rules
    dialog = window.triage.rules.open_add()
    assert not dialog.error_label.isVisibleTo(dialog)  # an empty form is not an error, just not ready
    assert not dialog.ok_button.isEnabled()
    dialog.effect_combo.setCurrentText("deny")
    dialog.pattern_combo.setCurrentText("run_shell(cat:*)")
    dialog.expires_combo.setCurrentText("2d")
    dialog.note_edit.setText("no reading secrets")
    wait_preview(qtbot, dialog)
    assert preview_ids(dialog) == {pending}
    assert "reject them" in dialog.settle_check.text()
    dialog.try_submit()  # settling not asked for: the pending request stays for a human
    qtbot.waitUntil(lambda: rows(window) == ["run_shell(cat:*)"], timeout=10_000)
    stored = run_async(qtbot, qt_backend.list_rules())[0]
    assert (stored.rule.effect, stored.rule.note, stored.created_by) == ("deny", "no reading secrets", "tester")
    assert stored.rule.expires_at is not None and 172_700 < stored.rule.expires_at - time.time() <= 172_800
    assert status(qtbot, qt_backend, pending)[0] == "pending"


def test_settling_now_leaves_what_a_deny_rule_in_force_covers(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """The new allow rule is judged with every rule in force: a pending request a deny rule covers is counted apart
    in the preview and stays pending when the operator settles the matches."""
    lint = shell(qtbot, qt_backend, "h1", "make lint")
    deploy = shell(qtbot, qt_backend, "h2", "make deploy", session="s2", invocation="i2")
    run_async(qtbot, qt_backend.add_rule(Rule.create("deny", "Bash(make deploy)", now=time.time())))
    window.show_tab(window.left_tabs.indexOf(window.triage.rules))
    dialog = window.triage.rules.open_add()
    dialog.effect_combo.setCurrentText("allow")
    dialog.pattern_combo.setCurrentText("Bash(make:*)")
    wait_preview(qtbot, dialog)
    assert preview_ids(dialog) == {lint, deploy}
    assert "1 pending kept by a deny or ask rule in force" in dialog.preview_label.text()
    assert "Settle the 1 pending" in dialog.settle_check.text() and dialog.settleable_ids() == [lint]
    dialog.settle_check.setChecked(True)
    dialog.try_submit()
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, lint)[0] == "completed", timeout=10_000)
    assert status(qtbot, qt_backend, deploy)[0] == "pending"


def test_the_rules_list_answers_keys_delete_revokes_return_edits_insert_adds(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    rule = Rule.create("allow", "Bash(git status)", now=time.time())
    run_async(qtbot, qt_backend.add_rule(rule))
    qtbot.keyClick(window, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    panel = window.triage.rules
    panel.refresh()
    qtbot.waitUntil(lambda: rows(window) == ["Bash(git status)"])
    panel.focus_list()
    qtbot.keyClick(panel.view, Qt.Key.Key_Delete)  # a keyboard-only operator had to Tab to the buttons
    box = next(d for d in panel.dialogs.open_dialogs if isinstance(d, QMessageBox))
    assert "Bash(git status)" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.keyClick(panel.view, Qt.Key.Key_Return)
    edit = next(d for d in panel.dialogs.open_dialogs if d.windowTitle().startswith("Edit rule"))
    edit.reject()
    qtbot.keyClick(panel.view, Qt.Key.Key_Insert)
    assert any(d.windowTitle() == "Add rule" for d in panel.dialogs.open_dialogs)
