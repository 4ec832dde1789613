"""Agents in other OS processes, reviewed in the open window (issue #7, the window's part).

An external agent process creates a request and parks in ``wait_for_response``; the request
appears in the window marked external (inbox row, detail header, runs board), the test decides
it with the keyboard, and the agent process wakes and acts on the decision. The second test
decides several requests in a row with the keyboard and prints the decision-to-wake-up latency
(run with ``-s`` to see it; a figure, not an assertion: speed goals live in bench/).
"""

from __future__ import annotations

import json
import queue
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from PySide6.QtCore import QSettings, Qt

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.dialogs.submit import TextDialog
from reviewer_app.ui.inbox.cells import COL_AGENT, COL_REQUEST, EXTERNAL_ROLE, EXTERNAL_TIP
from reviewer_app.ui.runs.model import EXTERNAL_ROLE as RUN_EXTERNAL_ROLE
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OpenMainWindow, run_async, window_models

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "external_agent.py"


class AgentProcess:
    """An agent in its own OS process; its stdout lines are read on a thread into a queue."""

    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO_ROOT
        )
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        assert self.proc.stdout is not None
        self._reader = threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True)
        self._reader.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put((time.time(), line.rstrip("\n")))

    def next_line(self, qtbot: Any, timeout_ms: int = 30_000) -> str:
        """The next line it prints, while the Qt loop keeps running."""
        got: list[str] = []

        def arrived() -> bool:
            if not got:
                try:
                    got.append(self.lines.get_nowait()[1])
                except queue.Empty:
                    return False
            return True

        qtbot.waitUntil(arrived, timeout=timeout_ms)
        return got[0]

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        _, err = self.proc.communicate(timeout=timeout)
        self._reader.join(timeout)
        return self.proc.returncode, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate()


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> Iterator[MainWindow]:
    """The window as a reviewer opens it next to external agents: no agent runtime of its own."""
    win = open_main_window(checked=window_models)
    yield win
    win.close()


def press(qtbot: Any, win: MainWindow, key: Any) -> None:
    """A key in the inbox, the window active again (a dialog that just closed was the active one)."""
    win.activateWindow()
    qtbot.waitUntil(win.isActiveWindow)
    win.inbox.view.setFocus()
    qtbot.waitUntil(win.inbox.view.hasFocus)
    qtbot.keyClick(win.inbox.view, key)


def wait_shown(qtbot: Any, win: MainWindow, hitl_id: str) -> None:
    """The request is in the inbox, selected, fully loaded and checked (decisions possible, ``a`` at once)."""
    qtbot.waitUntil(lambda: win.inbox.model.index_for(hitl_id).isValid(), timeout=10_000)
    if win.detail.hitl_id != hitl_id:
        win.inbox.select_request(hitl_id)
    qtbot.waitUntil(
        lambda: win.detail.hitl_id == hitl_id and win.detail.decidable() and win.detail.checked(), timeout=10_000
    )


