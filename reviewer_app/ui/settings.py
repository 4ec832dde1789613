"""What the window remembers between sessions, in QSettings: geometry, splitters, search and filters, and the
undo grace period of decisions (``ui/undo.py``)."""

from __future__ import annotations

import math

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QMainWindow, QSplitter

from reviewer_app.ui.inbox.panel import FILTER_KEYS, InboxPanel

UNDO_GRACE_KEY = "decisions/undoGraceSeconds"
DEFAULT_UNDO_GRACE_S = 5.0
UNDO_GRACE_CHOICES = (0, 3, 5, 10)  # seconds; 0 commits every decision at once


def undo_grace_seconds(settings: QSettings) -> float:
    """How long a decision made in the window can be undone (default 5 s; 0: off; nonsense: the default)."""
    try:
        value = float(settings.value(UNDO_GRACE_KEY, DEFAULT_UNDO_GRACE_S))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return DEFAULT_UNDO_GRACE_S
    return value if math.isfinite(value) and 0 <= value <= 600 else DEFAULT_UNDO_GRACE_S


def set_undo_grace_seconds(settings: QSettings, seconds: float) -> None:
    settings.setValue(UNDO_GRACE_KEY, float(seconds))
    settings.sync()


def _bytes(value: object) -> QByteArray | None:
    return QByteArray(value) if isinstance(value, QByteArray | bytes) else None


class WindowSettings:
    """Saves and restores the window's layout and the inbox's search and filters under fixed keys.

    ``splitters`` maps a settings key (``window/splitter``) to the splitter stored under it.
    """

    def __init__(
        self, settings: QSettings, window: QMainWindow, splitters: dict[str, QSplitter], inbox: InboxPanel
    ) -> None:
        self.settings = settings
        self._window = window
        self._splitters = splitters
        self._inbox = inbox

    def restore(self) -> None:
        s = self.settings
        geometry = _bytes(s.value("window/geometry"))
        if geometry is not None:
            self._window.restoreGeometry(geometry)
        state = _bytes(s.value("window/state"))
        if state is not None:
            self._window.restoreState(state)
        for key, splitter in self._splitters.items():
            sizes = _bytes(s.value(key))
            if sizes is not None:
                splitter.restoreState(sizes)
        self._inbox.restore_filter_texts({key: str(s.value(f"filters/{key}", "") or "") for key in FILTER_KEYS})

    def save(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self._window.saveGeometry())
        s.setValue("window/state", self._window.saveState())
        for key, splitter in self._splitters.items():
            s.setValue(key, splitter.saveState())
        for key, text in self._inbox.filter_texts().items():
            s.setValue(f"filters/{key}", text)
        s.sync()
