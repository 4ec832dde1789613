"""The base of every decision dialog: OK/Cancel with Ctrl+Enter, and the one-text-box dialog.

Every dialog is opened with ``open()`` and reports through signals: never ``exec()``,
which would spin a nested event loop inside the qasync loop's callbacks.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence, QShortcut, QShowEvent
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)


class SubmitDialog(QDialog):
    """OK/Cancel dialog whose OK is also Ctrl+Enter; subclasses say when OK is allowed."""

    def __init__(self, title: str, ok_text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.layout_ = QVBoxLayout(self)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.ok_button = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok_button.setText(ok_text)
        self.ok_button.setObjectName("dialogOkButton")
        self.ok_button.setAccessibleName(ok_text)
        self.ok_button.setToolTip(f"{ok_text} (Ctrl+Enter)")
        self.buttons.accepted.connect(self.try_submit)
        self.buttons.rejected.connect(self.reject)
        for keys in ("Ctrl+Return", "Ctrl+Enter"):
            QShortcut(QKeySequence(keys), self, self.try_submit)

    def finish_layout(self) -> None:
        self.layout_.addWidget(self.buttons)

    def submit_on_ctrl_enter(self, widget: QWidget) -> None:
        """Text editors eat Ctrl+Enter as a newline: catch it before they do."""
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
            if ctrl and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                self.try_submit()
                return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        ctrl = bool(event.modifiers() & Qt.KeyboardModifier.ControlModifier)
        if ctrl and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.try_submit()
            return
        super().keyPressEvent(event)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.activateWindow()  # typing goes here at once, not to the window behind

    def can_submit(self) -> bool:
        return True

    def submit(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def try_submit(self) -> None:
        if self.can_submit():
            self.submit()
            self.accept()

    def refresh_ok(self) -> None:
        self.ok_button.setEnabled(self.can_submit())


class TextDialog(SubmitDialog):
    """One text box: a reject reason (optional), steer guidance or a follow-up prompt (required).

    Signals:
        submitted(str): the text.
    """

    submitted = Signal(str)

    def __init__(
        self,
        title: str,
        prompt: str,
        ok_text: str,
        *,
        required: bool,
        object_name: str,
        placeholder: str = "",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(title, ok_text, parent)
        self.setObjectName(object_name)
        self.required = required
        label = QLabel(f"{prompt}\nCtrl+Enter: {ok_text}")  # Return in the box is a new line: say what sends
        label.setWordWrap(True)
        self.editor = QPlainTextEdit()
        self.editor.setObjectName(f"{object_name}Text")
        self.editor.setAccessibleName(prompt)
        self.editor.setPlaceholderText(placeholder)
        self.editor.setTabChangesFocus(True)
        self.editor.textChanged.connect(self.refresh_ok)
        self.submit_on_ctrl_enter(self.editor)
        self.layout_.addWidget(label)
        self.layout_.addWidget(self.editor, 1)
        self.finish_layout()
        self.resize(560, 260)
        self.refresh_ok()
        self.editor.setFocus()

    def can_submit(self) -> bool:
        return bool(self.editor.toPlainText().strip()) or not self.required

    def submit(self) -> None:
        self.submitted.emit(self.editor.toPlainText().strip())
