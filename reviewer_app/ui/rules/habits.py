"""Under the rules table: rules the history argues for (suggestions) and what is wrong with the rules in force (lint).

Both come from ``SQLHITLBackend.rule_suggestions`` / ``rule_findings`` (the whole decided history is read and
judged off the Qt thread), so they are read when the rules change, not on every feed tick.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QShowEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.habits import LintFinding, Suggestion
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.coalesced import CoalescedRead
from reviewer_app.ui.common.keepers import TaskKeeper
from reviewer_app.ui.models.flat_model import FlatTableModel, ModelIndex
from reviewer_app.ui.models.list_model import ListTableModel, table_view


def ask_text(found: Suggestion) -> str:
    return f"{found.example} approved {found.approvals} times in {found.sessions} session(s) — make it a rule?"


class SuggestionsModel(ListTableModel[Suggestion]):
    """One row per suggested rule: its narrowest pattern, how often and in how many sessions it was approved."""

    headers = ("Suggested rule", "Approved", "Sessions", "Example")

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        found = self.row_at(index.row()) if index.isValid() else None
        if found is None:
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return (found.pattern, str(found.approvals), str(found.sessions), found.example)[index.column()]
        if role == Qt.ItemDataRole.ToolTipRole:
            return ask_text(found)
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() in (1, 2):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class FindingsModel(ListTableModel[LintFinding]):
    """One row per lint finding: the rule, its pattern and the problem."""

    headers = ("Rule", "Pattern", "Finding")

    def findings_for(self, rule_id: str) -> list[str]:
        return [finding.problem for finding in self._rows if finding.rule_id == rule_id]

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        found = self.row_at(index.row()) if index.isValid() else None
        if found is None:
            return None
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return (found.rule_id, found.pattern, found.problem)[index.column()]
        if role == Qt.ItemDataRole.ForegroundRole and index.column() == 2:
            return theme.current().warning
        return None


def _fitted(name: str, accessible: str, model: FlatTableModel, stretch: int) -> QTreeView:
    view = table_view(name, accessible, model)
    header = view.header()
    header.setStretchLastSection(False)
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)  # few rows: sizing to them is cheap
    header.setSectionResizeMode(stretch, QHeaderView.ResizeMode.Stretch)
    return view


class HabitsPanel(QWidget):
    """Suggestions (Enter, double-click or "Make a rule…" opens the rule editor with the pattern) and findings.

    Signals:
        make_rule(str): the operator wants a rule with this pattern.
        loaded(): suggestions and findings were read again.
        failed(str): the history could not be read.
    """

    make_rule = Signal(str)
    loaded = Signal()
    failed = Signal(str)

    def __init__(self, backend: SQLHITLBackend, tasks: TaskKeeper, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("rulesHabits")
        self.backend = backend
        self.tasks = tasks
        self.suggestions = SuggestionsModel(self)
        self.findings = FindingsModel(self)
        self._reader = CoalescedRead(
            tasks.spawn,
            self._load,
            lambda exc: self.failed.emit(f"Could not read the history for suggestions: {exc}"),
            self._update_button,
        )
        self.on_findings: Callable[[], None] | None = None
        self._stale = False  # a refresh was asked while hidden

        layout = QVBoxLayout(self)  # the Rules tab shares the window's left column: one list above the other
        layout.setContentsMargins(0, 0, 0, 0)
        left = QVBoxLayout()
        head = QHBoxLayout()
        self.suggestions_label = QLabel("Su&ggestions from your history")
        self.make_button = QPushButton("&Make a rule…")
        self.make_button.setObjectName("makeSuggestedRuleButton")
        self.make_button.setToolTip("Open the rule editor with the selected suggestion's pattern and its preview")
        head.addWidget(self.suggestions_label, 1)
        head.addWidget(self.make_button)
        left.addLayout(head)
        self.suggestions_view = _fitted("ruleSuggestionsView", "Rule suggestions", self.suggestions, 3)
        self.suggestions_label.setBuddy(self.suggestions_view)
        left.addWidget(self.suggestions_view, 1)
        self.hint = QLabel("Calls you approved again and again, never rejected, that no rule settles yet.")
        self.hint.setObjectName("ruleSuggestionHint")
        self.hint.setWordWrap(True)
        left.addWidget(self.hint)
        right = QVBoxLayout()
        self.findings_label = QLabel("&Lint: findings about the rules in force")
        self.findings_view = _fitted("ruleFindingsView", "Rule findings", self.findings, 2)
        self.findings_label.setBuddy(self.findings_view)
        right.addWidget(self.findings_label)
        right.addWidget(self.findings_view, 1)
        layout.addLayout(left, 1)
        layout.addLayout(right, 1)

        self.make_button.clicked.connect(self.make_selected)
        self.suggestions_view.activated.connect(lambda _index: self.make_selected())
        self.suggestions_view.selectionModel().currentChanged.connect(lambda *_: self._update_button())
        self._update_button()

    def selected(self) -> Suggestion | None:
        index = self.suggestions_view.currentIndex()
        return self.suggestions.row_at(index.row()) if index.isValid() else None

    def make_selected(self) -> None:
        found = self.selected()
        if found is not None:
            self.make_rule.emit(found.pattern)

    def _update_button(self) -> None:
        found = self.selected()
        self.make_button.setEnabled(found is not None)
        if found is not None:
            self.hint.setText(f"{ask_text(found)} Enter opens the rule editor with {found.pattern} and its preview.")

    def refresh(self) -> None:
        """Read suggestions and findings again (one read in flight; a refresh asked meanwhile runs after it).
        Hidden (another tab is shown), the read waits until the panel is shown: it judges the whole history."""
        if not self.isVisible():
            self._stale = True
            return
        self._stale = False
        self._reader()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if self._stale:
            self.refresh()

    async def _load(self) -> None:
        suggestions, findings = await self.backend.rule_advice()
        self.suggestions.set_rows(suggestions)
        self.findings.set_rows(findings)
        self.suggestions_label.setText(f"Su&ggestions from your history ({len(suggestions)})")
        self.findings_label.setText(f"&Lint: findings about the rules in force ({len(findings)})")
        if self.on_findings is not None:
            self.on_findings()
        self.loaded.emit()
