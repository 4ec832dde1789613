"""An open window notices within seconds that a runner died, and shows its run as needing action.

A real ``reviewer-app run`` drives a shell tool and is SIGKILLed while the window is open: the window's live
controller (not a restart) marks the run interrupted, says so in the status bar, and the tool is gone.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import Store
from reviewer_app.runtime.process_groups import proc_group_members
from reviewer_app.runtime.recovery import pid_alive
from reviewer_app.ui.main_window import MainWindow
from tests.runtime.test_recovery_process import cli, kill, start_run, wait_until, write_script

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux prctl")]


def test_an_open_window_marks_a_sigkilled_runner_interrupted_within_seconds(
    qt_backend: SQLHITLBackend,
    db_path: Path,
    tmp_path: Path,
    ui_settings: QSettings,
    qtbot: Any,
    subprocess_env: dict[str, str],
) -> None:
    other = Store.open(db_path)  # migrated before the child process opens it
    win = MainWindow(qt_backend, None, settings=ui_settings, tray=False)
    qtbot.addWidget(win)
    win.show()
    win.start()
    messages: list[list[str]] = []
    win.live.runsNeedAction.connect(messages.append)

    command = "echo $$ > shell.pid; sleep 60; echo end >> effects.txt"
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": "run_shell", "args": {"command": command}}]}, {"text": "finished"}],
    )
    proc = start_run(subprocess_env, db_path, tmp_path / "ws", script, "slow work")
    try:
        (request,) = wait_until(other.pending_records, what="the pending request")
        inv = request["invocation_id"]
        workspace = Path(other.get_run(inv).workspace)
        assert cli(subprocess_env, "decide", request["hitl_id"], "approve", "--db", str(db_path)).returncode == 0
        shell_pid = int(wait_until(lambda: _read(workspace / "shell.pid"), what="the shell pid"))
        wait_until(lambda: other.get_run(inv).process_group == shell_pid, what="the recorded group")
        kill(proc)
        killed_at = time.monotonic()
        qtbot.waitUntil(lambda: bool(messages), timeout=15_000)
        noticed_after = time.monotonic() - killed_at
        run = other.get_run(inv)
    finally:
        if proc.poll() is None:
            kill(proc)
        other.close()
    assert any(inv in text and "re-run or abort" in text for text in messages[0])
    assert inv in win.statusBar().currentMessage()
    assert run.state == "interrupted" and run.owner is None
    assert not pid_alive(shell_pid) and proc_group_members(shell_pid) == []
    assert noticed_after < 5.0, f"the window noticed only after {noticed_after:.2f} s"
    qtbot.waitUntil(lambda: not win.live.busy, timeout=10_000)
    print(f"\nSIGKILL -> window shows the run interrupted: {noticed_after:.2f} s")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""
