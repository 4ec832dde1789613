"""Selecting a request with 1 MB of arguments, again and again in one window: the detail pane's own cost.

``ui_inbox.py`` times one selection per app start over 100,000 requests; on a busy machine one sample swings
widely. Here one window over a small database (``ui_inbox.seed``: the same 1 MB write among 200 requests) selects
a small request and the 1 MB one in turn, ``--rounds`` times each, and prints the medians: from the selection to
the detail's first paint after the window says the request is shown (``requestShown``), as ``ui_inbox.py`` does.
A diagnostic (not part of ``make bench``): its goal lines are ``ui_inbox.py``'s.

    QT_QPA_PLATFORM=offscreen python bench/ui_detail.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from common import load_average
from PySide6.QtCore import QEvent, QObject, QSettings
from PySide6.QtWidgets import QApplication, QWidget
from ui_inbox import BIG_BYTES, seed
from window_loop import run_in_window_loop

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.window.main_window import MainWindow

SMALL_WRITE = "hitl_000003"  # a write_file of ~100 bytes (seed: every third request from the first)


class DetailPainted(QObject):
    """Sets ``painted`` at the first paint inside the detail pane once the window has shown ``target``."""

    def __init__(self, window: MainWindow, target: str) -> None:
        super().__init__()
        self.window, self.target = window, target
        self.shown: list[str] = []
        self.painted = asyncio.Event()
        window.requestShown.connect(self.shown.append)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.Paint
            and self.target in self.shown
            and isinstance(watched, QWidget)
            and self.window.detail.isAncestorOf(watched)
        ):
            self.painted.set()
        return False


async def measure(folder: Path, rounds: int) -> dict[str, list[float]]:
    database = folder / "detail.db"
    big = seed(database, sessions=20, invocations=50, requests=200, big_bytes=BIG_BYTES)
    backend = SQLHITLBackend(database, reviewer="bench")
    settings = QSettings(str(folder / "settings.ini"), QSettings.Format.IniFormat)
    window = MainWindow(backend, None, settings=settings, tray=False)
    window.resize(1400, 900)
    window.show()
    window.start()
    app = QApplication.instance()
    assert app is not None
    found: dict[str, list[float]] = {"small request": [], "1 MB request": []}
    try:
        await window.live.wait_loaded(timeout=30)
        await asyncio.sleep(1.0)
        for _ in range(rounds):
            for name, hitl_id in (("small request", SMALL_WRITE), ("1 MB request", big)):
                watcher = DetailPainted(window, hitl_id)
                app.installEventFilter(watcher)
                started = time.perf_counter()
                window.inbox.select_request(hitl_id)
                await asyncio.wait_for(watcher.painted.wait(), timeout=30)
                found[name].append((time.perf_counter() - started) * 1000)
                app.removeEventFilter(watcher)
                window.requestShown.disconnect(watcher.shown.append)
                await asyncio.sleep(0.5)  # the checks and the preview end before the next selection
    finally:
        window.close()
        await window.triage.undo.drain()
        backend.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    found = run_in_window_loop(lambda folder: measure(folder, options.rounds))
    for name, times in found.items():
        print(
            f"select {name:14} -> detail painted  median {statistics.median(times):7.1f} ms  ({len(times)} rounds:"
            f" {' '.join(f'{ms:.1f}' for ms in times)})"
        )
    print(f"({load_average()})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
