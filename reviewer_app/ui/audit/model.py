"""The decision log as a table that reads as a log (the decision in words, the tool, its command or target),
filled a page at a time as the operator scrolls (keyset paging by row id)."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt

from reviewer_app.domain.audit_words import audit_by_words, audit_decision_words, audit_what, is_rule_event
from reviewer_app.domain.history import human_times
from reviewer_app.domain.records import AuditEntry
from reviewer_app.domain.sanitize import redact_data, redact_secrets
from reviewer_app.ui.common import theme

COLUMNS = ("#", "Time", "Decision", "Tool", "Command or target", "Reviewer", "Reason or note", "Request", "Row hash")
COL_DECISION, COL_WHAT, COL_HASH = 2, 4, 8
ID_ROLE = Qt.ItemDataRole.UserRole + 1

Index = QModelIndex | QPersistentModelIndex


def _cell(entry: AuditEntry, column: int) -> str:
    """A row as a log line: when, what was decided in words, on which tool and command or target, by whom, why."""
    if column == 0:
        return str(entry.id)
    if column == 1:
        return datetime.fromtimestamp(entry.at_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    if column == COL_DECISION:
        return audit_decision_words(entry)
    if column == 3:
        return "rule" if is_rule_event(entry.decision) else entry.tool_name or ""
    if column == COL_WHAT:
        return redact_secrets(audit_what(entry))
    if column == 5:
        return audit_by_words(entry)
    if column == 6:
        return human_times(redact_secrets(entry.message or "")).replace("\n", " ")
    if column == 7:
        return entry.hitl_id
    return entry.row_hash[:16] + "…"


def _tooltip(entry: AuditEntry, column: int) -> str | None:
    if column == COL_HASH:
        return entry.row_hash
    if column == COL_WHAT and entry.edited_args is not None:
        edited = json.dumps(redact_data(entry.edited_args), ensure_ascii=False, sort_keys=True)
        return f"{'As it became' if is_rule_event(entry.decision) else 'Edited arguments'}: {edited}"[:4000]
    if column == COL_DECISION:
        return f"stored as {entry.decision}"
    return None


class AuditModel(QAbstractTableModel):
    """Audit rows in id order. ``fetchMore`` asks ``load_more`` for the next page (the view calls it near the end);
    the rows arrive later through :meth:`append_page`. ``broken_id`` marks where verification found the chain broken.
    """

    def __init__(self, load_more: Callable[[int], None], page_size: int = 200) -> None:
        super().__init__()
        self.entries: list[AuditEntry] = []
        self.page_size = page_size
        self.exhausted = False
        self.loading = False
        self.broken_id: int | None = None
        self._load_more = load_more

    # -- paging ---------------------------------------------------------------------------------------
    @property
    def last_id(self) -> int:
        return self.entries[-1].id if self.entries else 0

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return not parent.isValid() and not self.exhausted and not self.loading

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if self.canFetchMore(parent):
            self.loading = True
            self._load_more(self.last_id)

    def append_page(self, after_id: int, page: list[AuditEntry]) -> None:
        """A page read after ``after_id``; a stale page (the model was reset meanwhile) is dropped."""
        self.loading = False
        if after_id != self.last_id:
            return
        fresh = [entry for entry in page if entry.id > after_id]
        if len(page) < self.page_size:
            self.exhausted = True
        if fresh:
            first = len(self.entries)
            self.beginInsertRows(QModelIndex(), first, first + len(fresh) - 1)
            self.entries.extend(fresh)
            self.endInsertRows()

    def reset(self) -> None:
        self.beginResetModel()
        self.entries = []
        self.exhausted = False
        self.loading = False
        self.broken_id = None
        self.endResetModel()

    def row_of(self, entry_id: int) -> int | None:
        return next((row for row, entry in enumerate(self.entries) if entry.id == entry_id), None)

    def mark_broken(self, entry_id: int | None) -> None:
        self.broken_id = entry_id
        if self.entries:
            self.dataChanged.emit(self.index(0, 0), self.index(len(self.entries) - 1, len(COLUMNS) - 1))

    # -- the table --------------------------------------------------------------------------------------
    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole and section < len(COLUMNS):
            return COLUMNS[section]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self.entries):
            return None
        entry = self.entries[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            return _cell(entry, index.column())
        if role == Qt.ItemDataRole.ToolTipRole:
            return _tooltip(entry, index.column())
        if role == ID_ROLE:
            return entry.id
        if role == Qt.ItemDataRole.BackgroundRole and entry.id == self.broken_id:
            return theme.current().banner_bg
        if role == Qt.ItemDataRole.ForegroundRole and entry.id == self.broken_id:
            return theme.current().banner_fg
        return None
