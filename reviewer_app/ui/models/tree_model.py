"""A tree as a QAbstractItemModel: ``index()``/``parent()``/counts written once (napari's ``_base_item_model``).

Why one base: the index plumbing was written four times (timeline, runs board, inbox, flat tables), each with the
same overload dance for ``parent()`` and the same bounds checks, and each had to be right for
QAbstractItemModelTester. Here every index carries its parent's *key* in ``internalId`` (0: the invisible
root), so an index needs no Python object behind it and stays valid across increments. A subclass says only:

- :meth:`child_total` — how many children the node with this key has (key 0: the top-level rows);
- :meth:`child_key` — the key of a parent's child row, or None when that row can have no children;
- :meth:`place_of` — where the node with this key sits: (its row, its parent's key).

Columns come from :attr:`headers`. A model on a hot path may override :meth:`parent_index` (the inbox does).
"""

from __future__ import annotations

from typing import Any, ClassVar, overload

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt

ModelIndex = QModelIndex | QPersistentModelIndex
ROOT_KEY = 0


class TreeItemModel(QAbstractItemModel):
    """Rows under rows, addressed by keys (see the module docstring); the column titles are :attr:`headers`."""

    headers: ClassVar[tuple[str, ...]] = ()

    # -- what a subclass says ---------------------------------------------------------------------
    def child_total(self, key: int) -> int:
        """How many children the node with ``key`` has (``ROOT_KEY``: the top-level rows)."""
        raise NotImplementedError

    def child_key(self, parent_key: int, row: int) -> int | None:
        """The key of row ``row`` under ``parent_key``; None when there is no such row or it has no children."""
        return None

    def place_of(self, key: int) -> tuple[int, int] | None:
        """Where the node with ``key`` sits: (its row under its parent, its parent's key); None if gone."""
        return None

    # -- shared helpers -----------------------------------------------------------------------------
    def key_at(self, index: ModelIndex) -> int | None:
        """The key of the node ``index`` shows (``ROOT_KEY`` for the invalid root index)."""
        if not index.isValid():
            return ROOT_KEY
        return self.child_key(index.internalId(), index.row())

    def parent_index(self, index: ModelIndex) -> QModelIndex:
        """The parent of a valid-or-not ``index``; override for speed where it is called per painted cell."""
        if not index.isValid() or index.internalId() == ROOT_KEY:
            return QModelIndex()
        place = self.place_of(index.internalId())
        return QModelIndex() if place is None else self.createIndex(place[0], 0, place[1])

    # -- Qt model -------------------------------------------------------------------------------------
    def index(self, row: int, column: int, parent: ModelIndex = QModelIndex()) -> QModelIndex:  # noqa: B008
        if row < 0 or not 0 <= column < len(self.headers) or parent.column() > 0:
            return QModelIndex()
        key = self.key_at(parent)
        if key is None or row >= self.child_total(key):
            return QModelIndex()
        return self.createIndex(row, column, key)

    @overload
    def parent(self) -> QObject | None: ...
    @overload
    def parent(self, index: ModelIndex, /) -> QModelIndex: ...
    def parent(self, index: ModelIndex | None = None) -> QObject | QModelIndex | None:
        """The parent of ``index`` (the model API); without an argument the model's QObject parent."""
        if index is None:
            return super().parent()
        return self.parent_index(index)

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        if parent.column() > 0:
            return 0
        key = self.key_at(parent)
        return 0 if key is None else self.child_total(key)

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(self.headers)

    def hasChildren(self, parent: ModelIndex = QModelIndex()) -> bool:  # noqa: B008
        return self.rowCount(parent) > 0

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return self.headers[section] if 0 <= section < len(self.headers) else None
        return None
