"""Closing the window while work runs off the GUI thread ends cleanly, and so do the window benchmarks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from reviewer_app.hitl import SQLHITLBackend
from tests.ui.conftest import OpenMainWindow
from tests.ui.test_detail_checks import HeldChecks, write

REPO = Path(__file__).resolve().parents[2]


def test_closing_the_window_while_the_detail_checks_run_ends_cleanly(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    window = open_main_window()
    held = HeldChecks()
    window.detail.checker.check_request = held
    errors: list[str] = []
    window.banner.show_message = lambda message, **_kw: errors.append(message)  # type: ignore[method-assign]
    hitl_id = write(qtbot, qt_backend, "w1", "hello\n" * 1000)
    qtbot.waitUntil(lambda: held.started == [hitl_id], timeout=10_000)
    window.close()
    qtbot.waitUntil(lambda: not window.tasks.busy, timeout=5_000)  # the pane's task ends with the window
    assert held.finished == []  # while its worker still runs
    held.gate.set()
    qtbot.waitUntil(lambda: held.finished == [hitl_id], timeout=10_000)
    qtbot.wait(100)  # the worker's result arrives on the loop and is dropped
    assert errors == []
    assert "hello" not in window.detail.diff_view.toPlainText()


def test_the_keypress_benchmark_exits_without_a_running_thread(tmp_path: Path) -> None:
    """Its qasync loop ran work on worker QThreads and was never closed: Qt aborted at exit."""
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(tmp_path))
    done = subprocess.run(
        [sys.executable, str(REPO / "bench" / "keypress_to_agent.py"), "--rounds", "1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert "QThread: Destroyed while thread" not in done.stderr
    assert done.returncode == 0, done.stderr[-2000:]
    assert "approve (a)" in done.stdout
