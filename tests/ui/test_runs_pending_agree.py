"""The Runs board's pending count per run and the inbox's pending count never disagree (issue #25).

A request can leave the inbox without its run's row being written: its hook answered elsewhere, it expired,
it was decided. The board must follow: a run showing "1 pending" while the inbox shows 0 is the defect seen.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import ExternalCall, ReviewClient
from reviewer_app.ui.runs.model import COL_PENDING
from reviewer_app.ui.window.live import SLACK_MS
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OpenMainWindow, run_async


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> Iterator[MainWindow]:
    win = open_main_window()
    yield win
    win.close()


def _call(n: int, run: str) -> ExternalCall:
    return ExternalCall(
        hitl_id=f"req-{run}-{n}",
        agent="claude-code",
        session_id=f"sess-{run}",
        invocation_id=run,
        tool_name="Bash",
        arguments={"command": f"echo {n}"},
        expires_at=int(time.time()) + 3600 if n == 1 else None,
    )


def _board_pending(win: MainWindow) -> int:
    return sum(run.pending for run in win.runs.model.all_runs())


def _shown_pending(win: MainWindow, run_id: str) -> str:
    return str(win.runs.model.index_for(run_id, COL_PENDING).data())


def _inbox_pending(win: MainWindow) -> int:
    return len(win.live.pending_ids)


@pytest.mark.parametrize("settle", ["answered_elsewhere", "expired", "decided"])
def test_a_request_settled_without_its_run_leaves_the_board_pending_count_too(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any, settle: str
) -> None:
    client = ReviewClient(qt_backend, agent="claude-code")
    run_async(qtbot, client.register_run(session_id="sess-r1", invocation_id="r1", title="list files"))
    for n in (1, 2):
        run_async(qtbot, client.submit(_call(n, "r1")))
    qtbot.waitUntil(lambda: _shown_pending(window, "r1") == "2" and _inbox_pending(window) == 2, timeout=10_000)
    # The run's row is not written again: its request settles after a refresh has moved past the run's last
    # write (plus the window's slack), as a hook's request does minutes later.
    qtbot.wait(SLACK_MS + 500)
    refreshes = window.live.refresh_count
    window.live.request_refresh()
    qtbot.waitUntil(lambda: window.live.refresh_count > refreshes)
    assert window.live._run_wm - SLACK_MS > window.runs.model.run("r1").updated_at_ms

    if settle == "answered_elsewhere":
        run_async(qtbot, client.abandon("req-r1-1"))
    elif settle == "expired":
        assert len(run_async(qtbot, qt_backend.expire_due(now=int(time.time()) + 7200))) == 1
    else:
        run_async(qtbot, qt_backend.decide("req-r1-1", Decision(DecisionKind.REJECT)))

    qtbot.waitUntil(lambda: _inbox_pending(window) == 1, timeout=10_000)
    qtbot.waitUntil(lambda: _shown_pending(window, "r1") == "1", timeout=5_000)
    assert _board_pending(window) == _inbox_pending(window) == 1
