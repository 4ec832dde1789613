"""The inbox model: the visible tree session → invocation → request over the grouping, for Qt views.

Kept cheap for 100,000 requests:

* The grouping and its search (:mod:`ui.inbox.grouping`) decide which requests pass the filter;
  this model decides only which sessions are visible. Which invocations and requests of a
  session are visible is worked out when the view first asks for them (it asks for what it
  expands), and a collapsed row's count and age without them, so a keystroke costs the search
  plus what is on screen, not a Python step per group.
* Live changes and the pages of a progressive load update the grouping and the visible tree with
  ``beginInsertRows``/``beginRemoveRows``; model indexes carry their parent group's id in
  ``internalId`` (0: a session row).
* What a cell shows is :mod:`ui.inbox.cells` (one :meth:`multiData` call per painted cell).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QModelIndex, QObject, QPersistentModelIndex, Qt, Signal

from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.inbox.cells import COL_AGE, COL_SUMMARY, HEADERS, InboxCells
from reviewer_app.ui.inbox.filters import InboxFilter, Scope, sort_key
from reviewer_app.ui.inbox.grouping import (
    LEVEL_INVOCATION,
    LEVEL_REQUEST,
    LEVEL_SESSION,
    Group,
    Grouping,
    gc_paused,
)
from reviewer_app.ui.models.tree_model import TreeItemModel

if TYPE_CHECKING:  # the domain's risk module (shell parsing) loads after the first screen
    from reviewer_app.domain.risk import Risk

ModelIndex = QModelIndex | QPersistentModelIndex

# Above this many changes at once a reset is cheaper than row-by-row signals.
BULK_CHANGE_THRESHOLD = 500

_group_key = attrgetter("key")


class InboxModel(TreeItemModel):
    """Tree of pending (or decided) requests grouped by session and invocation.

    Signals:
        filterApplied(int): the number of requests visible after a rebuild.
        countsChanged(): rows were added or removed (titles and badges refresh on it).
    """

    filterApplied = Signal(int)
    countsChanged = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        # Everything in scope, grouped, with the search's flat columns and the filter's mask.
        self._g = Grouping()
        self._by_uid = self._g.by_uid  # the same dict, read on every index() and parent() call
        # The visible tree: the sessions with at least one request passing the filter.
        self._gen = 0
        self._sessions: list[Group] = []
        self._visible = 0
        self._group_count: int | None = None
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
            first = self.index_for(hitl_id, 0)
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

    def index_for(self, hitl_id: str, column: int = 0) -> QModelIndex:
        found = self._visible_place(hitl_id)
        if found is None:
            return QModelIndex()
        inv, row = found
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

    def next_after_removal(self, hitl_id: str) -> str | None:
        """What to select once ``hitl_id`` is decided: the next request, else the previous one."""
        return self.neighbour(hitl_id, 1) or self.neighbour(hitl_id, -1)

    # -- Qt model ------------------------------------------------------------------------
    def _kids(self, group: Group) -> list[Any]:
        """The visible children of ``group`` under the current filter (computed on first use)."""
        if group.gen == self._gen:
            return group.children
        if group.level == LEVEL_INVOCATION:
            mask = self._g.mask
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

    def parent_index(self, index: ModelIndex) -> QModelIndex:
        """``parent(index)`` (TreeItemModel): called several times per painted cell (selection checks): one lookup."""
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
        # A shown session or invocation always has a shown child: answered without computing them. The view asks
        # this for every session row at each layout (each keystroke): a session row (id 0) in a few steps.
        uid = parent.internalId()
        if uid == 0:
            if not parent.isValid():
                return bool(self._sessions)
            return parent.column() == 0 and parent.row() < len(self._sessions)
        group = self._by_uid.get(uid)  # the row's parent: a session holds invocations, an invocation requests
        if group is None or group.level != LEVEL_SESSION or parent.column() != 0:
            return False
        return parent.row() < len(group.children if group.gen == self._gen else self._kids(group))

    # No flags() override: Qt's own (enabled, selectable) answers in C++. A Python flags() that added
    # ItemNeverHasChildren was called twice for every row of every layout, ~5,000 calls per keystroke.

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < 6:
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

    # -- the visible tree ----------------------------------------------------------------------
    def _rebuild(self) -> None:
        """Apply the filter to everything: a reset, then the view asks for what it shows."""
        self.beginResetModel()
        g = self._g
        visible = g.apply_filter()
        mask = g.mask
        self._gen += 1
        for session in self._sessions:
            session.visible = False
        if mask is None:
            sessions = g.sessions[:]
        else:
            shown = set(compress(g.f_session, mask))
            sessions = [session for session in g.sessions if session in shown]
        self._group_count = None
        for row, session in enumerate(sessions):
            session.row = row
            session.visible = True
        self._sessions = sessions
        self._visible = visible
        self.endResetModel()
        self.filterApplied.emit(self._visible)
        self.countsChanged.emit()

    def _visible_place(self, hitl_id: str) -> tuple[Group, int] | None:
        """The visible invocation row holding ``hitl_id`` and the request's row in it, or None."""
        s = self._g.source.get(hitl_id)
        if s is None:
            return None
        inv = self._g.inv_by_id.get(s.invocation_id)
        if inv is None or inv.parent is None or not inv.parent.visible:
            return None
        self._kids(inv.parent)
        children = self._kids(inv)
        row = bisect_left(children, sort_key(s), key=sort_key)
        return (inv, row) if row < len(children) and children[row].hitl_id == hitl_id else None

    def _renumber(self, groups: list[Group], start: int) -> None:
        for row in range(start, len(groups)):
            groups[row].row = row

    def _apply_one(self, s: RequestSummary) -> None:
        """One live change: the grouping, the mask and the visible rows (with their signals)."""
        old = self._g.source.get(s.hitl_id)
        in_scope = self._g.filter.scope.includes(s.status)
        wanted = in_scope and self._g.accepts(s)
        if old is not None:
            place = self._visible_place(old.hitl_id)  # also computes its session's rows before the change
            same = in_scope and sort_key(old) == sort_key(s) and old.invocation_id == s.invocation_id
            if same and place is not None and wanted:
                self._g.merge(s)
                inv, row = place
                inv.children[row] = s
                self.dataChanged.emit(self.createIndex(row, 0, inv.uid), self.createIndex(row, 5, inv.uid))
                return
            if place is not None:
                self._remove_row(*place)
            self._g.merge(s)
            if same:
                inv, pos = self._g.locate(s)
                if self._g.mask is not None:
                    self._g.mask[inv.slots[pos]] = wanted
        else:
            if not in_scope:
                return
            session = self._g.session_by_id.get(s.session_id)
            if session is not None and session.visible:
                self._kids(session)  # the rows the view may know, before the change
            self._g.merge(s)
        if wanted:
            self._insert_row(s)

    def _remove_row(self, inv: Group, row: int) -> None:
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
        inv = self._g.inv_by_id[s.invocation_id]
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

    def _invalidate(self, session: Group) -> None:
        """Forget a session's computed rows and counts (recomputed from the grouping and mask on use)."""
        session.gen = session.cgen = -1
        for inv in session.items:
            inv.gen = inv.cgen = -1

    def _show_appended(self, rows: list[RequestSummary], wanted: list[bool]) -> None:
        """The visible-tree side of :meth:`append_page`: signals only for rows the view knows."""
        gen = self._gen
        known: dict[Group, list[RequestSummary]] = {}  # invocation -> its new visible rows
        appearing: dict[Group, None] = {}  # sessions that become visible, in key order
        for s, ok in zip(rows, wanted, strict=True):
            inv = self._g.inv_by_id[s.invocation_id]
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

    def _group_counts_changed(self, group: Group | None) -> None:
        """The count and age cells of a group (and its session) changed."""
        while group is not None:
            if group.level == LEVEL_SESSION and not group.visible:
                return
            parent_uid = group.parent.uid if group.parent is not None else 0
            self.dataChanged.emit(
                self.createIndex(group.row, COL_SUMMARY, parent_uid), self.createIndex(group.row, COL_AGE, parent_uid)
            )
            group = group.parent
