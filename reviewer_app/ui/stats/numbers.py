"""Next to the Statistics window's charts: the operator's own numbers (``domain.habits.operator_numbers``).

Time to decide p50 / p90 per tool and per agent, the approve rate per tool with rubber-stamp candidates marked
(nearly always approved, quickly, many times: the decision may no longer be a look), the share settled by rules
and the rules that saved the most decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHeaderView, QLabel, QTreeView, QVBoxLayout, QWidget

from reviewer_app.domain.habits import (
    RUBBER_STAMP_FAST_S,
    RUBBER_STAMP_MIN,
    RUBBER_STAMP_RATE,
    RULE_PREFIXES,
    Group,
    OperatorNumbers,
)
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import format_age
from reviewer_app.ui.models.flat_model import ModelIndex
from reviewer_app.ui.models.list_model import ListTableModel, table_view

RUBBER_STAMP_MARK = "⚠ rubber stamp?"
RUBBER_STAMP_TIP = (
    f"{RUBBER_STAMP_MIN} decisions or more, at least {RUBBER_STAMP_RATE:.0%} approved, in {RUBBER_STAMP_FAST_S:.0f} s "
    "or less (median): is each of these still a look? A narrow rule may settle them better."
)


class GroupsModel(ListTableModel[Group]):
    """One row per tool (or agent): decisions made by people, the share approved, time to decide p50 / p90."""

    headers: ClassVar[tuple[str, ...]] = ("Tool", "Decided", "Approved", "p50", "p90", "")
    marks_rubber_stamps = True  # the approve rate that matters is per tool: an agent asks for many kinds of calls

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        group = self.row_at(index.row()) if index.isValid() else None
        if group is None:
            return None
        column = index.column()
        stamp = group.rubber_stamp and self.marks_rubber_stamps
        if role == Qt.ItemDataRole.DisplayRole:
            return (
                group.name,
                str(group.decided),
                f"{group.approve_rate:.0%}",
                format_age(group.p50_s),
                format_age(group.p90_s),
                RUBBER_STAMP_MARK if stamp else "",
            )[column]
        if role == Qt.ItemDataRole.ToolTipRole:
            return RUBBER_STAMP_TIP if stamp else f"{group.name}: {group.approved} of {group.decided} approved"
        if role == Qt.ItemDataRole.ForegroundRole and stamp and column in (0, 5):
            return theme.current().warning
        if role == Qt.ItemDataRole.TextAlignmentRole and 1 <= column <= 4:
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None


class AgentsModel(GroupsModel):
    headers = ("Agent", "Decided", "Approved", "p50", "p90")
    marks_rubber_stamps = False


def _groups_view(name: str, model: GroupsModel) -> QTreeView:
    view = table_view(name, f"Your numbers per {model.headers[0].lower()}", model)
    header = view.header()
    header.setStretchLastSection(False)
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    return view


def headline(numbers: OperatorNumbers, rule_hits: Sequence[tuple[str, int]]) -> str:
    """The share settled by rules, who decided, and the rules that saved the most decisions."""
    lines = [
        f"<b>{numbers.rule_share:.0%}</b> settled by rules ({numbers.by_rules} of "
        f"{numbers.by_people + numbers.by_rules}); {numbers.by_people} decided by people; {numbers.expired} expired.",
    ]
    stamps = [group.name for group in numbers.per_tool if group.rubber_stamp]
    if stamps:
        lines.append(f"Rubber-stamp candidates: <b>{', '.join(stamps)}</b>.")
    named = ((decider.rsplit("/", 1)[-1], hits) for decider, hits in rule_hits)  # PostgreSQL: ``<login>/rule:x``
    top = [(name.removeprefix("rule:"), hits) for name, hits in named if name.startswith(RULE_PREFIXES)][:3]
    if top:
        saved = ", ".join(f"{rule} ({hits})" for rule, hits in top)
        lines.append(f"Rules that saved the most decisions: {saved}.")
    return "<br>".join(lines)


class NumbersPanel(QWidget):
    """The headline and the two tables; filled by :meth:`show_numbers`."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("operatorNumbers")
        self.setMinimumWidth(440)
        self.per_tool = GroupsModel()
        self.per_agent = AgentsModel()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        title = QLabel("<b>Your own numbers</b> (decisions made by people)")
        self.headline = QLabel("Loading…")
        self.headline.setObjectName("operatorHeadline")
        self.headline.setWordWrap(True)
        self.headline.setTextFormat(Qt.TextFormat.RichText)
        self.headline.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.tool_view = _groups_view("numbersPerTool", self.per_tool)
        self.agent_view = _groups_view("numbersPerAgent", self.per_agent)
        tools = QLabel("Per &tool: approve rate and time to decide")
        tools.setBuddy(self.tool_view)
        agents = QLabel("Per &agent: time to decide")
        agents.setBuddy(self.agent_view)
        for widget, stretch in ((title, 0), (self.headline, 0), (tools, 0), (self.tool_view, 3)):
            layout.addWidget(widget, stretch)
        layout.addWidget(agents)
        layout.addWidget(self.agent_view, 2)

    def show_numbers(self, numbers: OperatorNumbers, rule_hits: Sequence[tuple[str, int]]) -> None:
        self.headline.setText(headline(numbers, rule_hits))
        self.per_tool.set_rows(numbers.per_tool)
        self.per_agent.set_rows(numbers.per_agent)
