"""Keypress → agent acts: how long an agent waits after the operator pressed the key that decides its request.

The real window (offscreen Qt, default settings: the undo grace period as shipped) on a SQLite file, and an
"agent" that is a second ``SQLHITLBackend`` on the same file awaiting ``wait_for_response`` as a hook or an MCP
proxy does. The clock starts just before the key that sends the decision is delivered (``a`` for an approval;
Ctrl+Enter in the reject dialog after ``r 1``) and stops when the agent's wait returns with the decision.

    QT_QPA_PLATFORM=offscreen python bench/keypress_to_agent.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from window_loop import run_in_window_loop

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.dialogs.reject import RejectDialog
from reviewer_app.ui.window.main_window import MainWindow


async def until(test: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not test():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise TimeoutError("the window did not get there")
        await asyncio.sleep(0.005)


async def measure(rounds: int, folder: Path) -> dict[str, list[float]]:
    database = folder / "bench.db"
    backend = SQLHITLBackend(database, reviewer="operator")
    agent = SQLHITLBackend(database, reviewer="agent")
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)  # shipped defaults
    window = MainWindow(backend, None, settings=settings, tray=False)
    window.show()
    window.start()
    await window.live.wait_loaded(timeout=10)
    found: dict[str, list[float]] = {"approve (a)": [], "reject with reason (r 1 Ctrl+Enter)": []}
    try:
        for n in range(rounds):
            for kind, times in found.items():
                hitl_id = f"{kind[:6]}-{n}"
                await agent.create(
                    hitl_id=hitl_id,
                    hitl_type="tool_approval",
                    session_id="bench",
                    invocation_id=f"run-{n}",
                    tool_name="Bash",
                    data={"arguments": {"command": f"echo {n}"}, "agent": "bench"},
                )
                # shown and checked: until its secret scan ends, the first ``a`` only asks for a second press
                await until(
                    lambda h=hitl_id: (
                        window.detail.hitl_id == h and window.detail.decidable() and window.detail.checked()
                    )
                )
                waiting = asyncio.ensure_future(agent.wait_for_response(hitl_id, timeout=30))
                await asyncio.sleep(0.05)  # the agent is in its wait, as a hook would be
                view = window.inbox.reading_view
                view.setFocus()
                if kind.startswith("approve"):
                    started = time.monotonic()
                    QTest.keyClick(view, Qt.Key.Key_A)
                else:
                    QTest.keyClick(view, Qt.Key.Key_R)
                    dialog = next(d for d in window.dialogs.open_dialogs if isinstance(d, RejectDialog))
                    QTest.keyClick(dialog.reasons, Qt.Key.Key_1)
                    started = time.monotonic()
                    QTest.keyClick(dialog.reasons, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
                record = await waiting
                times.append(time.monotonic() - started)
                assert record["status"] == "completed"
                window.activateWindow()
    finally:
        window.close()
        await window.triage.undo.drain()
        backend.close()
        agent.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    found = run_in_window_loop(lambda folder: measure(options.rounds, folder))  # closes the loop and its threads
    for kind, seconds in found.items():
        ms = sorted(s * 1000 for s in seconds)
        print(f"{kind:38} median {statistics.median(ms):8.1f} ms   max {ms[-1]:8.1f} ms   ({len(ms)} rounds)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
