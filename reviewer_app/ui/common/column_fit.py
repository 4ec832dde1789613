"""Columns as wide as their words: a fixed width cut names ("cla…") with room to spare, or wasted it."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtWidgets import QStyle, QTreeView


def column_wants(view: QTreeView, texts: Iterable[str], *, icon: bool) -> int:
    """The width that shows the longest of ``texts`` whole (and an icon) in a cell of ``view``."""
    margins = 2 * (view.style().pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, view) + 1) + 8
    icon_room = view.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize, None, view) + 4 if icon else 0
    return max((view.fontMetrics().horizontalAdvance(text) for text in texts), default=0) + margins + icon_room


def fit_column(view: QTreeView, column: int, wanted: int, *, least: int, most: int) -> None:
    """``column`` as wide as its texts want, no narrower than ``least`` and no wider than ``most``: a fixed width
    cut every agent's name ("cla…") even with room to spare."""
    width = max(least, min(wanted, most))
    if view.header().sectionSize(column) != width:
        view.header().resizeSection(column, width)
