"""The message line above everything: errors and conflicts are said there, never in a modal box.

It floats over the bottom of the request lists (an overlay), so showing or hiding it never moves the inbox
under the operator's pointer, and it never covers the request being read (its header, risk chip and command
sit in the detail pane beside it). Esc dismisses it; news about one decision goes by itself (``timeout_ms``).
A message tied to a condition (``key``: the database could not be read) is cleared by whoever sees the
condition end (:meth:`Banner.clear`).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from reviewer_app.ui.common import theme


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
        self.key: str | None = None  # the condition the message shown is about (None: stays until dismissed)
        self._host: QWidget | None = None
        self._bottom = False
        self.hide()

    def overlay(self, host: QWidget, margin: int = 6, *, bottom: bool = False) -> None:
        """Float over the top (or the bottom) of ``host`` instead of taking room in a layout."""
        self._host = host
        self._margin = margin
        self._bottom = bottom
        self.setParent(host)
        host.installEventFilter(self)
        self._place()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._host and event.type() == QEvent.Type.Resize:
            self._place()
        return super().eventFilter(watched, event)

    def _place(self) -> None:
        host = self._host
        if host is None:
            return
        width = max(0, host.width() - 2 * self._margin)
        height = self.heightForWidth(width) if self.hasHeightForWidth() else -1
        height = height if height > 0 else self.sizeHint().height()
        top = host.height() - height - self._margin if self._bottom else self._margin
        self.setGeometry(self._margin, max(0, top), width, height)
        self.raise_()

    def show_message(
        self, text: str, *, error: bool = True, timeout_ms: int | None = None, key: str | None = None
    ) -> None:
        colors = theme.current()
        background = colors.banner_bg if error else colors.info.lighter(170 if not colors.dark else 60)
        foreground = colors.banner_fg
        self.setStyleSheet(
            f"#banner {{ background: {background.name()}; border-radius: 4px;"
            f" border: 1px solid {foreground.name()}40; }}"
            f" #bannerText {{ color: {foreground.name()}; }}"
        )
        self.label.setText(text)
        self.history.append(text)
        self.key = key
        self.show()
        self._place()
        if timeout_ms:
            self._timer.start(timeout_ms)
        else:
            self._timer.stop()

    @property
    def expires(self) -> bool:
        """Whether the message shown goes by itself."""
        return self.isVisible() and self._timer.isActive()

    def clear(self, key: str) -> None:
        """The condition ``key`` is over: hide its message (a message about something else stays)."""
        if self.key == key and self.isVisible():
            self.dismiss()

    def dismiss_if_shown(self) -> bool:
        """Esc: close the message if one is shown; False when there was none (the key means something else)."""
        if not self.isVisible():
            return False
        self.dismiss()
        return True

    def dismiss(self) -> None:
        self.key = None
        self.hide()
        self.dismissed.emit()
