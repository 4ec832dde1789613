"""The tray icon with the pending count as its badge, and a notice when requests arrive unseen."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication, QMenu, QSystemTrayIcon, QWidget

from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.common import theme

NOTICE_MS = 8000


class TrayNotifier(QObject):
    """Tells the operator about requests while the window is not in front: tray badge and messages.

    Without a system tray (or with ``tray=False``) a new request makes the window ask for attention.

    Signals:
        showRequested(): the operator clicked the tray icon or chose "Show Reviewer".
        quitRequested(): the operator chose "Quit" in the tray menu.
    """

    showRequested = Signal()
    quitRequested = Signal()

    def __init__(self, window: QWidget, *, tray: bool = True) -> None:
        super().__init__(window)
        self._window = window
        self._pending = 0
        self.notifications: list[str] = []  # every notice given, newest last
        self.icon: QSystemTrayIcon | None = None
        self.native: Callable[[list[RequestSummary]], bool] | None = None  # True: a native notification goes out
        if tray and QSystemTrayIcon.isSystemTrayAvailable():
            self.icon = self._build_icon(window)

    def _build_icon(self, window: QWidget) -> QSystemTrayIcon:
        icon = QSystemTrayIcon(theme.badge_icon(0), self)
        menu = QMenu(window)
        show = menu.addAction("Show Reviewer")
        show.triggered.connect(self.showRequested)
        menu.addSeparator()
        quit_action = menu.addAction("Quit")
        quit_action.triggered.connect(self.quitRequested)
        icon.setContextMenu(menu)
        icon.activated.connect(lambda _reason: self.showRequested.emit())
        icon.setToolTip("Reviewer")
        icon.show()
        return icon

    def set_pending(self, count: int) -> None:
        self._pending = count
        if self.icon is not None:
            self.icon.setIcon(theme.badge_icon(count))
            self.icon.setToolTip(f"Reviewer: {count} pending")

    def notify_new(self, rows: list[RequestSummary]) -> None:
        """New pending requests: a notice unless the operator is looking at the window already."""
        window = self._window
        if not rows or (window.isActiveWindow() and not window.isMinimized()):
            return
        first = rows[0]
        what = first.tool_name or first.hitl_type
        text = f"{what}: {first.summary}" if len(rows) == 1 else f"{len(rows)} new requests, e.g. {what}"
        self.notifications.append(text)
        if self.native is not None and self.native(rows):
            return
        self.show_last_as_message()

    def show_last_as_message(self) -> None:
        """The newest notice as a tray message (or the window asks for attention)."""
        window = self._window
        text = self.notifications[-1] if self.notifications else "Requests are waiting"
        if self.icon is not None and self.icon.supportsMessages():
            self.icon.showMessage("Reviewer: a request needs you", text, theme.badge_icon(self._pending), NOTICE_MS)
        else:
            QApplication.alert(window, 0)

    def hide(self) -> None:
        if self.icon is not None:
            self.icon.hide()
