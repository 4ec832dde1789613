"""The inbox tree view: j/k move between requests, letters are commands, groups open as they come."""

from __future__ import annotations

import math
from collections.abc import Callable

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt, Signal
from PySide6.QtGui import QFocusEvent, QKeyEvent, QPainter, QPaintEvent, QRegion, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QTreeView,
    QWidget,
)

from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.common.column_fit import column_wants, fit_column
from reviewer_app.ui.common.texts import format_countdown, tool_label
from reviewer_app.ui.inbox.cells import (
    COL_AGE,
    COL_AGENT,
    COL_DECIDED,
    COL_REQUEST,
    COL_SUMMARY,
    LEVEL_ROLE,
)
from reviewer_app.ui.inbox.filters import Scope
from reviewer_app.ui.inbox.grouping import LEVEL_SESSION
from reviewer_app.ui.inbox.model import InboxModel

EXPAND_ALL_GROUPS = 1_500  # above this many session + invocation rows only the first sessions open
NO_PENDING_TEXT = "No pending requests. New ones appear here as agents ask."  # the empty pending inbox says
REQUEST_INDENT = 14  # px per tree level (Qt's 20 took a third of the request column at a request's depth)
EXPAND_FIRST_SESSIONS = 5  # enough to fill the view; each expanded row costs every layout (keystroke) a step
AGENT_COLUMN_MIN = 64  # px: the Agent column never narrower (it was this wide whatever the names)
SUMMARY_FLOOR = 0.44  # the share of the list the summary keeps whatever the Agent column wants
AGE_COLUMN = 48  # px: the Waiting column's least width
WAITED_TEXTS = ("Waiting", "3h 05m")  # the Waiting column's header and its widest age, always shown whole
COUNTDOWN_UNDER_AN_HOUR = "in 59:59"  # the widest countdown under an hour
AGENT_ROOM_CHARS = 12  # the list asks room for this much of an agent's name (claude-code); longer ones may be cut


class CommandListView(QTreeView):
    """A list where letters are commands: j/k move between requests, no type-ahead (the tree and the queue).

    Signals:
        moveRequested(int): +1 for the next request (j), -1 for the previous one (k).
    """

    moveRequested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.empty_text: Callable[[], str] = lambda: ""  # what an empty list says (the panel knows why it is empty)

    def paintEvent(self, event: QPaintEvent) -> None:
        super().paintEvent(event)
        model = self.model()
        if model is not None and model.rowCount() == 0 and (text := self.empty_text()):
            painter = QPainter(self.viewport())
            painter.setPen(self.palette().placeholderText().color())
            area = self.viewport().rect().adjusted(12, 24, -12, -12)
            painter.drawText(
                area, int(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop | Qt.TextFlag.TextWordWrap), text
            )
            painter.end()

    def focusInEvent(self, event: QFocusEvent) -> None:
        self._repaint_focus_only(lambda: super(CommandListView, self).focusInEvent(event))

    def focusOutEvent(self, event: QFocusEvent) -> None:
        self._repaint_focus_only(lambda: super(CommandListView, self).focusOutEvent(event))

    def _repaint_focus_only(self, handle_focus: Callable[[], None]) -> None:
        """Qt repaints the whole list when it gains or loses the focus, though only its frame and the current row's
        focus mark change: at 100,000 requests that full paint landed on the first key typed into the search (``/``
        moves the focus there). Updates are held by attribute: ``setUpdatesEnabled(True)`` would repaint it all."""
        viewport = self.viewport()
        held = [(widget, widget.testAttribute(Qt.WidgetAttribute.WA_UpdatesDisabled)) for widget in (self, viewport)]
        for widget, _was in held:
            widget.setAttribute(Qt.WidgetAttribute.WA_UpdatesDisabled, True)
        try:
            handle_focus()
        finally:
            for widget, was in held:
                widget.setAttribute(Qt.WidgetAttribute.WA_UpdatesDisabled, was)
        self.update(QRegion(self.rect()).subtracted(QRegion(self.contentsRect())))  # the frame
        current = self.currentIndex()
        if current.isValid():
            row = self.visualRect(current)
            viewport.update(QRect(0, row.top(), viewport.width(), row.height()))

    def keyboardSearch(self, search: str) -> None:
        """Single letters are commands here (a, e, r, s...), never type-ahead search."""

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.modifiers() in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier):
            if event.key() == Qt.Key.Key_J:
                self.moveRequested.emit(1)
                return
            if event.key() == Qt.Key.Key_K:
                self.moveRequested.emit(-1)
                return
        super().keyPressEvent(event)


