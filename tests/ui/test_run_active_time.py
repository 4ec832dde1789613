"""A run's active time: what Reviewer measured for its own runs, "—" (never "0 ms") for an outside agent's run.

Reviewer counts a run's active time (running, not waiting for a reviewer) only for the runs it drives; a hook or
an outside agent raises requests from its own process, and when it runs in between is not seen here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from PySide6.QtCore import Qt

from reviewer_app.domain.records import RunRecord
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common.keepers import TaskKeeper
from reviewer_app.ui.detail.pane import DetailPane
from reviewer_app.ui.runs.model import COL_ACTIVE, RunsModel

OURS = RunRecord(
    id="inv_ours",
    session_id="s",
    agent="demo",
    prompt="tidy the notes",
    state="done",
    parent_id=None,
    external=False,
    owner=None,
    error=None,
    created_at=1_700_000_000,
    started_at=1_700_000_000,
    finished_at=1_700_000_009,
    updated_at_ms=1_700_000_009_000,
    active_ms=1_500,
)
OUTSIDE = replace(OURS, id="inv_outside", external=True, active_ms=0, state="running", finished_at=None)


def test_the_runs_board_says_an_outside_runs_active_time_is_not_known(qtmodeltester: Any) -> None:
    model = RunsModel()
    qtmodeltester.check(model)
    model.set_runs([OURS, OUTSIDE, replace(OURS, id="inv_queued", state="queued", active_ms=0)])
    assert model.index_for("inv_ours", COL_ACTIVE).data() == "1.5 s"
    assert model.index_for("inv_queued", COL_ACTIVE).data() == "0 ms"  # ours: measured, and it has not run yet
    outside = model.index_for("inv_outside", COL_ACTIVE)
    assert outside.data() == "—"
    assert "not known" in outside.data(Qt.ItemDataRole.ToolTipRole)


def test_the_run_header_says_an_outside_runs_active_time_is_not_known(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    tasks = TaskKeeper(lambda message: None)
    pane = DetailPane(qt_backend, tasks.spawn)
    qtbot.addWidget(pane)
    pane.show_run(OURS)
    assert "active 1.5 s" in pane.header.text()
    pane.show_run(OUTSIDE)
    header = pane.header.text()
    assert "0 ms" not in header
    assert "active —" in header and "not known" in header
