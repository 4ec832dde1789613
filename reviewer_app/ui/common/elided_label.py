"""A label that gives up the middle of its text when its window is narrow: a long database path or URL keeps its
start and its end, the tooltip keeps all of it."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QWidget


class MiddleElidedLabel(QLabel):
    """Shows ``whole`` as is while it fits the width given to :meth:`fit`, else cut in the middle."""

    def __init__(self, whole: str, parent: QWidget | None = None) -> None:
        super().__init__(whole, parent)
        self.whole = whole
        self.setToolTip(whole)
        self.setAccessibleName(whole)

    def fit(self, width: int) -> None:
        """At most ``width`` px of text (the window's owner says how much it can spare)."""
        shown = self.fontMetrics().elidedText(self.whole, Qt.TextElideMode.ElideMiddle, width)
        if shown != self.text():
            self.setText(shown)
