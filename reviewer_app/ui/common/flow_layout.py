"""A layout that wraps its widgets onto more lines when narrow (Qt's "flow layout" example, for the decision bar).

A row of buttons in a QHBoxLayout makes the window at least as wide as all of them; this one asks only for
its widest item and takes the height it needs for the width it gets.
"""

from __future__ import annotations

from PySide6.QtCore import QMargins, QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QSizePolicy, QStyle, QWidget, QWidgetItem


class FlowLayout(QLayout):
    """Items left to right, wrapping to a new line where the next one does not fit; ``stretch_last`` pushes the
    last item (a label such as the digest) to the right end of its line."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 6, *, stretch_last: bool = False) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._spacing = spacing
        self._stretch_last = stretch_last
        self.setContentsMargins(QMargins(0, 0, 0, 0))

    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def insertWidget(self, index: int, widget: QWidget) -> None:
        """Put ``widget`` at ``index`` (as QBoxLayout.insertWidget does; -1 or past the end appends)."""
        self.addChildWidget(widget)
        item = QWidgetItem(widget)
        if 0 <= index <= len(self._items):
            self._items.insert(index, item)
        else:
            self._items.append(item)
        self.invalidate()

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), apply=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, apply=True)

    def sizeHint(self) -> QSize:
        """One line of everything (what it would like), the minimum says what it needs."""
        width = sum(item.sizeHint().width() for item in self._visible()) + self._spacing * max(
            0, len(self._visible()) - 1
        )
        height = max((item.sizeHint().height() for item in self._visible()), default=0)
        margins = self.contentsMargins()
        return QSize(width + margins.left() + margins.right(), height + margins.top() + margins.bottom())

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._visible():
            size = size.expandedTo(item.minimumSize())
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _visible(self) -> list[QLayoutItem]:
        return [item for item in self._items if not item.isEmpty()]

    def _gap(self, item: QLayoutItem) -> int:
        if self._spacing >= 0:
            return self._spacing
        widget = item.widget()
        style = widget.style() if widget is not None else None
        if style is None:
            return 6
        return style.layoutSpacing(
            QSizePolicy.ControlType.PushButton, QSizePolicy.ControlType.PushButton, Qt.Orientation.Horizontal
        ) or style.pixelMetric(QStyle.PixelMetric.PM_LayoutHorizontalSpacing)

    def _arrange(self, rect: QRect, *, apply: bool) -> int:
        """Place (or only measure) the items in ``rect``; returns the height used."""
        margins = self.contentsMargins()
        area = rect.adjusted(margins.left(), margins.top(), -margins.right(), -margins.bottom())
        x, y, line_height = area.x(), area.y(), 0
        items = self._visible()
        lines: list[list[tuple[QLayoutItem, QPoint, QSize]]] = [[]]
        for item in items:
            hint = item.sizeHint()
            gap = self._gap(item)
            if x + hint.width() > area.right() + 1 and line_height > 0:
                x, y = area.x(), y + line_height + gap
                line_height = 0
                lines.append([])
            lines[-1].append((item, QPoint(x, y), hint))
            x += hint.width() + gap
            line_height = max(line_height, hint.height())
        if apply:
            for line in lines:
                for position, (item, point, hint) in enumerate(line):
                    last = self._stretch_last and item is items[-1] and position == len(line) - 1
                    place = point
                    if last:  # to the right end of its line
                        place = QPoint(max(point.x(), area.right() + 1 - hint.width()), point.y())
                    item.setGeometry(QRect(place, hint))
        return y + line_height - rect.y() + margins.bottom()
