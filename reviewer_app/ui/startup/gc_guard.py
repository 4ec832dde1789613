"""Run Python's cyclic garbage collector on the GUI thread only.

CPython collects cycles in whichever thread happens to allocate. In this app that is
often the database thread; if the garbage holds Qt objects their destructors then run
off the GUI thread ("Timers cannot be stopped from another thread", or a crash). So
automatic collection is switched off while the window lives and a timer on the GUI
thread collects instead, generation by generation (pyqtgraph's recipe).
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer


class MainThreadGC(QObject):
    """Owns the collection timer; :meth:`stop` gives collection back to CPython."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = 1000) -> None:
        super().__init__(parent)
        self._threshold = gc.get_threshold()
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer = QTimer(self)
        self._timer.timeout.connect(self.check)
        self._timer.start(interval_ms)

    def check(self) -> None:
        """Collect the generations that went over their threshold, as automatic GC would have."""
        count0, count1, count2 = gc.get_count()
        if count0 > self._threshold[0]:
            gc.collect(0)
            if count1 > self._threshold[1]:
                gc.collect(1)
                if count2 > self._threshold[2]:
                    gc.collect(2)

    def stop(self) -> None:
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()
