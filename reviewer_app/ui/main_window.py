"""The reviewer window: inbox and runs on the left, the selected request or run on the right.

The window never waits on the database: every read and decision is a task on the
qasync loop (kept in ``self._tasks`` so it is not garbage collected mid-flight),
dialogs are opened with ``open()`` and answer through signals, and errors land in a
non-modal banner.
"""

from __future__ import annotations

import asyncio
import gc
import re
import sys
import time
from collections.abc import Coroutine
from typing import Any

import PySide6
from PySide6.QtCore import QByteArray, QEvent, QModelIndex, QSettings, Qt, QTimer, Signal, qVersion
from PySide6.QtGui import QAction, QCloseEvent, QKeyEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QMessageBox,
    QPushButton,
    QSplitter,
    QSystemTrayIcon,
    QTabWidget,
    QTreeView,
    QVBoxLayout,
    QWidget,
)

from reviewer_app import __version__
from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind
from reviewer_app.domain.hitl import HITLConflict, HITLNotFound, HITLType
from reviewer_app.domain.records import RequestSummary, RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui import theme
from reviewer_app.ui.decision_dialogs import (
    AnswerDialog,
    EditArgumentsDialog,
    KeymapDialog,
    NewRunDialog,
    TextDialog,
    TextViewerDialog,
)
from reviewer_app.ui.detail import DetailPane
from reviewer_app.ui.inbox_model import (
    COL_AGE,
    COL_AGENT,
    COL_DECIDED,
    COL_EXPIRES,
    COL_REQUEST,
    COL_SUMMARY,
    GROUP_ID_ROLE,
    LEVEL_INVOCATION,
    LEVEL_ROLE,
    LEVEL_SESSION,
    InboxFilter,
    InboxModel,
    Scope,
)
from reviewer_app.ui.live import LiveController
from reviewer_app.ui.runs_model import COL_PROMPT, RUN_ROLE, RunsModel

EXPAND_ALL_GROUPS = 1_500  # above this many session + invocation rows only the first sessions open
EXPAND_FIRST_SESSIONS = 5  # enough to fill the view; each expanded row costs every layout (keystroke) a step
FREEZE_ABOVE = 20_000
SEARCH_DEBOUNCE_MS = 0  # coalesces keys queued together; a rebuild of 100,000 rows takes ~30 ms
TYPE_FILTERS = (("All types", None), ("Tool approvals", HITLType.TOOL_APPROVAL.value), ("Questions", "ask_user"))
SCOPES = (("Pending", Scope.PENDING), ("Decided", Scope.HISTORY), ("All", Scope.ALL))
DECISION_VERBS = {
    "approve": "Approved",
    "approve_for_session": "Approved for the session",
    "edit": "Edited and approved",
    "reject": "Rejected",
    "steer": "Steered",
    "respond": "Answered",
}


class InboxView(QTreeView):
    """The inbox tree: j/k move between requests, letters are never type-ahead.

    Signals:
        moveRequested(int): +1 for the next request (j), -1 for the previous one (k).
    """

    moveRequested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setUniformRowHeights(True)
        self.setAlternatingRowColors(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setAllColumnsShowFocus(True)
        self.setAnimated(False)
        self.setExpandsOnDoubleClick(True)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)

    def setModel(self, model: Any) -> None:
        super().setModel(model)
        model.modelReset.connect(self.expand_default)
        model.rowsInserted.connect(self._expand_inserted)

    def keyboardSearch(self, search: str) -> None:
        """Single letters are commands here (a, e, r, s...), never type-ahead search."""

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.modifiers() in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier):
            if event.key() == Qt.Key.Key_J:
                self.moveRequested.emit(1)
                return
            if event.key() == Qt.Key.Key_K:
                self.moveRequested.emit(-1)
                return
        super().keyPressEvent(event)

    def _expand_group(self, session: QModelIndex) -> None:
        model = self.model()
        self.expand(session)
        for row in range(model.rowCount(session)):
            self.expand(model.index(row, 0, session))

    def expand_default(self) -> None:
        """Open every group of a small inbox; of a huge one only the first sessions (expansions cost)."""
        model = self.model()
        if not isinstance(model, InboxModel):
            return
        sessions = model.rowCount()
        small = sessions <= EXPAND_ALL_GROUPS and model.group_count <= EXPAND_ALL_GROUPS
        limit = sessions if small else min(sessions, EXPAND_FIRST_SESSIONS)
        for row in range(limit):
            self._expand_group(model.index(row, 0))

    def _expand_inserted(self, parent: QModelIndex, first: int, last: int) -> None:
        """New sessions open like at the start: all of them in a small inbox, only the first ones in a huge one."""
        model = self.model()
        if not parent.isValid():
            if model.rowCount() > EXPAND_ALL_GROUPS:
                last = min(last, EXPAND_FIRST_SESSIONS - 1)
            for row in range(first, last + 1):
                self._expand_group(model.index(row, 0))
            return
        if parent.data(LEVEL_ROLE) == LEVEL_SESSION and self.isExpanded(parent):
            for row in range(first, last + 1):
                self.expand(model.index(row, 0, parent))


