"""A read-only window with a block's whole text (the keymap uses it too: ``ui.window.keymap``)."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QDialog,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.ui.detail.json_view import monospace_font


class TextViewerDialog(QDialog):
    """A read-only window with a block's whole text, non-modal."""

    def __init__(self, title: str, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(title[:120])
        layout = QVBoxLayout(self)
        view = QPlainTextEdit()
        view.setReadOnly(True)
        view.setFont(monospace_font())
        view.setPlainText(text)
        layout.addWidget(view)
        self.resize(760, 520)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