def test_an_external_agent_is_marked_decided_with_the_keyboard_and_acts(
    window: MainWindow, qtbot: Any, tmp_path: Path, db_path: Path, subprocess_env: dict[str, str]
) -> None:
    # A request raised in this process (not external) for contrast.
    run_async(
        qtbot,
        window.backend.create(
            hitl_id="local-1",
            hitl_type="tool_approval",
            session_id="local-session",
            invocation_id="local-run",
            data={"arguments": {"command": "ls"}},
            tool_name="run_shell",
        ),
    )
    workdir = tmp_path / "agent-work"
    agent = AgentProcess(
        [
            *(sys.executable, str(EXAMPLE), "--db", str(db_path), "--agent", "ext", "--run-id", "r7"),
            *("--workdir", str(workdir), "--content", "decided in the window\n", "--timeout", "60"),
        ],
        subprocess_env,
    )
    try:
        hitl_id = "ext-r7-run-write"
        assert agent.next_line(qtbot) == f"waiting for a decision on {hitl_id}"
        wait_shown(qtbot, window, hitl_id)

        # Marked external in the inbox row: an icon by the agent's name, a role, the tooltip.
        index = window.inbox.model.index_for(hitl_id, COL_AGENT)
        assert index.data(EXTERNAL_ROLE) is True
        assert not index.data(Qt.ItemDataRole.DecorationRole).isNull()
        assert EXTERNAL_TIP in index.data(Qt.ItemDataRole.ToolTipRole)
        assert "raised by an agent in another process" in EXTERNAL_TIP
        request_cell = window.inbox.model.index_for(hitl_id, COL_REQUEST)
        assert request_cell.data(Qt.ItemDataRole.AccessibleTextRole).startswith("external write_file request")
        # ... and in the detail header.
        badge = window.detail.external_badge
        assert badge.isVisible() and badge.text() == "external"
        assert "raised by an agent in another process" in badge.toolTip()
        # ... and on the runs board (the example registers its run as external).
        qtbot.waitUntil(lambda: window.runs.model.index_for("ext-r7-run").isValid())
        run_index = window.runs.model.index_for("ext-r7-run")
        assert run_index.data(RUN_EXTERNAL_ROLE) is True
        assert not run_index.data(Qt.ItemDataRole.DecorationRole).isNull()
        assert "another process" in run_index.data(Qt.ItemDataRole.ToolTipRole)
        # The local request is not marked, and its detail has no badge.
        local = window.inbox.model.index_for("local-1", COL_AGENT)
        assert local.data(EXTERNAL_ROLE) is False
        assert local.data(Qt.ItemDataRole.DecorationRole) is None
        assert EXTERNAL_TIP not in local.data(Qt.ItemDataRole.ToolTipRole)
        assert window.runs.model.index_for("local-run").data(RUN_EXTERNAL_ROLE) is False
        wait_shown(qtbot, window, "local-1")
        assert not window.detail.external_badge.isVisible()

        # Decide the external request with the keyboard: approve ("a").
        wait_shown(qtbot, window, hitl_id)
        press(qtbot, window, Qt.Key.Key_A)
        outcome = agent.next_line(qtbot)
        code, err = agent.finish()
        assert code == 0, err
        assert outcome == f"outcome: wrote {(workdir / 'notes.txt').resolve()} (approve by tester)", outcome
        assert (workdir / "notes.txt").read_text() == "decided in the window\n"
        qtbot.waitUntil(lambda: not window.inbox.model.index_for(hitl_id).isValid())
        record = run_async(qtbot, window.backend.get(hitl_id))
        assert record is not None and record["status"] == "completed"
        assert record["user_response"]["decision"] == "approve"
        assert record["user_response"]["reviewer"] == "tester"
        qtbot.waitUntil(lambda: window.runs.model.run("ext-r7-run") is not None)
        qtbot.waitUntil(lambda: window.runs.model.run("ext-r7-run").state == "done", timeout=10_000)
    finally:
        agent.kill()


def test_keyboard_decisions_wake_the_external_agent_with_each_decision(
    window: MainWindow, qtbot: Any, db_path: Path, subprocess_env: dict[str, str]
) -> None:
    rounds = 6
    agent = AgentProcess(
        [sys.executable, "-m", "tests.helpers.waiting_agent", str(db_path), str(rounds), "kbd-"], subprocess_env
    )
    decided_at: dict[str, float] = {}
    window.decided.connect(lambda hitl_id, _kind: decided_at.setdefault(hitl_id, time.time()))
    latencies: list[float] = []
    try:
        for index in range(rounds):
            hitl_id = f"kbd-{index}"
            assert json.loads(agent.next_line(qtbot)) == {"created": hitl_id}
            wait_shown(qtbot, window, hitl_id)
            assert window.inbox.model.index_for(hitl_id).data(EXTERNAL_ROLE) is True
            reject = index % 2 == 1
            if reject:  # "r", a reason, Ctrl+Return
                press(qtbot, window, Qt.Key.Key_R)
                qtbot.waitUntil(lambda: any(isinstance(d, TextDialog) for d in window.dialogs.open_dialogs))
                dialog = next(d for d in window.dialogs.open_dialogs if isinstance(d, TextDialog))
                qtbot.keyClicks(dialog.editor, f"not {index}")
                qtbot.keyClick(dialog.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
            else:
                press(qtbot, window, Qt.Key.Key_A)
            woke = json.loads(agent.next_line(qtbot))
            assert woke["woke"] == hitl_id
            assert woke["status"] == "completed"
            assert woke["decision"]["decision"] == ("reject" if reject else "approve")
            assert woke["decision"]["reviewer"] == "tester"
            if reject:
                assert woke["decision"]["message"] == f"not {index}"
            qtbot.waitUntil(lambda hitl_id=hitl_id: hitl_id in decided_at)
            latencies.append(woke["at"] - decided_at[hitl_id])
        code, err = agent.finish()
        assert code == 0, err
    finally:
        agent.kill()
    ms = sorted(1000 * value for value in latencies)
    print(
        f"\n[sqlite] decision in the window (keyboard) -> external agent awake, {rounds} decisions: "
        f"p50 {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms "
        "(from the commit; the agent notices through PRAGMA data_version polled every 50 ms)"
    )
    # Woken by each decision through the change feed: a wait that ran out its 60 s would have raised in the
    # agent instead of printing "completed", and the agent ends cleanly after the last round.
    assert len(latencies) == rounds
