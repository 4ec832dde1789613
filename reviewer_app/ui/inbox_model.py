"""The inbox: session → invocation → request, over our own sorted lists of blob-free summaries.

Kept cheap for 100,000 requests. Every summary of the current scope lives in a
"master" grouping (session buckets holding invocation buckets holding requests in
arrival order, with their lower-cased search text); a filter change walks the
buckets and keeps the matching requests with list comprehensions, so its cost is
close to the number of groups, not a sort of 100,000 rows. Live changes update the
master grouping and the visible tree with ``beginInsertRows``/``beginRemoveRows``.
Model indexes carry the integer id of their parent group in ``internalId``.
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
from operator import and_, contains
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
    """The lower-cased text the search box matches: tool, arguments summary, session, agent, run."""
    return f"{s.tool_name or s.hitl_type}\n{s.summary}\n{s.session_id}\n{s.agent or ''}\n{s.invocation_id}".lower()


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

    ``items``/``keys`` (and ``hays`` for invocations) hold everything in scope in arrival order;
    ``children``/``vkeys`` the visible subset; ``row`` is the visible row while ``visible``.
    A session's items and children are its invocation groups.
    """

    uid: int
    level: int
    ident: str
    key: Key
    agent: str | None
    parent: _Group | None = None
    items: list[Any] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)
    hays: list[str] = field(default_factory=list)
    children: list[Any] = field(default_factory=list)
    vkeys: list[Key] = field(default_factory=list)
    row: int = 0
    count: int = 0
    visible: bool = False

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
        # Everything in scope, grouped: sessions hold invocations hold summaries, in arrival order.
        self._source: dict[str, RequestSummary] = {}
        self._keys: dict[str, Key] = {}
        self._m_sessions: list[_Group] = []
        self._m_session_keys: list[Key] = []
        self._m_session_by_id: dict[str, _Group] = {}
        self._m_inv_by_id: dict[str, _Group] = {}
        self._by_uid: dict[int, _Group] = {}
        self._next_uid = 1
        # The visible tree: the sessions with at least one request passing the filter.
        self._sessions: list[_Group] = []
        self._session_keys: list[Key] = []
        self._visible = 0
        self._visible_groups = 0
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
            keyed = sorted(((sort_key(s), s) for s in rows), key=lambda pair: pair[0])  # near-linear on store order
            self._source = {s.hitl_id: s for s in rows}
            self._keys = {s.hitl_id: key for key, s in keyed}
            self._m_sessions, self._m_session_keys = [], []
            self._m_session_by_id, self._m_inv_by_id, self._by_uid = {}, {}, {}
            session_by_id = self._m_session_by_id
            inv_by_id = self._m_inv_by_id
            for key, s in keyed:
                inv = inv_by_id.get(s.invocation_id)
                if inv is None:
                    session = session_by_id.get(s.session_id)
                    if session is None:
                        session = self._new_group(LEVEL_SESSION, s.session_id, key, s.agent)
                        self._m_sessions.append(session)
                        self._m_session_keys.append(key)
                    inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, key, s.agent)
                    inv.parent = session
                    session.items.append(inv)
                    session.keys.append(key)
                inv.items.append(s)
                inv.keys.append(key)
                inv.hays.append(haystack(s))
            self.tools = {s.tool_name for s in rows if s.tool_name}
            self.agents = {s.agent for s in rows if s.agent}
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
            inv = self._visible_group(s.hitl_id)
            wanted = self._filter.accepts(s, haystack(s))
            if inv is not None and not wanted:
                self._remove_request(inv, s.hitl_id)  # before the master drops its groups
                self._merge_master(s)
                continue
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
        return self.createIndex(self._row_in(inv, hitl_id), column, inv.uid)

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
        row = self._row_in(inv, hitl_id) + step
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
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        flags = Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable
        if index.internalId() != 0:
            group = self._by_uid.get(index.internalId())
            if group is not None and group.level == LEVEL_INVOCATION:
                flags |= Qt.ItemFlag.ItemNeverHasChildren  # lets the view skip asking leaves for children
        return flags

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

    # -- the master grouping -------------------------------------------------------------------
    def _new_group(self, level: int, ident: str, key: Key, agent: str | None) -> _Group:
        group = _Group(uid=self._next_uid, level=level, ident=ident, key=key, agent=agent)
        self._next_uid += 1
        self._by_uid[group.uid] = group
        (self._m_session_by_id if level == LEVEL_SESSION else self._m_inv_by_id)[ident] = group
        return group

    def _merge_master(self, s: RequestSummary) -> None:
        """Bring the in-scope grouping up to date with one changed summary (the visible tree is not touched)."""
        hitl_id = s.hitl_id
        old = self._source.get(hitl_id)
        in_scope = self._filter.scope.includes(s.status)
        if old is not None:
            key = self._keys[hitl_id]
            inv = self._m_inv_by_id[old.invocation_id]
            pos = bisect_left(inv.keys, key)
            if in_scope:
                inv.items[pos] = s
                inv.hays[pos] = haystack(s)
                self._source[hitl_id] = s
                return
            del inv.items[pos], inv.keys[pos], inv.hays[pos]
            del self._source[hitl_id], self._keys[hitl_id]
            if not inv.items:
                self._drop_group(inv)
            return
        if not in_scope:
            return
        key = sort_key(s)
        found = self._m_inv_by_id.get(s.invocation_id)
        if found is not None:
            inv = found
        else:
            session = self._m_session_by_id.get(s.session_id)
            if session is None:
                session = self._new_group(LEVEL_SESSION, s.session_id, key, s.agent)
                pos = bisect_left(self._m_session_keys, key)
                self._m_sessions.insert(pos, session)
                self._m_session_keys.insert(pos, key)
            inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, key, s.agent)
            inv.parent = session
            pos = bisect_left(session.keys, key)
            session.items.insert(pos, inv)
            session.keys.insert(pos, key)
        pos = bisect_left(inv.keys, key)
        inv.items.insert(pos, s)
        inv.keys.insert(pos, key)
        inv.hays.insert(pos, haystack(s))
        self._source[hitl_id] = s
        self._keys[hitl_id] = key
        if s.tool_name:
            self.tools.add(s.tool_name)
        if s.agent:
            self.agents.add(s.agent)

    def _drop_group(self, inv: _Group) -> None:
        """An invocation lost its last in-scope request (it is no longer visible either)."""
        session = inv.parent
        assert session is not None and not inv.visible
        del self._m_inv_by_id[inv.ident], self._by_uid[inv.uid]
        pos = bisect_left(session.keys, inv.key)
        del session.items[pos], session.keys[pos]
        if not session.items:
            del self._m_session_by_id[session.ident], self._by_uid[session.uid]
            pos = bisect_left(self._m_session_keys, session.key)
            del self._m_sessions[pos], self._m_session_keys[pos]

    # -- the visible tree ----------------------------------------------------------------------
    def _visible_group(self, hitl_id: str) -> _Group | None:
        """The visible invocation row holding ``hitl_id``, or None when it is not shown."""
        s = self._source.get(hitl_id)
        if s is None:
            return None
        inv = self._m_inv_by_id.get(s.invocation_id)
        if inv is None or not inv.visible:
            return None
        key = self._keys[hitl_id]
        row = bisect_left(inv.vkeys, key)
        return inv if row < len(inv.vkeys) and inv.vkeys[row] == key else None

    def _row_in(self, inv: _Group, hitl_id: str) -> int:
        return bisect_left(inv.vkeys, self._keys[hitl_id])

    def _selected(self, inv: _Group, terms: tuple[str, ...]) -> tuple[list[RequestSummary], list[Key]]:
        """The requests of one invocation that pass the filter (the common cases loop in C)."""
        f = self._filter
        if not terms and not f.narrows_fields:
            return inv.items[:], inv.keys[:]
        if not f.narrows_fields:
            mask = list(map(contains, inv.hays, repeat(terms[0])))
            for term in terms[1:]:
                mask = list(map(and_, mask, map(contains, inv.hays, repeat(term))))
        else:
            accepts = f.accepts_fields
            mask = [accepts(s) and all(t in h for t in terms) for s, h in zip(inv.items, inv.hays, strict=True)]
        if not any(mask):
            return [], []
        if all(mask):
            return inv.items[:], inv.keys[:]
        return list(compress(inv.items, mask)), list(compress(inv.keys, mask))

    def _rebuild(self) -> None:
        self.beginResetModel()
        sessions: list[_Group] = []
        session_keys: list[Key] = []
        visible = 0
        terms = self._filter.terms
        for session in self._m_sessions:
            shown: list[_Group] = []
            total = 0
            for inv in session.items:
                children, keys = self._selected(inv, terms)
                inv.children, inv.vkeys, inv.count = children, keys, len(children)
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
                session_keys.append(session.key)
                visible += total
        self._sessions, self._session_keys = sessions, session_keys
        self._visible = visible
        self._visible_groups = len(sessions) + sum(len(session.children) for session in sessions)
        self.endResetModel()
        self.filterApplied.emit(self._visible)
        self.countsChanged.emit()

    def _renumber(self, groups: list[_Group], start: int) -> None:
        for row in range(start, len(groups)):
            groups[row].row = row

    def _insert_request(self, s: RequestSummary) -> None:
        key = self._keys[s.hitl_id]
        inv = self._m_inv_by_id[s.invocation_id]
        session = inv.parent
        assert session is not None
        if inv.visible:
            row = bisect_left(inv.vkeys, key)
            self.beginInsertRows(self.createIndex(inv.row, 0, session.uid), row, row)
            inv.children.insert(row, s)
            inv.vkeys.insert(row, key)
            inv.count += 1
            session.count += 1
            self.endInsertRows()
            self._group_counts_changed(inv)
        elif session.visible:
            # A new invocation row (with its one request) inside a shown session.
            row = bisect_left([g.key for g in session.children], inv.key)
            self.beginInsertRows(self.createIndex(session.row, 0, 0), row, row)
            inv.children, inv.vkeys, inv.count, inv.visible = [s], [key], 1, True
            session.children.insert(row, inv)
            self._renumber(session.children, row)
            session.count += 1
            self._visible_groups += 1
            self.endInsertRows()
            self._group_counts_changed(session)
        else:
            # A new session row carrying its invocation and request.
            row = bisect_left(self._session_keys, session.key)
            self.beginInsertRows(QModelIndex(), row, row)
            inv.children, inv.vkeys, inv.count, inv.visible, inv.row = [s], [key], 1, True, 0
            session.children, session.count, session.visible = [inv], 1, True
            self._sessions.insert(row, session)
            self._session_keys.insert(row, session.key)
            self._renumber(self._sessions, row)
            self._visible_groups += 2
            self.endInsertRows()
        self._visible += 1

    def _remove_request(self, inv: _Group, hitl_id: str) -> None:
        session = inv.parent
        assert session is not None
        if len(inv.children) > 1:
            row = self._row_in(inv, hitl_id)
            self.beginRemoveRows(self.createIndex(inv.row, 0, session.uid), row, row)
            del inv.children[row], inv.vkeys[row]
            inv.count -= 1
            session.count -= 1
            self.endRemoveRows()
            self._group_counts_changed(inv)
        elif len(session.children) > 1:
            row = inv.row
            self.beginRemoveRows(self.createIndex(session.row, 0, 0), row, row)
            del session.children[row]
            self._renumber(session.children, row)
            inv.children, inv.vkeys, inv.count, inv.visible = [], [], 0, False
            session.count -= 1
            self._visible_groups -= 1
            self.endRemoveRows()
            self._group_counts_changed(session)
        else:
            row = session.row
            self.beginRemoveRows(QModelIndex(), row, row)
            del self._sessions[row], self._session_keys[row]
            self._renumber(self._sessions, row)
            inv.children, inv.vkeys, inv.count, inv.visible = [], [], 0, False
            session.children, session.count, session.visible = [], 0, False
            self._visible_groups -= 2
            self.endRemoveRows()
        self._visible -= 1

    def _update_row(self, inv: _Group, s: RequestSummary) -> None:
        row = self._row_in(inv, s.hitl_id)
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
