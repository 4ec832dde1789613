"""The search box and filter combos above a list (the inbox and History build theirs the same way)."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox, QLineEdit


def filter_combo(name: str, accessible: str, items: list[str]) -> QComboBox:
    """A filter choice that shrinks to a few characters in a narrow window instead of widening it."""
    combo = QComboBox()
    combo.setObjectName(name)
    combo.setAccessibleName(accessible)
    combo.addItems(items)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
    combo.setMinimumContentsLength(6)
    return combo


def search_box(name: str, accessible: str, placeholder: str) -> QLineEdit:
    """A search field with a clear button; ``placeholder`` says what it searches and its key (``/``)."""
    box = QLineEdit()
    box.setObjectName(name)
    box.setAccessibleName(accessible)
    box.setPlaceholderText(placeholder)
    box.setClearButtonEnabled(True)
    return box
