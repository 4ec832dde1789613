"""A flat table as a QAbstractItemModel: the plumbing every list-shaped model of the window shares.

Rows have no children and no parent, columns are a fixed header. Subclasses say how many rows they hold
(:meth:`FlatTableModel.row_total`) and what a cell shows (``data``); index, parent, counts and header come from
the tree base (:mod:`ui.models.tree_model`), flags are here, so the rules, history and preview lists cannot
drift apart (each is checked by QAbstractItemModelTester in its tests).
"""

from __future__ import annotations

from PySide6.QtCore import Qt

from reviewer_app.ui.models.tree_model import ROOT_KEY, ModelIndex, TreeItemModel

__all__ = ["FlatTableModel", "ModelIndex"]

_ROW_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren


class FlatTableModel(TreeItemModel):
    """Rows under the invisible root only, with the column titles of :attr:`headers`."""

    def row_total(self) -> int:
        """How many rows the model holds now."""
        raise NotImplementedError

    def child_total(self, key: int) -> int:
        return self.row_total() if key == ROOT_KEY else 0

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        return _ROW_FLAGS if index.isValid() else Qt.ItemFlag.NoItemFlags
