"""Start the window on the qasync loop (placeholder until the reviewer window lands)."""

from __future__ import annotations

import asyncio
import sys

from PySide6.QtWidgets import QApplication, QLabel, QMainWindow
from qasync import QEventLoop

from reviewer_app.config import AppContext
from reviewer_app.hitl import SQLHITLBackend


def run_gui(ctx: AppContext, *, demo: bool = False) -> int:
    app = QApplication.instance() or QApplication(sys.argv)
    loop = QEventLoop(app)
    asyncio.set_event_loop(loop)
    backend = SQLHITLBackend(ctx.database, reviewer=ctx.reviewer)
    window = QMainWindow()
    window.setWindowTitle("Reviewer")
    window.setCentralWidget(QLabel(f"Reviewer — {backend.store.count_pending()} pending"))
    window.resize(1100, 700)
    window.show()
    with loop:
        app.aboutToQuit.connect(backend.close)
        loop.run_forever()
    return 0
