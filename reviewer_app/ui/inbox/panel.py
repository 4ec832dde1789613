"""The Inbox tab: search and filters over the inbox tree, the status line, and which request is on screen.

It takes the feed's increments (first load, pages, live changes) into the model and keeps the
selection steady through them: the request being read stays selected while it is shown, the
next one takes its place when it leaves, and with nothing selected the oldest request is shown.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable
from dataclasses import replace
from itertools import pairwise

from PySide6.QtCore import QEvent, QItemSelectionModel, QModelIndex, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QMenu,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import RequestSummary
from reviewer_app.ui.common import clipboard
from reviewer_app.ui.common.filter_bar import filter_combo, search_box
from reviewer_app.ui.detail.pane import DetailPane
from reviewer_app.ui.inbox.cells import (
    COL_DECIDED,
    COL_REQUEST,
    GROUP_ID_ROLE,
    LEVEL_ROLE,
)
from reviewer_app.ui.inbox.filters import ALL_AGENTS, ALL_TOOLS, SCOPES, TYPE_FILTERS, InboxFilter, Scope
from reviewer_app.ui.inbox.grouping import LEVEL_INVOCATION, LEVEL_REQUEST, LEVEL_SESSION, Group
from reviewer_app.ui.inbox.model import InboxModel
from reviewer_app.ui.inbox.queue import FlatQueue
from reviewer_app.ui.inbox.titles import RunTitles
from reviewer_app.ui.inbox.view import NO_PENDING_TEXT, InboxView
from reviewer_app.ui.runs.model import RunsModel
from reviewer_app.ui.window.live import LiveController

FREEZE_ABOVE = 20_000
SEARCH_DEBOUNCE_MS = 0  # coalesces keys queued together; a rebuild of 100,000 rows takes ~30 ms
HELD = "held"  # a decision made here waits out its undo grace period: shown as gone (ui/triage/undo.py)


def _setfilter_combo(combo: QComboBox, text: str) -> None:
    """Select ``text`` (added when missing: a tool or agent not loaded yet) without a change signal."""
    if not text:
        return
    if combo.findText(text) < 0:
        combo.addItem(text)
    combo.blockSignals(True)
    combo.setCurrentIndex(combo.findText(text))
    combo.blockSignals(False)


class InboxPanel(QWidget):
    """Search box, filter combos, the inbox tree and its status line; shows the selection in the detail pane.

    ``active`` is False while another tab is in front: the panel then leaves the detail pane alone.

    Signals:
        interacted(): the operator searched, filtered or moved the selection (the window's idle clock).
        filterTextsChanged(): the search or a filter changed (what the window remembers).
    """

    interacted = Signal()
    filterTextsChanged = Signal()

    def __init__(
        self, live: LiveController, detail: DetailPane, runs_model: RunsModel, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.live = live
        self.detail = detail
        self.runs_model = runs_model
        self.active = True
        self._reconciling = False  # the model is being rebuilt: its current-index changes are not the operator's
        self._load_progress: tuple[int, int] | None = None  # (loaded, expected) while the inbox loads
        self.last_filter_ms = 0.0
        self.model = InboxModel(self)
        self._held: dict[str, RequestSummary | None] = {}  # held ids → their pending row, to put back on undo

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        self.search_box = search_box("searchBox", "Search requests", "Search tool, arguments, session, agent   ( / )")
        layout.addWidget(self.search_box)
        filters = QHBoxLayout()
        self.scope_combo = filter_combo("scopeFilter", "Status", [label for label, _ in SCOPES])
        self.type_combo = filter_combo("typeFilter", "Request type", [label for label, _ in TYPE_FILTERS])
        self.tool_combo = filter_combo("toolFilter", "Tool", [ALL_TOOLS])
        self.agent_combo = filter_combo("agentFilter", "Agent", [ALL_AGENTS])
        for combo in (self.scope_combo, self.type_combo, self.tool_combo, self.agent_combo):
            filters.addWidget(combo, 1)
        layout.addLayout(filters)
        self.filter_notice = QLabel()
        self.filter_notice.setObjectName("filterNotice")
        self.filter_notice.setAccessibleName("Filter active")
        self.filter_notice.setWordWrap(True)
        self.filter_notice.setTextFormat(Qt.TextFormat.RichText)
        self.filter_notice.linkActivated.connect(lambda _link: self.clear_filters())
        self.filter_notice.hide()
        layout.addWidget(self.filter_notice)
        self.view = InboxView()
        self.view.setObjectName("inboxView")
        self.view.setAccessibleName("Inbox")
        self.view.setModel(self.model)
        self.view.use_inbox_columns()
        backend = live.backend
        self.titles = RunTitles(
            runs_model, self, fetch=backend.get_run, fetch_session=backend.session_info, spawn=live.spawn
        )
        self.model.set_titles(self._group_title)
        self.titles.changed.connect(self.view.viewport().update)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.customContextMenuRequested.connect(self._on_context_menu)
        self.queue = FlatQueue(self)  # the flat queue beside the tree (key Q)
        self.view.empty_text = self.queue.view.empty_text = self.empty_text
        self.stack = QStackedWidget()
        self.stack.addWidget(self.view)
        self.stack.addWidget(self.queue.view)
        layout.addWidget(self.stack, 1)
        self.status_label = QLabel()
        self.status_label.setObjectName("inboxStatus")
        layout.addWidget(self.status_label)
        # Tab from the search goes to the results (one key, not five), then on to the filters.
        order = (self.search_box, self.view, self.scope_combo, self.type_combo, self.tool_combo, self.agent_combo)
        for first, second in pairwise(order):
            QWidget.setTabOrder(first, second)
        self._search_timer = QTimer(self, singleShot=True, interval=SEARCH_DEBOUNCE_MS)
        self._search_timer.timeout.connect(self.apply_filter)

        self.view.selectionModel().currentChanged.connect(self._on_current)
        self.view.moveRequested.connect(self.move_request)
        self.search_box.textChanged.connect(lambda _text: self._search_timer.start())
        self.search_box.textChanged.connect(lambda _text: self.filterTextsChanged.emit())
        self.search_box.returnPressed.connect(self.enter_results)
        self.search_box.installEventFilter(self)
        self.scope_combo.currentIndexChanged.connect(self._on_scope_changed)
        for combo in (self.type_combo, self.tool_combo, self.agent_combo):
            combo.currentIndexChanged.connect(lambda _i: self.apply_filter())
        for combo in (self.scope_combo, self.type_combo, self.tool_combo, self.agent_combo):
            combo.currentIndexChanged.connect(lambda _i: self.filterTextsChanged.emit())
        self.model.filterApplied.connect(lambda _n: self._update_status())
        self.model.countsChanged.connect(self._update_status)
        self._scope = Scope.PENDING
        live.requestsLoaded.connect(self.on_requests_loaded)
        live.requestsAppended.connect(self.on_requests_appended)
        live.loadProgress.connect(self.on_load_progress)
        live.requestsChanged.connect(self.on_requests_changed)

    # -- search and filters -------------------------------------------------------------------
    def current_filter(self) -> InboxFilter:
        tool = self.tool_combo.currentText()
        agent = self.agent_combo.currentText()
        return InboxFilter(
            text=self.search_box.text(),
            hitl_type=TYPE_FILTERS[max(0, self.type_combo.currentIndex())][1],
            tool=None if self.tool_combo.currentIndex() <= 0 else tool,
            agent=None if self.agent_combo.currentIndex() <= 0 else agent,
            scope=self.model.filter.scope,
        )

    def apply_filter(self) -> None:
        """Rebuild the inbox for the search and filters, keeping the selected request if it still shows."""
        self._search_timer.stop()
        self.interacted.emit()
        selected = self.detail.hitl_id
        started = time.perf_counter()
        self._reconciling = True
        try:
            self.model.set_filter(self.current_filter())
        finally:
            self._reconciling = False
        self.last_filter_ms = (time.perf_counter() - started) * 1000
        self.reselect(selected)

    def filter_texts(self) -> dict[str, str]:
        """The search and filters as the operator set them (what the window remembers)."""
        return {
            "scope": self.scope_combo.currentText(),
            "type": self.type_combo.currentText(),
            "tool": self.tool_combo.currentText(),
            "agent": self.agent_combo.currentText(),
            "search": self.search_box.text(),
        }

    def restore_filter_texts(self, texts: dict[str, str]) -> None:
        """Set the search and filters remembered from last time, then apply them once."""
        for key, combo in (
            ("type", self.type_combo),
            ("tool", self.tool_combo),
            ("agent", self.agent_combo),
            ("scope", self.scope_combo),
        ):
            _setfilter_combo(combo, texts.get(key, ""))
        self.search_box.setText(texts.get("search", ""))
        scope = SCOPES[max(0, self.scope_combo.currentIndex())][1]
        self._show_scope_columns(scope)
        self.live.scope = scope
        self.apply_filter()

    def _on_scope_changed(self, index: int) -> None:
        scope = SCOPES[max(0, index)][1]
        self._show_scope_columns(scope)
        self.live.set_scope(scope)

    def _show_scope_columns(self, scope: Scope) -> None:
        self._scope = scope
        self.view.setColumnHidden(COL_DECIDED, scope is Scope.PENDING)
        self._hide_empty_columns()

    def _hide_empty_columns(self, added: list[RequestSummary] | None = None) -> None:
        self.view.hide_empty_columns(self._scope, added)

    def _refresh_filter_choices(self) -> None:
        for combo, values, label in (
            (self.tool_combo, self.model.tools, ALL_TOOLS),
            (self.agent_combo, self.model.agents, ALL_AGENTS),
        ):
            current = combo.currentText()
            wanted = [label, *sorted(values | ({current} if combo.currentIndex() > 0 else set()))]
            if [combo.itemText(i) for i in range(combo.count())] != wanted:
                combo.blockSignals(True)
                combo.clear()
                combo.addItems(wanted)
                combo.setCurrentIndex(max(0, combo.findText(current)))
                combo.blockSignals(False)

    @property
    def filtering(self) -> bool:
        """Whether the search or a type, tool or agent filter narrows the inbox (the scope does not count)."""
        f = self.model.filter
        return bool(f.terms) or f.narrows_fields

    def clear_filters(self) -> None:
        """Esc in the inbox: no search, all types, tools and agents (the scope stays)."""
        for combo in (self.type_combo, self.tool_combo, self.agent_combo):
            combo.blockSignals(True)
            combo.setCurrentIndex(0)
            combo.blockSignals(False)
        self.search_box.clear()  # with its signals: the clear button hides on them
        self.apply_filter()
        self.filterTextsChanged.emit()

    def focus_search(self) -> None:
        self.search_box.setFocus()
        self.search_box.selectAll()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Down (or Page Down) in the search box moves into the results, keeping the search."""
        if watched is self.search_box and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            if event.key() in (Qt.Key.Key_Down, Qt.Key.Key_PageDown) and not event.modifiers():
                self.enter_results()
                return True
        return super().eventFilter(watched, event)

    def enter_results(self) -> None:
        """Leave the search box for the results (the filter stays): the next letter is a command again."""
        if self._search_timer.isActive() or self.model.filter != self.current_filter():
            self.apply_filter()
        if self.detail.hitl_id is None or not self.model.index_for(self.detail.hitl_id).isValid():
            first = self.model.first_request()
            if first is not None:
                self.select_request(first)
        self.reading_view.setFocus()

    def leave_search(self) -> None:
        if self.search_box.text():
            self.search_box.clear()
            self.apply_filter()
        self.reading_view.setFocus()

    # -- the feed's increments -----------------------------------------------------------------
    def on_requests_loaded(self, rows: list[RequestSummary], scope: str) -> None:
        rows = [row for row in self._without_held(rows) if row.status != HELD]
        selected = self.detail.hitl_id
        self._reconciling = True
        try:
            self.model.set_requests(rows, Scope(scope))
            self.model.set_filter(self.current_filter())
        finally:
            self._reconciling = False
        if len(rows) >= FREEZE_ABOVE:
            # Summaries are acyclic and long-lived: keep them out of every later full collection,
            # which would otherwise walk them all (~0.2 s at 100,000) in the middle of a keystroke.
            gc.freeze()
        self._refresh_filter_choices()
        self._hide_empty_columns()
        self.reselect(selected)

    def on_requests_appended(self, rows: list[RequestSummary]) -> None:
        """The next page of a progressive load: newer requests, merged without moving the selection."""
        rows = [row for row in self._without_held(rows) if row.status != HELD]
        self._reconciling = True
        try:
            self.model.append_page(rows)
        finally:
            self._reconciling = False
        if self.model.source_count >= FREEZE_ABOVE:
            gc.freeze()  # the same reason as after a big first load, page by page
        self._refresh_filter_choices()
        self._hide_empty_columns(rows)
        if self.detail.summary is None and self.detail.run_record is None:
            self.reselect(None)

    def on_load_progress(self, loaded: int, expected: int) -> None:
        self._load_progress = (loaded, expected) if loaded < expected else None
        self._update_status()

    @property
    def loading(self) -> bool:
        """True while the inbox is still receiving pages of its first load."""
        return self._load_progress is not None

    def on_requests_changed(self, rows: list[RequestSummary]) -> None:
        rows = self._without_held(rows)
        selected = self.detail.hitl_id
        fallback = None
        if selected is not None:
            for row in rows:
                if row.hitl_id == selected:
                    if self.model.filter.scope.includes(row.status):
                        self.detail.update_summary(row)
                    else:  # it leaves the inbox: the next request replaces it below, no need to redraw it
                        self.detail.update_summary(row, render=False)
                        fallback = self.model.next_after_removal(selected)
        self._reconciling = True
        try:
            self.model.apply_changes(rows)
        finally:
            self._reconciling = False
        self._refresh_filter_choices()
        self._hide_empty_columns()
        if selected is not None and not self.model.index_for(selected).isValid():
            self.reselect(fallback)
        elif selected is None:
            self.reselect(None)

    # -- decisions held for their undo grace period (ui/triage/undo.py) ---------------------------------
    def _without_held(self, rows: list[RequestSummary]) -> list[RequestSummary]:
        """Held requests look decided to the inbox; one really decided meanwhile is not put back on undo."""
        if not self._held:
            return rows
        out = []
        for row in rows:
            shown = row
            if row.hitl_id in self._held:
                if row.status == HITLStatus.PENDING.value:
                    self._held[row.hitl_id] = row
                    shown = replace(row, status=HELD)
                else:
                    self._held[row.hitl_id] = None
            out.append(shown)
        return out

    def hold(self, hitl_ids: Iterable[str]) -> None:
        """These requests were decided here and wait out their grace period: they leave the inbox now."""
        rows = []
        for hitl_id in hitl_ids:
            summary = self.model.summary(hitl_id)
            self._held[hitl_id] = (
                summary if summary is not None and summary.status == HITLStatus.PENDING.value else None
            )
            if summary is not None:
                rows.append(summary)
        self._reconciling = True
        try:
            self.model.apply_changes(self._without_held(rows))
        finally:
            self._reconciling = False

    def release(self, hitl_ids: Iterable[str], *, restore: bool) -> None:
        """The held decision was committed (``restore=False``) or undone / not recorded: put the rows back."""
        back = [row for hitl_id in hitl_ids if (row := self._held.pop(hitl_id, None)) is not None]
        if restore and back:
            self._reconciling = True
            try:
                self.model.apply_changes(back)
            finally:
                self._reconciling = False

    @property
    def held_ids(self) -> set[str]:
        return set(self._held)

    # -- the selection -------------------------------------------------------------------------
    def reselect(self, hitl_id: str | None) -> None:
        """Select ``hitl_id`` if shown, else keep a group selection, else the oldest request."""
        if not self.active:
            return
        if hitl_id is not None and self.model.index_for(hitl_id).isValid():
            if self.detail.hitl_id != hitl_id or not self._current_is(hitl_id):
                self.select_request(hitl_id)
            return
        current = self.view.currentIndex()
        if current.isValid() and current.data(LEVEL_ROLE) in (LEVEL_SESSION, LEVEL_INVOCATION) and hitl_id is None:
            return
        first = self.model.first_request()
        if first is not None:
            self.select_request(first)
            return
        self.view.setCurrentIndex(QModelIndex())
        shown = self.detail.summary
        run = self.runs_model.run(shown.invocation_id) if shown is not None else None
        if run is not None:
            # Nothing left to decide: keep the last request's run on screen to watch it finish.
            self.detail.show_run(run)
        elif self.detail.run_record is None:
            self.detail.show_empty(self.empty_text())  # as the list says (a search may hide them all)
            self.live.watch_invocation(None)

    def empty_text(self) -> str:
        """What the empty list says: still loading, nothing matches (and how to see everything), or nothing waits."""
        if self.loading:
            return "Loading…"
        if self.model.source_count and self.filtering:
            return f"Nothing here matches the search or filters ({self.model.source_count:,} in all). Esc clears them."
        return {
            Scope.PENDING: NO_PENDING_TEXT,
        }.get(self._scope, "No requests here.")

    # -- the flat queue or the grouped tree ------------------------------------------------------
    @property
    def flat(self) -> bool:
        return self.queue.on

    @property
    def reading_view(self) -> QWidget:
        """The list the operator reads and moves in: the flat queue or the tree."""
        return self.queue.view if self.queue.on else self.view

    def set_flat(self, on: bool) -> None:
        """Show the flat queue (one row per request, most urgent first) or the grouped tree."""
        had_focus = self.reading_view.hasFocus()
        self.queue.on = on
        if on:
            self.queue.refresh()
        self.stack.setCurrentWidget(self.reading_view)
        if had_focus:
            self.reading_view.setFocus()

    def next_after_removal(self, hitl_id: str) -> str | None:
        """What to select once ``hitl_id`` is decided: the next request in the order on screen."""
        return self.queue.next_after_removal(hitl_id) if self.queue.on else self.model.next_after_removal(hitl_id)

    def _current_is(self, hitl_id: str) -> bool:
        return self.view.currentIndex().siblingAtColumn(0) == self.model.index_for(hitl_id)

    def select_request(self, hitl_id: str) -> bool:
        index = self.model.index_for(hitl_id)
        if not index.isValid():
            return False
        self.view.scrollTo(index)
        flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
        self.view.selectionModel().setCurrentIndex(index, flags)  # one row selected, whatever was before (undo)
        if self.detail.hitl_id != hitl_id:  # currentChanged did not fire (same index object)
            self.show_summary(self.model.summary(hitl_id))
        return True

    def move_request(self, step: int) -> None:
        """j/k: the next (+1) or previous (-1) request in display order."""
        if self.queue.on:
            self.queue.move(step)
            return
        current = self.detail.hitl_id
        target = self.model.neighbour(current, step) if current else None
        if target is None and current is None:
            index = self.view.currentIndex()
            target = self._first_request_under(index) if index.isValid() else self.model.first_request()
        if target is not None:
            self.select_request(target)

    def _first_request_under(self, index: QModelIndex) -> str | None:
        model = self.model
        index = index.siblingAtColumn(0)
        while index.isValid() and index.data(LEVEL_ROLE) != LEVEL_REQUEST:
            if model.rowCount(index) == 0:
                return model.first_request()
            index = model.index(0, 0, index)
        request = model.request_at(index) if index.isValid() else None
        return request.hitl_id if request is not None else None

    def show_current(self) -> None:
        """The tab came to the front: show what is selected (or nothing)."""
        current = self.view.currentIndex()
        summary = self.model.request_at(current.siblingAtColumn(0)) if current.isValid() else None
        if summary is not None:
            self.show_summary(summary)
        else:
            self.detail.show_empty(self.empty_text())
            self.reselect(None)

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._reconciling or not self.active:
            return
        summary = self.model.request_at(current.siblingAtColumn(0)) if current.isValid() else None
        if summary is not None:
            if summary.hitl_id != self.detail.hitl_id:
                self.show_summary(summary)
            return
        if not current.isValid():
            return
        level = current.data(LEVEL_ROLE)
        ident = current.siblingAtColumn(0).data(GROUP_ID_ROLE)
        count = current.siblingAtColumn(COL_REQUEST).data()
        if level == LEVEL_INVOCATION:
            title = self.titles.run_title(ident)
            run = self.runs_model.run(ident)
            if run is not None:
                self.detail.show_run(run)
            else:
                self.detail.show_empty(f"Run {f'“{title}” ' if title else ''}({ident}): {count}")
            self.live.watch_invocation(ident)
        else:
            title = self.titles.session_title(ident)
            named = f"“{title}” " if title else ""
            self.detail.show_empty(f"Session {named}({ident}): {count}. Select a request (j/k).")
            self.live.watch_invocation(None)

    def show_summary(self, summary: RequestSummary | None) -> None:
        if summary is None:
            return
        self.interacted.emit()
        if self.queue.on:
            self.queue.follow(summary.hitl_id)
        self.detail.show_request(summary)
        self.live.watch_invocation(summary.invocation_id)

    # -- the status line -----------------------------------------------------------------------
    def _update_status(self) -> None:
        model = self.model
        shown = model.visible_count
        total = model.source_count
        noun = {Scope.PENDING: "pending", Scope.HISTORY: "decided", Scope.ALL: "requests"}[model.filter.scope]
        text = f"{shown:,} shown of {total:,} {noun}" if shown != total else f"{total:,} {noun}"
        if self._load_progress is not None:  # never a partial count without saying so
            loaded, expected = self._load_progress
            text += f" · loading… {loaded:,} of {expected:,} loaded"
        self.status_label.setText(text)
        hidden = total - shown
        if hidden > 0 and self.filtering:
            self.filter_notice.setText(
                f"<b>Filter active:</b> {hidden:,} hidden — Esc to clear (<a href='clear'>show all</a>)"
            )
            self.filter_notice.show()
        else:
            self.filter_notice.hide()

    # -- titles and copying ----------------------------------------------------------------------
    def _group_title(self, group: Group) -> str | None:
        if group.level == LEVEL_INVOCATION:
            return self.titles.run_title(group.ident)
        first = group.items[0].ident if group.items else None
        return self.titles.session_title(group.ident, first)

    def context_menu_for(self, index: QModelIndex) -> QMenu:
        """Copy id (and command, arguments, title) of the row at ``index``."""
        index = index.siblingAtColumn(0)
        request = self.model.request_at(index)
        if request is not None:
            prepared = self.detail.prepared
            loaded = prepared is not None and self.detail.hitl_id == request.hitl_id
            return clipboard.request_menu(self, request.hitl_id, prepared.shown if prepared else None, loaded=loaded)
        level = index.data(LEVEL_ROLE)
        ident = str(index.data(GROUP_ID_ROLE) or "")
        kind = "session" if level == LEVEL_SESSION else "run"
        title = self.titles.run_title(ident) if level == LEVEL_INVOCATION else None
        return clipboard.group_menu(self, kind, ident, title)

    def _on_context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        if index.isValid():
            self.context_menu = self.context_menu_for(index)
            self.context_menu.popup(self.view.viewport().mapToGlobal(pos))