class SummaryElision(QStyledItemDelegate):
    """The summary column's cut: a request's summary loses its middle (the end of a command, ``| sh``, is what
    matters); a session's or a run's title is a prompt, read from its start, and loses its end.

    Set on that column alone: every other cell keeps Qt's own delegate, so a repaint (a filter keystroke) calls no
    Python per cell for them."""

    def initStyleOption(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> None:
        super().initStyleOption(option, index)
        model = index.model()
        if isinstance(model, InboxModel) and model.is_request(index):
            option.textElideMode = Qt.TextElideMode.ElideMiddle
        else:
            option.textElideMode = Qt.TextElideMode.ElideRight


class InboxView(CommandListView):
    """The inbox tree: j/k move between requests, letters are never type-ahead; groups open as they come."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAllColumnsShowFocus(True)
        self.setAnimated(False)
        self.setExpandsOnDoubleClick(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setItemDelegateForColumn(COL_SUMMARY, SummaryElision(self))  # keeps a command's end (`| sh`)
        self._asked_width = 0  # the minimum width last asked of the layout
        self._request_least = 0  # the request column's own width (use_inbox_columns); 0: not the inbox's columns
        self.verticalScrollBar().valueChanged.connect(self._expose_more_near_the_end)

    def use_inbox_columns(self) -> None:
        """The summary says what a call does: the other columns stay narrow so it keeps the room.

        The request column fits a request's tool name (``write_file``) two levels down, with its icon: at a
        1024 px window it was 165 px, most of it indentation, and left the summary ~38% of the list."""
        header = self.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(COL_SUMMARY, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(36)
        self.setIndentation(REQUEST_INDENT)
        icon = self.style().pixelMetric(QStyle.PixelMetric.PM_SmallIconSize, None, self)  # the view's default
        request = 3 * REQUEST_INDENT + icon + 12 + self.fontMetrics().horizontalAdvance("write_file ")
        self._request_least = request
        for column, width in (
            (COL_REQUEST, request),
            (COL_AGENT, AGENT_COLUMN_MIN),
            (COL_AGE, column_wants(self, WAITED_TEXTS, icon=False)),
        ):
            header.resizeSection(column, width)
        self.setColumnHidden(COL_DECIDED, True)

    def hide_empty_columns(self, scope: Scope, added: list[RequestSummary] | None = None) -> None:
        """Columns with nothing to tell give their room to the summary: one agent or none, no expiries.

        (With one agent, its name is in the detail header and the agent filter.) ``added``: only these
        requests are new (a page of a progressive load), so only they can bring an expiry.
        """
        model = self.model()
        if not isinstance(model, InboxModel):
            return
        self.setColumnHidden(COL_AGENT, len(model.agents) < 2)
        self._fit_waiting_column(scope, model, added)
        self.fit_name_columns()
        if self.minimumSizeHint().width() != self._asked_width:  # the agents' names are part of the width asked
            self._asked_width = self.minimumSizeHint().width()
            self.updateGeometry()  # only then: a layout request on every refresh cost each filter keystroke

    def _fit_waiting_column(self, scope: Scope, model: InboxModel, added: list[RequestSummary] | None) -> None:
        """The Waiting column holds an age, or a pending request's countdown to its expiry when one has it: as wide
        as the longest of them shown (``added``: only these requests are new, so only they can widen it)."""
        requests = model.requests_in_scope() if added is None else added
        latest = max((s.expires_at for s in requests if s.expires_at is not None), default=None)
        texts: tuple[str, ...] = WAITED_TEXTS
        if scope is not Scope.HISTORY and latest is not None:
            # The latest expiry's countdown is the longest one ("in 2h 05m"); it only gets shorter, down to an
            # hour's ("in 59:59").
            texts += (COUNTDOWN_UNDER_AN_HOUR, format_countdown(latest, model.now()))
        wanted = column_wants(self, texts, icon=False)
        if added is not None:
            wanted = max(wanted, self.header().sectionSize(COL_AGE))
        fit_column(self, COL_AGE, wanted, least=AGE_COLUMN, most=wanted)

    def _agent_wants(self, *, chars: int | None = None) -> int:
        """The Agent column's width for the agents' names (their first ``chars`` characters), with the icon."""
        model = self.model()
        if not isinstance(model, InboxModel) or self.isColumnHidden(COL_AGENT):
            return 0
        return max(AGENT_COLUMN_MIN, column_wants(self, (name[:chars] for name in model.agents), icon=True))

    def _request_wants(self) -> int:
        """The request column's width for the tools' names (``create_issue · github``) at a request's depth."""
        model = self.model()
        if not isinstance(model, InboxModel):
            return 0
        labels = [tool_label(name) for name in model.tools]
        return 3 * REQUEST_INDENT + column_wants(self, ["question", *labels], icon=True)

    def fit_name_columns(self) -> None:
        """The Agent column fits the agents' names (with the external icon), then the request column the tools'
        names, while the summary keeps :data:`SUMMARY_FLOOR` of the list: at 1,920 px the request column read
        "WebFet…" and "create_…" beside a summary with room to spare."""
        header = self.header()
        others = sum(
            header.sectionSize(column)
            for column in range(header.count())
            if column not in (COL_SUMMARY, COL_AGENT, COL_REQUEST) and not self.isColumnHidden(column)
        )
        room = self.viewport().width()
        most = room - others - math.ceil(SUMMARY_FLOOR * room)  # for the agent and request columns together
        agent = 0
        if not self.isColumnHidden(COL_AGENT):
            request_least = self._request_least or header.sectionSize(COL_REQUEST)
            fit_column(self, COL_AGENT, self._agent_wants(), least=AGENT_COLUMN_MIN, most=most - request_least)
            agent = header.sectionSize(COL_AGENT)
        if self._request_least:
            fit_column(self, COL_REQUEST, self._request_wants(), least=self._request_least, most=most - agent)

    def minimumSizeHint(self) -> QSize:
        """At least the room for the request column, the age and the agents' names (up to
        :data:`AGENT_ROOM_CHARS` of each) with the summary keeping :data:`SUMMARY_FLOOR` of it: at a 1,024 px window
        the list was at its minimum and cut "claude-code"."""
        hint = super().minimumSizeHint()
        header = self.header()
        agent = self._agent_wants(chars=AGENT_ROOM_CHARS)
        request = self._request_least or header.sectionSize(COL_REQUEST)  # its own width, not the tools' names
        columns = request + header.sectionSize(COL_AGE) + agent
        scroll_bar = self.style().pixelMetric(QStyle.PixelMetric.PM_ScrollBarExtent, None, self)  # a long inbox's
        wanted = math.ceil(columns / (1 - SUMMARY_FLOOR)) + 2 * self.frameWidth() + scroll_bar
        return QSize(max(hint.width(), wanted), hint.height())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.fit_name_columns()

    def setModel(self, model: QAbstractItemModel | None) -> None:
        super().setModel(model)
        if model is not None:
            model.modelReset.connect(self.expand_default)
            model.rowsInserted.connect(self._expand_inserted)

    def _expose_more_near_the_end(self, value: int) -> None:
        """Scrolled to the last screen of the session rows the view has: the model gives it the next ones."""
        model = self.model()
        bar = self.verticalScrollBar()
        if isinstance(model, InboxModel) and value >= bar.maximum() - bar.pageStep() and model.more_sessions:
            model.expose_more()

    def _expand_group(self, session: QModelIndex) -> None:
        model = self.model()
        self.expand(session)
        for row in range(model.rowCount(session)):
            self.expand(model.index(row, 0, session))

    def expand_default(self) -> None:
        """Open every group of a small inbox; of a huge one only the first sessions (expansions cost)."""
        model = self.model()
        if not isinstance(model, InboxModel):
            return
        sessions = model.rowCount()
        small = model.session_count <= EXPAND_ALL_GROUPS and model.group_count <= EXPAND_ALL_GROUPS
        limit = sessions if small else min(sessions, EXPAND_FIRST_SESSIONS)
        for row in range(limit):
            self._expand_group(model.index(row, 0))

    def _expand_inserted(self, parent: QModelIndex | QPersistentModelIndex, first: int, last: int) -> None:
        """New sessions open like at the start: all of them in a small inbox, only the first ones in a huge one."""
        model = self.model()
        if not parent.isValid():
            if not isinstance(model, InboxModel) or model.session_count > EXPAND_ALL_GROUPS:
                last = min(last, EXPAND_FIRST_SESSIONS - 1)
            for row in range(first, last + 1):
                self._expand_group(model.index(row, 0))
            return
        if parent.data(LEVEL_ROLE) == LEVEL_SESSION and self.isExpanded(parent):
            for row in range(first, last + 1):
                self.expand(model.index(row, 0, parent))
