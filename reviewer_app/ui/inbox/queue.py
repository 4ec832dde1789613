"""The flat queue: one row per request, most urgent first, beside the grouped tree (key Q; remembered).

Why: the tree spends three indented rows on each request (session → run → request), so at 1,024 px the command
read "git status; …". Here each row is the request itself: its tool and command (elided in the middle, so the
tail that matters stays; the whole text in the tooltip and the detail pane's headline), its agent and its
session's title. Order: expiring first (soonest first), then high risk, then oldest. The queue shows exactly the
requests the tree shows (same scope, search and filters): it is rebuilt from the tree model when it changes,
never kept apart from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, Qt, QTimer
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyledItemDelegate, QStyleOptionViewItem, QWidget

from reviewer_app.domain.hitl import HITLType
from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.column_fit import column_wants, fit_column
from reviewer_app.ui.common.texts import format_age, format_countdown, shown_summary, tool_label
from reviewer_app.ui.inbox.view import CommandListView
from reviewer_app.ui.inbox.why_tips import WORKING, HoverWhy, WhyTips
from reviewer_app.ui.models.flat_model import FlatTableModel, ModelIndex

if TYPE_CHECKING:  # the domain's risk module (shell parsing) loads after the first screen
    from reviewer_app.domain.risk import Risk
    from reviewer_app.ui.inbox.panel import InboxPanel

COL_WHAT, COL_WHO, COL_WAITING = range(3)
HEADERS = ("Request", "Agent · session", "Waiting")
HITL_ID_ROLE = Qt.ItemDataRole.UserRole + 1
WHO_COLUMN_MIN = 120  # px
WHO_COLUMN_SHARE = 3  # "agent · session" takes at most a third of the list: the command keeps the room
WHO_SESSION_CHARS = 12  # how much of the session's title the column makes room for beside the agent


def urgency(summary: RequestSummary, risk: Risk | None) -> tuple[bool, int, bool, int, str]:
    """Sort key, most urgent first: expiring (soonest first), then high risk, then oldest."""
    expires = summary.expires_at
    high = risk is not None and risk.high
    return (expires is None, expires or 0, not high, summary.created_at, summary.hitl_id)


def request_text(summary: RequestSummary) -> str:
    """A row's request: the tool by its own name and what it does (the summary), on one line."""
    if summary.hitl_type == HITLType.ASK_USER.value:
        return f"question · {shown_summary(summary)}"
    tool = tool_label(summary.tool_name) or summary.hitl_type
    return f"{tool}  {summary.summary}".replace("\n", " ⏎ ")


