"""A flat table as a QAbstractItemModel: the plumbing every list-shaped model of the window shares.

Rows have no children and no parent, columns are a fixed header. Subclasses say how many rows they hold
(:meth:`FlatTableModel.row_total`) and what a cell shows (``data``); index, parent, counts, header and flags
are here once, so the rules, history and preview lists cannot drift apart (each is checked by
QAbstractItemModelTester in its tests).
"""

from __future__ import annotations

from typing import Any, ClassVar, overload

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt

ModelIndex = QModelIndex | QPersistentModelIndex

_ROW_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren


class FlatTableModel(QAbstractItemModel):
    """Rows under the invisible root only, with the column titles of :attr:`headers`."""

    headers: ClassVar[tuple[str, ...]] = ()

    def row_total(self) -> int:
        """How many rows the model holds now."""
        raise NotImplementedError

    def index(self, row: int, column: int, parent: ModelIndex = QModelIndex()) -> QModelIndex:  # noqa: B008
        if parent.isValid() or not (0 <= row < self.row_total() and 0 <= column < len(self.headers)):
            return QModelIndex()
        return self.createIndex(row, column)

    @overload
    def parent(self) -> QObject | None: ...
    @overload
    def parent(self, index: ModelIndex, /) -> QModelIndex: ...
    def parent(self, index: ModelIndex | None = None) -> QObject | QModelIndex | None:
        """No row has a parent; without an argument, the model's QObject parent."""
        if index is None:
            return super().parent()
        return QModelIndex()

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else self.row_total()

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.headers)

    def hasChildren(self, parent: ModelIndex = QModelIndex()) -> bool:  # noqa: B008
        return not parent.isValid() and self.row_total() > 0

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.headers[section] if 0 <= section < len(self.headers) else None
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        return _ROW_FLAGS if index.isValid() else Qt.ItemFlag.NoItemFlags
