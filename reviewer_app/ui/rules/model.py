"""The rules table: one row per persistent rule, with its hit count and last hit (a flat QAbstractItemModel)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, Protocol

from PySide6.QtCore import QObject, Qt

from reviewer_app.domain.rules import Rule
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import format_age, format_countdown
from reviewer_app.ui.models.flat_model import FlatTableModel, ModelIndex

RULE_ID_ROLE = Qt.ItemDataRole.UserRole + 1
RULE_ROLE = Qt.ItemDataRole.UserRole + 2
COL_PATTERN, COL_EFFECT, COL_SCOPE, COL_EXPIRES, COL_NOTE, COL_HITS, COL_LAST_HIT, COL_FINDINGS = range(8)
HEADERS = ("Pattern", "Effect", "Scope", "Expires", "Note", "Hits", "Last hit", "Findings")


class StoredRule(Protocol):
    """A rule with its bookkeeping, as ``SQLHITLBackend.list_rules`` gives it (the UI never imports the store)."""

    @property
    def rule(self) -> Rule: ...
    @property
    def created_by(self) -> str | None: ...
    @property
    def revoked_at(self) -> float | None: ...
    @property
    def hit_count(self) -> int: ...
    @property
    def last_hit_at(self) -> float | None: ...


def rule_state(entry: StoredRule, now: float) -> str:
    """active, revoked or expired."""
    if entry.revoked_at is not None:
        return "revoked"
    return "expired" if entry.rule.expired(now) else "active"


class RulesModel(FlatTableModel):
    """The rules, oldest first as the engine evaluates them; replaced whole on each refresh (rules are few)."""

    headers = HEADERS

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._rules: list[StoredRule] = []
        self.now: Callable[[], float] = time.time
        self.findings: Callable[[str], list[str]] = lambda _rule_id: []  # the lint's problems with a rule

    # -- public API ----------------------------------------------------------------------
    def set_rules(self, rules: Iterable[StoredRule]) -> None:
        new = list(rules)
        if new == self._rules:
            return
        if [entry.rule.id for entry in new] == [entry.rule.id for entry in self._rules]:
            self._rules = new  # same rows: the hit counts moved, say which cells changed
            if new:
                self.dataChanged.emit(self.index(0, 0), self.index(len(new) - 1, len(HEADERS) - 1))
            return
        self.beginResetModel()
        self._rules = new
        self.endResetModel()

    def findings_changed(self) -> None:
        """The lint's findings were read again: repaint their column."""
        if self._rules:
            self.dataChanged.emit(self.index(0, COL_FINDINGS), self.index(len(self._rules) - 1, COL_FINDINGS))

    def rule_at(self, row: int) -> StoredRule | None:
        return self._rules[row] if 0 <= row < len(self._rules) else None

    def row_of(self, rule_id: str) -> int:
        return next((row for row, entry in enumerate(self._rules) if entry.rule.id == rule_id), -1)

    @property
    def rules(self) -> list[StoredRule]:
        return list(self._rules)

    # -- Qt model ------------------------------------------------------------------------
    def row_total(self) -> int:
        return len(self._rules)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        entry = self.rule_at(index.row()) if index.isValid() else None
        if entry is None:
            return None
        rule = entry.rule
        column = index.column()
        now = self.now()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_PATTERN:
                return rule.pattern
            if column == COL_EFFECT:
                state = rule_state(entry, now)
                return rule.effect if state == "active" else f"{rule.effect} ({state})"
            if column == COL_SCOPE:
                return rule.scope
            if column == COL_EXPIRES:
                return "never" if rule.expires_at is None else format_countdown(int(rule.expires_at), now)
            if column == COL_NOTE:
                return rule.note
            if column == COL_HITS:
                return str(entry.hit_count)
            if column == COL_LAST_HIT:
                return "never" if entry.last_hit_at is None else f"{format_age(now - entry.last_hit_at)} ago"
            if column == COL_FINDINGS:
                return "; ".join(self.findings(rule.id))
        if role == Qt.ItemDataRole.ForegroundRole:
            colors = theme.current()
            if rule_state(entry, now) != "active":
                return colors.muted
            if column == COL_FINDINGS:
                return colors.warning
            if column == COL_EFFECT:
                return {"deny": colors.danger, "ask": colors.warning, "allow": colors.ok}[rule.effect]
        if role == Qt.ItemDataRole.ToolTipRole and column == COL_FINDINGS:
            return "\n".join(self.findings(rule.id)) or "No findings"
        if role == Qt.ItemDataRole.ToolTipRole:
            made = time.strftime("%Y-%m-%d %H:%M", time.localtime(rule.created_at)) if rule.created_at else "?"
            return f"{rule.describe()}\nid {rule.id} · made {made} by {entry.created_by or '?'}"
        if role == Qt.ItemDataRole.TextAlignmentRole and column == COL_HITS:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == RULE_ID_ROLE:
            return rule.id
        if role == RULE_ROLE:
            return entry
        return None