class Banner(QFrame):
    """A dismissable message line above everything: errors and conflicts, never a modal box.

    Signals:
        dismissed(): the user closed it.
    """

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("banner")
        self.setAccessibleName("Message")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(10, 6, 6, 6)
        self.label = QLabel()
        self.label.setObjectName("bannerText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        close = QPushButton("Dismiss")
        close.setObjectName("bannerDismiss")
        close.setFlat(True)
        close.clicked.connect(self.dismiss)
        layout.addWidget(self.label, 1)
        layout.addWidget(close)
        self._timer = QTimer(self, singleShot=True)
        self._timer.timeout.connect(self.dismiss)
        self.history: list[str] = []
        self.hide()

    def show_message(self, text: str, *, error: bool = True, timeout_ms: int | None = None) -> None:
        colors = theme.current()
        background = colors.banner_bg if error else colors.info.lighter(170 if not colors.dark else 60)
        foreground = colors.banner_fg
        self.setStyleSheet(
            f"#banner {{ background: {background.name()}; border-radius: 4px; }}"
            f" #bannerText {{ color: {foreground.name()}; }}"
        )
        self.label.setText(text)
        self.history.append(text)
        self.show()
        if timeout_ms:
            self._timer.start(timeout_ms)
        else:
            self._timer.stop()

    def dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()


class MainWindow(QMainWindow):
    """Reviewer's main window.

    Signals:
        closing(): the window is closing; the app stops the runtime on it.
        requestShown(str): the detail pane shows this request, fully loaded (decisions possible).
        decided(str, str): a decision (hitl_id, kind) was committed from this window.
    """

    closing = Signal()
    requestShown = Signal(str)
    decided = Signal(str, str)

    def __init__(
        self,
        backend: SQLHITLBackend,
        runtime: Any = None,
        *,
        settings: QSettings,
        tray: bool = True,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.runtime = runtime
        self.settings = settings
        self._tasks: set[asyncio.Task[Any]] = set()
        self._dialogs: list[QWidget] = []
        self._pending = 0
        self._reconciling = False
        self._load_progress: tuple[int, int] | None = None  # (loaded, expected) while the inbox loads
        self.last_interaction = 0.0  # monotonic time of the last search, selection or decision
        self.notifications: list[str] = []
        self.last_filter_ms = 0.0
        self.setObjectName("mainWindow")
        self.setWindowIcon(theme.icon("app"))
        self.setWindowTitle("Reviewer")

        self.live = LiveController(backend, self)
        self.inbox_model = InboxModel(self)
        self.runs_model = RunsModel(self)
        self._build_ui()
        self._build_menus()
        self._build_shortcuts()
        self.tray: QSystemTrayIcon | None = None
        if tray and QSystemTrayIcon.isSystemTrayAvailable():
            self._build_tray()
        self._connect()
        self._restore_settings()
        self._tick = QTimer(self, interval=1000)
        self._tick.timeout.connect(self._on_tick)
        self._tick.start()

    # -- construction ---------------------------------------------------------------------------
    def _build_ui(self) -> None:
        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(6, 6, 6, 6)
        self.banner = Banner()
        outer.addWidget(self.banner)

        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.setChildrenCollapsible(False)
        self.left_tabs = QTabWidget()
        self.left_tabs.setObjectName("leftTabs")
        self.left_tabs.setDocumentMode(True)

        inbox_page = QWidget()
        inbox_layout = QVBoxLayout(inbox_page)
        inbox_layout.setContentsMargins(0, 4, 0, 0)
        self.search_box = QLineEdit()
        self.search_box.setObjectName("searchBox")
        self.search_box.setAccessibleName("Search requests")
        self.search_box.setPlaceholderText("Search tool, arguments, session, agent   ( / )")
        self.search_box.setClearButtonEnabled(True)
        inbox_layout.addWidget(self.search_box)
        filters = QHBoxLayout()
        self.scope_combo = self._combo("scopeFilter", "Status", [label for label, _ in SCOPES])
        self.type_combo = self._combo("typeFilter", "Request type", [label for label, _ in TYPE_FILTERS])
        self.tool_combo = self._combo("toolFilter", "Tool", ["All tools"])
        self.agent_combo = self._combo("agentFilter", "Agent", ["All agents"])
        for combo in (self.scope_combo, self.type_combo, self.tool_combo, self.agent_combo):
            filters.addWidget(combo, 1)
        inbox_layout.addLayout(filters)
        self.inbox_view = InboxView()
        self.inbox_view.setObjectName("inboxView")
        self.inbox_view.setAccessibleName("Inbox")
        self.inbox_view.setModel(self.inbox_model)
        header = self.inbox_view.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(COL_SUMMARY, QHeaderView.ResizeMode.Stretch)
        for column, width in ((COL_REQUEST, 190), (COL_AGENT, 70), (COL_AGE, 58), (COL_EXPIRES, 70)):
            header.resizeSection(column, width)
        self.inbox_view.setColumnHidden(COL_DECIDED, True)
        inbox_layout.addWidget(self.inbox_view, 1)
        self.inbox_status = QLabel()
        self.inbox_status.setObjectName("inboxStatus")
        inbox_layout.addWidget(self.inbox_status)
        self.left_tabs.addTab(inbox_page, "Inbox")

        runs_page = QWidget()
        runs_layout = QVBoxLayout(runs_page)
        runs_layout.setContentsMargins(0, 4, 0, 0)
        run_bar = QHBoxLayout()
        self.new_run_button = self._small_button("New run…", "newRunButton", "New run", "Start an agent run")
        self.cancel_run_button = self._small_button("Cancel", "cancelRunButton", "Cancel run", "Stop the run")
        self.retry_run_button = self._small_button(
            "Retry", "retryRunButton", "Retry run", "Run a failed run again, or re-run an interrupted call"
        )
        self.abort_run_button = self._small_button(
            "Abort calls", "abortRunButton", "Abort interrupted calls", "Give up the calls a crash interrupted"
        )
        self.follow_up_button = self._small_button(
            "Follow-up…", "followUpButton", "Follow up", "Continue a finished run's conversation"
        )
        for button in (
            self.new_run_button,
            self.cancel_run_button,
            self.retry_run_button,
            self.abort_run_button,
            self.follow_up_button,
        ):
            run_bar.addWidget(button)
        run_bar.addStretch(1)
        runs_layout.addLayout(run_bar)
        self.runs_view = QTreeView()
        self.runs_view.setObjectName("runsView")
        self.runs_view.setAccessibleName("Runs")
        self.runs_view.setUniformRowHeights(True)
        self.runs_view.setAllColumnsShowFocus(True)
        self.runs_view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.runs_view.setModel(self.runs_model)
        self.runs_view.keyboardSearch = lambda _text: None  # type: ignore[method-assign]
        self.runs_view.header().setSectionResizeMode(COL_PROMPT, QHeaderView.ResizeMode.Stretch)
        self.runs_view.header().setStretchLastSection(False)
        self.runs_view.header().resizeSection(0, 170)
        self.runs_model.modelReset.connect(self.runs_view.expandAll)
        runs_layout.addWidget(self.runs_view, 1)
        self.left_tabs.addTab(runs_page, "Runs")

        self.detail = DetailPane(self.backend, self.spawn)
        self.splitter.addWidget(self.left_tabs)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([520, 760])
        outer.addWidget(self.splitter, 1)
        self.setCentralWidget(central)
        self.db_label = QLabel(f"{mask_url(self.backend.database_url)} · reviewer {self.backend.reviewer}")
        self.db_label.setObjectName("dbLabel")
        self.statusBar().addPermanentWidget(self.db_label)
        self._search_timer = QTimer(self, singleShot=True, interval=SEARCH_DEBOUNCE_MS)
        self._search_timer.timeout.connect(self.apply_filter)
        self.resize(1320, 820)

    def _combo(self, name: str, accessible: str, items: list[str]) -> QComboBox:
        combo = QComboBox()
        combo.setObjectName(name)
        combo.setAccessibleName(accessible)
        combo.addItems(items)
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(6)
        return combo

    def _small_button(self, text: str, name: str, accessible: str, tip: str) -> QPushButton:
        button = QPushButton(text)
        button.setObjectName(name)
        button.setAccessibleName(accessible)
        button.setToolTip(tip)
        return button

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        new_run = QAction("&New run…", self, shortcut=QKeySequence("Ctrl+N"))
        new_run.triggered.connect(self.open_new_run)
        file_menu.addAction(new_run)
        refresh = QAction("&Refresh", self, shortcut=QKeySequence("F5"))
        refresh.triggered.connect(self.live.request_refresh)
        file_menu.addAction(refresh)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self, shortcut=QKeySequence(QKeySequence.StandardKey.Quit))
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        view_menu = self.menuBar().addMenu("&View")
        for number, label in ((1, "&Inbox"), (2, "&Runs")):
            action = QAction(label, self, shortcut=QKeySequence(f"Ctrl+{number}"))
            action.triggered.connect(lambda _=False, i=number - 1: self.show_tab(i))
            view_menu.addAction(action)
        help_menu = self.menuBar().addMenu("&Help")
        keymap = QAction("&Keyboard shortcuts", self)
        keymap.triggered.connect(self.show_keymap)
        help_menu.addAction(keymap)
        about = QAction("&About Reviewer", self)
        about.triggered.connect(self.show_about)
        help_menu.addAction(about)

    def _build_shortcuts(self) -> None:
        """Letter keys act where the reviewer reads (inbox, detail, runs), never inside text fields."""
        self.shortcuts: list[QShortcut] = []
        bindings = (
            ("A", lambda: self.request_decision("approve")),
            ("Shift+A", lambda: self.request_decision("approve_for_session")),
            ("E", lambda: self.request_decision("edit")),
            ("R", lambda: self.request_decision("reject")),
            ("S", lambda: self.request_decision("steer")),
            ("N", lambda: self.request_decision("answer")),
            ("J", lambda: self.move_request(1)),
            ("K", lambda: self.move_request(-1)),
        )
        for area in (self.inbox_view, self.detail, self.runs_view):
            for keys, slot in bindings:
                if area is self.inbox_view and keys in ("J", "K"):
                    continue  # the view handles them itself (keyPressEvent)
                shortcut = QShortcut(QKeySequence(keys), area)
                shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
                shortcut.activated.connect(slot)
                self.shortcuts.append(shortcut)
        search = QShortcut(QKeySequence("/"), self)
        search.activated.connect(self.focus_search)
        keymap = QShortcut(QKeySequence("?"), self)
        keymap.activated.connect(self.show_keymap)
        escape = QShortcut(QKeySequence("Escape"), self.search_box)
        escape.setContext(Qt.ShortcutContext.WidgetShortcut)
        escape.activated.connect(self.leave_search)
        self.shortcuts += [search, keymap, escape]

    def _build_tray(self) -> None:
        self.tray = QSystemTrayIcon(theme.badge_icon(0), self)
        menu = QMenu(self)
        show = menu.addAction("Show Reviewer")
        show.triggered.connect(self.bring_to_front)
        menu.addSeparator()
        quit_action = menu.addAction("Quit")
        quit_action.triggered.connect(self.close)
        self.tray.setContextMenu(menu)
        self.tray.activated.connect(lambda _reason: self.bring_to_front())
        self.tray.setToolTip("Reviewer")
        self.tray.show()

    def _connect(self) -> None:
        live = self.live
        live.requestsLoaded.connect(self._on_requests_loaded)
        live.requestsAppended.connect(self._on_requests_appended)
        live.loadProgress.connect(self._on_load_progress)
        live.requestsChanged.connect(self._on_requests_changed)
        live.pendingCountChanged.connect(self._on_pending_count)
        live.newPending.connect(self._on_new_pending)
        live.runsLoaded.connect(self.runs_model.set_runs)
        live.runsChanged.connect(self._on_runs_changed)
        live.eventsLoaded.connect(self._on_events_loaded)
        live.eventsAppended.connect(self._on_events_appended)
        live.failed.connect(self.show_error)
        self.detail.failed.connect(self.show_error)
        self.detail.loaded.connect(self.requestShown)
        self.detail.timeline_view.detailActivated.connect(self._open_text_viewer)
        self.inbox_view.selectionModel().currentChanged.connect(self._on_inbox_current)
        self.inbox_view.moveRequested.connect(self.move_request)
        self.runs_view.selectionModel().currentChanged.connect(self._on_run_current)
        self.left_tabs.currentChanged.connect(self._on_tab_changed)
        self.search_box.textChanged.connect(lambda _text: self._search_timer.start())
        self.search_box.returnPressed.connect(self.apply_filter)
        self.scope_combo.currentIndexChanged.connect(self._on_scope_changed)
        for combo in (self.type_combo, self.tool_combo, self.agent_combo):
            combo.currentIndexChanged.connect(lambda _i: self.apply_filter())
        self.inbox_model.filterApplied.connect(lambda _n: self._update_inbox_status())
        self.inbox_model.countsChanged.connect(self._update_inbox_status)
        self.new_run_button.clicked.connect(self.open_new_run)
        self.cancel_run_button.clicked.connect(self.cancel_selected_run)
        self.retry_run_button.clicked.connect(self.retry_selected_run)
        self.abort_run_button.clicked.connect(self.abort_selected_run)
        self.follow_up_button.clicked.connect(self.open_follow_up)
        self.detail.decisionRequested.connect(self.request_decision)
        self._update_run_buttons()

    # -- start and stop ---------------------------------------------------------------------------
    def start(self) -> None:
        """Begin following the database (call with the qasync loop running)."""
        self.live.start()
        self.inbox_view.setFocus()

    def set_runtime(self, runtime: Any) -> None:
        """Attach the agent runtime once it exists (the app builds it after the first screen)."""
        self.runtime = runtime
        self._update_run_buttons()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run ``coro`` as a task that is kept alive until it ends; failures go to the banner."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def done(finished: asyncio.Task[Any]) -> None:
            self._tasks.discard(finished)
            if not finished.cancelled() and finished.exception() is not None:
                self.show_error(f"Unexpected error: {finished.exception()}")

        task.add_done_callback(done)
        return task

    @property
    def busy(self) -> bool:
        return bool(self._tasks) or self.live.busy

    def closeEvent(self, event: QCloseEvent) -> None:
        self._save_settings()
        self._tick.stop()
        self.live.close()
        for task in list(self._tasks):
            task.cancel()
        for dialog in self._dialogs:
            dialog.close()
        if self.tray is not None:
            self.tray.hide()
        self.closing.emit()
        event.accept()

    # -- settings -------------------------------------------------------------------------------
    def _restore_settings(self) -> None:
        s = self.settings
        geometry = s.value("window/geometry")
        if isinstance(geometry, QByteArray | bytes):
            self.restoreGeometry(QByteArray(geometry))
        state = s.value("window/state")
        if isinstance(state, QByteArray | bytes):
            self.restoreState(QByteArray(state))
        for key, splitter in (("window/splitter", self.splitter), ("window/detailSplitter", self.detail.splitter)):
            value = s.value(key)
            if isinstance(value, QByteArray | bytes):
                splitter.restoreState(QByteArray(value))
        self._set_combo(self.type_combo, str(s.value("filters/type", "")))
        self._set_combo(self.tool_combo, str(s.value("filters/tool", "")))
        self._set_combo(self.agent_combo, str(s.value("filters/agent", "")))
        self._set_combo(self.scope_combo, str(s.value("filters/scope", "")))
        self.search_box.setText(str(s.value("filters/search", "") or ""))
        self.live.scope = SCOPES[self.scope_combo.currentIndex()][1]
        self.apply_filter()

    def _set_combo(self, combo: QComboBox, text: str) -> None:
        if not text:
            return
        if combo.findText(text) < 0:
            combo.addItem(text)
        combo.blockSignals(True)
        combo.setCurrentIndex(combo.findText(text))
        combo.blockSignals(False)

    def _save_settings(self) -> None:
        s = self.settings
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState())
        s.setValue("window/splitter", self.splitter.saveState())
        s.setValue("window/detailSplitter", self.detail.splitter.saveState())
        s.setValue("filters/scope", self.scope_combo.currentText())
        s.setValue("filters/type", self.type_combo.currentText())
        s.setValue("filters/tool", self.tool_combo.currentText())
        s.setValue("filters/agent", self.agent_combo.currentText())
        s.setValue("filters/search", self.search_box.text())
        s.sync()

    # -- inbox ------------------------------------------------------------------------------------
    def current_filter(self) -> InboxFilter:
        tool = self.tool_combo.currentText()
        agent = self.agent_combo.currentText()
        return InboxFilter(
            text=self.search_box.text(),
            hitl_type=TYPE_FILTERS[max(0, self.type_combo.currentIndex())][1],
            tool=None if self.tool_combo.currentIndex() <= 0 else tool,
            agent=None if self.agent_combo.currentIndex() <= 0 else agent,
            scope=self.inbox_model.filter.scope,
        )

    def apply_filter(self) -> None:
        """Rebuild the inbox for the search and filters, keeping the selected request if it still shows."""
        self._search_timer.stop()
        self.last_interaction = time.monotonic()
        selected = self.detail.hitl_id
        started = time.perf_counter()
        self._reconciling = True
        try:
            self.inbox_model.set_filter(self.current_filter())
        finally:
            self._reconciling = False
        self.last_filter_ms = (time.perf_counter() - started) * 1000
        self._reselect(selected)

    def _on_scope_changed(self, index: int) -> None:
        scope = SCOPES[max(0, index)][1]
        self.inbox_view.setColumnHidden(COL_DECIDED, scope is Scope.PENDING)
        self.inbox_view.setColumnHidden(COL_EXPIRES, scope is Scope.HISTORY)
        self.live.set_scope(scope)

    def _refresh_filter_choices(self) -> None:
        for combo, values, label in (
            (self.tool_combo, self.inbox_model.tools, "All tools"),
            (self.agent_combo, self.inbox_model.agents, "All agents"),
        ):
            current = combo.currentText()
            wanted = [label, *sorted(values | ({current} if combo.currentIndex() > 0 else set()))]
            if [combo.itemText(i) for i in range(combo.count())] != wanted:
                combo.blockSignals(True)
                combo.clear()
                combo.addItems(wanted)
                combo.setCurrentIndex(max(0, combo.findText(current)))
                combo.blockSignals(False)

    def _on_requests_loaded(self, rows: list[RequestSummary], scope: str) -> None:
        selected = self.detail.hitl_id
        self._reconciling = True
        try:
            self.inbox_model.set_requests(rows, Scope(scope))
            self.inbox_model.set_filter(self.current_filter())
        finally:
            self._reconciling = False
        if len(rows) >= FREEZE_ABOVE:
            # Summaries are acyclic and long-lived: keep them out of every later full collection,
            # which would otherwise walk them all (~0.2 s at 100,000) in the middle of a keystroke.
            gc.freeze()
        self._refresh_filter_choices()
        self._reselect(selected)

    def _on_requests_appended(self, rows: list[RequestSummary]) -> None:
        """The next page of a progressive load: newer requests, merged without moving the selection."""
        self._reconciling = True
        try:
            self.inbox_model.append_page(rows)
        finally:
            self._reconciling = False
        if self.inbox_model.source_count >= FREEZE_ABOVE:
            gc.freeze()  # the same reason as after a big first load, page by page
        self._refresh_filter_choices()
        if self.detail.summary is None and self.detail.run_record is None:
            self._reselect(None)

    def _on_load_progress(self, loaded: int, expected: int) -> None:
        self._load_progress = (loaded, expected) if loaded < expected else None
        self._update_inbox_status()

    def _on_requests_changed(self, rows: list[RequestSummary]) -> None:
        selected = self.detail.hitl_id
        fallback = None
        if selected is not None:
            for row in rows:
                if row.hitl_id == selected:
                    if self.inbox_model.filter.scope.includes(row.status):
                        self.detail.update_summary(row)
                    else:  # it leaves the inbox: the next request replaces it below, no need to redraw it
                        self.detail.update_summary(row, render=False)
                        fallback = self.inbox_model.next_after_removal(selected)
        self._reconciling = True
        try:
            self.inbox_model.apply_changes(rows)
        finally:
            self._reconciling = False
        self._refresh_filter_choices()
        if selected is not None and not self.inbox_model.index_for(selected).isValid():
            self._reselect(fallback)
        elif selected is None:
            self._reselect(None)

    def _reselect(self, hitl_id: str | None) -> None:
        """Select ``hitl_id`` if shown, else keep a group selection, else the oldest request."""
        if self.left_tabs.currentIndex() != 0:
            return
        if hitl_id is not None and self.inbox_model.index_for(hitl_id).isValid():
            if self.detail.hitl_id != hitl_id or not self._current_is(hitl_id):
                self.select_request(hitl_id)
            return
        current = self.inbox_view.currentIndex()
        if current.isValid() and current.data(LEVEL_ROLE) in (LEVEL_SESSION, LEVEL_INVOCATION) and hitl_id is None:
            return
        first = self.inbox_model.first_request()
        if first is not None:
            self.select_request(first)
            return
        self.inbox_view.setCurrentIndex(QModelIndex())
        shown = self.detail.summary
        run = self.runs_model.run(shown.invocation_id) if shown is not None else None
        if run is not None:
            # Nothing left to decide: keep the last request's run on screen to watch it finish.
            self.detail.show_run(run)
        elif self.detail.run_record is None:
            self.detail.show_empty()
            self.live.watch_invocation(None)

    def _current_is(self, hitl_id: str) -> bool:
        return self.inbox_view.currentIndex().siblingAtColumn(0) == self.inbox_model.index_for(hitl_id)

    def select_request(self, hitl_id: str) -> bool:
        index = self.inbox_model.index_for(hitl_id)
        if not index.isValid():
            return False
        self.inbox_view.scrollTo(index)
        self.inbox_view.setCurrentIndex(index)
        if self.detail.hitl_id != hitl_id:  # currentChanged did not fire (same index object)
            self._show_summary(self.inbox_model.summary(hitl_id))
        return True

    def move_request(self, step: int) -> None:
        if self.left_tabs.currentIndex() == 1:
            key = Qt.Key.Key_Down if step > 0 else Qt.Key.Key_Up
            press = QKeyEvent(QEvent.Type.KeyPress, key, Qt.KeyboardModifier.NoModifier)
            QApplication.sendEvent(self.runs_view, press)
            return
        current = self.detail.hitl_id
        target = self.inbox_model.neighbour(current, step) if current else None
        if target is None and current is None:
            index = self.inbox_view.currentIndex()
            target = self._first_request_under(index) if index.isValid() else self.inbox_model.first_request()
        if target is not None:
            self.select_request(target)

    def _first_request_under(self, index: QModelIndex) -> str | None:
        model = self.inbox_model
        index = index.siblingAtColumn(0)
        while index.isValid() and index.data(LEVEL_ROLE) != 2:
            if model.rowCount(index) == 0:
                return model.first_request()
            index = model.index(0, 0, index)
        request = model.request_at(index) if index.isValid() else None
        return request.hitl_id if request is not None else None

    def _on_inbox_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if self._reconciling or self.left_tabs.currentIndex() != 0:
            return
        summary = self.inbox_model.request_at(current.siblingAtColumn(0)) if current.isValid() else None
        if summary is not None:
            if summary.hitl_id != self.detail.hitl_id:
                self._show_summary(summary)
            return
        if not current.isValid():
            return
        level = current.data(LEVEL_ROLE)
        ident = current.siblingAtColumn(0).data(GROUP_ID_ROLE)
        count = current.siblingAtColumn(COL_SUMMARY).data()
        if level == LEVEL_INVOCATION:
            run = self.runs_model.run(ident)
            if run is not None:
                self.detail.show_run(run)
            else:
                self.detail.show_empty(f"Run {ident}: {count}")
            self.live.watch_invocation(ident)
        else:
            self.detail.show_empty(f"Session {ident}: {count}. Select a request (j/k).")
            self.live.watch_invocation(None)

    def _show_summary(self, summary: RequestSummary | None) -> None:
        if summary is None:
            return
        self.last_interaction = time.monotonic()
        self.detail.show_request(summary)
        self.live.watch_invocation(summary.invocation_id)

    def _update_inbox_status(self) -> None:
        model = self.inbox_model
        shown = model.visible_count
        total = model.source_count
        noun = {Scope.PENDING: "pending", Scope.HISTORY: "decided", Scope.ALL: "requests"}[model.filter.scope]
        text = f"{shown:,} shown of {total:,} {noun}" if shown != total else f"{total:,} {noun}"
        if self.last_filter_ms and shown != total:
            text += f" · filtered in {self.last_filter_ms:.0f} ms"
        if self._load_progress is not None:  # never a partial count without saying so
            loaded, expected = self._load_progress
            text += f" · loading… {loaded:,} of {expected:,} loaded"
        self.inbox_status.setText(text)

    @property
    def inbox_loading(self) -> bool:
        """True while the inbox is still receiving pages of its first load."""
        return self._load_progress is not None

    async def wait_idle(self, quiet_s: float, at_most_s: float) -> None:
        """Until the operator has left the window alone for ``quiet_s`` from now on (at most ``at_most_s``).

        Background work that would hold the GUI thread (importing and starting the agent
        runtime) waits for a pause in typing and navigating rather than delaying a keystroke.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + at_most_s
        since = time.monotonic()
        while True:
            quiet_for = time.monotonic() - max(self.last_interaction, since)
            if quiet_for >= quiet_s or loop.time() >= deadline:
                return
            await asyncio.sleep(min(quiet_s - quiet_for, max(0.0, deadline - loop.time())) + 0.01)

    def focus_search(self) -> None:
        self.show_tab(0)
        self.search_box.setFocus()
        self.search_box.selectAll()

    def leave_search(self) -> None:
        if self.search_box.text():
            self.search_box.clear()
            self.apply_filter()
        self.inbox_view.setFocus()

    def show_tab(self, index: int) -> None:
        self.left_tabs.setCurrentIndex(index)
        (self.inbox_view if index == 0 else self.runs_view).setFocus()

    def _on_tab_changed(self, index: int) -> None:
        if index == 0:
            current = self.inbox_view.currentIndex()
            summary = self.inbox_model.request_at(current.siblingAtColumn(0)) if current.isValid() else None
            if summary is not None:
                self._show_summary(summary)
            else:
                self.detail.show_empty()
                self._reselect(None)
        else:
            self._on_run_current(self.runs_view.currentIndex(), QModelIndex())

    # -- pending count, notifications ----------------------------------------------------------------
    def _on_pending_count(self, count: int) -> None:
        self._pending = count
        self.setWindowTitle(f"Reviewer ({count} pending)")
        if self.tray is not None:
            self.tray.setIcon(theme.badge_icon(count))
            self.tray.setToolTip(f"Reviewer: {count} pending")

    def _on_new_pending(self, rows: list[RequestSummary]) -> None:
        if self.isActiveWindow() and not self.isMinimized():
            return
        first = rows[0]
        what = first.tool_name or first.hitl_type
        text = f"{what}: {first.summary}" if len(rows) == 1 else f"{len(rows)} new requests, e.g. {what}"
        self.notifications.append(text)
        if self.tray is not None and self.tray.supportsMessages():
            self.tray.showMessage("Reviewer: a request needs you", text, theme.badge_icon(self._pending), 8000)
        else:
            QApplication.alert(self, 0)

    def bring_to_front(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    # -- timeline -----------------------------------------------------------------------------------
    def _on_events_loaded(self, invocation_id: str, events: list[Any]) -> None:
        self.detail.timeline_model.set_events(invocation_id or None, events)

    def _on_events_appended(self, invocation_id: str, events: list[Any]) -> None:
        if invocation_id == self.detail.timeline_model.invocation_id:
            self.detail.timeline_model.append_events(events)

    def _open_text_viewer(self, title: str, text: str) -> None:
        viewer = TextViewerDialog(title, text, self)
        viewer.show()

    def _on_tick(self) -> None:
        if self.inbox_model.ages_due():  # only when a shown age or countdown has a new text
            self.inbox_view.viewport().update()
        self.detail.strip.refresh()
        self.detail.timeline_view.viewport().update()
        if self.detail.summary is not None and self.detail.summary.expires_at is not None:
            self.detail.update_summary(self.detail.summary)
        self._update_run_buttons()

    # -- decisions ------------------------------------------------------------------------------------
    def request_decision(self, kind: str) -> None:
        """A decision key or button: approve at once, or open the dialog that collects the rest."""
        if self.left_tabs.currentIndex() != 0:
            return
        self.last_interaction = time.monotonic()
        detail = self.detail
        if detail.is_ask and kind == "approve":
            kind = "answer"
        if not detail.allowed(kind):
            if detail.summary is not None and detail.prepared is None and detail.summary.status == "pending":
                self.statusBar().showMessage("Still loading the request…", 2000)
            elif detail.summary is not None:
                self.statusBar().showMessage(f"{kind.replace('_', ' ')} does not apply here", 3000)
            return
        prepared = detail.prepared
        summary = detail.summary
        assert prepared is not None and summary is not None
        hitl_id = summary.hitl_id
        digest = prepared.digest
        if kind == "approve":
            self.send_decision(hitl_id, Decision(DecisionKind.APPROVE, args_sha256=digest))
        elif kind == "approve_for_session":
            self.send_decision(hitl_id, Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=digest))
        elif kind == "edit":
            schema = (prepared.record.get("data") or {}).get("schema")
            if schema is None and self.runtime is not None and summary.tool_name:
                schema = self.runtime.tool_schema(summary.tool_name)
            edit = EditArgumentsDialog(summary.tool_name or "tool", prepared.shown, schema, self)
            edit.submitted.connect(
                lambda args: self.send_decision(
                    hitl_id, Decision(DecisionKind.EDIT, edited_args=args, args_sha256=digest)
                )
            )
            self._open_dialog(edit)
        elif kind == "reject":
            reject = TextDialog(
                "Reject",
                "Why? (optional; the agent sees it)",
                "Reject",
                required=False,
                object_name="rejectDialog",
                placeholder="e.g. not in this directory",
                parent=self,
            )
            reject.submitted.connect(
                lambda text: self.send_decision(
                    hitl_id, Decision(DecisionKind.REJECT, message=text or None, args_sha256=digest)
                )
            )
            self._open_dialog(reject)
        elif kind == "steer":
            steer = TextDialog(
                "Steer",
                "Guidance for the agent (it does not run the call and reads this instead)",
                "Send guidance",
                required=True,
                object_name="steerDialog",
                placeholder="e.g. write the notes to docs/NOTES.md instead",
                parent=self,
            )
            steer.submitted.connect(
                lambda text: self.send_decision(hitl_id, Decision(DecisionKind.STEER, message=text, args_sha256=digest))
            )
            self._open_dialog(steer)
        elif kind == "answer":
            answer = AnswerDialog(prepared.question or "", prepared.options, self)
            answer.submitted.connect(
                lambda text: self.send_decision(
                    hitl_id, Decision(DecisionKind.RESPOND, message=text, args_sha256=digest)
                )
            )
            self._open_dialog(answer)

    def _open_dialog(self, dialog: QWidget) -> None:
        self._dialogs.append(dialog)
        dialog.finished.connect(lambda _result: self._forget_dialog(dialog))  # type: ignore[attr-defined]
        dialog.open()  # type: ignore[attr-defined]

    def _forget_dialog(self, dialog: QWidget) -> None:
        if dialog in self._dialogs:
            self._dialogs.remove(dialog)
        dialog.deleteLater()
        self.inbox_view.setFocus()

    @property
    def open_dialogs(self) -> list[QWidget]:
        return list(self._dialogs)

    def send_decision(self, hitl_id: str, decision: Decision) -> None:
        next_id = self.inbox_model.next_after_removal(hitl_id)
        if self.detail.hitl_id == hitl_id:
            self.detail.set_busy(True)
        self.spawn(self._decide(hitl_id, decision, next_id))

    async def _decide(self, hitl_id: str, decision: Decision, next_id: str | None) -> None:
        try:
            if self.runtime is not None:
                await self.runtime.decide_and_resume(hitl_id, decision)
            else:
                await self.backend.decide(hitl_id, decision)
        except HITLConflict as exc:
            self.show_error(f"Someone else decided first: {exc}. The inbox was refreshed.")
            self.live.request_refresh()
        except (DecisionError, HITLNotFound) as exc:
            self.show_error(f"The decision was not recorded: {exc}")
        except Exception as exc:
            self.show_error(f"Could not record the decision: {type(exc).__name__}: {exc}")
        else:
            verb = DECISION_VERBS.get(decision.kind.value, decision.kind.value)
            self.statusBar().showMessage(f"{verb}: {hitl_id}", 4000)
            self.decided.emit(hitl_id, decision.kind.value)
            if self.detail.hitl_id == hitl_id and next_id is not None:
                self.select_request(next_id)
            self.live.request_refresh()
        finally:
            if self.detail.hitl_id == hitl_id:
                self.detail.set_busy(False)

    # -- runs ----------------------------------------------------------------------------------------
    def selected_run(self) -> RunRecord | None:
        index = self.runs_view.currentIndex()
        return index.siblingAtColumn(0).data(RUN_ROLE) if index.isValid() else None

    def _on_run_current(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self._update_run_buttons()
        if self.left_tabs.currentIndex() != 1:
            return
        run = current.siblingAtColumn(0).data(RUN_ROLE) if current.isValid() else None
        if run is None:
            self.detail.show_empty("Select a run to see its timeline.")
            self.detail.decision_bar.hide()
            self.live.watch_invocation(None)
            return
        self.detail.show_run(run)
        self.live.watch_invocation(run.id)

    def _on_runs_changed(self, runs: list[RunRecord]) -> None:
        self.runs_model.apply_changes(runs)
        if self.detail.run_record is not None:
            for run in runs:
                if run.id == self.detail.run_record.id:
                    self.detail.update_run(run)
        self._update_run_buttons()

    def _update_run_buttons(self) -> None:
        run = self.selected_run()
        has_runtime = self.runtime is not None
        state = RunState(run.state) if run is not None else None
        self.new_run_button.setEnabled(has_runtime)
        if not has_runtime:
            self.new_run_button.setToolTip("No agent runtime in this window")
        self.cancel_run_button.setEnabled(has_runtime and state is not None and not state.finished)
        self.retry_run_button.setEnabled(has_runtime and state in (RunState.FAILED, RunState.INTERRUPTED))
        self.abort_run_button.setEnabled(has_runtime and state is RunState.INTERRUPTED)
        self.follow_up_button.setEnabled(has_runtime and state is not None and state.finished)

    def open_new_run(self) -> None:
        if self.runtime is None:
            self.show_error("This window has no agent runtime: it cannot start runs.")
            return
        dialog = NewRunDialog(list(self.runtime.agents), self)
        dialog.submitted.connect(lambda agent, prompt: self.spawn(self._start_run(agent, prompt)))
        self._open_dialog(dialog)

    async def _start_run(self, agent: str, prompt: str) -> None:
        try:
            invocation_id = await self.runtime.start_run(agent, prompt)
        except Exception as exc:
            self.show_error(f"Could not start the run: {exc}")
            return
        self.statusBar().showMessage(f"Started {agent} run {invocation_id}", 4000)

    def _run_action(self, what: str, coro_factory: Any) -> None:
        run = self.selected_run()
        if run is None or self.runtime is None:
            return

        async def act() -> None:
            try:
                result = await coro_factory(run)
            except Exception as exc:
                self.show_error(f"Could not {what} run {run.id}: {exc}")
                return
            suffix = f": new run {result}" if isinstance(result, str) else ""
            self.statusBar().showMessage(f"{what.capitalize()} {run.id}{suffix}", 4000)

        self.spawn(act())

    def cancel_selected_run(self) -> None:
        self._run_action("cancel", lambda run: self.runtime.cancel_run(run.id))

    def retry_selected_run(self) -> None:
        run = self.selected_run()
        if run is not None and run.state == RunState.INTERRUPTED.value:
            self._run_action("re-run", lambda r: self.runtime.resolve_interrupted(r.id, "rerun"))
        else:
            self._run_action("retry", lambda r: self.runtime.retry_run(r.id))

    def abort_selected_run(self) -> None:
        self._run_action("abort the interrupted calls of", lambda r: self.runtime.resolve_interrupted(r.id, "abort"))

    def open_follow_up(self) -> None:
        run = self.selected_run()
        if run is None or self.runtime is None:
            return
        dialog = TextDialog(
            "Follow-up",
            f"Continue the conversation of run {run.id}",
            "Start follow-up",
            required=True,
            object_name="followUpDialog",
            parent=self,
        )
        dialog.submitted.connect(
            lambda prompt: self._run_action("follow up", lambda r: self.runtime.follow_up(r.id, prompt))
        )
        self._open_dialog(dialog)

    # -- messages, about, keymap ------------------------------------------------------------------------
    def show_error(self, message: str) -> None:
        self.banner.show_message(message, error=True)

    def show_info(self, message: str) -> None:
        self.banner.show_message(message, error=False, timeout_ms=8000)

    def show_keymap(self) -> None:
        dialog = KeymapDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.keymap_dialog = dialog

    def about_text(self) -> str:
        return (
            f"<h3>Reviewer {__version__}</h3>"
            "<p>Review and decide what AI agents ask before they act.</p>"
            f"<table><tr><td>Qt</td><td>{qVersion()}</td></tr>"
            f"<tr><td>PySide6</td><td>{PySide6.__version__}</td></tr>"
            f"<tr><td>Python</td><td>{sys.version.split()[0]}</td></tr>"
            f"<tr><td>Database&nbsp;</td><td>{mask_url(self.backend.database_url)}</td></tr>"
            f"<tr><td>Reviewer</td><td>{self.backend.reviewer}</td></tr></table>"
        )

    def show_about(self) -> None:
        box = QMessageBox(self)
        box.setObjectName("aboutBox")
        box.setWindowTitle("About Reviewer")
        box.setIconPixmap(theme.icon("app").pixmap(64, 64))
        box.setTextFormat(Qt.TextFormat.RichText)
        box.setText(self.about_text())
        box.setModal(False)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.show()
        self.about_box = box

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.inbox_model.refresh_theme()
            self.detail.args_view.highlighter.refresh_theme()
            self.detail.diff_highlighter.rehighlight()
        super().changeEvent(event)


def mask_url(url: str) -> str:
    """A database URL fit to show: passwords replaced by ***, SQLite files as plain paths."""
    if url.startswith("sqlite:///"):
        return url.removeprefix("sqlite:///") or url
    return re.sub(r"(://[^:/@]+:)[^@]*@", r"\1***@", url)
