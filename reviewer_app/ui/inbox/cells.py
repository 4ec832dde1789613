"""What each inbox cell shows: the columns, the item roles, and a cell's text, icon, colour and font.

Painting is the hot path of a big inbox: the view reads each cell with one ``multiData`` call
(:meth:`InboxCells.fill`) instead of seven ``data`` calls, colours are cached per theme, and age
and countdown cells note when their text next changes, so the window repaints the inbox once a
second only while some shown age or countdown moves (:meth:`InboxCells.ages_due`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont

from reviewer_app.domain.hitl import HITLStatus, HITLType
from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import (
    age_text_lasts,
    format_age,
    format_countdown,
    short_id,
    shown_summary,
    tool_label,
)
from reviewer_app.ui.inbox.filters import Scope
from reviewer_app.ui.inbox.grouping import LEVEL_REQUEST, LEVEL_SESSION, Group, Grouping
from reviewer_app.ui.inbox.risk import chip_icon, risk_text

if TYPE_CHECKING:  # the domain's risk module (shell parsing) loads after the first screen
    from reviewer_app.domain.risk import Risk

HITL_ID_ROLE = Qt.ItemDataRole.UserRole + 1
LEVEL_ROLE = Qt.ItemDataRole.UserRole + 2
SUMMARY_ROLE = Qt.ItemDataRole.UserRole + 3
GROUP_ID_ROLE = Qt.ItemDataRole.UserRole + 4
EXTERNAL_ROLE = Qt.ItemDataRole.UserRole + 5

COL_REQUEST, COL_SUMMARY, COL_AGENT, COL_AGE, COL_DECIDED = range(5)
# The Waiting column (COL_AGE) counts down to a pending request's expiry, else says how long it has waited, as the
# flat queue's does: a separate Expires column cost the Agent column its room at 1,024 px ("cla…").
HEADERS = ("Request", "Summary", "Agent", "Waiting", "Decided")

EXTERNAL_TIP = "external: raised by an agent in another process"

# Roles as plain ints: compared on every cell of every paint.
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_DECORATION = int(Qt.ItemDataRole.DecorationRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_ACCESSIBLE = int(Qt.ItemDataRole.AccessibleTextRole)
_CHECK = int(Qt.ItemDataRole.CheckStateRole)
_BACKGROUND = int(Qt.ItemDataRole.BackgroundRole)
_HITL_ID = int(HITL_ID_ROLE)
_LEVEL = int(LEVEL_ROLE)
_SUMMARY = int(SUMMARY_ROLE)
_GROUP_ID = int(GROUP_ID_ROLE)
_EXTERNAL = int(EXTERNAL_ROLE)
_PENDING = HITLStatus.PENDING.value
_ASK = HITLType.ASK_USER.value
_NOTHING = (None, None, None, None)
# The roles QStyledItemDelegate asks for in one multiData call, in its order.
_DELEGATE_ROLES = (
    _FONT,
    int(Qt.ItemDataRole.TextAlignmentRole),
    _FOREGROUND,
    _CHECK,
    _DECORATION,
    _DISPLAY,
    _BACKGROUND,
)
_BLANK = ("", None, None, None)


class InboxCells:
    """Answers the view's questions about one cell of a request row or a group row.

    ``summary_of(group)`` gives a group row's (visible requests, oldest creation time); ``now`` is
    the clock (replaceable in tests of ages and countdowns).
    """

    def __init__(self, grouping: Grouping, summary_of: Callable[[Group], tuple[int, int]]) -> None:
        self._grouping = grouping
        self._summary_of = summary_of
        self.now: Callable[[], float] = time.time
        self._age_due = math.inf
        self._bold = QFont()
        self._bold.setBold(True)
        self._colors = theme.current()
        self.risk_of: Callable[[str], Risk | None] | None = None  # the risk chips' source (ui/inbox/risk.py)
        self.is_marked: Callable[[str], bool] | None = None  # marked for a bulk action (ui/triage/bulk.py)
        self._chips: dict[str, Any] = {}
        # A group row's human title (a run's prompt, a session's first run's), None when unknown.
        self.titles: Callable[[Group], str | None] = lambda _group: None

    def _chip(self, risk: Risk | None) -> Any:
        """The risk chip of a row (cached per theme: painted for every visible row)."""
        if risk is None or risk.level == "low":
            return None
        chip = self._chips.get(risk.level)
        if chip is None:
            chip = self._chips[risk.level] = chip_icon(risk.level)
        return chip

    def _risk(self, s: RequestSummary) -> Risk | None:
        return self.risk_of(s.hitl_id) if self.risk_of is not None and s.hitl_type != _ASK else None

    def refresh_theme(self) -> None:
        """The colour scheme changed: take its colours (the view repaints on the palette change)."""
        self._colors = theme.current()
        self._chips = {}

    def ages_due(self) -> bool:
        """True (once) when a shown age or countdown has a new text since the last paint."""
        if self.now() >= self._age_due:
            self._age_due = math.inf
            return True
        return False

    def fill(self, level: int, node: Any, column: int, span: Any) -> None:
        """Every role of a cell in one call (QStyledItemDelegate asks seven roles per painted cell)."""
        # The span is reused from cell to cell: every role must be set or cleared, or the previous
        # cell's icon, colour and font show through. The delegate's span is read once, slot by slot:
        # each access and each call here is paid for every painted cell.
        if len(span) == len(_DELEGATE_ROLES):
            slots = tuple(span)
            if tuple(slot.role() for slot in slots) == _DELEGATE_ROLES:
                font_slot, align_slot, foreground_slot, check_slot, decoration_slot, display_slot, marked_slot = slots
                display, decoration, foreground, font = self._cell(level, node, column)
                for slot, value in (
                    (display_slot, display),
                    (decoration_slot, decoration),
                    (foreground_slot, foreground),
                    (font_slot, font),
                ):
                    if value is None:
                        slot.clearData()
                    else:
                        slot.setData(value)
                align_slot.clearData()  # no cell sets its own alignment
                check, background = self._marks(level, node, column)
                for slot, value in ((check_slot, check), (marked_slot, background)):
                    if value is None:
                        slot.clearData()
                    else:
                        slot.setData(value)
                return
        for i in range(len(span)):
            role_data = span[i]
            value = self.value(level, node, column, role_data.role())
            if value is None:
                role_data.clearData()
            else:
                role_data.setData(value)

    def _marks(self, level: int, node: Any, column: int) -> tuple[Any, Any]:
        """(check state, background) of a cell: a request marked for a bulk action is ticked and tinted."""
        if level != LEVEL_REQUEST or self.is_marked is None or not self.is_marked(node.hitl_id):
            return None, None
        marked = QColor(self._colors.info)
        marked.setAlpha(60)
        return (Qt.CheckState.Checked if column == COL_REQUEST else None), marked

    def value(self, level: int, node: Any, column: int, role: int) -> Any:
        if role == _DISPLAY:
            return self._cell(level, node, column)[0]
        if role == _DECORATION:
            return self._cell(level, node, column)[1]
        if role == _FOREGROUND:
            return self._cell(level, node, column)[2]
        if role == _FONT:
            return self._cell(level, node, column)[3]
        if level == LEVEL_REQUEST:
            return self._request_value(node, column, role)
        return self._group_value(node, column, role)

    def _cell(self, level: int, node: Any, column: int) -> tuple[Any, Any, Any, Any]:
        """What a painted cell shows: (text, icon, colour, font)."""
        if level == LEVEL_REQUEST:
            s: RequestSummary = node
            if column == COL_REQUEST:
                if s.status != _PENDING:
                    icon = theme.icon("decided")
                else:
                    icon = theme.icon("question" if s.hitl_type == _ASK else "tool")
                what = "question" if s.hitl_type == _ASK else tool_label(s.tool_name) or s.hitl_type
                return (what, icon, None, None)
            if column == COL_SUMMARY:
                return (shown_summary(s), self._chip(self._risk(s)), None, None)
            if column == COL_AGENT:
                return (s.agent or "", theme.icon("external") if s.external else None, self._colors.muted, None)
            if column == COL_AGE:
                if s.status != _PENDING or s.expires_at is None:
                    return (self._age(s.created_at), None, self._colors.muted, None)
                now = self.now()
                left = s.expires_at - now
                if left > 0:  # counts down every second
                    self._age_due = min(self._age_due, now + 1.0 - (now % 1.0))
                color = theme.countdown_qcolor(s.expires_at, now)  # the same thresholds as the detail header
                return (format_countdown(s.expires_at, now), None, color, None)
            if column == COL_DECIDED:
                if s.status == _PENDING:
                    return _BLANK
                how = s.decision or s.status
                return (f"{how} by {s.decided_by}" if s.decided_by else how, None, None, None)
            return _NOTHING
        group: Group = node
        session = group.level == LEVEL_SESSION
        font = self._bold if session else None
        # A group row: its count under the Request column, what it is doing (its title) in the wide Summary one.
        if column == COL_REQUEST:
            icon = theme.icon("session" if session else "run")
            count = self._summary_of(group)[0]
            if self._grouping.filter.scope is Scope.PENDING:
                text = f"{count} pending"
            else:
                text = f"{count} {'request' if count == 1 else 'requests'}"
            return (text, icon, self._colors.muted, font)
        if column == COL_SUMMARY:
            title = self.titles(group)
            return (title or f"{'session' if session else 'run'} {short_id(group.ident)}", None, None, font)
        if column == COL_AGENT:
            return (group.agent or "", None, self._colors.muted, font)
        if column == COL_AGE:
            return (self._age(self._summary_of(group)[1]), None, self._colors.muted, font)
        return ("", None, None, font)

    def _age(self, created_at: float) -> str:
        """The age text of something created at ``created_at``; notes when that text next changes."""
        now = self.now()
        age = now - created_at
        self._age_due = min(self._age_due, now + age_text_lasts(age))
        return format_age(age)

    def _group_value(self, group: Group, column: int, role: int) -> Any:
        if role == _TOOLTIP:
            kind = "Session" if group.level == LEVEL_SESSION else "Invocation (run)"
            title = self.titles(group)
            heading = f"{title}\n" if title else ""
            return f"{heading}{kind} {group.ident}\n{self._summary_of(group)[0]} request(s) shown"
        if role == _LEVEL:
            return group.level
        if role == _GROUP_ID:
            return group.ident
        if role == _ACCESSIBLE and column == COL_REQUEST:
            count = self._summary_of(group)[0]
            title = self.titles(group)
            what = f"{'session' if group.level == LEVEL_SESSION else 'run'} {title or group.ident}"
            return f"{what}, {count} requests"
        return None

    def _request_value(self, s: RequestSummary, column: int, role: int) -> Any:
        if role == _TOOLTIP:
            lines = [
                f"{s.tool_name or s.hitl_type}: {s.summary}",
                f"request {s.hitl_id}",
                f"agent {s.agent or '?'}",
                f"session {s.session_id} · run {s.invocation_id}",
            ]
            if s.external:
                lines.append(EXTERNAL_TIP)
            if s.status == _PENDING and s.expires_at is not None:  # the Waiting column shows the countdown alone
                now = self.now()
                countdown = format_countdown(s.expires_at, now)
                lines.append(f"asked {format_age(now - s.created_at)} ago · expires {countdown}")
            risk = self._risk(s)
            if risk is not None and risk.level != "low":
                lines.append(risk_text(risk))
            if s.status != _PENDING:
                lines.append(f"{s.status}: {s.decision or ''} by {s.decided_by or '?'}")
            return "\n".join(lines)
        if role == _ACCESSIBLE and column == COL_REQUEST:
            origin = "external " if s.external else ""
            risk = self._risk(s)
            danger = f"{risk.level} risk " if risk is not None and risk.level != "low" else ""
            return f"{danger}{origin}{s.tool_name or s.hitl_type} request: {s.summary}"
        if role == _CHECK:
            return self._marks(LEVEL_REQUEST, s, column)[0]
        if role == _BACKGROUND:
            return self._marks(LEVEL_REQUEST, s, column)[1]
        if role == _HITL_ID:
            return s.hitl_id
        if role == _LEVEL:
            return LEVEL_REQUEST
        if role == _SUMMARY:
            return s
        if role == _EXTERNAL:
            return bool(s.external)
        return None
