"""Windows never larger than the screen they open on (seen: a 1,300 px audit window on a 1,280 px screen)."""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget


def fit_to_screen(window: QWidget, margin: int = 48) -> None:
    """Shrink ``window`` to the available screen (less ``margin``) and centre it there, if it is larger."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    available = screen.availableGeometry()
    width = min(window.width(), max(window.minimumWidth(), available.width() - margin))
    height = min(window.height(), max(window.minimumHeight(), available.height() - margin))
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
        window.move(
            available.x() + (available.width() - width) // 2, available.y() + (available.height() - height) // 2
        )
