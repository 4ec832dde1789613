"""The reviewer window: inbox and runs on the left, the selected request or run on the right.

A thin assembly of rooms, each one concept: the inbox tab (:mod:`ui.inbox.panel`), the runs
tab (:mod:`ui.runs.panel`), the detail pane (:mod:`ui.detail.pane`), decisions
(:mod:`ui.decisions`), the tray (:mod:`ui.tray`), remembered settings (:mod:`ui.settings`)
and the banner. The window never waits on the database: every read and decision is a task on
the qasync loop (:class:`ui.keepers.TaskKeeper`), dialogs are opened with ``open()`` and answer
through signals, and errors land in the non-modal banner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QMainWindow, QMessageBox, QSplitter, QTabWidget, QVBoxLayout, QWidget

from reviewer_app.domain.timeline import BlockEvent
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui import theme
from reviewer_app.ui.about import mask_url, open_about
from reviewer_app.ui.banner import Banner
from reviewer_app.ui.decision_dialogs import KeymapDialog, TextViewerDialog
from reviewer_app.ui.decisions import DecisionController
from reviewer_app.ui.detail.pane import DetailPane
from reviewer_app.ui.history.panel import HistoryPanel
from reviewer_app.ui.inbox.panel import InboxPanel
from reviewer_app.ui.keepers import DialogKeeper, TaskKeeper
from reviewer_app.ui.live import LiveController
from reviewer_app.ui.runs.panel import RunsPanel
from reviewer_app.ui.settings import WindowSettings
from reviewer_app.ui.tray import TrayNotifier

if TYPE_CHECKING:
    from reviewer_app.runtime.runner import Runtime

INBOX_TAB, RUNS_TAB, HISTORY_TAB = 0, 1, 2


class MainWindow(QMainWindow):
    """Reviewer's main window: builds the rooms, connects them, and owns the keys and menus.

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
        runtime: Runtime | None = None,
        *,
        settings: QSettings,
        tray: bool = True,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.runtime = runtime
        self.last_interaction = 0.0  # monotonic time of the last search, selection or decision
        self.setObjectName("mainWindow")
        self.setWindowIcon(theme.icon("app"))
        self.setWindowTitle("Reviewer")

        self.tasks = TaskKeeper(self.show_error)
        self.dialogs = DialogKeeper(self._focus_current_tab)
        self.live = LiveController(backend, self)
        self.detail = DetailPane(backend, self.tasks.spawn)
        self.runs = RunsPanel(self.live, self.detail, self.tasks, self.dialogs)
        self.inbox = InboxPanel(self.live, self.detail, self.runs.model)
        self.history = HistoryPanel(backend, self.tasks.spawn)
        self.decisions = DecisionController(
            backend, self.live, self.detail, self.inbox, self.tasks, self.dialogs, dialog_parent=self
        )
        self.notifier = TrayNotifier(self, tray=tray)
        self._build_ui()
        self._build_menus()
        self._build_shortcuts()
        self._connect()
        self.set_runtime(runtime)
        self.window_settings = WindowSettings(
            settings,
            self,
            {"window/splitter": self.splitter, "window/detailSplitter": self.detail.splitter},
            self.inbox,
        )
        self.window_settings.restore()
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
        self.left_tabs.addTab(self.inbox, "Inbox")
        self.left_tabs.addTab(self.runs, "Runs")
        self.left_tabs.addTab(self.history, "History")
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
        self.resize(1320, 820)

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        new_run = QAction("&New run…", self, shortcut=QKeySequence("Ctrl+N"))
        new_run.triggered.connect(self.runs.open_new_run)
        file_menu.addAction(new_run)
        refresh = QAction("&Refresh", self, shortcut=QKeySequence("F5"))
        refresh.triggered.connect(self.live.request_refresh)
        file_menu.addAction(refresh)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self, shortcut=QKeySequence(QKeySequence.StandardKey.Quit))
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        view_menu = self.menuBar().addMenu("&View")
        for number, label in ((1, "&Inbox"), (2, "&Runs"), (3, "&History")):
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
        decide = self.decisions.request_decision
        bindings: tuple[tuple[str, Callable[[], None]], ...] = (
            ("A", lambda: decide("approve")),
            ("Shift+A", lambda: decide("approve_for_session")),
            ("E", lambda: decide("edit")),
            ("R", lambda: decide("reject")),
            ("S", lambda: decide("steer")),
            ("N", lambda: decide("answer")),
            ("J", lambda: self.move_request(1)),
            ("K", lambda: self.move_request(-1)),
        )
        for area in (self.inbox.view, self.detail, self.runs.view):
            for keys, slot in bindings:
                if area is self.inbox.view and keys in ("J", "K"):
                    continue  # the view handles them itself (keyPressEvent)
                shortcut = QShortcut(QKeySequence(keys), area)
                shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
                shortcut.activated.connect(slot)
                self.shortcuts.append(shortcut)
        search = QShortcut(QKeySequence("/"), self)
        search.activated.connect(self.focus_search)
        keymap = QShortcut(QKeySequence("?"), self)
        keymap.activated.connect(self.show_keymap)
        escape = QShortcut(QKeySequence("Escape"), self.inbox.search_box)
        escape.setContext(Qt.ShortcutContext.WidgetShortcut)
        escape.activated.connect(self.inbox.leave_search)
        self.shortcuts += [search, keymap, escape]

    def _connect(self) -> None:
        live = self.live
        live.pendingCountChanged.connect(self._on_pending_count)
        live.newPending.connect(self.notifier.notify_new)
        live.eventsLoaded.connect(self._on_events_loaded)
        live.eventsAppended.connect(self._on_events_appended)
        live.failed.connect(self.show_error)
        live.requestsChanged.connect(self.history.on_requests_changed)
        self.history.failed.connect(self.show_error)
        self.detail.failed.connect(self.show_error)
        self.detail.loaded.connect(self.requestShown)
        self.detail.decisionRequested.connect(self.decisions.request_decision)
        self.detail.timeline_view.detailActivated.connect(self._open_text_viewer)
        self.left_tabs.currentChanged.connect(self._on_tab_changed)
        for clock in (self.inbox.interacted, self.decisions.interacted, self.history.interacted):
            clock.connect(self._note_interaction)
        self.decisions.decided.connect(self.decided)
        self.decisions.failed.connect(self.show_error)
        self.decisions.message.connect(lambda text, ms: self.statusBar().showMessage(text, ms))
        self.runs.failed.connect(self.show_error)
        self.runs.message.connect(lambda text: self.statusBar().showMessage(text, 4000))
        live.runsNeedAction.connect(lambda texts: self.statusBar().showMessage("; ".join(texts), 10_000))
        live.databaseStatus.connect(lambda text: self.statusBar().showMessage(text, 0 if text else 1))
        live.feedStatus.connect(
            lambda text: self.statusBar().showMessage(text or "Following the database again.", 0 if text else 3000)
        )
        self.notifier.showRequested.connect(self.bring_to_front)
        self.notifier.quitRequested.connect(self.close)

    # -- start and stop ---------------------------------------------------------------------------
    def start(self) -> None:
        """Begin following the database (call with the qasync loop running)."""
        self.live.start()
        self.inbox.view.setFocus()

    def set_runtime(self, runtime: Runtime | None) -> None:
        """Attach the agent runtime once it exists (the app builds it after the first screen)."""
        self.runtime = runtime
        self.decisions.runtime = runtime
        self.runs.set_runtime(runtime)

    @property
    def busy(self) -> bool:
        return self.tasks.busy or self.live.busy

    def closeEvent(self, event: QCloseEvent) -> None:
        self.window_settings.save()
        self._tick.stop()
        self.live.close()
        self.tasks.cancel_all()
        self.dialogs.close_all()
        self.notifier.hide()
        self.closing.emit()
        event.accept()

    # -- the operator's pace -------------------------------------------------------------------------
    def _note_interaction(self) -> None:
        self.last_interaction = time.monotonic()

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

    # -- tabs and keys ------------------------------------------------------------------------------
    def show_tab(self, index: int) -> None:
        self.left_tabs.setCurrentIndex(index)
        self._focus_current_tab()

    def _focus_current_tab(self) -> None:
        index = self.left_tabs.currentIndex()
        views = {INBOX_TAB: self.inbox.view, RUNS_TAB: self.runs.view, HISTORY_TAB: self.history.view}
        views.get(index, self.inbox.view).setFocus()

    def _on_tab_changed(self, index: int) -> None:
        self.inbox.active = index == INBOX_TAB
        self.runs.active = index == RUNS_TAB
        self.history.active = index == HISTORY_TAB
        self.detail.setVisible(index != HISTORY_TAB)  # History shows its own detail: it takes the whole width
        if index == INBOX_TAB:
            self.inbox.show_current()
        elif index == RUNS_TAB:
            self.runs.show_current()
        elif index == HISTORY_TAB:
            self.history.show_current()

    def move_request(self, step: int) -> None:
        """j/k: the next or previous request in the inbox, or run on the runs board."""
        if self.left_tabs.currentIndex() == RUNS_TAB:
            self.runs.move_selection(step)
        else:
            self.inbox.move_request(step)

    def focus_search(self) -> None:
        if self.left_tabs.currentIndex() == HISTORY_TAB:  # "/" searches the history while it is in front
            self.history.focus_search()
            return
        self.show_tab(INBOX_TAB)
        self.inbox.focus_search()

    # -- pending count, timeline, tick ------------------------------------------------------------------
    def _on_pending_count(self, count: int) -> None:
        self.setWindowTitle(f"Reviewer ({count} pending)")
        self.notifier.set_pending(count)

    def bring_to_front(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def _on_events_loaded(self, invocation_id: str, events: list[BlockEvent]) -> None:
        self.detail.timeline_model.set_events(invocation_id or None, events)

    def _on_events_appended(self, invocation_id: str, events: list[BlockEvent]) -> None:
        if invocation_id == self.detail.timeline_model.invocation_id:
            self.detail.timeline_model.append_events(events)

    def _open_text_viewer(self, title: str, text: str) -> None:
        viewer = TextViewerDialog(title, text, self)
        viewer.show()

    def _on_tick(self) -> None:
        if self.inbox.model.ages_due():  # only when a shown age or countdown has a new text
            self.inbox.view.viewport().update()
        self.detail.strip.refresh()
        self.detail.timeline_view.viewport().update()
        if self.detail.summary is not None and self.detail.summary.expires_at is not None:
            self.detail.update_summary(self.detail.summary)
        self.runs.update_buttons()

    # -- messages, about, keymap ------------------------------------------------------------------------
    def show_error(self, message: str) -> None:
        self.banner.show_message(message, error=True)

    def show_keymap(self) -> None:
        dialog = KeymapDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.keymap_dialog = dialog

    def show_about(self) -> None:
        self.about_box: QMessageBox = open_about(self.backend, self)

    def changeEvent(self, event: QEvent) -> None:
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.ApplicationPaletteChange):
            self.inbox.model.refresh_theme()
            self.detail.args_view.highlighter.refresh_theme()
            self.detail.diff_highlighter.rehighlight()
        super().changeEvent(event)
