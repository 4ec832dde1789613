"""The inbox's visible tree: which sessions, runs and requests pass the filter, and the row signals of its changes.

:class:`ui.inbox.model.InboxModel` answers Qt's questions over it. Kept cheap for 100,000 requests:

* The grouping and its search (:mod:`ui.inbox.grouping`) decide which requests pass the filter;
  this decides only which sessions are visible. Which invocations and requests of a session are
  visible is worked out when the view first asks for them (it asks for what it expands).
* Live changes and the pages of a progressive load update the grouping and the visible tree with
  ``beginInsertRows``/``beginRemoveRows``, for the rows the view has been given.
* The view is given the first :data:`SESSION_ROWS_AT_ONCE` session rows of a rebuilt tree, and more as
  it scrolls to their end (:meth:`VisibleTree.expose_more`) or a request further down is selected
  (``InboxModel.index_for``): a view lays out every top-level row it has after each reset, one
  Python ``index`` and ``hasChildren`` call per row, ~6 ms a keystroke at 2,000 sessions.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import compress
from operator import attrgetter
from typing import Any

from PySide6.QtCore import QModelIndex, QObject, Signal

from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.inbox.cells import COL_AGE, COL_SUMMARY, HEADERS
from reviewer_app.ui.inbox.filters import sort_key
from reviewer_app.ui.inbox.grouping import LEVEL_INVOCATION, LEVEL_SESSION, Group, Grouping
from reviewer_app.ui.models.tree_model import TreeItemModel

LAST_COLUMN = len(HEADERS) - 1

SESSION_ROWS_AT_ONCE = 200  # session rows given to the view at a time: several screens, even with all collapsed

_group_key = attrgetter("key")


class VisibleTree(TreeItemModel):
    """The sessions with a request passing the filter, their visible rows, and the signals of their changes.

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
        self._gen = 0
        self._sessions: list[Group] = []
        self._exposed = 0  # the first this many of ``_sessions`` are the view's top-level rows
        self._visible = 0
        self._group_count: int | None = None

    @property
    def session_count(self) -> int:
        """Sessions with a request passing the filter (the view has the first :attr:`exposed_sessions` of them)."""
        return len(self._sessions)

    @property
    def exposed_sessions(self) -> int:
        return self._exposed

    @property
    def more_sessions(self) -> bool:
        """Whether sessions that pass the filter lie past the rows the view has."""
        return self._exposed < len(self._sessions)

    def expose_more(self) -> None:
        """Give the view the next :data:`SESSION_ROWS_AT_ONCE` session rows (it scrolled to the end of its rows)."""
        self._expose(self._exposed + SESSION_ROWS_AT_ONCE)

    def _expose(self, rows: int) -> None:
        rows = min(rows, len(self._sessions))
        if rows > self._exposed:
            self.beginInsertRows(QModelIndex(), self._exposed, rows - 1)
            self._exposed = rows
            self.endInsertRows()

    def _is_exposed(self, session: Group) -> bool:
        return session.visible and session.row < self._exposed

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
        self._exposed = min(len(sessions), SESSION_ROWS_AT_ONCE)
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
                if inv.parent is not None and self._is_exposed(inv.parent):
                    first, last = self.createIndex(row, 0, inv.uid), self.createIndex(row, LAST_COLUMN, inv.uid)
                    self.dataChanged.emit(first, last)
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
        """Remove one visible request row (its session's rows are computed); signals if the view has the rows."""
        session = inv.parent
        assert session is not None
        told = self._is_exposed(session)
        if len(inv.children) > 1:
            with self._removing(told, self.createIndex(inv.row, 0, session.uid), row):
                del inv.children[row]
                inv.count -= 1
                session.count -= 1
            self._group_counts_changed(inv)
        elif len(session.children) > 1:
            with self._removing(told, self.createIndex(session.row, 0, 0), inv.row):
                del session.children[inv.row]
                self._renumber(session.children, inv.row)
                inv.children, inv.count = [], 0
                session.count -= 1
            self._group_counts_changed(session)
        else:
            with self._removing(told, QModelIndex(), session.row):
                del self._sessions[session.row]
                self._renumber(self._sessions, session.row)
                inv.children, inv.count = [], 0
                session.children, session.count, session.visible = [], 0, False
                self._exposed -= told
            self._expose(SESSION_ROWS_AT_ONCE)  # the view keeps a window's worth of rows while there are more
        self._visible -= 1
        self._group_count = None

    @contextmanager
    def _removing(self, told: bool, parent: QModelIndex, row: int) -> Iterator[None]:
        """``beginRemoveRows``/``endRemoveRows`` around one row's removal, if the view has that row."""
        if told:
            self.beginRemoveRows(parent, row, row)
        yield
        if told:
            self.endRemoveRows()

    @contextmanager
    def _inserting(self, told: bool, parent: QModelIndex, first: int, last: int) -> Iterator[None]:
        """``beginInsertRows``/``endInsertRows`` around an insert, if the view is to have the rows."""
        if told:
            self.beginInsertRows(parent, first, last)
        yield
        if told:
            self.endInsertRows()

    def _insert_row(self, s: RequestSummary) -> None:
        """Show one request that passes the filter (already in the grouping and the mask)."""
        inv = self._g.inv_by_id[s.invocation_id]
        session = inv.parent
        assert session is not None
        gen = self._gen
        if self._is_exposed(session) and session.gen == gen:
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
            # The view has not asked for this session's rows (or has not its row): computed when it does.
            self._invalidate(session)
            self._group_counts_changed(session)
        else:
            row = bisect_left(self._sessions, session.key, key=_group_key)
            told = row < self._exposed or self._exposed == len(self._sessions)  # among the view's rows, or all shown
            with self._inserting(told, QModelIndex(), row, row):
                self._invalidate(session)
                session.visible = True
                self._sessions.insert(row, session)
                self._renumber(self._sessions, row)
                self._exposed += told
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
            if self._is_exposed(session) and session.gen == gen:
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
                with self._inserting(row < self._exposed, QModelIndex(), row, row):
                    session.visible = True
                    sessions.insert(row, session)
                    self._renumber(sessions, row)
                    self._exposed += row < self._exposed
            tail.sort(key=_group_key)
            first = len(sessions)
            # New sessions at the end: the view gets them while it has every session and room in its first rows.
            given = 0 if self._exposed < first else max(0, min(len(tail), SESSION_ROWS_AT_ONCE - first))
            with self._inserting(given > 0, QModelIndex(), first, first + given - 1):
                for row, session in enumerate(tail, start=first):
                    session.visible, session.row = True, row
                sessions.extend(tail)
                self._exposed += given
        self._visible += sum(wanted)
        self._group_count = None
        if self._exposed:  # the counts and ages of sessions whose rows the view has not asked for
            last = self._exposed - 1
            self.dataChanged.emit(self.createIndex(0, COL_SUMMARY, 0), self.createIndex(last, COL_AGE, 0))

    def _group_counts_changed(self, group: Group | None) -> None:
        """The count and age cells of a group (and its session) changed."""
        while group is not None:
            session = group if group.level == LEVEL_SESSION else group.parent
            if session is None or not self._is_exposed(session):
                return
            parent_uid = group.parent.uid if group.parent is not None else 0
            self.dataChanged.emit(
                self.createIndex(group.row, COL_SUMMARY, parent_uid), self.createIndex(group.row, COL_AGE, parent_uid)
            )
            group = group.parent
