"""The inbox model: the visible tree session → invocation → request over the grouping, for Qt views.

Kept cheap for 100,000 requests: which rows are visible, and the signals of their changes, is
:mod:`ui.inbox.visible_tree`; model indexes carry their parent group's id in ``internalId`` (0: a
session row); a collapsed row's count and age come without computing its rows; what a cell shows is
:mod:`ui.inbox.cells` (one :meth:`multiData` call per painted cell).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from itertools import compress
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, Qt

from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.inbox.cells import HEADERS, InboxCells
from reviewer_app.ui.inbox.filters import InboxFilter, Scope
from reviewer_app.ui.inbox.grouping import (
    LEVEL_INVOCATION,
    LEVEL_REQUEST,
    LEVEL_SESSION,
    Group,
    gc_paused,
)
from reviewer_app.ui.inbox.visible_tree import VisibleTree

COLUMNS = len(HEADERS)

if TYPE_CHECKING:  # the domain's risk module (shell parsing) loads after the first screen
    from reviewer_app.domain.risk import Risk

ModelIndex = QModelIndex | QPersistentModelIndex

# Above this many changes at once a reset is cheaper than row-by-row signals.
BULK_CHANGE_THRESHOLD = 500


class InboxModel(VisibleTree):
    """Tree of pending (or decided) requests grouped by session and invocation (signals: :class:`VisibleTree`)."""

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._group_count_version = -1
        self._cells = InboxCells(self._g, self._summary_of)

    # -- public API ----------------------------------------------------------------------
    @property
    def filter(self) -> InboxFilter:
        return self._g.filter

    @property
    def visible_count(self) -> int:
        return self._visible

    @property
    def source_count(self) -> int:
        return len(self._g.source)

    @property
    def tools(self) -> set[str]:
        """Every tool named in scope (the tool filter's choices)."""
        return self._g.tools

    @property
    def agents(self) -> set[str]:
        """Every agent named in scope (the agent filter's choices)."""
        return self._g.agents

    @property
    def group_count(self) -> int:
        """Visible session and invocation rows: what expanding everything would cost."""
        g = self._g
        if self._group_count is None or self._group_count_version != g.version:
            mask = g.mask
            invocations = len(g.inv_by_id) if mask is None else len(set(compress(g.f_inv, mask)))
            self._group_count = len(self._sessions) + invocations
            self._group_count_version = g.version
        return self._group_count

    @property
    def now(self) -> Callable[[], float]:
        """The clock ages and countdowns are computed with (replaceable in tests)."""
        return self._cells.now

    @now.setter
    def now(self, clock: Callable[[], float]) -> None:
        self._cells.now = clock

    def set_risk_source(self, risk_of: Callable[[str], Risk | None]) -> None:
        """Where the risk chips come from (``ui.inbox.risk.RiskCache.risk``)."""
        self._cells.risk_of = risk_of

    def set_mark_source(self, is_marked: Callable[[str], bool]) -> None:
        """Which requests are marked for a bulk action (``ui.triage.bulk.BulkController``): drawn checked."""
        self._cells.is_marked = is_marked

    def repaint_requests(self, hitl_ids: Iterable[str]) -> None:
        """These requests' rows show something new (their risk arrived, a mark changed)."""
        for hitl_id in hitl_ids:
            first = self.index_for(hitl_id, 0, expose=False)
            if first.isValid():
                self.dataChanged.emit(first, first.siblingAtColumn(len(HEADERS) - 1))

    def summary(self, hitl_id: str) -> RequestSummary | None:
        return self._g.source.get(hitl_id)

    def requests_in_scope(self) -> Iterable[RequestSummary]:
        """Every request the inbox holds (filtered or not)."""
        return self._g.source.values()

    def set_titles(self, titles: Callable[[Group], str | None]) -> None:
        """Where group rows take their human titles from (the view repaints when they change)."""
        self._cells.titles = titles

    def refresh_theme(self) -> None:
        """The colour scheme changed: take its colours (the view repaints on the palette change)."""
        self._cells.refresh_theme()

    def ages_due(self) -> bool:
        """True (once) when a shown age or countdown has a new text since the last paint."""
        return self._cells.ages_due()

    def set_requests(self, summaries: Iterable[RequestSummary], scope: Scope | None = None) -> None:
        """Replace everything (first load, or a scope change that reloaded from the store)."""
        if scope is not None:
            self._g.filter = replace(self._g.filter, scope=scope)
        with gc_paused():
            self._g.reset(summaries)
            self._rebuild()

    def append_page(self, summaries: Iterable[RequestSummary]) -> None:
        """Merge the next page of a progressive load (requests not in the inbox yet, in arrival order).

        The pages come oldest first, so new rows mostly land at the ends of their groups and new
        sessions at the end of the tree: one insert per touched group the view knows, none for
        the groups it has not asked about yet.
        """
        statuses = frozenset(self._g.filter.scope.statuses)
        source = self._g.source
        rows = list({s.hitl_id: s for s in summaries if s.status in statuses and s.hitl_id not in source}.values())
        if not rows:
            return
        with gc_paused():  # (no sort: pages come in arrival order, and the grouping copes with any order)
            wanted = self._g.extend(rows)
            self._show_appended(rows, wanted)
        self.countsChanged.emit()

    def set_filter(self, new: InboxFilter) -> None:
        """Apply search and filters. A scope change only takes effect with the next :meth:`set_requests`."""
        if new == self._g.filter:
            return
        self._g.filter = new
        with gc_paused():
            self._rebuild()

    def apply_changes(self, summaries: Iterable[RequestSummary]) -> None:
        """Merge changed summaries (by ``hitl_id``): update, insert or remove rows one by one."""
        includes = self._g.filter.scope.includes
        latest = {s.hitl_id: s for s in summaries}
        changed = [
            s
            for s in latest.values()
            if self._g.source.get(s.hitl_id) != s and (includes(s.status) or s.hitl_id in self._g.source)
        ]
        if not changed:
            return
        if len(changed) > BULK_CHANGE_THRESHOLD:
            with gc_paused():
                for s in changed:
                    self._g.merge(s)
                self._rebuild()
            return
        for s in changed:
            self._apply_one(s)
        self.countsChanged.emit()

    def index_for(self, hitl_id: str, column: int = 0, *, expose: bool = True) -> QModelIndex:
        """The request's index; a request the filter shows in a session row the view has not been given yet gets
        its row given (``expose``) or an invalid index."""
        found = self._visible_place(hitl_id)
        if found is None:
            return QModelIndex()
        inv, row = found
        session = inv.parent
        assert session is not None
        if session.row >= self._exposed:
            if not expose:
                return QModelIndex()
            self._expose(session.row + 1)
        return self.createIndex(row, column, inv.uid)

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

    def next_after_removal(self, hitl_id: str, leaving: Iterable[str] = ()) -> str | None:
        """What to select once ``hitl_id`` is decided (with ``leaving``, a bulk decision's others): the next request
        that stays, else the previous one."""
        gone = {hitl_id, *leaving}
        for step in (1, -1):
            current = self.neighbour(hitl_id, step)
            while current is not None and current in gone:
                current = self.neighbour(current, step)
            if current is not None:
                return current
        return None

    # -- Qt model ------------------------------------------------------------------------
    def _summary_of(self, group: Group) -> tuple[int, int]:
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
                mask = self._g.mask
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

    def is_request(self, index: ModelIndex) -> bool:
        """Whether ``index`` is a request's row (not a session's or a run's), without building its cell."""
        uid = index.internalId() if index.isValid() else 0
        group = self._by_uid.get(uid) if uid else None
        return group is not None and group.level != LEVEL_SESSION

    def _node(self, index: ModelIndex) -> tuple[int, Any]:
        if not index.isValid():
            return (-1, None)
        uid = index.internalId()
        row = index.row()
        if uid == 0:
            return (LEVEL_SESSION, self._sessions[row]) if row < self._exposed else (-1, None)
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
            if 0 <= row < self._exposed and 0 <= column < COLUMNS:
                return self.createIndex(row, column, 0)
            return QModelIndex()
        if row < 0 or not 0 <= column < COLUMNS or parent.column() != 0:
            return QModelIndex()
        # The parent is a session (id 0) or an invocation (id: its session's uid); the view asks
        # this for every cell it paints, so no tuple and no call for the common case.
        puid = parent.internalId()
        prow = parent.row()
        if puid == 0:
            if prow >= self._exposed:
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
        if row == index.row() and 0 <= column < COLUMNS and index.isValid():
            return self.createIndex(row, column, index.internalId())
        return super().sibling(row, column, index)

    def parent_index(self, index: ModelIndex) -> QModelIndex:
        """``parent(index)`` (TreeItemModel): called several times per painted cell (selection checks): one lookup."""
        group = self._by_uid.get(index.internalId())  # an invalid index and a session row have id 0: no group
        if group is None:
            return QModelIndex()
        return self.createIndex(group.row, 0, group.puid)

    def rowCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        if not parent.isValid():
            return self._exposed
        if parent.column() != 0:
            return 0
        level, node = self._node(parent)
        return len(self._kids(node)) if level in (LEVEL_SESSION, LEVEL_INVOCATION) else 0

    def columnCount(self, parent: ModelIndex = QModelIndex()) -> int:  # noqa: B008
        return len(HEADERS)

    def hasChildren(self, parent: ModelIndex = QModelIndex()) -> bool:  # noqa: B008
        # A shown session or invocation always has a shown child: answered without computing them. The view asks
        # this for every session row at each layout (each keystroke): a session row (id 0) in a few steps.
        uid = parent.internalId()
        if uid == 0:
            if not parent.isValid():
                return self._exposed > 0
            return parent.column() == 0 and parent.row() < self._exposed
        group = self._by_uid.get(uid)  # the row's parent: a session holds invocations, an invocation requests
        if group is None or group.level != LEVEL_SESSION or parent.column() != 0:
            return False
        return parent.row() < len(group.children if group.gen == self._gen else self._kids(group))

    # No flags() override: Qt's own (enabled, selectable) answers in C++. A Python flags() that added
    # ItemNeverHasChildren was called twice for every row of every layout, ~5,000 calls per keystroke.

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < COLUMNS:
            return HEADERS[section]
        return None

    def multiData(self, index: ModelIndex, span: Any) -> None:
        """Every role of a cell in one call (QStyledItemDelegate asks seven roles per painted cell)."""
        level, node = self._node(index)
        if node is not None:
            self._cells.fill(level, node, index.column(), span)

    def data(self, index: ModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        level, node = self._node(index)
        if node is None:
            return None
        return self._cells.value(level, node, index.column(), int(role))
