"""What the window remembers between sessions, in QSettings: geometry, splitters, search, filters, theme, and
the undo grace period of decisions (``ui/triage/undo.py``).

Saved whenever one of them changes (after a short pause), not only on a clean close: a window that is
killed keeps what the operator set.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, QTimer
from PySide6.QtWidgets import QMainWindow, QSplitter

from reviewer_app.ui.inbox.filters import FILTER_KEYS
from reviewer_app.ui.inbox.panel import InboxPanel

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


HOLD_APPROVALS_KEY = "decisions/holdApprovals"


def hold_approvals(settings: QSettings) -> bool:
    """Whether plain approvals wait out the grace period too (default no: the agent waits on every ``a``)."""
    return bool(settings.value(HOLD_APPROVALS_KEY, False, type=bool))


def set_hold_approvals(settings: QSettings, hold: bool) -> None:
    settings.setValue(HOLD_APPROVALS_KEY, bool(hold))
    settings.sync()


def _bytes(value: object) -> QByteArray | None:
    return QByteArray(value) if isinstance(value, QByteArray | bytes) else None


SAVE_AFTER_MS = 400  # a drag of the splitter or the window edge saves once, at its end


class WindowSettings(QObject):
    """Saves and restores the window's layout and the inbox's search and filters under fixed keys.

    ``splitters`` maps a settings key (``window/splitter``) to the splitter stored under it.
    """

    def __init__(
        self, settings: QSettings, window: QMainWindow, splitters: dict[str, QSplitter], inbox: InboxPanel
    ) -> None:
        super().__init__(window)
        self.settings = settings
        self._window = window
        self._splitters = splitters
        self._inbox = inbox
        self._restoring = False
        self._save_timer = QTimer(self, singleShot=True, interval=SAVE_AFTER_MS)
        self._save_timer.timeout.connect(self.save)

    def watch(self) -> None:
        """Save (after a pause) whenever the geometry, a splitter, the search or a filter changes."""
        self._window.installEventFilter(self)
        for splitter in self._splitters.values():
            splitter.splitterMoved.connect(lambda _pos, _index: self.save_soon())
        self._inbox.filterTextsChanged.connect(self.save_soon)

    def save_soon(self) -> None:
        if not self._restoring:
            self._save_timer.start()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._window and event.type() in (QEvent.Type.Resize, QEvent.Type.Move):
            self.save_soon()
        return super().eventFilter(watched, event)

    def value(self, key: str, default: str = "") -> str:
        return str(self.settings.value(key, default) or default)

    def set_value(self, key: str, value: str) -> None:
        self.settings.setValue(key, value)
        self.settings.sync()

    def restore(self) -> None:
        self._restoring = True
        try:
            self._restore()
        finally:
            self._restoring = False

    def _restore(self) -> None:
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
        self._save_timer.stop()
        s = self.settings
        s.setValue("window/geometry", self._window.saveGeometry())
        s.setValue("window/state", self._window.saveState())
        for key, splitter in self._splitters.items():
            s.setValue(key, splitter.saveState())
        for key, text in self._inbox.filter_texts().items():
            s.setValue(f"filters/{key}", text)
        s.sync()
