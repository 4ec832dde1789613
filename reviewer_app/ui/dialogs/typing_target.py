"""Typing that lands where it was meant: a printable key pressed on a dialog's button or tab bar goes to its editor.

An operator who presses Tab in the edit dialog and keeps typing means the text for the value being edited; a
button or tab bar that swallowed the keys (or a space that clicked a button) lost the edit without a word.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QApplication, QWidget

_COMMAND_MODIFIERS = (
    Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.MetaModifier
)


def is_typing(event: QKeyEvent) -> bool:
    """A key that types a character (Shift allowed), not a command, a move or Return."""
    text = event.text()
    return bool(text) and text.isprintable() and not event.modifiers() & _COMMAND_MODIFIERS


class TypingTarget(QObject):
    """Event filter for the non-text widgets of a dialog: typing there is sent to ``editor()`` and focuses it.

    ``editor`` answers the editor the text is for (None: leave the key alone, e.g. while a preview is shown).
    """

    def __init__(self, editor: Callable[[], QWidget | None], parent: QObject) -> None:
        super().__init__(parent)
        self._editor = editor

    def watch(self, *widgets: QWidget) -> None:
        for widget in widgets:
            widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride) or not isinstance(event, QKeyEvent):
            return False
        editor = self._editor()
        if not is_typing(event) or editor is None or editor is watched or not editor.isVisible():
            return False
        if kind == QEvent.Type.ShortcutOverride:
            event.accept()  # a letter typed here is text for the editor, never a shortcut of the window behind
            return True
        editor.setFocus(Qt.FocusReason.OtherFocusReason)
        copy = QKeyEvent(event.type(), event.key(), event.modifiers(), event.text(), event.isAutoRepeat())
        QApplication.sendEvent(editor, copy)
        return True
