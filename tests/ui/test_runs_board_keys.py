"""j/k on the runs board reach the run that has just moved into a state group, before the board has tidied.

The board hides empty state groups once per burst of changes, a turn of the event loop later
(`RunsPanel._schedule_tidy`). A run that had just moved into an empty group (cancelled, done) sat in a group row
still hidden, so a j pressed in that turn found nothing below and was lost (the flaky
`test_j_and_k_go_from_run_to_run_over_the_group_rows`: 3 of 12 runs, every failing one with the tidy pending).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import QModelIndex, Qt

from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.ui.runs.model import GROUP_ORDER
from reviewer_app.ui.window.main_window import RUNS_TAB
from tests.ui.conftest import OpenMainWindow

FIRST = RunRecord(
    id="inv_first",
    session_id="s",
    agent="demo",
    prompt="tidy the notes",
    state=RunState.WAITING.value,
    parent_id=None,
    external=False,
    owner=None,
    error=None,
    created_at=1_700_000_100,
    started_at=1_700_000_100,
    finished_at=None,
    updated_at_ms=1_700_000_100_000,
    active_ms=0,
)
SECOND = replace(FIRST, id="inv_second", prompt="to be cancelled", created_at=1_700_000_000)


def test_j_reaches_a_run_that_moved_into_an_empty_group_in_the_same_turn(
    open_main_window: OpenMainWindow, qtbot: Any
) -> None:
    window = open_main_window()
    window.show_tab(RUNS_TAB)
    runs = window.runs
    runs.live.runsChanged.emit([FIRST, SECOND])
    cancelled_group = GROUP_ORDER.index(RunState.CANCELLED.value)
    qtbot.waitUntil(lambda: not runs.view.isRowHidden(0, QModelIndex()))  # the Waiting group, tidied
    runs.view.setCurrentIndex(runs.model.index_for(FIRST.id))
    runs.view.setFocus()
    # The second run is cancelled, and j comes before the event loop turns again.
    runs.live.runsChanged.emit([replace(SECOND, state=RunState.CANCELLED.value, updated_at_ms=1)])
    assert runs.model.count(RunState.CANCELLED) == 1
    qtbot.keyClick(runs.view, Qt.Key.Key_J)
    selected = runs.selected_run()
    assert selected is not None and selected.id == SECOND.id
    assert not runs.view.isRowHidden(cancelled_group, QModelIndex())
    qtbot.keyClick(runs.view, Qt.Key.Key_K)
    selected = runs.selected_run()
    assert selected is not None and selected.id == FIRST.id
