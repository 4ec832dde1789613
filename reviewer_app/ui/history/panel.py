"""The History tab: decided requests, searched and filtered like the inbox, and one decision in detail.

Keys: ``/`` (the window's) focuses the search box; in it, Down or Return moves into the results (the first
one selected, the search kept) and Escape does too. The list pages in as it scrolls (the model's
``fetchMore``). Selecting a decision shows who decided it, when, how (in words), the reason, the rule that
decided it with its pattern, and the arguments as shown and as edited at decision time with the diff between
them. Every read is a task on the loop through the backend's async API; the GUI thread never waits on it.
"""

from __future__ import annotations

import asyncio
import html
from datetime import datetime
from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QTabWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.audit_words import call_words
from reviewer_app.domain.history import HistoryCursor, HistoryEntry, HistoryPage, HistoryQuery
from reviewer_app.domain.records import RequestSummary
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common.column_fit import column_wants, fit_column
from reviewer_app.ui.common.filter_bar import filter_combo, search_box
from reviewer_app.ui.detail.diff_highlighter import DiffHighlighter
from reviewer_app.ui.detail.json_view import JsonView, monospace_font
from reviewer_app.ui.history.model import (
    COL_AGENT,
    COL_BY,
    COL_DECISION,
    COL_REASON,
    COL_SUMMARY,
    COL_TOOL,
    COL_WHEN,
    HistoryModel,
    Spawn,
    tool_words,
)
from reviewer_app.ui.history.prepared import PreparedDecision, prepare_decision
from reviewer_app.ui.models.list_model import elide_calls_in_the_middle

AGES_REFRESH_MS = 20_000
AGENT_COLUMN_MIN, DECISION_COLUMN_MIN = 80, 175  # px: a small window keeps the summary and the reason
TOOL_COLUMN_MIN = 90  # px
DECISION_FILTERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("All decisions", ()),
    ("Approved", ("approve", "approve_for_session")),
    ("Approved with edits", ("edit",)),
    ("Rejected", ("reject",)),
    ("Answered or redirected", ("respond", "steer")),
    ("Expired", ("expire",)),
    ("Cancelled", ("cancel",)),
)


def decisions_shown(rows: int) -> str:
    return f"{rows:,} decision{'' if rows == 1 else 's'} shown"


