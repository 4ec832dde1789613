"""The Statistics window's "your own numbers" (issue 26), opened with Ctrl+6 from the real window on a real file.

Set ``WHY_SCREENSHOT_DIR`` to save the window's grab there (the guide's picture comes from this test).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, Qt

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.stats.numbers import RUBBER_STAMP_MARK
from reviewer_app.ui.stats.window import StatsWindow
from tests.policy.test_habits import seed
from tests.ui.conftest import OpenMainWindow


def column(model: Any, col: int) -> list[str]:
    return [str(model.index(row, col).data()) for row in range(model.rowCount())]


def test_ctrl_6_shows_time_to_decide_approve_rates_rubber_stamps_and_the_rules_share(
    open_main_window: OpenMainWindow,
    qtbot: Any,
    qt_backend: SQLHITLBackend,
    ui_settings: QSettings,
    db_path: Path,
    qtmodeltester: Any,
) -> None:
    seed(db_path)
    window = open_main_window()
    qtbot.keyClick(window, Qt.Key.Key_6, Qt.KeyboardModifier.ControlModifier)
    stats = window.ops.stats_window
    assert isinstance(stats, StatsWindow) and stats.isVisible()
    numbers = stats.numbers
    qtmodeltester.check(numbers.per_tool)
    qtmodeltester.check(numbers.per_agent)
    qtbot.waitUntil(lambda: numbers.per_tool.rowCount() == 1 and stats.stats is not None, timeout=15_000)

    # Bash: 26 decisions by people, 25 approved, median 1 s, p90 30 s: a rubber-stamp candidate
    assert [numbers.per_tool.index(0, c).data() for c in range(6)] == [
        "Bash",
        "26",
        "96%",
        "1s",
        "30s",
        RUBBER_STAMP_MARK,
    ]
    assert "still a look" in numbers.per_tool.index(0, 5).data(Qt.ItemDataRole.ToolTipRole)
    assert column(numbers.per_agent, 0) == ["claude-code"] and column(numbers.per_agent, 1) == ["26"]
    assert numbers.per_agent.columnCount() == 5  # rubber stamps are marked per tool only
    text = numbers.headline.text()
    assert "<b>10%</b> settled by rules (3 of 29)" in text  # the three make lint calls rule_make decided
    assert "26 decided by people" in text and "Rubber-stamp candidates: <b>Bash</b>" in text
    assert "Rules that saved the most decisions: rule_make (3)" in text

    target = os.environ.get("WHY_SCREENSHOT_DIR")
    if target:
        stats.resize(1500, 860)
        qtbot.wait(100)
        stats.grab().save(str(Path(target) / "why-statistics.png"))
    window.close()
