"""The message line above everything: errors and conflicts are said there, never in a modal box."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from reviewer_app.ui import theme


class Banner(QFrame):
    """A dismissable message line: errors stay until dismissed, information goes away by itself.

    Signals:
        dismissed(): the user closed it.
    """

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.setAccessibleName("Message")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        self.label = QLabel()
        self.label.setObjectName("bannerText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QPushButton("Dismiss")
        close.setObjectName("bannerDismiss")
        close.setFlat(True)
        close.clicked.connect(self.dismiss)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self.dismiss)
        self.history: list[str] = []
        self.hide()

    def show_message(self, text: str, *, error: bool = True, timeout_ms: int | None = None) -> None:
        colors = theme.current()
        background = colors.banner_bg if error else colors.info.lighter(170 if not colors.dark else 60)
        foreground = colors.banner_fg
        self.setStyleSheet(
            f"#banner {{ background: {background.name()}; border-radius: 4px; }}"
            f" #bannerText {{ color: {foreground.name()}; }}"
        )
        self.label.setText(text)
        self.history.append(text)
        self.show()
        if timeout_ms:
            self._timer.start(timeout_ms)
        else:
            self._timer.stop()

    def dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()
