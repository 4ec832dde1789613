"""The inbox: session → invocation → request, over our own sorted lists of blob-free summaries.

Kept cheap for 100,000 requests:

* Everything in scope lives in a grouping (sessions holding invocations holding requests in
  arrival order) plus flat per-request columns the search reads: the lower-cased summary (the
  summary itself when it already is lower case), its invocation's text (session, agent, run id)
  with the request's kind (one string shared by the invocation's requests of that kind), and the
  fields the filter combos compare.
* A filter change evaluates those columns with C-level ``map`` loops into one mask, keeps the last
  few masks (erasing a search brings a cached one back), and decides only which sessions are
  visible. Which invocations and requests of a session are visible is worked out when the view
  first asks for them (it asks for what it expands), and a collapsed row's count and age without
  them, so a keystroke costs the search plus what is on screen, not a Python step per group.
* Live changes and the pages of a progressive load update the grouping and the visible tree with
  ``beginInsertRows``/``beginRemoveRows``; model indexes carry their parent group's id in
  ``internalId`` (0: a session row).
* The view reads each cell with one :meth:`multiData` call instead of seven ``data`` calls, colours
  are cached per theme, and age and countdown cells say when their text next changes, so the
  window repaints the inbox once a second only while some shown age or countdown moves.
"""

from __future__ import annotations

import gc
import math
import time
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from itertools import compress, repeat
from operator import and_, attrgetter, contains, eq, or_
from typing import Any

from PySide6.QtCore import QAbstractItemModel, QModelIndex, QObject, QPersistentModelIndex, Qt, Signal
from PySide6.QtGui import QFont

from reviewer_app.domain.hitl import HITLStatus, HITLType
from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui import theme

ModelIndex = QModelIndex | QPersistentModelIndex
Key = tuple[int, int, str]

HITL_ID_ROLE = Qt.ItemDataRole.UserRole + 1
LEVEL_ROLE = Qt.ItemDataRole.UserRole + 2
SUMMARY_ROLE = Qt.ItemDataRole.UserRole + 3
GROUP_ID_ROLE = Qt.ItemDataRole.UserRole + 4
EXTERNAL_ROLE = Qt.ItemDataRole.UserRole + 5

LEVEL_SESSION, LEVEL_INVOCATION, LEVEL_REQUEST = 0, 1, 2

COL_REQUEST, COL_SUMMARY, COL_AGENT, COL_AGE, COL_EXPIRES, COL_DECIDED = range(6)
HEADERS = ("Request", "Summary", "Agent", "Age", "Expires", "Decided")

EXTERNAL_TIP = "external: raised by an agent in another process"

# Above this many changes at once a reset is cheaper than row-by-row signals.
BULK_CHANGE_THRESHOLD = 500
MASKS_KEPT = 6  # masks of recent searches kept for erasing (0.8 MB each at 100,000 requests)
COMPACT_ABOVE = 5_000  # tombstones of removed requests tolerated before the flat columns are rebuilt

# Roles as plain ints: compared on every cell of every paint.
_DISPLAY = int(Qt.ItemDataRole.DisplayRole)
_DECORATION = int(Qt.ItemDataRole.DecorationRole)
_FOREGROUND = int(Qt.ItemDataRole.ForegroundRole)
_FONT = int(Qt.ItemDataRole.FontRole)
_TOOLTIP = int(Qt.ItemDataRole.ToolTipRole)
_ACCESSIBLE = int(Qt.ItemDataRole.AccessibleTextRole)
_HITL_ID = int(HITL_ID_ROLE)
_LEVEL = int(LEVEL_ROLE)
_SUMMARY = int(SUMMARY_ROLE)
_GROUP_ID = int(GROUP_ID_ROLE)
_EXTERNAL = int(EXTERNAL_ROLE)
_PENDING = HITLStatus.PENDING.value
_ASK = HITLType.ASK_USER.value
_NOTHING = (None, None, None, None)
_BLANK = ("", None, None, None)


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

    @property
    def mask_key(self) -> tuple[Any, ...]:
        """What a mask depends on (not the scope: the grouping only ever holds the scope's requests)."""
        return (self.terms, self.hitl_type, self.tool, self.agent)

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


def age_text_lasts(seconds: float) -> float:
    """How many more seconds :func:`format_age` keeps giving the same text for this age."""
    whole = max(0, int(seconds))
    if whole < 60:
        step = 1
    elif whole < 86400:
        step = 60
    else:
        step = 3600
    return whole - whole % step + step - max(0.0, seconds)


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
    """A session or an invocation: everything of it in scope, and what the filter shows of it.

    ``items`` holds everything in scope in arrival order (a session's invocation groups, an
    invocation's summaries with their flat-column ``slots``). ``children`` is the visible subset
    and ``count`` the visible requests under the group; both are valid while ``gen`` equals the
    model's generation, and are computed on first use otherwise. ``row`` is the visible row of a
    session shown at the top level (``visible``) or of an invocation inside its computed session.
    """

    uid: int
    level: int
    ident: str
    key: Key
    agent: str | None
    hay: str = ""
    parent: _Group | None = None
    puid: int = 0  # internalId of this group's own index: its parent's uid (0 for a session)
    items: list[Any] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    children: list[Any] = field(default_factory=list)
    gen: int = -1
    row: int = 0
    count: int = 0
    visible: bool = False
    tail: Key | None = None  # an invocation's newest key: pages append after it without a search
    # What a collapsed row shows (its count and oldest age) without computing its rows: valid while
    # ``cgen`` equals the model's generation. Rows the view never expanded need no row signals later.
    cgen: int = -1
    ccount: int = 0
    coldest: int = 0