class HistoryDetail(QWidget):
    """One decision: a header in words, then the diff (shown -> edited), the arguments as shown, as edited."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        self.header = QLabel("Select a decision to see what was shown and what was decided.")
        self.header.setObjectName("historyHeader")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        self.header.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.header)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("historyTabs")
        self.tabs.setDocumentMode(True)
        self.diff_view = QPlainTextEdit()
        self.diff_view.setObjectName("historyDiff")
        self.diff_view.setAccessibleName("Diff from the arguments as shown to as edited")
        self.diff_view.setReadOnly(True)
        self.diff_view.setFont(monospace_font())
        self.diff_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.diff_highlighter = DiffHighlighter(self.diff_view.document())
        self.shown_view = JsonView()
        self.shown_view.setObjectName("historyShownArgs")
        self.shown_view.setAccessibleName("Arguments as shown to the reviewer")
        self.edited_view = JsonView()
        self.edited_view.setObjectName("historyEditedArgs")
        self.edited_view.setAccessibleName("Arguments as edited by the reviewer")
        self.tabs.addTab(self.diff_view, "Diff: shown → edited")
        self.tabs.addTab(self.shown_view, "As shown")
        self.tabs.addTab(self.edited_view, "As edited")
        layout.addWidget(self.tabs, 1)
        self.prepared: PreparedDecision | None = None
        self.show_prepared(None)

    def show_prepared(self, prepared: PreparedDecision | None) -> None:
        self.prepared = prepared
        if prepared is None:
            self.header.setText("Select a decision to see what was shown and what was decided.")
            for view in (self.shown_view, self.edited_view):
                view.set_json_text("")
            self.diff_view.setPlainText("")
            self.tabs.setTabVisible(0, False)
            self.tabs.setTabVisible(2, False)
            return
        self.header.setText(header_html(prepared.entry))
        self.shown_view.set_json_text(prepared.shown_text)
        edited = prepared.edited_text is not None
        self.edited_view.set_json_text(prepared.edited_text or "")
        self.diff_view.setPlainText(prepared.diff or "")
        self.tabs.setTabVisible(0, edited)
        self.tabs.setTabVisible(2, edited)
        self.tabs.setCurrentIndex(0 if edited else 1)


def header_html(entry: HistoryEntry) -> str:
    """Who, when, what, why: the decision in words (never a stored kind name), as rich text."""
    when = datetime.fromtimestamp(entry.decided_at_ms / 1000).strftime("%Y-%m-%d %H:%M:%S")
    what = entry.tool_name or ("a question" if entry.hitl_type == "ask_user" else "a request")
    lines = [f"<b>{html.escape(entry.decision_words)}</b> by <b>{html.escape(entry.decided_by_words)}</b> at {when}"]
    if entry.edited_args is not None:  # what ran is the edit; the summary is of what was shown (issue 25)
        lines.append(f"Ran: <b>{html.escape(call_words(entry.tool_name, entry.edited_args))}</b>")
        lines.append(f"Shown: <s>{html.escape(call_words(None, entry.shown_args).strip('“”'))}</s>")
    else:
        lines.append(f"{html.escape(what)}: {html.escape(entry.summary[:500])}")
    if entry.reason:
        label = "Reason" if entry.decision in ("reject", "cancel", "expire") else "Message"
        lines.append(f"{label}: <i>{html.escape(entry.reason_words[:2000])}</i>")
    if entry.rule_id is not None:
        pattern = f" <code>{html.escape(entry.rule_pattern)}</code>" if entry.rule_pattern else " (rule not found)"
        effect = f" ({html.escape(entry.rule_effect)})" if entry.rule_effect else ""
        lines.append(f"Decided by rule:{html.escape(entry.rule_id)}{effect}{pattern}")
    agent = f"agent {html.escape(entry.agent)} · " if entry.agent else ""
    lines.append(f"<small>{agent}request {html.escape(entry.hitl_id)} · audit row {entry.audit_id}</small>")
    return "<br>".join(lines)


JK_ARROWS = {Qt.Key.Key_J: Qt.Key.Key_Down, Qt.Key.Key_K: Qt.Key.Key_Up}


class HistoryView(QTreeView):
    """The decided requests: j/k move to the next or previous one, as the arrows do (and as j/k do on every other
    tab; seen: after Ctrl+3, j did nothing here)."""

    def keyPressEvent(self, event: QKeyEvent) -> None:
        plain = event.modifiers() in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier)
        arrow = JK_ARROWS.get(Qt.Key(event.key())) if plain else None
        if arrow is not None:
            super().keyPressEvent(QKeyEvent(QEvent.Type.KeyPress, arrow, Qt.KeyboardModifier.NoModifier))
            return
        super().keyPressEvent(event)


class HistoryPanel(QWidget):
    """Search box, filters, the paged list of decisions and the selected decision's detail.

    ``active`` is False while another tab is in front: new decisions then only mark the list stale, and it
    is read again when the tab comes back.

    Signals:
        interacted(): the operator searched, filtered or moved the selection (the window's idle clock).
        failed(str): a read failed (for the banner).
    """

    interacted = Signal()
    failed = Signal(str)

    def __init__(self, backend: SQLHITLBackend, spawn: Spawn, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.backend = backend
        self._spawn = spawn
        self.active = False
        self._stale = True  # nothing read yet
        self._selected_audit_id: int | None = None
        self._detail_task: asyncio.Task[Any] | None = None
        self.model = HistoryModel(self._load_page, spawn, self)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        self.search_box = search_box(
            "historySearchBox", "Search decided requests", "Search tool, arguments, agent, reviewer, reason   ( / )"
        )
        layout.addWidget(self.search_box)
        filters = QHBoxLayout()
        self.decision_combo = filter_combo(
            "historyDecisionFilter", "Decision", [label for label, _ in DECISION_FILTERS]
        )
        self.tool_combo = filter_combo("historyToolFilter", "Tool", ["All tools"])
        self.agent_combo = filter_combo("historyAgentFilter", "Agent", ["All agents"])
        for combo in (self.decision_combo, self.tool_combo, self.agent_combo):
            filters.addWidget(combo, 1)
        layout.addLayout(filters)
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setChildrenCollapsible(False)
        self.view = HistoryView()
        self.view.setObjectName("historyView")
        self.view.setAccessibleName("Decided requests")
        self.view.setRootIsDecorated(False)
        self.view.setUniformRowHeights(True)
        self.view.setAllColumnsShowFocus(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.view.setModel(self.model)
        self.model.fetch_allowed = self._last_row_on_screen
        header = self.view.header()
        header.setStretchLastSection(False)
        # What was asked and why it was refused share the room; the short columns keep what their words need.
        header.setSectionResizeMode(COL_SUMMARY, QHeaderView.ResizeMode.Stretch)
        elide_calls_in_the_middle(self.view, COL_SUMMARY)
        header.setSectionResizeMode(COL_REASON, QHeaderView.ResizeMode.Stretch)
        for column, width in (
            (COL_WHEN, 130),
            (COL_DECISION, DECISION_COLUMN_MIN),
            (COL_BY, 110),
            (COL_TOOL, TOOL_COLUMN_MIN),
            (COL_AGENT, AGENT_COLUMN_MIN),
        ):
            header.resizeSection(column, width)
        self.splitter.addWidget(self.view)
        self.detail = HistoryDetail()
        self.splitter.addWidget(self.detail)
        self.splitter.setSizes([260, 440])
        layout.addWidget(self.splitter, 1)
        self.status_label = QLabel()
        self.status_label.setObjectName("historyStatus")
        layout.addWidget(self.status_label)

        self.search_box.textChanged.connect(lambda _text: self.apply_filter())
        self.search_box.returnPressed.connect(self.enter_results)
        self.search_box.installEventFilter(self)
        for combo in (self.decision_combo, self.tool_combo, self.agent_combo):
            combo.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.view.selectionModel().currentChanged.connect(self._on_current)
        self.model.queryApplied.connect(self._on_query_applied)
        self.model.pageAppended.connect(lambda _n: self._after_rows())
        self.model.failed.connect(self.failed)
        self._ages = QTimer(self, interval=AGES_REFRESH_MS)  # "(3m ago)" in the Decided column stays true
        self._ages.timeout.connect(self._refresh_ages)
        self._ages.start()

    def _refresh_ages(self) -> None:
        if self.active and self.model.rowCount():
            self.model.refresh_ages()

    # -- reads ------------------------------------------------------------------------------------------
    async def _load_page(self, query: HistoryQuery, after: HistoryCursor | None, limit: int) -> HistoryPage:
        return await self.backend.history_page(query, after=after, limit=limit)

    def current_query(self) -> HistoryQuery:
        decisions = DECISION_FILTERS[max(0, self.decision_combo.currentIndex())][1]
        return HistoryQuery(
            text=self.search_box.text() or None,
            decisions=decisions,
            tool_name=None if self.tool_combo.currentIndex() <= 0 else self.tool_combo.currentText(),
            agent=None if self.agent_combo.currentIndex() <= 0 else self.agent_combo.currentText(),
        )

    def apply_filter(self) -> None:
        """Ask for the search and filters' first page (the list changes when it arrives)."""
        self.interacted.emit()
        self._stale = False
        self.model.set_query(self.current_query())
        self._update_status()

    def show_current(self) -> None:
        """The tab came to the front: read again if decisions were made meanwhile (or never read)."""
        if self._stale:
            self.apply_filter()

    def on_requests_changed(self, summaries: list[RequestSummary]) -> None:
        """Decisions were made (here or elsewhere): read the list again now if it is on screen at the top."""
        if not any(summary.status != "pending" for summary in summaries):
            return
        at_top = self.view.verticalScrollBar().value() == 0
        if self.active and at_top:
            self.model.reload()
        else:
            self._stale = True

    def _last_row_on_screen(self) -> bool:
        """Whether the list's last row is laid out inside the viewport: only then is the next page wanted.

        QTreeView also asks ``fetchMore`` while a reset or an insert waits for its delayed layout (its scroll bar
        is then at 0 of 0, "the bottom"); answering those would read every page at once.
        """
        rows = self.model.rowCount()
        if rows == 0:
            return True
        last = self.view.visualRect(self.model.index(rows - 1, 0))
        return last.isValid() and self.view.viewport().rect().intersects(last)

    # -- keys -------------------------------------------------------------------------------------------
    def focus_search(self) -> None:
        self.search_box.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search_box.selectAll()

    def enter_results(self) -> None:
        """From the search box into the results, keeping the search: the first result is selected if none is."""
        self.view.setFocus(Qt.FocusReason.OtherFocusReason)
        if not self.view.currentIndex().isValid() and self.model.rowCount() > 0:
            self.view.setCurrentIndex(self.model.index(0, 0))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.search_box and event.type() == QEvent.Type.KeyPress:
            assert isinstance(event, QKeyEvent)
            if event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Escape):
                self.enter_results()
                return True
        return super().eventFilter(watched, event)

    # -- rows and selection ---------------------------------------------------------------------------------
    def _on_query_applied(self, _rows: int) -> None:
        self._after_rows()
        if self._selected_audit_id is not None:
            row = self.model.row_of(self._selected_audit_id)
            if row >= 0:
                self.view.selectionModel().blockSignals(True)
                self.view.setCurrentIndex(self.model.index(row, 0))
                self.view.selectionModel().blockSignals(False)
            else:  # the query left it out: never show a decision the list does not hold
                self._selected_audit_id = None
                self.detail.show_prepared(None)

    def _after_rows(self) -> None:
        self._remember_choices()
        self._update_status()
        self._fit_columns()

    def _fit_columns(self) -> None:
        """The Agent, Decision and Tool columns fit the words of the decisions loaded, up to a share of the view: at
        1,920 px "external-python-agent" read "external-p…" (and an MCP tool "create_issue…") beside a wide, mostly
        empty summary."""
        entries = self.model.entries
        room = self.view.viewport().width()
        for column, words, least, share in (
            (COL_AGENT, {entry.agent or "" for entry in entries}, AGENT_COLUMN_MIN, 8),
            (COL_DECISION, {entry.decision_words for entry in entries}, DECISION_COLUMN_MIN, 5),
            (COL_TOOL, {tool_words(entry) for entry in entries}, TOOL_COLUMN_MIN, 8),
        ):
            fit_column(self.view, column, column_wants(self.view, words, icon=False), least=least, most=room // share)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_columns()

    def _remember_choices(self) -> None:
        """Offer the tools and agents seen so far in the filters (the list grows as pages come in)."""
        entries = self.model.entries
        for combo, values in (
            (self.tool_combo, {entry.tool_name for entry in entries}),
            (self.agent_combo, {entry.agent for entry in entries}),
        ):
            known = {combo.itemText(i) for i in range(combo.count())}
            for value in sorted(v for v in values if v and v not in known):
                combo.blockSignals(True)
                combo.addItem(value)
                combo.blockSignals(False)

    def _update_status(self) -> None:
        rows = self.model.rowCount()
        if self.model.loading and not self.model.loaded_once:
            text = "Loading decisions…"
        elif rows == 0:
            text = (
                "No decisions match."
                if (self.search_box.text() or self.current_query().decisions)
                else "No decisions yet."
            )
        else:
            more = ", more as you scroll" if self.model.has_more else ""
            text = decisions_shown(rows) + more
        self.status_label.setText(text)

    def _on_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        entry = self.model.entry(current.row()) if current.isValid() else None
        self.interacted.emit()
        if entry is None:
            return
        self._selected_audit_id = entry.audit_id
        if self._detail_task is not None:
            self._detail_task.cancel()
        self._detail_task = self._spawn(self._show(entry.audit_id))

    async def _show(self, audit_id: int) -> None:
        entry = await self.backend.history_entry(audit_id)
        if entry is None or audit_id != self._selected_audit_id:
            return
        prepared = await asyncio.to_thread(prepare_decision, entry)  # JSON text and diff: off the GUI thread
        if audit_id == self._selected_audit_id:
            self.detail.show_prepared(prepared)
