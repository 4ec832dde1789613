"""A flat list of requests (full records) for previews: what a rule would match, what a bulk action decides.

Why one model: the rule preview and the bulk preview must show the same facts the same way, so the operator
reads exactly which requests a click will decide.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QHeaderView, QTreeView

from reviewer_app.domain.hitl import HITLRecord, shown_arguments, summarize_arguments
from reviewer_app.domain.risk import Risk
from reviewer_app.domain.tool_args import elide_middle
from reviewer_app.domain.toolcall import command_of, path_of
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import tool_label
from reviewer_app.ui.models.flat_model import FlatTableModel, ModelIndex
from reviewer_app.ui.models.list_model import table_view

HITL_ID_ROLE = Qt.ItemDataRole.UserRole + 1
COL_STATUS, COL_TOOL, COL_WHAT, COL_RISK, COL_CREATED = range(5)
HEADERS = ("Status", "Tool", "What", "Risk", "Created")


def describe_call(record: Mapping[str, Any]) -> str:
    """The command, the path, or the arguments in short: what the call does, in one line."""
    tool = str(record.get("tool_name") or "")
    args = shown_arguments(dict(record))
    command = command_of(tool, args)
    if command is not None:
        return elide_middle(command.replace("\n", " ⏎ "), 200)
    path = path_of(tool, args)
    if path is not None:
        return elide_middle(path, 200)
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    question = (data or {}).get("question")
    if isinstance(question, str):
        return question[:200]
    return summarize_arguments(args)


def status_text(record: Mapping[str, Any]) -> str:
    status = str(record.get("status") or "")
    response = record.get("user_response") if isinstance(record.get("user_response"), dict) else None
    decision = (response or {}).get("decision")
    said = status != "pending" and decision and not (status == "expired" and decision == "expire")
    return f"{status}: {decision}" if said else status


def request_list_view(name: str, accessible: str, model: RequestListModel) -> QTreeView:
    """A flat list of requests (bulk and rule previews): the call keeps its end (``| sh``) when the column is
    narrow, the date is read whole (never "2026-1… 17:51"), the call takes the room left."""
    view = table_view(name, accessible, model)
    view.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    header = view.header()
    header.setStretchLastSection(False)
    header.setSectionResizeMode(COL_WHAT, QHeaderView.ResizeMode.Stretch)
    header.resizeSection(COL_CREATED, view.fontMetrics().horizontalAdvance("2026-12-31 23:59") + 16)
    return view


class RequestListModel(FlatTableModel):
    """Requests as rows: status, tool, what it does, risk, age. ``risks`` is filled when known."""

    headers = HEADERS

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._records: list[HITLRecord] = []
        self._texts: list[str] = []
        self.risks: dict[str, Risk] = {}

    def set_records(self, records: Iterable[HITLRecord], risks: Mapping[str, Risk] | None = None) -> None:
        self.beginResetModel()
        self._records = list(records)
        self._texts = [describe_call(record) for record in self._records]
        self.risks = dict(risks or {})
        self.endResetModel()

    @property
    def records(self) -> list[HITLRecord]:
        return list(self._records)

    def hitl_ids(self) -> list[str]:
        return [str(record["hitl_id"]) for record in self._records]

    def row_total(self) -> int:
        return len(self._records)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._records):
            return None
        record = self._records[index.row()]
        column = index.column()
        risk = self.risks.get(str(record["hitl_id"]))
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_STATUS:
                return status_text(record)
            if column == COL_TOOL:
                return tool_label(record.get("tool_name")) or str(record.get("hitl_type") or "")
            if column == COL_WHAT:
                return self._texts[index.row()]
            if column == COL_RISK:
                return risk.level if risk is not None else ""
            if column == COL_CREATED:
                return time.strftime("%Y-%m-%d %H:%M", time.localtime(int(record.get("created_at") or 0)))
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [f"request {record['hitl_id']} · session {record.get('session_id')}", self._texts[index.row()]]
            if risk is not None and risk.reasons:
                lines.append(f"{risk.level} risk: " + "; ".join(risk.reasons))
            return "\n".join(lines)
        if role == Qt.ItemDataRole.ForegroundRole:
            colors = theme.current()
            if column == COL_RISK and risk is not None:
                return {"high": colors.danger, "medium": colors.warning}.get(risk.level)
            if column == COL_STATUS and record.get("status") == "pending":
                return colors.info
        if role == HITL_ID_ROLE:
            return str(record["hitl_id"])
        return None
