"""Windows never larger than the screen they open on (seen: a 1,300 px audit window on a 1,280 px screen), and
columns that scroll rather than overlap when the window is small."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QGuiApplication, QResizeEvent
from PySide6.QtWidgets import QBoxLayout, QFrame, QScrollArea, QVBoxLayout, QWidget


def fit_to_screen(window: QWidget, margin: int = 48) -> None:
    """Shrink ``window`` to the available screen (less ``margin``) and centre it there, if it is larger."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is None:
        return
    available = screen.availableGeometry()
    width = min(window.width(), max(window.minimumWidth(), available.width() - margin))
    height = min(window.height(), max(window.minimumHeight(), available.height() - margin))
    if (width, height) != (window.width(), window.height()):
        window.resize(width, height)
        window.move(
            available.x() + (available.width() - width) // 2, available.y() + (available.height() - height) // 2
        )


class _Column(QWidget):
    """The scrolled column: as tall as the scroll area when there is room, never shorter than its parts need at
    its width (a scroll area asks a height-for-width widget its preferred height, which scrolled with room to
    spare; so it is offered a plain minimum that follows the width instead)."""

    def __init__(self) -> None:
        super().__init__()
        self._needed = 0

    def hasHeightForWidth(self) -> bool:
        return False

    def heightForWidth(self, width: int) -> int:
        return self._needed_at(width)

    def minimumSizeHint(self) -> QSize:
        layout = self.layout()
        if layout is None:
            return super().minimumSizeHint()
        return QSize(layout.totalMinimumSize().width(), self._needed_at(self.width()))

    def _needed_at(self, width: int) -> int:
        layout = self.layout()
        if layout is None or not layout.hasHeightForWidth():
            return layout.totalMinimumSize().height() if layout is not None else 0
        return layout.totalMinimumHeightForWidth(width)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        needed = self._needed_at(event.size().width())
        if needed != self._needed:  # a narrower column wraps more: the scroll area must hear of it
            self._needed = needed
            self.updateGeometry()


def scrolling_column(parent_layout: QBoxLayout, name: str, stretch: int = 1) -> QVBoxLayout:
    """A column in ``parent_layout`` that scrolls when the window is too small for it, and a layout to fill it.

    Why: a wrapped label's height depends on its width, which a window's minimum size does not count; at a small
    window (1024×640) the parts under such a label were squeezed below their minimum and drawn over each other
    (the run timeline covered its legend). Scrolling keeps every part whole; given room, the column fills it.
    """
    area = QScrollArea()
    area.setObjectName(name)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # labels wrap to the width instead
    body = _Column()
    column = QVBoxLayout(body)
    column.setContentsMargins(0, 0, 0, 0)
    area.setWidget(body)
    parent_layout.addWidget(area, stretch)
    return column
