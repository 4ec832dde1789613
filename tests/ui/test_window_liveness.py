"""An open window notices within seconds that a runner died, and shows its run as needing action.

A real ``reviewer-app run`` drives a shell tool and is SIGKILLed while the window is open: the window's live
controller (not a restart) marks the run interrupted, says so in the status bar, and the tool is gone.
"""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings

from reviewer_app.domain.records import NewRequest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.changes import SQLiteChangeFeed
from reviewer_app.persistence.store import Store
from reviewer_app.runtime.process_groups import proc_group_members
from reviewer_app.runtime.recovery import pid_alive
from tests.runtime.test_recovery_process import cli, kill, start_run, wait_until, write_script
from tests.ui.conftest import OpenMainWindow

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux prctl")]


def test_an_open_window_marks_a_sigkilled_runner_interrupted_within_seconds(
    open_main_window: OpenMainWindow,
    qt_backend: SQLHITLBackend,
    db_path: Path,
    tmp_path: Path,
    ui_settings: QSettings,
    qtbot: Any,
    subprocess_env: dict[str, str],
) -> None:
    other = Store.open(db_path)  # migrated before the child process opens it
    win = open_main_window(loaded=False)
    messages: list[list[str]] = []
    win.live.runsNeedAction.connect(messages.append)

    command = "echo $$ > shell.pid; sleep 60; echo end >> effects.txt"
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": "run_shell", "args": {"command": command}}]}, {"text": "finished"}],
    )
    proc = start_run(subprocess_env, db_path, tmp_path / "ws", script, "slow work")
    try:
        (request,) = wait_until(other.requests.pending, what="the pending request", process=proc)
        inv = request["invocation_id"]
        workspace = Path(other.runs.get(inv).workspace)
        assert cli(subprocess_env, "decide", request["hitl_id"], "approve", "--db", str(db_path)).returncode == 0
        shell_pid = int(wait_until(lambda: _read(workspace / "shell.pid"), what="the shell pid"))
        wait_until(lambda: other.runs.get(inv).process_group == shell_pid, what="the recorded group")
        kill(proc)
        killed_at = time.monotonic()
        qtbot.waitUntil(lambda: bool(messages), timeout=15_000)
        noticed_after = time.monotonic() - killed_at
        run = other.runs.get(inv)
    finally:
        if proc.poll() is None:
            kill(proc)
        other.close()
    assert any(inv in text and "re-run or abort" in text for text in messages[0])
    assert inv in win.statusBar().currentMessage()
    assert run.state == "interrupted" and run.owner is None
    assert not pid_alive(shell_pid)  # the shell died with its runtime (PR_SET_PDEATHSIG)
    # The sweep SIGKILLed what the shell left in its group (the sleep); the kernel ends it a moment later.
    wait_until(lambda: proc_group_members(shell_pid) == [], timeout=30, what="the tool's process group to end")
    # Noticed by the sweep while it runs (the wait above is bounded); how soon is bench/liveness.py's goal.
    qtbot.waitUntil(lambda: not win.live.busy, timeout=10_000)
    print(f"\nSIGKILL -> window shows the run interrupted: {noticed_after:.2f} s")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


class _FlakyFeed(SQLiteChangeFeed):
    """The real SQLite feed whose third probe raises (a database that cannot be read for a moment)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls = 0

    def _probe(self) -> int:
        self.calls += 1
        if self.calls == 3:
            raise sqlite3.OperationalError("disk I/O error")
        return super()._probe()


def test_the_status_bar_says_while_the_change_feed_retries_and_the_window_still_sees_other_processes(
    open_main_window: OpenMainWindow, db_path: Path, qloop: Any, ui_settings: QSettings, qtbot: Any
) -> None:
    other = Store.open(db_path)
    backend = SQLHITLBackend(db_path, reviewer="tester", feed=_FlakyFeed(db_path))
    try:
        win = open_main_window(backend=backend, show=False, start=False)
        statuses: list[str] = []
        win.live.feedStatus.connect(statuses.append)
        shown: list[str] = []
        win.live.feedStatus.connect(lambda _text: shown.append(win.statusBar().currentMessage()))
        win.show()
        win.start()
        qtbot.waitUntil(lambda: len(statuses) >= 2, timeout=10_000)
        assert "retrying" in statuses[0] and "retrying" in shown[0]
        assert statuses[1] == ""  # well again
        with other.transaction() as tx:  # another writer commits a request
            tx.requests.create(
                NewRequest(
                    hitl_id="h-after",
                    hitl_type="tool_approval",
                    session_id="s1",
                    invocation_id="i1",
                    data={"arguments": {"command": "ls"}},
                    tool_name="run_shell",
                )
            )
        qtbot.waitUntil(lambda: win.windowTitle() == "Reviewer (1 pending)", timeout=10_000)
        win.live.close()
        qtbot.waitUntil(lambda: not win.live.busy, timeout=10_000)
    finally:
        other.close()
        backend.close()


def test_the_status_bar_says_database_busy_while_a_write_is_retried_and_the_write_lands(
    open_main_window: OpenMainWindow, db_path: Path, qloop: Any, ui_settings: QSettings, qtbot: Any
) -> None:
    store = Store.open(db_path, busy_timeout_ms=100)  # short, so the lock outlasts it at once
    backend = SQLHITLBackend(store=store, reviewer="tester")
    locker = sqlite3.connect(db_path, isolation_level=None)
    try:
        win = open_main_window(backend=backend, show=False, start=False)
        statuses: list[str] = []
        win.live.databaseStatus.connect(statuses.append)
        win.show()
        win.start()
        qtbot.waitUntil(lambda: not win.live.busy, timeout=10_000)
        locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        created = asyncio.ensure_future(
            backend.create(hitl_id="h-busy", hitl_type="tool_approval", session_id="s1", invocation_id="i1")
        )
        qtbot.waitUntil(lambda: "database busy — retrying" in win.statusBar().currentMessage(), timeout=10_000)
        assert not created.done()
        locker.execute("ROLLBACK")
        qtbot.waitUntil(created.done, timeout=10_000)
        assert created.exception() is None
        qtbot.waitUntil(lambda: statuses[-1:] == [""], timeout=10_000)
        qtbot.waitUntil(lambda: win.windowTitle() == "Reviewer (1 pending)", timeout=10_000)
        win.live.close()
        qtbot.waitUntil(lambda: not win.live.busy, timeout=10_000)
    finally:
        locker.close()
        backend.close()
        store.close()
