"""The History list: decided requests newest first, paged in from the database as the view scrolls.

The model never touches the database itself: it asks its ``load_page`` coroutine (the backend's
``history_page`` on the database thread) from a task, and inserts the page with begin/end calls when it
arrives. ``canFetchMore``/``fetchMore`` are how Qt's views ask for the next page as the user scrolls. A new
query (search text or filter) replaces the rows in one reset when its first page arrives; a page that
belongs to an older query is dropped. At most one page is being read at a time; a query typed meanwhile
waits for it and only the newest one runs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, Qt, Signal

from reviewer_app.domain.history import HistoryCursor, HistoryEntry, HistoryPage, HistoryQuery
from reviewer_app.ui.common import theme
from reviewer_app.ui.common.texts import format_age, tool_label
from reviewer_app.ui.models.flat_model import FlatTableModel, ModelIndex

PageLoader = Callable[[HistoryQuery, HistoryCursor | None, int], Awaitable[HistoryPage]]
Spawn = Callable[[Coroutine[Any, Any, Any]], "asyncio.Task[Any]"]

ENTRY_ROLE = Qt.ItemDataRole.UserRole + 1
AUDIT_ID_ROLE = Qt.ItemDataRole.UserRole + 2
COL_WHEN, COL_DECISION, COL_BY, COL_TOOL, COL_SUMMARY, COL_AGENT, COL_REASON = range(7)
HEADERS = ("Decided", "Decision", "By", "Tool", "Summary", "Agent", "Reason")
PAGE_SIZE = 100


def decided_at_text(ms: int, now: float | None = None) -> str:
    """ "14:03:07" today, "2026-11-20 14:03" before; with the age, so both how long ago and when are read."""
    moment = datetime.fromtimestamp(ms / 1000)
    today = datetime.fromtimestamp(now if now is not None else time.time()).date()
    clock = moment.strftime("%H:%M:%S") if moment.date() == today else moment.strftime("%Y-%m-%d %H:%M")
    age = format_age((now if now is not None else time.time()) - ms / 1000)
    return f"{clock} ({age} ago)"


class HistoryModel(FlatTableModel):
    """Flat list of :class:`HistoryEntry`, newest first, for one :class:`HistoryQuery` at a time.

    ``generation`` grows by one each time the rows change (a new query's first page, or a page appended);
    ``loaded_once`` is True after the first page of any query arrived.

    Signals:
        queryApplied(int): the first page of the current query is in (its row count).
        pageAppended(int): a further page came in (rows added).
        failed(str): reading a page failed (a message for the banner).
    """

    headers = HEADERS

    queryApplied = Signal(int)
    pageAppended = Signal(int)
    failed = Signal(str)

    def __init__(self, load_page: PageLoader, spawn: Spawn, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._load_page = load_page
        self._spawn = spawn
        self._entries: list[HistoryEntry] = []
        self._query = HistoryQuery()
        self._query_serial = 0  # bumped by every set_query: pages of an older query are dropped
        self._shown_serial = -1  # the query whose rows are shown
        self._next: HistoryCursor | None = None
        self._more = False
        self._busy = False
        self._wanted: tuple[int, HistoryQuery] | None = None  # a query waiting for the read in flight
        self.generation = 0
        self.loaded_once = False
        self.last_query_ms = 0.0
        self._ages_at = time.time()  # "(3s ago)" is counted from here, so a cell reads the same until refresh_ages
        self.fetch_allowed: Callable[[], bool] = lambda: True
        """Asked before each further page: the panel answers whether its view really wants one now."""

    # -- what the view and panel ask -----------------------------------------------------------------
    @property
    def query(self) -> HistoryQuery:
        return self._query

    @property
    def loading(self) -> bool:
        return self._busy or self._wanted is not None

    @property
    def entries(self) -> tuple[HistoryEntry, ...]:
        return tuple(self._entries)

    def entry(self, row: int) -> HistoryEntry | None:
        return self._entries[row] if 0 <= row < len(self._entries) else None

    def row_of(self, audit_id: int) -> int:
        return next((i for i, entry in enumerate(self._entries) if entry.audit_id == audit_id), -1)

    @property
    def has_more(self) -> bool:
        return self._more

    def refresh_ages(self) -> None:
        """Count the Decided column's ages from now, and say so to the views (a model's data changes only so)."""
        self._ages_at = time.time()
        if self._entries:
            self.dataChanged.emit(
                self.index(0, COL_WHEN), self.index(len(self._entries) - 1, COL_WHEN), [Qt.ItemDataRole.DisplayRole]
            )

    # -- queries and pages ------------------------------------------------------------------------------
    def set_query(self, query: HistoryQuery) -> None:
        """Show ``query``'s decisions: its first page replaces the rows when it arrives."""
        self._query = query
        self._query_serial += 1
        self._wanted = (self._query_serial, query)
        self._pump()

    def reload(self) -> None:
        """Read the current query again from the top (new decisions arrived)."""
        self.set_query(self._query)

    def _pump(self) -> None:
        if self._busy or self._wanted is None:
            return
        serial, query = self._wanted
        self._wanted = None
        self._busy = True
        self._spawn(self._read_first(serial, query))

    async def _read_first(self, serial: int, query: HistoryQuery) -> None:
        started = time.perf_counter()
        try:
            page = await self._load_page(query, None, PAGE_SIZE)
        except Exception as exc:  # the database went away, a locked file…: say so, keep what is shown
            self._busy = False
            self.failed.emit(f"Could not read the history: {exc}")
            self._pump()
            return
        # Still busy while the rows change: a view asking fetchMore from inside the reset must wait for the
        # new cursor (it asks again on its next layout).
        if serial == self._query_serial:  # else a newer query is waiting: this page is stale
            self.beginResetModel()
            self._entries = list(page.entries)
            self._ages_at = time.time()
            self._next = page.next_cursor
            self._more = page.next_cursor is not None
            self._shown_serial = serial
            self.generation += 1
            self.loaded_once = True
            self.endResetModel()
            self.last_query_ms = (time.perf_counter() - started) * 1000
        self._busy = False
        if serial == self._query_serial:
            self.queryApplied.emit(len(self._entries))
        self._pump()

    def canFetchMore(self, parent: ModelIndex = QModelIndex()) -> bool:  # noqa: B008 - Qt's signature
        return not parent.isValid() and self._more and not self._busy and self._shown_serial == self._query_serial

    def fetchMore(self, parent: ModelIndex = QModelIndex()) -> None:  # noqa: B008 - Qt's signature
        if not self.canFetchMore(parent) or self._next is None or not self.fetch_allowed():
            return
        self._busy = True
        self._spawn(self._read_more(self._shown_serial, self._query, self._next))

    async def _read_more(self, serial: int, query: HistoryQuery, after: HistoryCursor) -> None:
        try:
            page = await self._load_page(query, after, PAGE_SIZE)
        except Exception as exc:
            self._busy = False
            self.failed.emit(f"Could not read more of the history: {exc}")
            self._pump()
            return
        current = serial == self._shown_serial == self._query_serial
        if current and page.entries:  # busy until the cursor moved on (see _read_first)
            first = len(self._entries)
            self.beginInsertRows(QModelIndex(), first, first + len(page.entries) - 1)
            self._entries.extend(page.entries)
            self._next = page.next_cursor
            self._more = page.next_cursor is not None
            self.generation += 1
            self.endInsertRows()
        elif current:
            self._more = False
        self._busy = False
        if current and page.entries:
            self.pageAppended.emit(len(page.entries))
        self._pump()

    # -- QAbstractItemModel ---------------------------------------------------------------------------
    def row_total(self) -> int:
        return len(self._entries)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or index.row() >= len(self._entries):
            return None
        entry = self._entries[index.row()]
        column = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._text(entry, column)
        if role == Qt.ItemDataRole.ToolTipRole:
            if column == COL_BY:
                return entry.decided_by_words
            if column == COL_REASON and entry.reason:
                return entry.reason_words
            if column == COL_WHEN:
                return datetime.fromtimestamp(entry.decided_at_ms / 1000).isoformat(sep=" ", timespec="seconds")
            if column == COL_TOOL:
                return entry.tool_name
            return entry.summary if column == COL_SUMMARY else None
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_DECISION:
            return _decision_colour(entry)
        if role == ENTRY_ROLE:
            return entry
        if role == AUDIT_ID_ROLE:
            return entry.audit_id
        return None

    def _text(self, entry: HistoryEntry, column: int) -> str:
        if column == COL_WHEN:
            return decided_at_text(entry.decided_at_ms, self._ages_at)
        if column == COL_DECISION:
            return entry.decision_words
        if column == COL_BY:
            return entry.decided_by_words
        if column == COL_TOOL:
            return tool_words(entry)
        if column == COL_SUMMARY:
            return entry.summary.replace("\n", " ")[:300]
        if column == COL_AGENT:
            return entry.agent or ""
        if column == COL_REASON:
            return entry.reason_words.replace("\n", " ")[:300]
        return ""


def tool_words(entry: HistoryEntry) -> str:
    """The tool as the inbox names it (an MCP tool by its own name and server, ``query · postgres``)."""
    return tool_label(entry.tool_name) or ("question" if entry.hitl_type == "ask_user" else "")


def _decision_colour(entry: HistoryEntry) -> Any:
    colors = theme.current()
    if entry.decision in ("approve", "approve_for_session", "edit"):
        return colors.ok
    if entry.decision == "reject":
        return colors.danger
    if entry.decision in ("expire", "cancel"):
        return colors.muted
    return None
