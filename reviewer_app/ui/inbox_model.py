"""The inbox: session → invocation → request, over our own sorted lists of blob-free summaries.

Kept cheap for 100,000 requests. Every summary of the current scope lives in a
grouping built once (sessions holding invocations holding requests in arrival
order); a filter change walks the invocation groups and picks their matching
requests with C-level ``map``/``compress`` loops, so its Python cost is close to the
number of groups, not to the number of rows. Search text is matched per request
(the lower-cased summary, shared with the summary when it already is lower case,
and the tool) and per invocation (session, agent, run id), never duplicated per row.
Live changes update the grouping and the visible tree with
``beginInsertRows``/``beginRemoveRows``. Model indexes carry the integer id of their
parent group in ``internalId``.
"""

from __future__ import annotations

import gc
import time
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import compress, repeat
from operator import and_, attrgetter, contains, or_
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QFont

from reviewer_app.domain.hitl import HITLStatus, HITLType
from reviewer_app.persistence.store import RequestSummary
from reviewer_app.ui import theme

ModelIndex = QModelIndex | QPersistentModelIndex
Key = tuple[int, int, str]

HITL_ID_ROLE = Qt.ItemDataRole.UserRole + 1
LEVEL_ROLE = Qt.ItemDataRole.UserRole + 2
SUMMARY_ROLE = Qt.ItemDataRole.UserRole + 3
GROUP_ID_ROLE = Qt.ItemDataRole.UserRole + 4

LEVEL_SESSION, LEVEL_INVOCATION, LEVEL_REQUEST = 0, 1, 2

COL_REQUEST, COL_SUMMARY, COL_AGENT, COL_AGE, COL_EXPIRES, COL_DECIDED = range(6)
HEADERS = ("Request", "Summary", "Agent", "Age", "Expires", "Decided")

NO_FLAGS = Qt.ItemFlag.NoItemFlags
ROW_FLAGS = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
LEAF_FLAGS = ROW_FLAGS | Qt.ItemFlag.ItemNeverHasChildren  # lets the view skip asking leaves for children

# Above this many changes at once a reset is cheaper than row-by-row signals.
BULK_CHANGE_THRESHOLD = 500


class Scope(StrEnum):
    """Which requests the inbox holds: the pending ones, the decided history, or both."""

    PENDING = "pending"
    HISTORY = "history"
    ALL = "all"

    def includes(self, status: str) -> bool:
        if self is Scope.ALL:
            return True
        return (status == HITLStatus.PENDING.value) == (self is Scope.PENDING)

    @property
    def statuses(self) -> tuple[str, ...]:
        """The statuses to load from the store for this scope."""
        if self is Scope.PENDING:
            return (HITLStatus.PENDING.value,)
        decided = tuple(s.value for s in HITLStatus if s is not HITLStatus.PENDING)
        return decided if self is Scope.HISTORY else (HITLStatus.PENDING.value, *decided)


@dataclass(frozen=True)
class InboxFilter:
    """What the search box and the filter combos ask for; empty fields do not filter."""

    text: str = ""
    hitl_type: str | None = None
    tool: str | None = None
    agent: str | None = None
    scope: Scope = Scope.PENDING

    @property
    def terms(self) -> tuple[str, ...]:
        return tuple(self.text.lower().split())

    @property
    def narrows_fields(self) -> bool:
        return self.hitl_type is not None or self.tool is not None or self.agent is not None

    def accepts_fields(self, s: RequestSummary) -> bool:
        if self.hitl_type is not None and s.hitl_type != self.hitl_type:
            return False
        if self.tool is not None and s.tool_name != self.tool:
            return False
        return not (self.agent is not None and s.agent != self.agent)

    def accepts(self, s: RequestSummary, haystack: str) -> bool:
        if not self.scope.includes(s.status) or not self.accepts_fields(s):
            return False
        return all(term in haystack for term in self.terms)


def haystack(s: RequestSummary) -> str:
    """The lower-cased text the search box matches for one request: tool, arguments summary, session, agent, run."""
    return f"{label_text(s)}\n{s.summary}\n{s.session_id}\n{s.agent or ''}\n{s.invocation_id}".lower()


