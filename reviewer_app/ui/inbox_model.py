"""The inbox: session → invocation → request, over our own sorted lists of blob-free summaries.

Kept cheap for 100,000 requests: the model keeps every summary of the current scope
in one list sorted by arrival (``_ordered``) with a parallel list of lower-cased
search text, so a filter change is a list comprehension plus a grouping pass, and
live changes are inserted or removed with ``beginInsertRows``/``beginRemoveRows``.
Model indexes carry the integer id of their parent group in ``internalId``.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QFont

from reviewer_app.domain.hitl import HITLStatus, HITLType
from reviewer_app.persistence.store import RequestSummary
from reviewer_app.ui import theme

ModelIndex = QModelIndex | QPersistentModelIndex

HITL_ID_ROLE = Qt.ItemDataRole.UserRole + 1
LEVEL_ROLE = Qt.ItemDataRole.UserRole + 2
SUMMARY_ROLE = Qt.ItemDataRole.UserRole + 3
GROUP_ID_ROLE = Qt.ItemDataRole.UserRole + 4

LEVEL_SESSION, LEVEL_INVOCATION, LEVEL_REQUEST = 0, 1, 2

COL_REQUEST, COL_SUMMARY, COL_AGENT, COL_AGE, COL_EXPIRES, COL_DECIDED = range(6)
HEADERS = ("Request", "Summary", "Agent", "Age", "Expires", "Decided")

# Above this many changes at once a reset is cheaper than row-by-row signals.
BULK_CHANGE_THRESHOLD = 2_000


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
    """The lower-cased text the search box matches: tool, arguments summary, session, agent, run."""
    return f"{s.tool_name or s.hitl_type}\n{s.summary}\n{s.session_id}\n{s.agent or ''}\n{s.invocation_id}".lower()


def sort_key(s: RequestSummary) -> tuple[int, int, str]:
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


@dataclass(eq=False, slots=True)
class _Group:
    """A session or invocation row; invocations hold their request summaries sorted by key."""

    uid: int
    level: int
    ident: str
    key: tuple[int, int, str]
    agent: str | None
    parent: _Group | None = None
    row: int = 0
    children: list[Any] = field(default_factory=list)
    keys: list[tuple[int, int, str]] = field(default_factory=list)  # invocations only, parallel to children
    count: int = 0

    def oldest_created(self) -> int:
        if self.level == LEVEL_INVOCATION:
            return int(self.children[0].created_at) if self.children else 0
        return min((inv.oldest_created() for inv in self.children), default=0)


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
        # Everything in scope, sorted by arrival, with parallel search text.
        self._source: dict[str, RequestSummary] = {}
        self._ordered: list[RequestSummary] = []
        self._ordered_keys: list[tuple[int, int, str]] = []
        self._ordered_hay: list[str] = []
        self._keys: dict[str, tuple[int, int, str]] = {}
        # The visible tree.
        self._sessions: list[_Group] = []
        self._session_keys: list[tuple[int, int, str]] = []
        self._session_by_id: dict[str, _Group] = {}
        self._inv_by_id: dict[str, _Group] = {}
        self._by_uid: dict[int, _Group] = {}
        self._req_parent: dict[str, _Group] = {}
        self._next_uid = 1
        self._visible = 0
        self.tools: set[str] = set()
        self.agents: set[str] = set()
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

    def summary(self, hitl_id: str) -> RequestSummary | None:
        return self._source.get(hitl_id)

    def set_requests(self, summaries: Iterable[RequestSummary], scope: Scope | None = None) -> None:
        """Replace everything (first load, or a scope change that reloaded from the store)."""
        if scope is not None:
            self._filter = replace(self._filter, scope=scope)
        in_scope = [s for s in summaries if self._filter.scope.includes(s.status)]
        self._source = {s.hitl_id: s for s in in_scope}
        self._keys = {hitl_id: sort_key(s) for hitl_id, s in self._source.items()}
        self._ordered = sorted(self._source.values(), key=lambda s: self._keys[s.hitl_id])
        self._ordered_keys = [self._keys[s.hitl_id] for s in self._ordered]
        self._ordered_hay = [haystack(s) for s in self._ordered]
        self.tools = {s.tool_name for s in self._ordered if s.tool_name}
        self.agents = {s.agent for s in self._ordered if s.agent}
        self._rebuild()

    def set_filter(self, new: InboxFilter) -> None:
        """Apply search and filters. A scope change only takes effect with the next :meth:`set_requests`."""
        if new == self._filter:
            return
        self._filter = new
        self._rebuild()

    def apply_changes(self, summaries: Iterable[RequestSummary]) -> None:
        """Merge changed summaries (by ``hitl_id``): update, insert or remove rows one by one."""
        changed = [s for s in summaries if self._source.get(s.hitl_id) != s]
        if not changed:
            return
        if len(changed) > BULK_CHANGE_THRESHOLD:
            for s in changed:
                self._merge_source(s)
            self._rebuild()
            return
        for s in changed:
            self._merge_source(s)
            visible = s.hitl_id in self._req_parent
            wanted = s.hitl_id in self._source and self._filter.accepts(s, haystack(s))
            if visible and wanted:
                self._update_row(s)
            elif visible:
                self._remove_request(s.hitl_id)
            elif wanted:
                self._insert_request(s)
        self.countsChanged.emit()

    def index_for(self, hitl_id: str, column: int = 0) -> QModelIndex:
        inv = self._req_parent.get(hitl_id)
        if inv is None:
            return QModelIndex()
        row = bisect_left(inv.keys, self._keys[hitl_id])
        return self.createIndex(row, column, inv.uid)

    def group_index(self, ident: str, level: int) -> QModelIndex:
        if level == LEVEL_SESSION:
            group = self._session_by_id.get(ident)
            return self.createIndex(group.row, 0, 0) if group else QModelIndex()
        inv = self._inv_by_id.get(ident)
        if inv is None or inv.parent is None:
            return QModelIndex()
        return self.createIndex(inv.row, 0, inv.parent.uid)

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
        inv = self._req_parent.get(hitl_id)
        if inv is None or inv.parent is None:
            return None
        row = bisect_left(inv.keys, self._keys[hitl_id]) + step
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

    def pending_ids(self) -> set[str]:
        return {hitl_id for hitl_id, s in self._source.items() if s.status == HITLStatus.PENDING.value}

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
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        level, node = self._node(index)
        if node is None:
            return None
        column = index.column()
        if level == LEVEL_REQUEST:
            return self._request_data(node, column, role)
        return self._group_data(node, column, role)

    def _group_data(self, group: _Group, column: int, role: int) -> Any:
        pending_scope = self._filter.scope is Scope.PENDING
        if role == Qt.ItemDataRole.DisplayRole:
            if column == COL_REQUEST:
                kind = "session" if group.level == LEVEL_SESSION else "run"
                return f"{kind} {short_id(group.ident)}"
            if column == COL_SUMMARY:
                noun = "pending" if pending_scope else ("request" if group.count == 1 else "requests")
                return f"{group.count} {noun}"
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

    # -- building --------------------------------------------------------------------------
    def _merge_source(self, s: RequestSummary) -> None:
        """Bring the in-scope list up to date with one changed summary."""
        old = self._source.get(s.hitl_id)
        if old is not None:
            key = self._keys[s.hitl_id]
            pos = bisect_left(self._ordered_keys, key)
            if not self._filter.scope.includes(s.status):
                del self._ordered[pos], self._ordered_keys[pos], self._ordered_hay[pos]
                del self._source[s.hitl_id], self._keys[s.hitl_id]
                return
            self._ordered[pos] = s
            self._ordered_hay[pos] = haystack(s)
            self._source[s.hitl_id] = s
            return
        if not self._filter.scope.includes(s.status):
            return
        key = sort_key(s)
        pos = bisect_left(self._ordered_keys, key)
        self._ordered.insert(pos, s)
        self._ordered_keys.insert(pos, key)
        self._ordered_hay.insert(pos, haystack(s))
        self._source[s.hitl_id] = s
        self._keys[s.hitl_id] = key
        if s.tool_name:
            self.tools.add(s.tool_name)
        if s.agent:
            self.agents.add(s.agent)

    def _visible_requests(self) -> list[RequestSummary]:
        f = self._filter
        terms = f.terms
        narrow_fields = f.hitl_type is not None or f.tool is not None or f.agent is not None
        if not terms and not narrow_fields:
            return list(self._ordered)
        if not narrow_fields:
            if len(terms) == 1:
                (term,) = terms
                return [s for s, hay in zip(self._ordered, self._ordered_hay, strict=True) if term in hay]
            return [
                s for s, hay in zip(self._ordered, self._ordered_hay, strict=True) if all(t in hay for t in terms)
            ]
        return [
            s
            for s, hay in zip(self._ordered, self._ordered_hay, strict=True)
            if f.accepts_fields(s) and all(t in hay for t in terms)
        ]

    def _new_group(self, level: int, ident: str, key: tuple[int, int, str], agent: str | None) -> _Group:
        group = _Group(uid=self._next_uid, level=level, ident=ident, key=key, agent=agent)
        self._next_uid += 1
        self._by_uid[group.uid] = group
        if level == LEVEL_SESSION:
            self._session_by_id[ident] = group
        else:
            self._inv_by_id[ident] = group
        return group

    def _rebuild(self) -> None:
        visible = self._visible_requests()
        self.beginResetModel()
        self._sessions = []
        self._session_keys = []
        self._session_by_id = {}
        self._inv_by_id = {}
        self._by_uid = {}
        self._req_parent = {}
        keys = self._keys
        session_by_id = self._session_by_id
        inv_by_id = self._inv_by_id
        req_parent = self._req_parent
        for s in visible:
            inv = inv_by_id.get(s.invocation_id)
            if inv is None:
                session = session_by_id.get(s.session_id)
                if session is None:
                    session = self._new_group(LEVEL_SESSION, s.session_id, keys[s.hitl_id], s.agent)
                    session.row = len(self._sessions)
                    self._sessions.append(session)
                    self._session_keys.append(session.key)
                inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, keys[s.hitl_id], s.agent)
                inv.parent = session
                inv.row = len(session.children)
                session.children.append(inv)
            inv.children.append(s)
            inv.keys.append(keys[s.hitl_id])
            req_parent[s.hitl_id] = inv
        for session in self._sessions:
            total = 0
            for inv in session.children:
                inv.count = len(inv.children)
                total += inv.count
            session.count = total
        self._visible = len(visible)
        self.endResetModel()
        self.filterApplied.emit(self._visible)
        self.countsChanged.emit()

    def _renumber(self, groups: list[_Group], start: int) -> None:
        for row in range(start, len(groups)):
            groups[row].row = row

    def _insert_request(self, s: RequestSummary) -> None:
        key = self._keys[s.hitl_id]
        inv = self._inv_by_id.get(s.invocation_id)
        if inv is not None:
            assert inv.parent is not None
            row = bisect_left(inv.keys, key)
            self.beginInsertRows(self.createIndex(inv.row, 0, inv.parent.uid), row, row)
            inv.children.insert(row, s)
            inv.keys.insert(row, key)
            self._req_parent[s.hitl_id] = inv
            inv.count += 1
            inv.parent.count += 1
            self.endInsertRows()
            self._group_counts_changed(inv)
            self._visible += 1
            return
        session = self._session_by_id.get(s.session_id)
        if session is not None:
            # A new invocation row (with its one request) inside an existing session.
            keys = [g.key for g in session.children]
            row = bisect_left(keys, key)
            self.beginInsertRows(self.createIndex(session.row, 0, 0), row, row)
            new_inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, key, s.agent)
            new_inv.parent = session
            new_inv.children.append(s)
            new_inv.keys.append(key)
            new_inv.count = 1
            session.children.insert(row, new_inv)
            self._renumber(session.children, row)
            session.count += 1
            self._req_parent[s.hitl_id] = new_inv
            self.endInsertRows()
            self._group_counts_changed(session)
            self._visible += 1
            return
        # A new session row carrying its invocation and request.
        row = bisect_left(self._session_keys, key)
        self.beginInsertRows(QModelIndex(), row, row)
        session = self._new_group(LEVEL_SESSION, s.session_id, key, s.agent)
        new_inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, key, s.agent)
        new_inv.parent = session
        new_inv.children.append(s)
        new_inv.keys.append(key)
        new_inv.count = 1
        session.children.append(new_inv)
        session.count = 1
        self._sessions.insert(row, session)
        self._session_keys.insert(row, key)
        self._renumber(self._sessions, row)
        self._req_parent[s.hitl_id] = new_inv
        self.endInsertRows()
        self._visible += 1

    def _remove_request(self, hitl_id: str) -> None:
        inv = self._req_parent[hitl_id]
        session = inv.parent
        assert session is not None
        if len(inv.children) > 1:
            row = bisect_left(inv.keys, self._keys_for_removal(hitl_id, inv))
            self.beginRemoveRows(self.createIndex(inv.row, 0, session.uid), row, row)
            del inv.children[row], inv.keys[row]
            del self._req_parent[hitl_id]
            inv.count -= 1
            session.count -= 1
            self.endRemoveRows()
            self._group_counts_changed(inv)
        elif len(session.children) > 1:
            row = inv.row
            self.beginRemoveRows(self.createIndex(session.row, 0, 0), row, row)
            del session.children[row]
            self._renumber(session.children, row)
            self._forget_group(inv)
            del self._req_parent[hitl_id]
            session.count -= 1
            self.endRemoveRows()
            self._group_counts_changed(session)
        else:
            row = session.row
            self.beginRemoveRows(QModelIndex(), row, row)
            del self._sessions[row], self._session_keys[row]
            self._renumber(self._sessions, row)
            self._forget_group(inv)
            self._forget_group(session)
            del self._req_parent[hitl_id]
            self.endRemoveRows()
        self._visible -= 1

    def _keys_for_removal(self, hitl_id: str, inv: _Group) -> tuple[int, int, str]:
        key = self._keys.get(hitl_id)
        if key is None:  # already dropped from the source: find it by id
            for pos, child in enumerate(inv.children):
                if child.hitl_id == hitl_id:
                    return inv.keys[pos]
            raise KeyError(hitl_id)
        return key

    def _forget_group(self, group: _Group) -> None:
        self._by_uid.pop(group.uid, None)
        if group.level == LEVEL_SESSION:
            self._session_by_id.pop(group.ident, None)
        else:
            self._inv_by_id.pop(group.ident, None)

    def _update_row(self, s: RequestSummary) -> None:
        inv = self._req_parent[s.hitl_id]
        row = bisect_left(inv.keys, self._keys[s.hitl_id])
        inv.children[row] = s
        self.dataChanged.emit(self.createIndex(row, 0, inv.uid), self.createIndex(row, len(HEADERS) - 1, inv.uid))

    def _group_counts_changed(self, group: _Group) -> None:
        """The count and age cells of a group (and its session) changed."""
        while group is not None:
            if group.level == LEVEL_SESSION:
                first = self.createIndex(group.row, COL_SUMMARY, 0)
                last = self.createIndex(group.row, COL_AGE, 0)
            else:
                assert group.parent is not None
                first = self.createIndex(group.row, COL_SUMMARY, group.parent.uid)
                last = self.createIndex(group.row, COL_AGE, group.parent.uid)
            self.dataChanged.emit(first, last)
            group = group.parent  # type: ignore[assignment]
