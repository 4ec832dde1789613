"""Reject: an optional reason, typed or picked by number."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QSettings, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QListWidget,
    QListWidgetItem,
    QWidget,
)

from reviewer_app.ui.dialogs.reasons import numbered_reasons, recent_reject_reasons, remember_reject_reason
from reviewer_app.ui.dialogs.submit import TextDialog


class _ReasonList(QListWidget):
    """Numbered reasons: a digit picks one, any other letter goes on into the reason's text box."""

    def keyboardSearch(self, search: str) -> None:
        """No type-ahead: letters are forwarded to the text box by the dialog."""


class RejectDialog(TextDialog):
    """Reject: an optional reason, typed or picked by number (stock reasons 1-5, recent ones 6-9).

    A digit in the list picks and never types: the list keeps the focus, so a second digit replaces the first.
    Any other letter goes on into the text box.

    Signals:
        submitted(str): the reason (may be empty).
    """

    def __init__(self, settings: QSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(
            "Reject",
            "Why? (optional; the agent sees it). Press 1-9 for a reason below, or type your own.",
            "Reject",
            required=False,
            object_name="rejectDialog",
            placeholder="e.g. not in this directory",
            parent=parent,
        )
        self.settings = settings
        self.reasons = _ReasonList()
        self.reasons.setObjectName("rejectReasons")
        self.reasons.setAccessibleName("Reasons: press a number")
        for number, (text, recent) in enumerate(numbered_reasons(recent_reject_reasons(settings)), start=1):
            item = QListWidgetItem(f"{number}   {text}" + ("   (recent)" if recent else ""))
            item.setData(Qt.ItemDataRole.UserRole, text)
            self.reasons.addItem(item)
        rows = max(1, self.reasons.count())
        self.reasons.setFixedHeight(self.reasons.sizeHintForRow(0) * rows + 2 * self.reasons.frameWidth() + 4)
        self.reasons.itemActivated.connect(lambda item: self.pick(self.reasons.row(item) + 1, focus_text=True))
        self.reasons.installEventFilter(self)
        self.layout_.insertWidget(1, self.reasons)
        self.resize(600, 380)
        self.reasons.setFocus()

    def reason_texts(self) -> list[str]:
        return [str(self.reasons.item(row).data(Qt.ItemDataRole.UserRole)) for row in range(self.reasons.count())]

    def pick(self, number: int, *, focus_text: bool = False) -> None:
        """Put reason ``number`` (1-based) in the text box, ready to send with Ctrl+Enter (or amend: Return)."""
        texts = self.reason_texts()
        if 1 <= number <= len(texts):
            self.reasons.setCurrentRow(number - 1)
            self.editor.setPlainText(texts[number - 1])
            self.editor.moveCursor(self.editor.textCursor().MoveOperation.End)
            if focus_text:
                self.editor.setFocus()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        reasons = getattr(self, "reasons", None)  # events reach the filter while the base class builds itself
        if watched is reasons and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            plain = not event.modifiers() & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier)
            if plain and Qt.Key.Key_1 <= event.key() <= Qt.Key.Key_9:
                self.pick(int(event.key()) - int(Qt.Key.Key_0))
                return True
            if plain and event.text().isprintable() and event.text().strip():
                self.editor.setFocus()  # typing a reason of one's own: it goes into the text box
                self.editor.insertPlainText(event.text())
                return True
        return super().eventFilter(watched, event)

    def submit(self) -> None:
        reason = self.editor.toPlainText().strip()
        remember_reject_reason(self.settings, reason)
        super().submit()
