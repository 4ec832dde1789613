"""The message line above everything: errors and conflicts are said there, never in a modal box.

It floats over the bottom of the request lists (an overlay), so showing or hiding it never moves the inbox
under the operator's pointer, and it never covers the request being read (its header, risk chip and command
sit in the detail pane beside it). Esc dismisses it; news about one decision goes by itself (``timeout_ms``).
A message tied to a condition (``key``: the database could not be read) is cleared by whoever sees the
condition end (:meth:`Banner.clear`). Messages stack, oldest first: a later one never replaces one still shown (the
runs whose process died were lost under the next decision's news); each goes as it goes, Esc closes them all.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from reviewer_app.ui.common import theme


@dataclass(eq=False)
class _Message:
    """One message on the banner: an error or news; ``timer`` set when it goes by itself."""

    text: str
    error: bool
    key: str | None
    timer: QTimer | None = None


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
        self.history: list[str] = []
        self._messages: list[_Message] = []
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
        """Add ``text`` under the messages shown; one with the same ``key`` (or the same text) is replaced."""
        self.history.append(text)
        for message in [m for m in self._messages if (key is not None and m.key == key) or m.text == text]:
            self._drop(message)
        message = _Message(text, error, key)
        if timeout_ms:
            message.timer = QTimer(self, singleShot=True)
            message.timer.timeout.connect(lambda: self._expire(message))
            message.timer.start(timeout_ms)
        self._messages.append(message)
        self._render()

    @property
    def key(self) -> str | None:
        """The condition the newest message is about (None: it stays until dismissed or goes by itself)."""
        return self._messages[-1].key if self._messages else None

    @property
    def expires(self) -> bool:
        """Whether everything shown goes by itself."""
        return self.isVisible() and all(m.timer is not None and m.timer.isActive() for m in self._messages)

    def clear(self, key: str) -> None:
        """The condition ``key`` is over: hide its message (a message about something else stays)."""
        for message in [m for m in self._messages if m.key == key]:
            self._drop(message)
        self._render()

    def _expire(self, message: _Message) -> None:
        if message in self._messages:
            self._drop(message)
            self._render()

    def _drop(self, message: _Message) -> None:
        self._messages.remove(message)
        if message.timer is not None:
            message.timer.stop()
            message.timer.deleteLater()

    def _render(self) -> None:
        if not self._messages:
            if self.isVisible():
                self.hide()
                self.dismissed.emit()
            return
        colors = theme.current()
        error = any(m.error for m in self._messages)
        background = colors.banner_bg if error else colors.info.lighter(170 if not colors.dark else 60)
        foreground = colors.banner_fg
        self.setStyleSheet(
            f"#banner {{ background: {background.name()}; border-radius: 4px;"
            f" border: 1px solid {foreground.name()}40; }}"
            f" #bannerText {{ color: {foreground.name()}; }}"
        )
        self.label.setText("\n".join(m.text for m in self._messages))
        self.show()
        self._place()

    def dismiss_if_shown(self) -> bool:
        """Esc: close the message if one is shown; False when there was none (the key means something else)."""
        if not self.isVisible():
            return False
        self.dismiss()
        return True

    def dismiss(self) -> None:
        """Close every message shown."""
        for message in list(self._messages):
            self._drop(message)
        self.hide()
        self.dismissed.emit()
