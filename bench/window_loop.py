"""Running a benchmark coroutine on a qasync loop in a fresh temp folder, as the app runs its window.

The loop is closed at the end, as the app closes it: that ends its executor's worker QThreads (``asyncio.to_thread``
runs there). Left running, Qt aborts at exit ("QThread: Destroyed while thread is still running").
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import qasync
from PySide6.QtWidgets import QApplication

T = TypeVar("T")


def run_in_window_loop(measure: Callable[[Path], Coroutine[Any, Any, T]]) -> T:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    # The measurement closes its window and then drains its work: Qt quitting on the last window closed would stop
    # the loop under it ("Event loop stopped before Future completed"), whenever the close's event came first.
    app.setQuitOnLastWindowClosed(False)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    with loop, tempfile.TemporaryDirectory() as folder:
        return loop.run_until_complete(measure(Path(folder)))
