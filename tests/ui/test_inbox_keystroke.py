"""What a keystroke in the inbox search costs besides the search itself: no repaint of the list for nothing."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QItemSelectionModel, QObject, QRect, Qt
from PySide6.QtGui import QPaintEvent, QRegion
from PySide6.QtWidgets import (
    QAbstractItemView,
    QLineEdit,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.ui.inbox.cells import COL_REQUEST, COL_SUMMARY
from reviewer_app.ui.inbox.model import InboxModel
from reviewer_app.ui.inbox.view import InboxView
from tests.ui.conftest import make_summary


class PaintedRegions(QObject):
    """Records the region of every paint event of one widget."""

    def __init__(self, watched: QWidget) -> None:
        super().__init__()
        self.regions: list[QRegion] = []
        watched.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint:
            assert isinstance(event, QPaintEvent)
            self.regions.append(QRegion(event.region()))
        return False


def search_above_inbox(qtbot: Any) -> tuple[QWidget, QLineEdit, InboxView, InboxModel]:
    """A search box above an inbox of 300 requests, in an active window (focus only moves in one)."""
    box = QWidget()
    layout = QVBoxLayout(box)
    search = QLineEdit()
    view = InboxView()
    model = InboxModel()
    view.setModel(model)
    model.set_requests([make_summary(n) for n in range(300)])
    layout.addWidget(search)
    layout.addWidget(view)
    box.resize(700, 500)
    qtbot.addWidget(box)
    box.show()
    box.activateWindow()
    qtbot.waitActive(box)
    return box, search, view, model


def test_moving_the_focus_to_the_search_repaints_only_the_current_row(qtbot: Any, qtmodeltester: Any) -> None:
    """Focus changes the look of the list's frame and current row only; at 100,000 requests a whole repaint of the
    list landed on the first key typed into the search."""
    _box, search, view, model = search_above_inbox(qtbot)
    qtmodeltester.check(model)
    current = model.index_for("h000003")
    view.selectionModel().setCurrentIndex(current, QItemSelectionModel.SelectionFlag.ClearAndSelect)
    view.setFocus()
    qtbot.waitUntil(view.hasFocus)
    qtbot.wait(50)
    painted = PaintedRegions(view.viewport())
    row = view.visualRect(current)
    current_row = QRect(0, row.top(), view.viewport().width(), row.height())

    for focused in (search, view, search):
        painted.regions.clear()
        focused.setFocus()
        qtbot.waitUntil(focused.hasFocus)
        qtbot.wait(50)
        assert painted.regions, "the current row's focus frame is repainted"
        assert all(current_row.contains(region.boundingRect()) for region in painted.regions), [
            region.boundingRect() for region in painted.regions
        ]


def test_after_the_focus_moves_the_screen_shows_what_a_whole_repaint_would(qtbot: Any) -> None:
    """Repainting only the frame and the current row leaves nothing stale: selected rows, the current row's focus
    mark and the frame look as a full repaint draws them (the window's backing store, compared pixel by pixel)."""
    box, search, view, model = search_above_inbox(qtbot)
    view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
    rows = QItemSelectionModel.SelectionFlag.Rows
    view.selectionModel().setCurrentIndex(
        model.index_for("h000003"), QItemSelectionModel.SelectionFlag.ClearAndSelect | rows
    )
    view.selectionModel().select(model.index_for("h000005"), QItemSelectionModel.SelectionFlag.Select | rows)
    screen = box.screen()
    for focused in (view, search, view, search):
        focused.setFocus()
        qtbot.waitUntil(focused.hasFocus)
        qtbot.wait(50)
        shown = screen.grabWindow(box.winId()).toImage()
        view.viewport().repaint()
        view.repaint()
        assert screen.grabWindow(box.winId()).toImage() == shown, f"stale pixels after focusing {focused}"


def test_a_painted_cell_takes_every_role_in_one_call_and_nothing_of_the_cell_before(qtbot: Any) -> None:
    """What the delegate paints (one multiData call per cell) is what data() answers, role by role."""
    model = InboxModel()
    model.set_requests([make_summary(n) for n in range(20)])
    model.set_mark_source({"h000001"}.__contains__)
    delegate = QStyledItemDelegate()
    marked = model.index_for("h000001", COL_REQUEST)
    plain = model.index_for("h000002", COL_REQUEST)
    session = model.index(0, COL_REQUEST)
    for index in (marked, plain, session, marked.siblingAtColumn(COL_SUMMARY), plain.siblingAtColumn(COL_SUMMARY)):
        option = QStyleOptionViewItem()
        delegate.initStyleOption(option, index)
        assert option.text == index.data()
        checked = index.data(Qt.ItemDataRole.CheckStateRole)
        assert bool(option.features & QStyleOptionViewItem.ViewItemFeature.HasCheckIndicator) == (checked is not None)
        background = index.data(Qt.ItemDataRole.BackgroundRole)
        assert option.backgroundBrush.style() == (
            Qt.BrushStyle.NoBrush if background is None else Qt.BrushStyle.SolidPattern
        )
        assert option.font.bold() == (index.data(Qt.ItemDataRole.FontRole) is not None)
    assert marked.data(Qt.ItemDataRole.CheckStateRole) == Qt.CheckState.Checked
    assert marked.siblingAtColumn(COL_SUMMARY).data(Qt.ItemDataRole.BackgroundRole) is not None
    assert plain.data(Qt.ItemDataRole.BackgroundRole) is None