class QueueModel(FlatTableModel):
    """The requests of the queue in urgency order; ``now``, ``risk_of`` and ``title_of`` come from the window."""

    headers = HEADERS

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.rows: list[RequestSummary] = []
        self._where: dict[str, int] = {}
        self.risk_of: Callable[[str], Risk | None] = lambda _hitl_id: None
        self.title_of: Callable[[RequestSummary], str | None] = lambda _summary: None
        self.why_of: Callable[[str], str | None] = lambda _hitl_id: None  # known whys only: never computed here
        self.now: Callable[[], float] = time.time

    def set_rows(self, summaries: Iterable[RequestSummary]) -> None:
        ordered = sorted(summaries, key=lambda s: urgency(s, self.risk_of(s.hitl_id)))
        if [s.hitl_id for s in ordered] == [s.hitl_id for s in self.rows]:
            self.rows = ordered
            if ordered:
                self.dataChanged.emit(self.index(0, 0), self.index(len(ordered) - 1, len(HEADERS) - 1))
            return
        self.beginResetModel()
        self.rows = ordered
        self._where = {s.hitl_id: row for row, s in enumerate(ordered)}
        self.endResetModel()

    def row_total(self) -> int:
        return len(self.rows)

    def row_of(self, hitl_id: str | None) -> int | None:
        return self._where.get(hitl_id) if hitl_id is not None else None

    def neighbour(self, hitl_id: str | None, step: int) -> str | None:
        row = self.row_of(hitl_id)
        if row is None:
            return self.rows[0].hitl_id if self.rows else None
        target = row + step
        return self.rows[target].hitl_id if 0 <= target < len(self.rows) else None

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        s = self.rows[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_WHAT:
                return request_text(s)
            if column == COL_WHO:
                return f"{s.agent or '?'} · {self.title_of(s) or s.session_id}"
            if column == COL_WAITING:  # an expiry's countdown ("in 1:32"), else how long it has waited
                if s.expires_at is not None:
                    return format_countdown(s.expires_at, self.now())
                return format_age(self.now() - s.created_at)
        if role == Qt.ItemDataRole.ToolTipRole:
            risk = self.risk_of(s.hitl_id)
            lines = [request_text(s), f"agent {s.agent or '?'} · session {self.title_of(s) or s.session_id}"]
            if risk is not None and risk.reasons:
                lines.append(f"{risk.level} risk: " + "; ".join(risk.reasons))
            lines.append(self.why_of(s.hitl_id) or WORKING)
            return "\n".join(lines)
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_WHAT:
            risk = self.risk_of(s.hitl_id)
            return theme.current().danger if risk is not None and risk.high else None
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_WAITING and s.expires_at is not None:
            return theme.countdown_qcolor(s.expires_at, self.now())
        if role == HITL_ID_ROLE:
            return s.hitl_id
        return None


class QueueView(CommandListView):
    """The flat queue's list: j/k move, letters are commands (never type-ahead), long commands elide in the middle."""

    def __init__(self, model: QueueModel, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("queueView")
        self.setAccessibleName("Queue: one row per request, most urgent first")
        self.setRootIsDecorated(False)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setAllColumnsShowFocus(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # the tail of a command is what matters
        self.setModel(model)
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(COL_WHAT, QHeaderView.ResizeMode.Stretch)
        # The command keeps the room; the waiting time fits an hour's countdown whole ("in 59:08", never "in…08").
        waiting = max(52, self.fontMetrics().horizontalAdvance("in 59:59") + 16)
        for column, width in ((COL_WHO, WHO_COLUMN_MIN), (COL_WAITING, waiting)):
            header.resizeSection(column, width)
        # "agent · session": cut at its end, the agent stays whole and the session's title (a prompt) keeps its start.
        self.setItemDelegateForColumn(COL_WHO, EndElision(self))
        model.modelReset.connect(self.fit_who_column)

    def fit_who_column(self) -> None:
        """ "Agent · session" as wide as the longest agent and the start of a session, up to a third of the list."""
        model = self.model()
        if isinstance(model, QueueModel):
            agents = {f"{s.agent or '?'} · {'x' * WHO_SESSION_CHARS}" for s in model.rows}
            wanted = column_wants(self, agents, icon=False)
            fit_column(self, COL_WHO, wanted, least=WHO_COLUMN_MIN, most=self.viewport().width() // WHO_COLUMN_SHARE)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.fit_who_column()


class EndElision(QStyledItemDelegate):
    """A column cut at its end (the queue's "agent · session", the view elides every other in the middle)."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideRight


class FlatQueue(QObject):
    """Keeps the queue equal to what the inbox tree shows and in step with the request on screen."""

    def __init__(self, panel: InboxPanel) -> None:
        super().__init__(panel)
        self.panel = panel
        self.model = QueueModel(self)
        self.model.title_of = lambda s: panel.titles.session_title(s.session_id, s.invocation_id)
        self.view = QueueView(self.model)
        live = panel.live
        self.whys = WhyTips(live.backend.why_of, live.spawn, self)
        self.model.why_of = self.whys.text
        self._hover = HoverWhy(self.view, self.whys, lambda index: index.data(HITL_ID_ROLE))
        self.on = False
        self._syncing = False
        self._timer = QTimer(self, singleShot=True, interval=0)
        self._timer.timeout.connect(self.refresh)
        tree = panel.model
        for signal in (tree.modelReset, tree.rowsInserted, tree.rowsRemoved, tree.layoutChanged):
            signal.connect(self.schedule)
        self.view.selectionModel().currentChanged.connect(self._on_current)
        self.view.moveRequested.connect(self.move)

    def set_risk_source(self, risk_of: Callable[[str], Risk | None]) -> None:
        self.model.risk_of = risk_of

    def schedule(self, *_args: Any) -> None:
        if self.on:
            self._timer.start()

    def refresh(self) -> None:
        """Rebuild from the tree's visible requests (one sort; the tree's own filter already ran)."""
        self._timer.stop()
        self._syncing = True
        try:
            self.whys.forget()
            self.model.set_rows(self.panel.model.iter_requests())
            self.follow(self.panel.detail.hitl_id)
            self._want_current()
            self._hover.want_hovered()
        finally:
            self._syncing = False

    def follow(self, hitl_id: str | None) -> None:
        """Select the row of the request on screen (without acting on the change)."""
        row = self.model.row_of(hitl_id)
        index = self.model.index(row, 0) if row is not None else QModelIndex()
        if index != self.view.currentIndex():
            syncing, self._syncing = self._syncing, True
            try:
                self.view.setCurrentIndex(index)
                if index.isValid():
                    self.view.scrollTo(index)
                    self._want_current()
            finally:
                self._syncing = syncing

    def _want_current(self) -> None:
        """The selected row's why, worked out before it is hovered (only while the queue is shown)."""
        hitl_id = self.view.currentIndex().data(HITL_ID_ROLE)
        if self.on and isinstance(hitl_id, str):
            self.whys.want(hitl_id)

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._syncing or not current.isValid():
            return
        hitl_id = current.data(HITL_ID_ROLE)
        self._want_current()
        if isinstance(hitl_id, str) and hitl_id != self.panel.detail.hitl_id:
            self.panel.select_request(hitl_id)

    def move(self, step: int) -> None:
        target = self.model.neighbour(self.panel.detail.hitl_id, step)
        if target is not None:
            self.panel.select_request(target)

    def next_after_removal(self, hitl_id: str) -> str | None:
        return self.model.neighbour(hitl_id, 1) or self.model.neighbour(hitl_id, -1)
