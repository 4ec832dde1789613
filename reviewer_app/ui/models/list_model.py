"""A flat table over a short list of rows replaced whole on each read (suggestions, findings, figures), and its view."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Generic, TypeVar

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QStyledItemDelegate, QStyleOptionViewItem, QTreeView

from reviewer_app.ui.models.flat_model import FlatTableModel

T = TypeVar("T")


class ListTableModel(FlatTableModel, Generic[T]):
    """Subclasses give ``headers`` and ``data``; rows are few, so a new list resets the model."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rows: list[T] = []

    def set_rows(self, rows: Iterable[T]) -> None:
        self.beginResetModel()
        self._rows = list(rows)
        self.endResetModel()

    def row_at(self, row: int) -> T | None:
        return self._rows[row] if 0 <= row < len(self._rows) else None

    @property
    def rows(self) -> list[T]:
        return list(self._rows)

    def row_total(self) -> int:
        return len(self._rows)


def table_view(name: str, accessible: str, model: FlatTableModel) -> QTreeView:
    """A read-only list of rows (no tree), whole rows selected."""
    view = QTreeView()
    view.setObjectName(name)
    view.setAccessibleName(accessible)
    view.setRootIsDecorated(False)
    view.setUniformRowHeights(True)
    view.setAlternatingRowColors(True)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setModel(model)
    return view


class MiddleElision(QStyledItemDelegate):
    """Cells that lose their middle, not their end, when the column is narrow: a command's end (``| sh``,
    ``&& rm -rf /``) and a path's file name are what tell calls apart. Set on the columns that show a call."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideMiddle


def elide_calls_in_the_middle(view: QAbstractItemView, column: int) -> None:
    """``column`` of ``view`` shows calls: they keep their end when cut (see :class:`MiddleElision`)."""
    view.setItemDelegateForColumn(column, MiddleElision(view))
