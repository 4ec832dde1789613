"""The Rules tab's suggestions from history and lint findings (issue 26), through the real window on a real file.

Set ``WHY_SCREENSHOT_DIR`` to save the tab's grab there (the guide's picture comes from this test).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.rules.editor import RuleEditorDialog
from reviewer_app.ui.rules.model import COL_FINDINGS, COL_PATTERN
from reviewer_app.ui.window.main_window import MainWindow
from tests.policy.test_habits import seed
from tests.ui.conftest import OpenMainWindow
from tests.ui.triage_helpers import dialog_of, shell, triage_models


@pytest.fixture
def window(
    open_main_window: OpenMainWindow,
    db_path: Path,
    qt_backend: SQLHITLBackend,
    ui_settings: QSettings,
    qtbot: Any,
    qtmodeltester: Any,
) -> Iterator[MainWindow]:
    seed(db_path)
    shell(qtbot, qt_backend, "pending-npm", "npm test", session="s7", invocation="i7")  # the rule would settle it
    win = open_main_window(checked=triage_models)
    habits = win.triage.rules.habits
    qtmodeltester.check(habits.suggestions)
    qtmodeltester.check(habits.findings)
    yield win
    win.close()


def findings_of(win: MainWindow, rule_id: str) -> str:
    model = win.triage.rules.model
    row = model.row_of(rule_id)
    return str(model.index(row, COL_FINDINGS).data())


def test_a_suggestion_opens_the_editor_prefilled_with_its_preview_and_rules_show_their_findings(
    window: MainWindow, qtbot: Any
) -> None:
    panel = window.triage.rules
    habits = panel.habits
    qtbot.waitUntil(lambda: panel.model.rowCount() == 5, timeout=10_000)
    qtbot.wait(200)
    assert habits.suggestions.rowCount() == 0  # the Rules tab is hidden: the history is not judged yet
    qtbot.keyClick(window, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    assert window.left_tabs.currentWidget() is panel
    qtbot.waitUntil(lambda: habits.findings.rowCount() > 0 and habits.suggestions.rowCount() > 0, timeout=15_000)

    assert habits.suggestions.index(0, 0).data() == "Bash(npm test)"
    assert habits.suggestions.rowCount() == 1  # git push was rejected once; rm -rf is high risk
    assert "approved 14 times in 3 session(s)" in habits.suggestions.index(0, 0).data(Qt.ItemDataRole.ToolTipRole)
    assert "never matched" in findings_of(window, "rule_cow")
    assert "shadowed" in findings_of(window, "rule_push") and "rule_nopush" in findings_of(window, "rule_push")
    assert "high-risk" in findings_of(window, "rule_rm")
    assert findings_of(window, "rule_make") == ""
    assert {habits.findings.index(r, 0).data() for r in range(habits.findings.rowCount())} >= {
        "rule_cow",
        "rule_push",
        "rule_rm",
    }

    target = os.environ.get("WHY_SCREENSHOT_DIR")
    if target:
        window.resize(1500, 900)
        window.splitter.setSizes([1000, 500])
        habits.suggestions_view.setCurrentIndex(habits.suggestions.index(0, 0))
        qtbot.wait(50)
        panel.grab().save(str(Path(target) / "why-rule-suggestion.png"))

    # keyboard: Alt+L / Alt+G reach the two lists; Enter on the selected suggestion opens the editor
    assert not habits.make_button.isEnabled() or habits.selected() is not None
    qtbot.keyClick(window, Qt.Key.Key_L, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(habits.findings_view.hasFocus, timeout=5_000)
    qtbot.keyClick(window, Qt.Key.Key_G, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(habits.suggestions_view.hasFocus, timeout=5_000)
    habits.suggestions_view.setCurrentIndex(habits.suggestions.index(0, 0))
    assert habits.make_button.isEnabled()
    assert "npm test approved 14 times in 3 session(s) — make it a rule?" in habits.hint.text()
    qtbot.keyClick(habits.suggestions_view, Qt.Key.Key_Return)
    dialog = dialog_of(qtbot, window, RuleEditorDialog)
    assert dialog.pattern_combo.currentText() == "Bash(npm test)"
    assert dialog.effect_combo.currentText() == "allow"
    qtbot.waitUntil(lambda: dialog.settleable_ids() == ["pending-npm"], timeout=10_000)  # its preview
    dialog.try_submit()
    qtbot.waitUntil(
        lambda: "Bash(npm test)" in [panel.model.index(r, COL_PATTERN).data() for r in range(panel.model.rowCount())],
        timeout=10_000,
    )
    # the new rule settles npm test from now on: the history no longer suggests it
    qtbot.waitUntil(lambda: habits.suggestions.rowCount() == 0, timeout=15_000)