_group_key = attrgetter("key")
_hitl_id = attrgetter("hitl_id")
_hitl_type = attrgetter("hitl_type")
_tool_name = attrgetter("tool_name")
_agent = attrgetter("agent")
_parent = attrgetter("parent")


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
        # Flat columns the search reads, one entry per slot; removed requests leave tombstones.
        self._f_hay: list[str] = []
        self._f_ghay: list[str] = []  # the invocation's text and the request's kind, shared by such requests
        self._f_type: list[str | None] = []
        self._f_tool: list[str | None] = []
        self._f_agent: list[str | None] = []
        self._f_inv: list[_Group | None] = []
        self._f_session: list[_Group | None] = []
        self._ghays: dict[tuple[int, str], str] = {}
        self._dead = 0
        self._version = 0  # bumped by every change of the grouping: cached masks are then stale
        self._masks: OrderedDict[tuple[Any, ...], tuple[list[bool], int]] = OrderedDict()
        # The visible tree: the sessions with at least one request passing the filter.
        self._gen = 0
        self._mask: list[bool] | None = None  # None: everything in scope is visible
        self._sessions: list[_Group] = []
        self._visible = 0
        self._group_count: int | None = None
        self.tools: set[str] = set()
        self.agents: set[str] = set()
        self._labels: dict[tuple[str | None, str], str] = {}
        self.now = time.time  # replaceable clock for tests of ages and countdowns
        self._age_due = math.inf
        self._bold = QFont()
        self._bold.setBold(True)
        self._colors = theme.current()

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
        """Visible session and invocation rows: what expanding everything would cost."""
        if self._group_count is None:
            mask = self._mask
            invocations = len(self._m_inv_by_id) if mask is None else len(set(compress(self._f_inv, mask)))
            self._group_count = len(self._sessions) + invocations
        return self._group_count

    def summary(self, hitl_id: str) -> RequestSummary | None:
        return self._source.get(hitl_id)

    def refresh_theme(self) -> None:
        """The colour scheme changed: take its colours (the view repaints on the palette change)."""
        self._colors = theme.current()

    def ages_due(self) -> bool:
        """True (once) when a shown age or countdown has a new text since the last paint."""
        if self.now() >= self._age_due:
            self._age_due = math.inf
            return True
        return False

    def set_requests(self, summaries: Iterable[RequestSummary], scope: Scope | None = None) -> None:
        """Replace everything (first load, or a scope change that reloaded from the store)."""
        if scope is not None:
            self._filter = replace(self._filter, scope=scope)
        includes = self._filter.scope.includes
        with gc_paused():
            latest = {s.hitl_id: s for s in summaries if includes(s.status)}  # one row per request
            rows = sorted(latest.values(), key=sort_key)  # near-linear: the store gives this order already
            self._source = {}
            self._m_sessions = []
            self._m_session_by_id, self._m_inv_by_id, self._by_uid = {}, {}, {}
            self._clear_columns()
            self.tools, self.agents, self._labels = set(), set(), {}
            self._append_master(rows)
            self._rebuild()

    def append_page(self, summaries: Iterable[RequestSummary]) -> None:
        """Merge the next page of a progressive load (requests not in the inbox yet, in arrival order).

        The pages come oldest first, so new rows mostly land at the ends of their groups and new
        sessions at the end of the tree: one insert per touched group the view knows, none for
        the groups it has not asked about yet.
        """
        statuses = frozenset(self._filter.scope.statuses)
        source = self._source
        rows = list({s.hitl_id: s for s in summaries if s.status in statuses and s.hitl_id not in source}.values())
        if not rows:
            return
        with gc_paused():  # (no sort: pages come in arrival order, and the grouping copes with any order)
            start = len(self._f_hay)
            self._append_master(rows)
            wanted = self._evaluate(self._filter, start)
            if wanted is None:
                wanted = [True] * len(rows)
            else:
                assert self._mask is not None
                self._mask.extend(wanted)
            self._show_appended(rows, wanted)
        self.countsChanged.emit()

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
        latest = {s.hitl_id: s for s in summaries}
        changed = [
            s
            for s in latest.values()
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
            self._apply_one(s)
        self.countsChanged.emit()

    def index_for(self, hitl_id: str, column: int = 0) -> QModelIndex:
        found = self._visible_place(hitl_id)
        if found is None:
            return QModelIndex()
        inv, row = found
        return self.createIndex(row, column, inv.uid)

    def group_index(self, ident: str, level: int) -> QModelIndex:
        if level == LEVEL_SESSION:
            session = self._m_session_by_id.get(ident)
            return self.createIndex(session.row, 0, 0) if session is not None and session.visible else QModelIndex()
        inv = self._m_inv_by_id.get(ident)
        if inv is None or inv.parent is None or not inv.parent.visible:
            return QModelIndex()
        session = inv.parent
        if inv not in self._kids(session):
            return QModelIndex()
        return self.createIndex(inv.row, 0, session.uid)

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
        for session in list(self._sessions):
            for inv in self._kids(session):
                yield from self._kids(inv)

    def neighbour(self, hitl_id: str, step: int = 1) -> str | None:
        """The visible request ``step`` rows after (or before, negative) ``hitl_id`` in display order."""
        found = self._visible_place(hitl_id)
        if found is None:
            return None
        inv, row = found
        row += step
        session = inv.parent
        assert session is not None
        while True:
            children = self._kids(inv)
            if 0 <= row < len(children):
                return str(children[row].hitl_id)
            forward = row >= len(children)
            invocations = self._kids(session)
            next_inv = inv.row + (1 if forward else -1)
            while not (0 <= next_inv < len(invocations)):
                next_session = session.row + (1 if forward else -1)
                if not (0 <= next_session < len(self._sessions)):
                    return None
                session = self._sessions[next_session]
                invocations = self._kids(session)
                next_inv = 0 if forward else len(invocations) - 1
            inv = invocations[next_inv]
            row = 0 if forward else len(self._kids(inv)) - 1

    def next_after_removal(self, hitl_id: str) -> str | None:
        """What to select once ``hitl_id`` is decided: the next request, else the previous one."""
        return self.neighbour(hitl_id, 1) or self.neighbour(hitl_id, -1)

    # -- Qt model ------------------------------------------------------------------------
    def _kids(self, group: _Group) -> list[Any]:
        """The visible children of ``group`` under the current filter (computed on first use)."""
        if group.gen == self._gen:
            return group.children
        if group.level == LEVEL_INVOCATION:
            mask = self._mask
            if mask is None:
                children = group.items[:]
            else:
                children = list(compress(group.items, map(mask.__getitem__, group.slots)))
            group.count = len(children)
        else:
            children = []
            total = 0
            for inv in group.items:
                if self._kids(inv):
                    inv.row = len(children)
                    children.append(inv)
                    total += inv.count
            group.count = total
        group.children = children
        group.gen = self._gen
        return children

    def _summary_of(self, group: _Group) -> tuple[int, int]:
        """(visible requests, oldest visible creation time) of a group, without computing its rows."""
        gen = self._gen
        if group.gen == gen:
            children = group.children
            if group.level == LEVEL_INVOCATION:
                return group.count, int(children[0].created_at) if children else 0
            oldest = min((int(inv.children[0].created_at) for inv in children if inv.children), default=0)
            return group.count, oldest
        if group.cgen != gen:
            if group.level == LEVEL_INVOCATION:
                mask = self._mask
                if mask is None:
                    count = len(group.items)
                    oldest = int(group.items[0].created_at) if group.items else 0
                else:
                    flags = list(map(mask.__getitem__, group.slots))
                    count = flags.count(True)
                    oldest = int(next(compress(group.items, flags)).created_at) if count else 0
            else:
                count = 0
                oldests = []
                for inv in group.items:
                    inv_count, inv_oldest = self._summary_of(inv)
                    if inv_count:
                        count += inv_count
                        oldests.append(inv_oldest)
                oldest = min(oldests, default=0)
            group.ccount, group.coldest, group.cgen = count, oldest, gen
        return group.ccount, group.coldest

    def _node(self, index: ModelIndex) -> tuple[int, Any]:
        if not index.isValid():
            return (-1, None)
        uid = index.internalId()
        row = index.row()
        if uid == 0:
            return (LEVEL_SESSION, self._sessions[row]) if row < len(self._sessions) else (-1, None)
        group = self._by_uid.get(uid)
        if group is None:
            return (-1, None)
        children = group.children if group.gen == self._gen else self._kids(group)
        if row >= len(children):
            return (-1, None)
        return (group.level + 1, children[row])

    def index(self, row: int, column: int, parent: ModelIndex = QModelIndex()) -> QModelIndex:  # noqa: B008
        # Called for every session row at each layout: the top level first, in few steps.
        if not parent.isValid():
            if 0 <= row < len(self._sessions) and 0 <= column < 6:
                return self.createIndex(row, column, 0)
            return QModelIndex()
        if row < 0 or not 0 <= column < 6 or parent.column() != 0:
            return QModelIndex()
        # The parent is a session (id 0) or an invocation (id: its session's uid); the view asks
        # this for every cell it paints, so no tuple and no call for the common case.
        puid = parent.internalId()
        prow = parent.row()
        if puid == 0:
            if prow >= len(self._sessions):
                return QModelIndex()
            group = self._sessions[prow]
        else:
            session = self._by_uid.get(puid)
            if session is None or session.level != LEVEL_SESSION:
                return QModelIndex()
            invocations = session.children if session.gen == self._gen else self._kids(session)
            if prow >= len(invocations):
                return QModelIndex()
            group = invocations[prow]
        children = group.children if group.gen == self._gen else self._kids(group)
        return self.createIndex(row, column, group.uid) if row < len(children) else QModelIndex()

    def sibling(self, row: int, column: int, index: ModelIndex) -> QModelIndex:
        # One call instead of parent() + index(): views ask for every cell of a row.
        if row == index.row() and 0 <= column < 6 and index.isValid():
            return self.createIndex(row, column, index.internalId())
        return super().sibling(row, column, index)

    def parent(self, index: ModelIndex = QModelIndex()) -> QModelIndex:  # type: ignore[override]  # noqa: B008
        # Called several times per painted cell (selection checks): one lookup.
        group = self._by_uid.get(index.internalId())  # an invalid index and a session row have id 0: no group
        if group is None:
            return QModelIndex()
        return self.createIndex(group.row, 0, group.puid)

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        if not parent.isValid():
            return len(self._sessions)
        if parent.column() != 0:
            return 0
        level, node = self._node(parent)
        return len(self._kids(node)) if level in (LEVEL_SESSION, LEVEL_INVOCATION) else 0

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(HEADERS)

    def hasChildren(self, parent: ModelIndex = QModelIndex()) -> bool:  # noqa: B008
        # A shown session or invocation always has a shown child: answered without computing them.
        if not parent.isValid():
            return bool(self._sessions)
        if parent.column() != 0:
            return False
        return self._node(parent)[0] in (LEVEL_SESSION, LEVEL_INVOCATION)

    # No flags() override: Qt's own (enabled, selectable) answers in C++. A Python flags() that added
    # ItemNeverHasChildren was called twice for every row of every layout, ~5,000 calls per keystroke.

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < 6:
            return HEADERS[section]
        return None

    def multiData(self, index: ModelIndex, span: Any) -> None:
        """Every role of a cell in one call (QStyledItemDelegate asks seven roles per painted cell)."""
        level, node = self._node(index)
        if node is None:
            return
        column = index.column()
        # The delegate's request: Font, TextAlignment, Foreground, CheckState, Decoration, Display, Background.
        # The span is reused from cell to cell: every role must be set or cleared, or the previous
        # cell's icon, colour and font show through.
        if (
            len(span) == 7
            and span[0].role() == _FONT
            and span[2].role() == _FOREGROUND
            and span[4].role() == _DECORATION
            and span[5].role() == _DISPLAY
        ):
            display, decoration, foreground, font = self._cell(level, node, column)
            for slot, value in ((5, display), (4, decoration), (2, foreground), (0, font)):
                if value is None:
                    span[slot].clearData()
                else:
                    span[slot].setData(value)
            for slot in (1, 3, 6):
                value = self._value(level, node, column, span[slot].role())
                if value is None:
                    span[slot].clearData()
                else:
                    span[slot].setData(value)
            return
        for i in range(len(span)):
            role_data = span[i]
            value = self._value(level, node, column, role_data.role())
            if value is None:
                role_data.clearData()
            else:
                role_data.setData(value)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        level, node = self._node(index)
        if node is None:
            return None
        return self._value(level, node, index.column(), int(role))

    def _value(self, level: int, node: Any, column: int, role: int) -> Any:
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
                return ("question" if s.hitl_type == _ASK else s.tool_name or s.hitl_type, icon, None, None)
            if column == COL_SUMMARY:
                return (s.summary, None, None, None)
            if column == COL_AGENT:
                return (s.agent or "", theme.icon("external") if s.external else None, self._colors.muted, None)
            if column == COL_AGE:
                return (self._age(s.created_at), None, self._colors.muted, None)
            if column == COL_EXPIRES:
                if s.status != _PENDING or s.expires_at is None:
                    return _BLANK
                now = self.now()
                left = s.expires_at - now
                if left > 0:  # counts down every second
                    self._age_due = min(self._age_due, now + 1.0 - (now % 1.0))
                return (format_countdown(s.expires_at, now), None, self._colors.danger if left < 120 else None, None)
            if column == COL_DECIDED:
                if s.status == _PENDING:
                    return _BLANK
                how = s.decision or s.status
                return (f"{how} by {s.decided_by}" if s.decided_by else how, None, None, None)
            return _NOTHING
        group: _Group = node
        session = group.level == LEVEL_SESSION
        font = self._bold if session else None
        if column == COL_REQUEST:
            icon = theme.icon("session" if session else "run")
            return (f"{'session' if session else 'run'} {short_id(group.ident)}", icon, None, font)
        if column == COL_SUMMARY:
            count = self._summary_of(group)[0]
            if self._filter.scope is Scope.PENDING:
                text = f"{count} pending"
            else:
                text = f"{count} {'request' if count == 1 else 'requests'}"
            return (text, None, self._colors.muted, font)
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

    def _group_value(self, group: _Group, column: int, role: int) -> Any:
        if role == _TOOLTIP:
            kind = "Session" if group.level == LEVEL_SESSION else "Invocation (run)"
            return f"{kind} {group.ident}\n{self._summary_of(group)[0]} request(s) shown"
        if role == _LEVEL:
            return group.level
        if role == _GROUP_ID:
            return group.ident
        if role == _ACCESSIBLE and column == COL_REQUEST:
            count = self._summary_of(group)[0]
            return f"{'session' if group.level == LEVEL_SESSION else 'run'} {group.ident}, {count} requests"
        return None

    def _request_value(self, s: RequestSummary, column: int, role: int) -> Any:
        if role == _TOOLTIP:
            lines = [
                f"{s.tool_name or s.hitl_type}: {s.summary}",
                f"request {s.hitl_id}",
                f"session {s.session_id} · run {s.invocation_id}",
            ]
            if s.external:
                lines.append(EXTERNAL_TIP)
            if s.status != _PENDING:
                lines.append(f"{s.status}: {s.decision or ''} by {s.decided_by or '?'}")
            return "\n".join(lines)
        if role == _ACCESSIBLE and column == COL_REQUEST:
            origin = "external " if s.external else ""
            return f"{origin}{s.tool_name or s.hitl_type} request: {s.summary}"
        if role == _HITL_ID:
            return s.hitl_id
        if role == _LEVEL:
            return LEVEL_REQUEST
        if role == _SUMMARY:
            return s
        if role == _EXTERNAL:
            return bool(s.external)
        return None

    # -- the grouping of everything in scope --------------------------------------------------
    def _touch(self) -> None:
        """The grouping changed: cached masks and the group count no longer hold."""
        self._version += 1
        self._masks.clear()
        self._group_count = None

    def _new_group(self, level: int, ident: str, key: Key, agent: str | None, hay: str = "") -> _Group:
        group = _Group(uid=self._next_uid, level=level, ident=ident, key=key, agent=agent, hay=hay)
        self._next_uid += 1
        self._by_uid[group.uid] = group
        (self._m_session_by_id if level == LEVEL_SESSION else self._m_inv_by_id)[ident] = group
        return group

    def _clear_columns(self) -> None:
        for column in (self._f_hay, self._f_ghay, self._f_type, self._f_tool, self._f_agent):
            column.clear()
        self._f_inv, self._f_session, self._ghays = [], [], {}
        self._dead = 0

    def _ghay(self, inv: _Group, s: RequestSummary) -> str:
        """The text a search matches for ``s`` besides its summary: its invocation's text and its kind."""
        label = self._label(s)
        key = (inv.uid, label)
        text = self._ghays.get(key)
        if text is None:
            text = self._ghays[key] = f"{inv.hay}\n{label}"
        return text

    def _label(self, s: RequestSummary) -> str:
        label_key = (s.tool_name, s.hitl_type)
        label = self._labels.get(label_key)
        if label is None:
            label = self._labels[label_key] = label_text(s)
            if s.tool_name:
                self.tools.add(s.tool_name)
        return label

    def _invocation_for(self, s: RequestSummary, key: Key) -> _Group:
        """The invocation group of ``s``, created (with its session) in key order when new."""
        inv = self._m_inv_by_id.get(s.invocation_id)
        if inv is not None:
            return inv
        session = self._m_session_by_id.get(s.session_id)
        if session is None:
            session = self._new_group(LEVEL_SESSION, s.session_id, key, s.agent)
            sessions = self._m_sessions
            if not sessions or sessions[-1].key < key:
                sessions.append(session)
            else:
                sessions.insert(bisect_left(sessions, key, key=_group_key), session)
        inv = self._new_group(LEVEL_INVOCATION, s.invocation_id, key, s.agent, group_hay(s))
        inv.parent, inv.puid = session, session.uid
        if not session.items or session.items[-1].key < key:
            session.items.append(inv)
        else:
            session.items.insert(bisect_left(session.items, key, key=_group_key), inv)
        if s.agent:
            self.agents.add(s.agent)
        return inv

    def _append_master(self, rows: list[RequestSummary]) -> None:
        """Add new requests (sorted by key, not yet in the grouping) to the grouping and the flat columns."""
        f_ghay, f_inv = self._f_ghay, self._f_inv
        ghays, label_of = self._ghays, self._labels
        inv_by_id = self._m_inv_by_id
        slot = len(self._f_hay)
        for s in rows:  # the one per-row Python loop: the grouping and the shared search text
            key = (s.created_at, s.updated_at_ms if s.status == _PENDING else 0, s.hitl_id)
            inv = inv_by_id.get(s.invocation_id) or self._invocation_for(s, key)
            tail = inv.tail
            if tail is None or tail < key:
                inv.items.append(s)
                inv.slots.append(slot)
                inv.tail = key
            else:  # older than what the group holds (a live row arrived before this page)
                pos = bisect_left(inv.items, key, key=sort_key)
                inv.items.insert(pos, s)
                inv.slots.insert(pos, slot)
            label = label_of.get((s.tool_name, s.hitl_type))
            ghay = None if label is None else ghays.get((inv.uid, label))
            f_ghay.append(ghay if ghay is not None else self._ghay(inv, s))
            f_inv.append(inv)
            slot += 1
        # The other columns in C-level loops.
        start = len(self._f_hay)
        self._f_hay.extend(map(summary_hay, rows))
        self._f_type.extend(map(_hitl_type, rows))
        self._f_tool.extend(map(_tool_name, rows))
        self._f_agent.extend(map(_agent, rows))
        self._f_session.extend(map(_parent, f_inv[start:]))
        self._source.update(zip(map(_hitl_id, rows), rows, strict=True))
        self._touch()

    def _locate(self, s: RequestSummary) -> tuple[_Group, int]:
        """The invocation group holding ``s`` (as the grouping has it) and its position there."""
        inv = self._m_inv_by_id[s.invocation_id]
        return inv, bisect_left(inv.items, sort_key(s), key=sort_key)

    def _set_slot(self, slot: int, s: RequestSummary | None, inv: _Group | None) -> None:
        """Write (or, with None, tombstone) one request's flat columns."""
        if s is None:
            self._f_hay[slot] = self._f_ghay[slot] = ""  # contains no search term
            self._f_type[slot] = self._f_tool[slot] = self._f_agent[slot] = None
            self._f_inv[slot] = self._f_session[slot] = None
            return
        assert inv is not None
        self._f_hay[slot] = summary_hay(s)
        self._f_ghay[slot] = self._ghay(inv, s)
        self._f_type[slot] = s.hitl_type
        self._f_tool[slot] = s.tool_name
        self._f_agent[slot] = s.agent
        self._f_inv[slot] = inv
        self._f_session[slot] = inv.parent

    def _remove_master(self, old: RequestSummary) -> None:
        """Take ``old`` out of the grouping (its visible row, if any, is gone already)."""
        inv, pos = self._locate(old)
        slot = inv.slots[pos]
        del inv.items[pos], inv.slots[pos]
        inv.tail = sort_key(inv.items[-1]) if inv.items else None
        self._set_slot(slot, None, None)
        if self._mask is not None:
            self._mask[slot] = False
        self._dead += 1
        del self._source[old.hitl_id]
        if not inv.items:
            self._drop_group(inv)
        self._touch()

    def _merge_master(self, s: RequestSummary) -> None:
        """Bring the grouping up to date with one changed summary (the visible tree is not touched)."""
        old = self._source.get(s.hitl_id)
        in_scope = self._filter.scope.includes(s.status)
        if old is not None:
            if in_scope and sort_key(old) == sort_key(s) and old.invocation_id == s.invocation_id:
                inv, pos = self._locate(old)
                inv.items[pos] = s  # same key: the tail stays
                self._set_slot(inv.slots[pos], s, inv)
                self._source[s.hitl_id] = s
                self._touch()
                return
            self._remove_master(old)
        if in_scope:
            self._append_master([s])
            if self._mask is not None:
                self._mask.append(self._accepts(s))

    def _drop_group(self, inv: _Group) -> None:
        """An invocation lost its last in-scope request (it is no longer visible either)."""
        session = inv.parent
        assert session is not None
        del self._m_inv_by_id[inv.ident], self._by_uid[inv.uid]
        session.items.remove(inv)
        if inv in session.children and session.gen == self._gen:
            session.children.remove(inv)
        if not session.items:
            del self._m_session_by_id[session.ident], self._by_uid[session.uid]
            self._m_sessions.remove(session)

    def _compact(self) -> None:
        """Rebuild the flat columns without tombstones (slots are renumbered; masks are recomputed after)."""
        self._clear_columns()
        for session in self._m_sessions:
            for inv in session.items:
                inv.slots = list(range(len(self._f_hay), len(self._f_hay) + len(inv.items)))
                for s in inv.items:
                    self._f_hay.append(summary_hay(s))
                    self._f_ghay.append(self._ghay(inv, s))
                    self._f_type.append(s.hitl_type)
                    self._f_tool.append(s.tool_name)
                    self._f_agent.append(s.agent)
                    self._f_inv.append(inv)
                    self._f_session.append(session)
        assert len(self._f_hay) == len(self._source)
        self._mask = None
        self._touch()

    # -- filtering ---------------------------------------------------------------------------
    def _accepts(self, s: RequestSummary) -> bool:
        return self._filter.accepts(s, haystack(s))

    def _evaluate(self, f: InboxFilter, start: int = 0) -> list[bool] | None:
        """Which slots from ``start`` on pass ``f`` (None: no filter at all), in C-level loops."""
        terms = f.terms
        if not terms and not f.narrows_fields:
            return None

        def part(column: list[Any]) -> list[Any]:
            return column if start == 0 else column[start:]

        mask: Iterator[bool] | None = None
        for term in terms:
            found: Iterator[bool] = map(
                or_, map(contains, part(self._f_hay), repeat(term)), map(contains, part(self._f_ghay), repeat(term))
            )
            mask = found if mask is None else map(and_, mask, found)
        for column, wanted in ((self._f_type, f.hitl_type), (self._f_tool, f.tool), (self._f_agent, f.agent)):
            if wanted is not None:
                same: Iterator[bool] = map(eq, part(column), repeat(wanted))
                mask = same if mask is None else map(and_, mask, same)
        assert mask is not None
        return list(mask)

    def _rebuild(self) -> None:
        """Apply the filter to everything: a reset, then the view asks for what it shows."""
        self.beginResetModel()
        if self._dead > COMPACT_ABOVE and self._dead >= len(self._source):
            self._compact()
        f = self._filter
        key = f.mask_key
        cached = self._masks.get(key)
        mask: list[bool] | None
        if cached is not None:  # shared with the cache: any change that edits the mask clears the cache first
            self._masks.move_to_end(key)
            mask, visible = cached
        else:
            mask = self._evaluate(f)
            visible = len(self._source) if mask is None else mask.count(True)
            if mask is not None:
                self._masks[key] = (mask, visible)
                while len(self._masks) > MASKS_KEPT:
                    self._masks.popitem(last=False)
        self._mask = mask
        self._gen += 1
        for session in self._sessions:
            session.visible = False
        if mask is None:
            sessions = self._m_sessions[:]
        else:
            shown = set(compress(self._f_session, mask))
            sessions = [session for session in self._m_sessions if session in shown]
        self._group_count = None
        for row, session in enumerate(sessions):
            session.row = row
            session.visible = True
        self._sessions = sessions
        self._visible = visible
        self.endResetModel()
        self.filterApplied.emit(self._visible)
        self.countsChanged.emit()

    # -- the visible tree ----------------------------------------------------------------------
    def _visible_place(self, hitl_id: str) -> tuple[_Group, int] | None:
        """The visible invocation row holding ``hitl_id`` and the request's row in it, or None."""
        s = self._source.get(hitl_id)
        if s is None:
            return None
        inv = self._m_inv_by_id.get(s.invocation_id)
        if inv is None or inv.parent is None or not inv.parent.visible:
            return None
        self._kids(inv.parent)
        children = self._kids(inv)
        row = bisect_left(children, sort_key(s), key=sort_key)
        return (inv, row) if row < len(children) and children[row].hitl_id == hitl_id else None

    def _renumber(self, groups: list[_Group], start: int) -> None:
        for row in range(start, len(groups)):
            groups[row].row = row

    def _apply_one(self, s: RequestSummary) -> None:
        """One live change: the grouping, the mask and the visible rows (with their signals)."""
        old = self._source.get(s.hitl_id)
        in_scope = self._filter.scope.includes(s.status)
        wanted = in_scope and self._accepts(s)
        if old is not None:
            place = self._visible_place(old.hitl_id)  # also computes its session's rows before the change
            same = in_scope and sort_key(old) == sort_key(s) and old.invocation_id == s.invocation_id
            if same and place is not None and wanted:
                self._merge_master(s)
                inv, row = place
                inv.children[row] = s
                self.dataChanged.emit(self.createIndex(row, 0, inv.uid), self.createIndex(row, 5, inv.uid))
                return
            if place is not None:
                self._remove_row(*place)
            self._merge_master(s)
            if same:
                inv, pos = self._locate(s)
                if self._mask is not None:
                    self._mask[inv.slots[pos]] = wanted
        else:
            if not in_scope:
                return
            session = self._m_session_by_id.get(s.session_id)
            if session is not None and session.visible:
                self._kids(session)  # the rows the view may know, before the change
            self._merge_master(s)
        if wanted:
            self._insert_row(s)

    def _remove_row(self, inv: _Group, row: int) -> None:
        """Remove one visible request row (its session's rows are computed)."""
        session = inv.parent
        assert session is not None
        if len(inv.children) > 1:
            self.beginRemoveRows(self.createIndex(inv.row, 0, session.uid), row, row)
            del inv.children[row]
            inv.count -= 1
            session.count -= 1
            self.endRemoveRows()
            self._group_counts_changed(inv)
        elif len(session.children) > 1:
            self.beginRemoveRows(self.createIndex(session.row, 0, 0), inv.row, inv.row)
            del session.children[inv.row]
            self._renumber(session.children, inv.row)
            inv.children, inv.count = [], 0
            session.count -= 1
            self.endRemoveRows()
            self._group_counts_changed(session)
        else:
            self.beginRemoveRows(QModelIndex(), session.row, session.row)
            del self._sessions[session.row]
            self._renumber(self._sessions, session.row)
            inv.children, inv.count = [], 0
            session.children, session.count, session.visible = [], 0, False
            self.endRemoveRows()
        self._visible -= 1
        self._group_count = None

    def _insert_row(self, s: RequestSummary) -> None:
        """Show one request that passes the filter (already in the grouping and the mask)."""
        inv = self._m_inv_by_id[s.invocation_id]
        session = inv.parent
        assert session is not None
        gen = self._gen
        if session.visible and session.gen == gen:
            if inv.gen == gen and inv.children:
                row = bisect_left(inv.children, sort_key(s), key=sort_key)
                self.beginInsertRows(self.createIndex(inv.row, 0, session.uid), row, row)
                inv.children.insert(row, s)
                inv.count += 1
                session.count += 1
                self.endInsertRows()
                self._group_counts_changed(inv)
            else:
                row = bisect_left(session.children, inv.key, key=_group_key)
                self.beginInsertRows(self.createIndex(session.row, 0, 0), row, row)
                inv.children, inv.count, inv.gen = [s], 1, gen
                session.children.insert(row, inv)
                self._renumber(session.children, row)
                session.count += 1
                self.endInsertRows()
                self._group_counts_changed(session)
        elif session.visible:
            # The view has not asked for this session's rows: they are computed when it does.
            self._invalidate(session)
            self._group_counts_changed(session)
        else:
            row = bisect_left(self._sessions, session.key, key=_group_key)
            self.beginInsertRows(QModelIndex(), row, row)
            self._invalidate(session)
            session.visible = True
            self._sessions.insert(row, session)
            self._renumber(self._sessions, row)
            self.endInsertRows()
        self._visible += 1
        self._group_count = None

    def _invalidate(self, session: _Group) -> None:
        """Forget a session's computed rows and counts (recomputed from the grouping and mask on use)."""
        session.gen = session.cgen = -1
        for inv in session.items:
            inv.gen = inv.cgen = -1

    def _show_appended(self, rows: list[RequestSummary], wanted: list[bool]) -> None:
        """The visible-tree side of :meth:`append_page`: signals only for rows the view knows."""
        gen = self._gen
        known: dict[_Group, list[RequestSummary]] = {}  # invocation -> its new visible rows
        appearing: dict[_Group, None] = {}  # sessions that become visible, in key order
        for s, ok in zip(rows, wanted, strict=True):
            inv = self._m_inv_by_id[s.invocation_id]
            session = inv.parent
            assert session is not None
            if session.visible and session.gen == gen:
                if ok:
                    known.setdefault(inv, []).append(s)
            else:
                self._invalidate(session)
                if ok and not session.visible:
                    appearing[session] = None
        for inv, new in known.items():
            session = inv.parent
            assert session is not None
            if inv.gen == gen and inv.children:
                children = inv.children
                if sort_key(children[-1]) < sort_key(new[0]):
                    first = len(children)
                    self.beginInsertRows(self.createIndex(inv.row, 0, session.uid), first, first + len(new) - 1)
                    children.extend(new)
                    self.endInsertRows()
                else:
                    for s in new:
                        row = bisect_left(children, sort_key(s), key=sort_key)
                        self.beginInsertRows(self.createIndex(inv.row, 0, session.uid), row, row)
                        children.insert(row, s)
                        self.endInsertRows()
                inv.count = len(children)
                session.count += len(new)
                self._group_counts_changed(inv)
            else:
                row = bisect_left(session.children, inv.key, key=_group_key)
                self.beginInsertRows(self.createIndex(session.row, 0, 0), row, row)
                inv.children, inv.count, inv.gen = new, len(new), gen
                session.children.insert(row, inv)
                self._renumber(session.children, row)
                session.count += len(new)
                self.endInsertRows()
                self._group_counts_changed(session)
        if appearing:
            sessions = self._sessions
            tail = [s for s in appearing if not sessions or sessions[-1].key < s.key]
            for session in appearing:  # the rare ones that sort among the shown sessions
                if session in tail:
                    continue
                row = bisect_left(sessions, session.key, key=_group_key)
                self.beginInsertRows(QModelIndex(), row, row)
                session.visible = True
                sessions.insert(row, session)
                self._renumber(sessions, row)
                self.endInsertRows()
            tail.sort(key=_group_key)
            if tail:
                first = len(sessions)
                self.beginInsertRows(QModelIndex(), first, first + len(tail) - 1)
                for row, session in enumerate(tail, start=first):
                    session.visible, session.row = True, row
                sessions.extend(tail)
                self.endInsertRows()
        self._visible += sum(wanted)
        self._group_count = None
        if self._sessions:  # the counts and ages of sessions whose rows the view has not asked for
            last = len(self._sessions) - 1
            self.dataChanged.emit(self.createIndex(0, COL_SUMMARY, 0), self.createIndex(last, COL_AGE, 0))

    def _group_counts_changed(self, group: _Group | None) -> None:
        """The count and age cells of a group (and its session) changed."""
        while group is not None:
            if group.level == LEVEL_SESSION and not group.visible:
                return
            parent_uid = group.parent.uid if group.parent is not None else 0
            self.dataChanged.emit(
                self.createIndex(group.row, COL_SUMMARY, parent_uid), self.createIndex(group.row, COL_AGE, parent_uid)
            )
            group = group.parent
