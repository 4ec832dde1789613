"""The operator's side windows, built on first use: the audit log (Ctrl+5) and Statistics (Ctrl+6).

Separate windows rather than left tabs: both are wide tables and charts with nothing to show in the detail pane,
and they are read next to the inbox rather than instead of it.
"""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMainWindow, QWidget

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common.screen_fit import fit_to_screen


class OpsViews:
    """Owns the audit and statistics windows and the View-menu actions that open them."""

    def __init__(self, window: QWidget, backend: SQLHITLBackend) -> None:
        self._window = window
        self._backend = backend
        self.audit_window: QMainWindow | None = None
        self.stats_window: QMainWindow | None = None
        self.audit_action = QAction("&Audit log", window, shortcut=QKeySequence("Ctrl+5"))
        self.audit_action.triggered.connect(self.show_audit)
        self.stats_action = QAction("&Statistics", window, shortcut=QKeySequence("Ctrl+6"))
        self.stats_action.triggered.connect(self.show_stats)
        self.actions = [self.audit_action, self.stats_action]

    def show_audit(self) -> QMainWindow:
        if self.audit_window is None:
            from reviewer_app.ui.audit.window import AuditWindow

            self.audit_window = AuditWindow(self._backend, self._window)
            fit_to_screen(self.audit_window)
            self._keys_for(self.audit_window)
        return _raise(self.audit_window)

    def show_stats(self) -> QMainWindow:
        if self.stats_window is None:
            from reviewer_app.ui.stats.window import StatsWindow  # QtCharts loads only when asked for

            self.stats_window = StatsWindow(self._backend, self._window)
            fit_to_screen(self.stats_window)
            self._keys_for(self.stats_window)
        return _raise(self.stats_window)

    def _keys_for(self, side: QMainWindow) -> None:
        """Seen in use: Esc did not close a side window and Ctrl+5/Ctrl+6 did nothing there. Esc or Ctrl+W closes
        it (back to the inbox), and the keys that open the side windows work from either of them too."""
        close = QAction("Close this window", side)
        close.setShortcuts([QKeySequence("Escape"), QKeySequence("Ctrl+W")])
        close.setWhatsThis("close the audit or statistics window")
        close.triggered.connect(side.close)
        side.addAction(close)
        side.addActions(self.actions)

    def close(self) -> None:
        for window in (self.audit_window, self.stats_window):
            if window is not None:
                window.close()


def _raise(window: QMainWindow) -> QMainWindow:
    window.show()
    window.raise_()
    window.activateWindow()
    return window