def label_text(s: RequestSummary) -> str:
    """The request's kind as the search sees it (a question is found as 'ask_user' and as 'question')."""
    if s.hitl_type == HITLType.ASK_USER.value:
        return "ask_user question"
    return (s.tool_name or s.hitl_type).lower()


def summary_hay(s: RequestSummary) -> str:
    """The lower-cased summary, sharing the summary's string when it already is lower case."""
    low = s.summary.lower()
    return s.summary if low == s.summary else low


def group_hay(s: RequestSummary) -> str:
    return f"{s.session_id}\n{s.agent or ''}\n{s.invocation_id}".lower()


def sort_key(s: RequestSummary) -> Key:
    """Arrival order: created second, then the creation millisecond of a pending row, then id."""
    return (s.created_at, s.updated_at_ms if s.status == HITLStatus.PENDING.value else 0, s.hitl_id)


def short_id(value: str, keep: int = 10) -> str:
    return value if len(value) <= keep + 1 else value[:keep] + "…"


def format_age(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m"
    if seconds < 86400:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    return f"{seconds // 86400}d {seconds % 86400 // 3600}h"


def format_countdown(expires_at: int | None, now: float) -> str:
    if expires_at is None:
        return ""
    left = int(expires_at - now)
    if left <= 0:
        return "expired"
    if left < 3600:
        return f"in {left // 60}:{left % 60:02d}"
    return f"in {format_age(left)}"


@contextmanager
def gc_paused() -> Iterator[None]:
    """Build big structures without the cyclic GC re-scanning 100,000 live summaries every few allocations."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@dataclass(eq=False, slots=True)
class _Group:
    """A session or an invocation: all of its in-scope requests, and the ones the filter shows.

    ``items`` holds everything in scope in arrival order (for an invocation, with the parallel
    ``hays`` and ``labels`` the search reads); ``children`` the visible subset; ``row`` is the
    visible row while ``visible``. A session's items and children are its invocation groups.
    """

    uid: int
    level: int
    ident: str
    key: Key
    agent: str | None
    hay: str = ""
    parent: _Group | None = None
    items: list[Any] = field(default_factory=list)
    hays: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    children: list[Any] = field(default_factory=list)
    row: int = 0
    count: int = 0
    visible: bool = False

    def oldest_created(self) -> int:
        if self.level == LEVEL_INVOCATION:
            return int(self.children[0].created_at) if self.children else 0
        return min((inv.oldest_created() for inv in self.children), default=0)


_group_key = attrgetter("key")


class InboxModel(QAbstractItemModel):
    """Tree of pending (or decided) requests grouped by session and invocation.

    Signals:
        filterApplied(int): the number of requests visible after a rebuild.
        countsChanged(): rows were added or removed (titles and badges refresh on it).
    """

    filterApplied = Signal(int)
    countsChanged = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._filter = InboxFilter()
        # Everything in scope, grouped: sessions hold invocations hold summaries, in arrival order.
        self._source: dict[str, RequestSummary] = {}
        self._m_sessions: list[_Group] = []
        self._m_session_by_id: dict[str, _Group] = {}
        self._m_inv_by_id: dict[str, _Group] = {}
        self._by_uid: dict[int, _Group] = {}
        self._next_uid = 1
        # The visible tree: the sessions with at least one request passing the filter.
        self._sessions: list[_Group] = []
        self._visible = 0
        self._visible_groups = 0
        self.tools: set[str] = set()
        self.agents: set[str] = set()
        self._labels: set[str] = set()
        self.now = time.time  # replaceable clock for tests of ages and countdowns
        self._bold = QFont()
        self._bold.setBold(True)

    # -- public API ----------------------------------------------------------------------
    @property
    def filter(self) -> InboxFilter:
        return self._filter

    @property
    def visible_count(self) -> int:
        return self._visible

    @property
    def source_count(self) -> int:
        return len(self._source)

    @property
    def group_count(self) -> int:
        """Session and invocation rows: what expanding everything would cost."""
        return self._visible_groups

    def summary(self, hitl_id: str) -> RequestSummary | None:
        return self._source.get(hitl_id)

    def set_requests(self, summaries: Iterable[RequestSummary], scope: Scope | None = None) -> None:
        """Replace everything (first load, or a scope change that reloaded from the store)."""
        if scope is not None:
            self._filter = replace(self._filter, scope=scope)
        includes = self._filter.scope.includes
        with gc_paused():
            rows = [s for s in summaries if includes(s.status)]
            rows.sort(key=sort_key)  # near-linear: the store's order already is this one for pending rows
            self._source = {s.hitl_id: s for s in rows}
            self._m_sessions = []
            self._m_session_by_id, self._m_inv_by_id, self._by_uid = {}, {}, {}
            session_by_id = self._m_session_by_id
            inv_by_id = self._m_inv_by_id
            labels: dict[tuple[str | None, str], str] = {}
            agents: set[str | None] = set()
            inv: _Group | None = None
            for s in rows:
                if inv is None or inv.ident != s.invocation_id:
                    inv = inv_by_id.get(s.invocation_id)
                    if inv is None:
                        session = session_by_id.get(s.session_id)
                        if session is None:
                            session = self._new_group(LEVEL_SESSION, s.session_id, sort_key(s), s.agent)
                            self._m_sessions.append(session)
                        inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, sort_key(s), s.agent, group_hay(s))
                        inv.parent = session
                        session.items.append(inv)
                        agents.add(s.agent)
                inv.items.append(s)
                summary = s.summary
                low = summary.lower()
                inv.hays.append(summary if low == summary else low)
                label_key = (s.tool_name, s.hitl_type)
                label = labels.get(label_key)
                if label is None:
                    label = labels[label_key] = label_text(s)
                inv.labels.append(label)
            self.tools = {tool for tool, _type in labels if tool}
            self.agents = {agent for agent in agents if agent}
            self._labels = set(labels.values())
            self._rebuild()

    def set_filter(self, new: InboxFilter) -> None:
        """Apply search and filters. A scope change only takes effect with the next :meth:`set_requests`."""
        if new == self._filter:
            return
        self._filter = new
        with gc_paused():
            self._rebuild()

    def apply_changes(self, summaries: Iterable[RequestSummary]) -> None:
        """Merge changed summaries (by ``hitl_id``): update, insert or remove rows one by one."""
        includes = self._filter.scope.includes
        changed = [
            s
            for s in summaries
            if self._source.get(s.hitl_id) != s and (includes(s.status) or s.hitl_id in self._source)
        ]
        if not changed:
            return
        if len(changed) > BULK_CHANGE_THRESHOLD:
            with gc_paused():
                for s in changed:
                    self._merge_master(s)
                self._rebuild()
            return
        for s in changed:
            old = self._source.get(s.hitl_id)
            inv = self._visible_group(s.hitl_id)
            wanted = self._filter.accepts(s, haystack(s))
            moved = old is not None and sort_key(old) != sort_key(s)  # e.g. decided, in the "all" scope
            if inv is not None and old is not None and (moved or not wanted):
                self._remove_request(inv, old)  # before the grouping drops its groups
                inv = None
            self._merge_master(s)
            if inv is not None:
                self._update_row(inv, s)
            elif wanted:
                self._insert_request(s)
        self.countsChanged.emit()

    def index_for(self, hitl_id: str, column: int = 0) -> QModelIndex:
        inv = self._visible_group(hitl_id)
        if inv is None:
            return QModelIndex()
        return self.createIndex(self._row_in(inv, self._source[hitl_id]), column, inv.uid)

    def group_index(self, ident: str, level: int) -> QModelIndex:
        group = (self._m_session_by_id if level == LEVEL_SESSION else self._m_inv_by_id).get(ident)
        if group is None or not group.visible:
            return QModelIndex()
        return self.createIndex(group.row, 0, group.parent.uid if group.parent is not None else 0)

    def request_at(self, index: ModelIndex) -> RequestSummary | None:
        level, node = self._node(index)
        return node if level == LEVEL_REQUEST else None

    def first_request(self) -> str | None:
        """The oldest visible request."""
        for request in self.iter_requests():
            return str(request.hitl_id)
        return None

    def iter_requests(self) -> Iterator[RequestSummary]:
        """Visible requests in display order."""
        for session in self._sessions:
            for inv in session.children:
                yield from inv.children

    def neighbour(self, hitl_id: str, step: int = 1) -> str | None:
        """The visible request ``step`` rows after (or before, negative) ``hitl_id`` in display order."""
        inv = self._visible_group(hitl_id)
        if inv is None or inv.parent is None:
            return None
        row = self._row_in(inv, self._source[hitl_id]) + step
        session = inv.parent
        while True:
            if 0 <= row < len(inv.children):
                return str(inv.children[row].hitl_id)
            forward = row >= len(inv.children)
            next_inv = inv.row + (1 if forward else -1)
            while not (0 <= next_inv < len(session.children)):
                next_session = session.row + (1 if forward else -1)
                if not (0 <= next_session < len(self._sessions)):
                    return None
                session = self._sessions[next_session]
                next_inv = 0 if forward else len(session.children) - 1
            inv = session.children[next_inv]
            row = 0 if forward else len(inv.children) - 1

    def next_after_removal(self, hitl_id: str) -> str | None:
        """What to select once ``hitl_id`` is decided: the next request, else the previous one."""
        return self.neighbour(hitl_id, 1) or self.neighbour(hitl_id, -1)

    # -- Qt model ------------------------------------------------------------------------
    def _node(self, index: ModelIndex) -> tuple[int, Any]:
        if not index.isValid():
            return (-1, None)
        uid = index.internalId()
        row = index.row()
        if uid == 0:
            return (LEVEL_SESSION, self._sessions[row]) if row < len(self._sessions) else (-1, None)
        group = self._by_uid.get(uid)
        if group is None or row >= len(group.children):
            return (-1, None)
        return (group.level + 1, group.children[row])

    def index(self, row: int, column: int, parent: ModelIndex = QModelIndex()) -> QModelIndex:  # noqa: B008
        if row < 0 or not 0 <= column < len(HEADERS):
            return QModelIndex()
        if not parent.isValid():
            return self.createIndex(row, column, 0) if row < len(self._sessions) else QModelIndex()
        if parent.column() != 0:
            return QModelIndex()
        level, group = self._node(parent)
        if level in (LEVEL_SESSION, LEVEL_INVOCATION) and row < len(group.children):
            return self.createIndex(row, column, group.uid)
        return QModelIndex()

    def parent(self, index: ModelIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        if not index.isValid():
            return QModelIndex()
        uid = index.internalId()
        if uid == 0:
            return QModelIndex()
        group = self._by_uid.get(uid)
        if group is None:
            return QModelIndex()
        if group.level == LEVEL_SESSION:
            return self.createIndex(group.row, 0, 0)
        assert group.parent is not None
        return self.createIndex(group.row, 0, group.parent.uid)

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        if not parent.isValid():
            return len(self._sessions)
        if parent.column() != 0:
            return 0
        level, node = self._node(parent)
        return len(node.children) if level in (LEVEL_SESSION, LEVEL_INVOCATION) else 0

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(HEADERS)

    def hasChildren(self, parent: ModelIndex = QModelIndex()) -> bool:  # noqa: B008
        return self.rowCount(parent) > 0

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < 6:
            return HEADERS[section]
        return None

    def flags(self, index: ModelIndex) -> Qt.ItemFlag:
        # Called for every laid-out row: precomputed flags, one dict lookup.
        if not index.isValid():
            return NO_FLAGS
        uid = index.internalId()
        if uid == 0:
            return ROW_FLAGS
        group = self._by_uid.get(uid)
        return LEAF_FLAGS if group is not None and group.level == LEVEL_INVOCATION else ROW_FLAGS

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        level, node = self._node(index)
        if node is None:
            return None
        column = index.column()
        if level == LEVEL_REQUEST:
            return self._request_data(node, column, role)
        return self._group_data(node, column, role)

    def _group_data(self, group: _Group, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_REQUEST:
                kind = "session" if group.level == LEVEL_SESSION else "run"
                return f"{kind} {short_id(group.ident)}"
            if column == COL_SUMMARY:
                if self._filter.scope is Scope.PENDING:
                    return f"{group.count} pending"
                return f"{group.count} {'request' if group.count == 1 else 'requests'}"
            if column == COL_AGENT:
                return group.agent or ""
            if column == COL_AGE:
                return format_age(self.now() - group.oldest_created())
            return ""
        if role == Qt.ItemDataRole.DecorationRole and column == COL_REQUEST:
            return theme.icon("session" if group.level == LEVEL_SESSION else "run")
        if role == Qt.ItemDataRole.ToolTipRole:
            kind = "Session" if group.level == LEVEL_SESSION else "Invocation (run)"
            return f"{kind} {group.ident}\n{group.count} request(s) shown"
        if role == Qt.ItemDataRole.FontRole and group.level == LEVEL_SESSION:
            return self._bold
        if role == Qt.ItemDataRole.ForegroundRole and column in (COL_SUMMARY, COL_AGENT, COL_AGE):
            return theme.current().muted
        if role == LEVEL_ROLE:
            return group.level
        if role == GROUP_ID_ROLE:
            return group.ident
        if role == Qt.ItemDataRole.AccessibleTextRole and column == COL_REQUEST:
            return f"{'session' if group.level == LEVEL_SESSION else 'run'} {group.ident}, {group.count} requests"
        return None

    def _request_data(self, s: RequestSummary, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_REQUEST:
                if s.hitl_type == HITLType.ASK_USER.value:
                    return "question"
                return s.tool_name or s.hitl_type
            if column == COL_SUMMARY:
                return s.summary
            if column == COL_AGENT:
                return s.agent or ""
            if column == COL_AGE:
                return format_age(self.now() - s.created_at)
            if column == COL_EXPIRES:
                return format_countdown(s.expires_at, self.now()) if s.status == HITLStatus.PENDING.value else ""
            if column == COL_DECIDED:
                if s.status == HITLStatus.PENDING.value:
                    return ""
                how = s.decision or s.status
                return f"{how} by {s.decided_by}" if s.decided_by else how
            return None
        if role == Qt.ItemDataRole.DecorationRole and column == COL_REQUEST:
            if s.status != HITLStatus.PENDING.value:
                return theme.icon("decided")
            return theme.icon("question" if s.hitl_type == HITLType.ASK_USER.value else "tool")
        if role == Qt.ItemDataRole.ForegroundRole and column == COL_EXPIRES and s.expires_at is not None:
            left = s.expires_at - self.now()
            return theme.current().danger if left < 120 else None
        if role == Qt.ItemDataRole.ForegroundRole and column in (COL_AGENT, COL_AGE):
            return theme.current().muted
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [
                f"{s.tool_name or s.hitl_type}: {s.summary}",
                f"request {s.hitl_id}",
                f"session {s.session_id} · run {s.invocation_id}",
            ]
            if s.status != HITLStatus.PENDING.value:
                lines.append(f"{s.status}: {s.decision or ''} by {s.decided_by or '?'}")
            return "\n".join(lines)
        if role == Qt.ItemDataRole.AccessibleTextRole and column == COL_REQUEST:
            return f"{s.tool_name or s.hitl_type} request: {s.summary}"
        if role == HITL_ID_ROLE:
            return s.hitl_id
        if role == LEVEL_ROLE:
            return LEVEL_REQUEST
        if role == SUMMARY_ROLE:
            return s
        return None

    # -- the grouping of everything in scope --------------------------------------------------
    def _new_group(self, level: int, ident: str, key: Key, agent: str | None, hay: str = "") -> _Group:
        group = _Group(uid=self._next_uid, level=level, ident=ident, key=key, agent=agent, hay=hay)
        self._next_uid += 1
        self._by_uid[group.uid] = group
        (self._m_session_by_id if level == LEVEL_SESSION else self._m_inv_by_id)[ident] = group
        return group

    def _merge_master(self, s: RequestSummary) -> None:
        """Bring the grouping up to date with one changed summary (the visible tree is not touched)."""
        hitl_id = s.hitl_id
        old = self._source.get(hitl_id)
        in_scope = self._filter.scope.includes(s.status)
        if old is not None:
            inv = self._m_inv_by_id[old.invocation_id]
            pos = bisect_left(inv.items, sort_key(old), key=sort_key)
            if in_scope and sort_key(old) == sort_key(s):
                inv.items[pos] = s
                inv.hays[pos] = summary_hay(s)
                inv.labels[pos] = label_text(s)
                self._source[hitl_id] = s
                return
            del inv.items[pos], inv.hays[pos], inv.labels[pos]
            del self._source[hitl_id]
            if not inv.items:
                self._drop_group(inv)
            if not in_scope:
                return
        elif not in_scope:
            return
        key = sort_key(s)
        found = self._m_inv_by_id.get(s.invocation_id)
        if found is not None:
            inv = found
        else:
            session = self._m_session_by_id.get(s.session_id)
            if session is None:
                session = self._new_group(LEVEL_SESSION, s.session_id, key, s.agent)
                self._m_sessions.insert(bisect_left(self._m_sessions, key, key=_group_key), session)
            inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, key, s.agent, group_hay(s))
            inv.parent = session
            session.items.insert(bisect_left(session.items, key, key=_group_key), inv)
        pos = bisect_left(inv.items, key, key=sort_key)
        inv.items.insert(pos, s)
        inv.hays.insert(pos, summary_hay(s))
        inv.labels.insert(pos, label_text(s))
        self._source[hitl_id] = s
        if s.tool_name:
            self.tools.add(s.tool_name)
        if s.agent:
            self.agents.add(s.agent)
        self._labels.add(label_text(s))

    def _drop_group(self, inv: _Group) -> None:
        """An invocation lost its last in-scope request (it is no longer visible either)."""
        session = inv.parent
        assert session is not None and not inv.visible
        del self._m_inv_by_id[inv.ident], self._by_uid[inv.uid]
        session.items.remove(inv)
        if not session.items:
            del self._m_session_by_id[session.ident], self._by_uid[session.uid]
            self._m_sessions.remove(session)

    # -- the visible tree ----------------------------------------------------------------------
    def _visible_group(self, hitl_id: str) -> _Group | None:
        """The visible invocation row holding ``hitl_id``, or None when it is not shown."""
        s = self._source.get(hitl_id)
        if s is None:
            return None
        inv = self._m_inv_by_id.get(s.invocation_id)
        if inv is None or not inv.visible:
            return None
        row = self._row_in(inv, s)
        return inv if row < len(inv.children) and inv.children[row].hitl_id == hitl_id else None

    def _row_in(self, inv: _Group, s: RequestSummary) -> int:
        return bisect_left(inv.children, sort_key(s), key=sort_key)

    def _term_mask(self, inv: _Group, term: str, labels_hit: frozenset[str]) -> Iterator[bool] | None:
        """Which requests of ``inv`` contain ``term``; None when the whole invocation does (session, agent, id)."""
        if term in inv.hay:
            return None
        mask: Iterator[bool] = map(contains, inv.hays, repeat(term))
        if labels_hit:
            mask = map(or_, mask, map(labels_hit.__contains__, inv.labels))
        return mask

    def _selected(self, inv: _Group, terms: tuple[str, ...], labels_hit: list[frozenset[str]]) -> list[Any]:
        """The requests of one invocation that pass the filter (the common cases loop in C)."""
        f = self._filter
        mask: Iterator[bool] | None = None
        for term, hit in zip(terms, labels_hit, strict=True):
            term_mask = self._term_mask(inv, term, hit)
            if term_mask is not None:
                mask = term_mask if mask is None else map(and_, mask, term_mask)
        if f.narrows_fields:
            fields = map(f.accepts_fields, inv.items)
            mask = fields if mask is None else map(and_, mask, fields)
        if mask is None:
            return inv.items[:]
        picked = list(mask)
        if not any(picked):
            return []
        return inv.items[:] if all(picked) else list(compress(inv.items, picked))

    def _rebuild(self) -> None:
        self.beginResetModel()
        sessions: list[_Group] = []
        visible = 0
        groups = 0
        terms = self._filter.terms
        labels_hit = [frozenset(label for label in self._labels if term in label) for term in terms]
        everything = not terms and not self._filter.narrows_fields
        # The common case, one search word and no other filter, inlined: it runs once per invocation.
        single = terms[0] if len(terms) == 1 and not self._filter.narrows_fields else None
        single_hit = labels_hit[0] if single is not None else frozenset()
        for session in self._m_sessions:
            shown: list[_Group] = []
            total = 0
            for inv in session.items:
                if everything:
                    children = inv.items[:]
                elif single is not None:
                    if single in inv.hay:
                        children = inv.items[:]
                    elif single_hit:
                        mask = map(
                            or_, map(contains, inv.hays, repeat(single)), map(single_hit.__contains__, inv.labels)
                        )
                        children = list(compress(inv.items, mask))
                    else:
                        children = list(compress(inv.items, map(contains, inv.hays, repeat(single))))
                else:
                    children = self._selected(inv, terms, labels_hit)
                inv.children = children
                inv.count = len(children)
                inv.visible = bool(children)
                if children:
                    inv.row = len(shown)
                    shown.append(inv)
                    total += inv.count
            session.children, session.count = shown, total
            session.visible = bool(shown)
            if shown:
                session.row = len(sessions)
                sessions.append(session)
                visible += total
                groups += 1 + len(shown)
        self._sessions = sessions
        self._visible = visible
        self._visible_groups = groups
        self.endResetModel()
        self.filterApplied.emit(self._visible)
        self.countsChanged.emit()

    def _renumber(self, groups: list[_Group], start: int) -> None:
        for row in range(start, len(groups)):
            groups[row].row = row

    def _insert_request(self, s: RequestSummary) -> None:
        inv = self._m_inv_by_id[s.invocation_id]
        session = inv.parent
        assert session is not None
        if inv.visible:
            row = self._row_in(inv, s)
            self.beginInsertRows(self.createIndex(inv.row, 0, session.uid), row, row)
            inv.children.insert(row, s)
            inv.count += 1
            session.count += 1
            self.endInsertRows()
            self._group_counts_changed(inv)
        elif session.visible:
            # A new invocation row (with its one request) inside a shown session.
            row = bisect_left(session.children, inv.key, key=_group_key)
            self.beginInsertRows(self.createIndex(session.row, 0, 0), row, row)
            inv.children, inv.count, inv.visible = [s], 1, True
            session.children.insert(row, inv)
            self._renumber(session.children, row)
            session.count += 1
            self._visible_groups += 1
            self.endInsertRows()
            self._group_counts_changed(session)
        else:
            # A new session row carrying its invocation and request.
            row = bisect_left(self._sessions, session.key, key=_group_key)
            self.beginInsertRows(QModelIndex(), row, row)
            inv.children, inv.count, inv.visible, inv.row = [s], 1, True, 0
            session.children, session.count, session.visible = [inv], 1, True
            self._sessions.insert(row, session)
            self._renumber(self._sessions, row)
            self._visible_groups += 2
            self.endInsertRows()
        self._visible += 1

    def _remove_request(self, inv: _Group, s: RequestSummary) -> None:
        """Remove the visible row of ``s`` (the summary as the tree holds it)."""
        session = inv.parent
        assert session is not None
        if len(inv.children) > 1:
            row = self._row_in(inv, s)
            self.beginRemoveRows(self.createIndex(inv.row, 0, session.uid), row, row)
            del inv.children[row]
            inv.count -= 1
            session.count -= 1
            self.endRemoveRows()
            self._group_counts_changed(inv)
        elif len(session.children) > 1:
            row = inv.row
            self.beginRemoveRows(self.createIndex(session.row, 0, 0), row, row)
            del session.children[row]
            self._renumber(session.children, row)
            inv.children, inv.count, inv.visible = [], 0, False
            session.count -= 1
            self._visible_groups -= 1
            self.endRemoveRows()
            self._group_counts_changed(session)
        else:
            row = session.row
            self.beginRemoveRows(QModelIndex(), row, row)
            del self._sessions[row]
            self._renumber(self._sessions, row)
            inv.children, inv.count, inv.visible = [], 0, False
            session.children, session.count, session.visible = [], 0, False
            self._visible_groups -= 2
            self.endRemoveRows()
        self._visible -= 1

    def _update_row(self, inv: _Group, s: RequestSummary) -> None:
        row = self._row_in(inv, s)
        inv.children[row] = s
        self.dataChanged.emit(self.createIndex(row, 0, inv.uid), self.createIndex(row, len(HEADERS) - 1, inv.uid))

    def _group_counts_changed(self, group: _Group | None) -> None:
        """The count and age cells of a group (and its session) changed."""
        while group is not None:
            parent_uid = group.parent.uid if group.parent is not None else 0
            self.dataChanged.emit(
                self.createIndex(group.row, COL_SUMMARY, parent_uid), self.createIndex(group.row, COL_AGE, parent_uid)
            )
            group = group.parent
