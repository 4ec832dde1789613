"""The reviewer window: inbox and runs on the left, the selected request or run on the right.

A thin assembly of rooms, each one concept: the inbox tab (:mod:`ui.inbox.panel`), the runs
tab (:mod:`ui.runs.panel`), the detail pane (:mod:`ui.detail.pane`), decisions
(:mod:`ui.decide.controller`), the tray (:mod:`ui.desktop.tray`), remembered settings (:mod:`ui.window.settings`)
and the banner. The window never waits on the database: every read and decision is a task on
the qasync loop (:class:`ui.common.keepers.TaskKeeper`), dialogs are opened with ``open()`` and answer
through signals, and errors land in the non-modal banner.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence, QResizeEvent, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QMainWindow,
    QMenu,
    QMessageBox,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from reviewer_app.domain.timeline import BlockEvent
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.common import clipboard, theme
from reviewer_app.ui.common.elided_label import MiddleElidedLabel
from reviewer_app.ui.common.keepers import DialogKeeper, TaskKeeper
from reviewer_app.ui.common.screen_fit import fit_to_screen
from reviewer_app.ui.decide.controller import DecisionController
from reviewer_app.ui.decide.operation import DecisionOp
from reviewer_app.ui.desktop.notifications import attach_native_notifier
from reviewer_app.ui.desktop.tray import TrayNotifier
from reviewer_app.ui.detail.pane import DetailPane
from reviewer_app.ui.dialogs.viewer import TextViewerDialog
from reviewer_app.ui.history.panel import HistoryPanel
from reviewer_app.ui.inbox.filters import FLAT_QUEUE_KEY
from reviewer_app.ui.inbox.panel import InboxPanel
from reviewer_app.ui.runs.panel import RunsPanel
from reviewer_app.ui.triage.hub import Triage
from reviewer_app.ui.window.about import mask_url, open_about
from reviewer_app.ui.window.banner import Banner
from reviewer_app.ui.window.keymap import KeymapDialog
from reviewer_app.ui.window.live import LiveController
from reviewer_app.ui.window.ops_views import OpsViews
from reviewer_app.ui.window.settings import WindowSettings

if TYPE_CHECKING:
    from reviewer_app.runtime.runner import Runtime

INBOX_TAB, RUNS_TAB, HISTORY_TAB = 0, 1, 2
DECISION_NEWS_MS = 20_000  # "someone else decided first", "your rejection was not sent": read, then gone


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
        self.settings = settings
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
        self.decision_op = DecisionOp(backend, self)  # every decision made here: keys, triage, bulk, notifications
        self.decisions = DecisionController(
            self.decision_op, self.live, self.detail, self.inbox, self.tasks, self.dialogs, dialog_parent=self
        )
        self.decisions.settings = settings  # recent reject reasons
        self.notifier = TrayNotifier(self, tray=tray)
        self.ops = OpsViews(self, backend)  # audit log (Ctrl+5) and statistics (Ctrl+6) windows
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
        self.triage = Triage(self, settings)  # undo, risk chips, rules tab, bulk decisions (issue 14)
        self.inbox.queue.set_risk_source(self.triage.risks.risk)
        self.triage.risks.arrived.connect(self.inbox.queue.schedule)  # a high risk moves up the queue
        self.inbox.set_flat(bool(settings.value(FLAT_QUEUE_KEY, False, type=bool)))
        self.triage.undo.changed.connect(self._show_pending_count)
        self.native_notifier = attach_native_notifier(self, settings, enabled=tray)  # Approve/Reject/Open
        self.view_menu.addAction(self.native_notifier.sound_action)
        self.set_theme(self.window_settings.value("ui/theme", "system"), save=False)
        self.window_settings.watch()
        self._tick = QTimer(self, interval=1000)
        self._tick.timeout.connect(self._on_tick)
        self._tick.start()

    # -- construction ---------------------------------------------------------------------------
    def _build_ui(self) -> None:
        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(6, 6, 6, 6)
        self.banner = Banner()
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setObjectName("mainSplitter")
        self.splitter.setChildrenCollapsible(False)
        self.left_tabs = QTabWidget()
        self.left_tabs.setObjectName("leftTabs")
        self.left_tabs.setDocumentMode(True)
        self.left_tabs.addTab(self.inbox, "Inbox")
        self.left_tabs.addTab(self.runs, "Runs")
        self.left_tabs.addTab(self.history, "History")
        self.banner.overlay(self.left_tabs, bottom=True)  # never shifts the lists, never covers the request
        self.splitter.addWidget(self.left_tabs)
        self.splitter.addWidget(self.detail)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([520, 760])
        outer.addWidget(self.splitter, 1)
        self.setCentralWidget(central)
        # A quarter of the window at most (``resizeEvent``): at 1,024 px a long path left a held decision's
        # countdown beside it a few characters of its call.
        self.db_label = MiddleElidedLabel(f"{mask_url(self.backend.database_url)} · reviewer {self.backend.reviewer}")
        self.db_label.setObjectName("dbLabel")
        self.statusBar().addPermanentWidget(self.db_label)
        self.resize(1320, 820)

    def fit_to_screen(self, margin: int = 48) -> None:
        """The first start on a small screen: the default size (or a remembered one) never exceeds the screen."""
        fit_to_screen(self, margin)

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        new_run = QAction("&New run…", self, shortcut=QKeySequence("Ctrl+N"))
        new_run.setWhatsThis("start a new run of an agent")
        new_run.triggered.connect(self.runs.open_new_run)
        file_menu.addAction(new_run)
        refresh = QAction("&Refresh", self, shortcut=QKeySequence("F5"))
        refresh.setWhatsThis("reload everything from the database")
        refresh.triggered.connect(self.live.request_refresh)
        file_menu.addAction(refresh)
        file_menu.addSeparator()
        quit_action = QAction("&Quit", self, shortcut=QKeySequence("Ctrl+Q"))  # Cmd+Q on macOS
        quit_action.setWhatsThis("quit Reviewer")
        quit_action.triggered.connect(self.close)
        file_menu.addAction(quit_action)
        self.view_menu = view_menu = self.menuBar().addMenu("&View")
        for number, label, what in (
            (1, "&Inbox", "show the inbox"),
            (2, "&Runs", "show the runs board"),
            (3, "&History", "show the decided requests (history)"),
        ):
            action = QAction(label, self, shortcut=QKeySequence(f"Ctrl+{number}"))
            action.setWhatsThis(what)
            action.triggered.connect(lambda _=False, i=number - 1: self.show_tab(i))
            view_menu.addAction(action)
        view_menu.addActions(self.ops.actions)
        view_menu.addSeparator()
        theme_menu = view_menu.addMenu("&Theme")
        self.theme_actions = QActionGroup(self)
        self.theme_actions.setExclusive(True)
        for name, label in (("system", "&System"), ("light", "&Light"), ("dark", "&Dark")):
            action = QAction(label, self.theme_actions, checkable=True)
            action.setData(name)
            action.triggered.connect(lambda _=False, n=name: self.set_theme(n))
            theme_menu.addAction(action)
        help_menu = self.menuBar().addMenu("&Help")
        keymap = QAction("&Keyboard shortcuts", self)
        keymap.triggered.connect(self.show_keymap)
        help_menu.addAction(keymap)
        about = QAction("&About Reviewer", self)
        about.triggered.connect(self.show_about)
        help_menu.addAction(about)

    def _shortcut(
        self, keys: str, area: QWidget, what: str, slot: Callable[[], object], context: Qt.ShortcutContext | None = None
    ) -> QShortcut:
        """A key with its description (whatsThis): the ``?`` keymap lists it from there."""
        shortcut = QShortcut(QKeySequence(keys), area)
        shortcut.setContext(context or Qt.ShortcutContext.WidgetWithChildrenShortcut)
        shortcut.setWhatsThis(what)
        shortcut.activated.connect(slot)
        self.shortcuts.append(shortcut)
        return shortcut

    def _build_shortcuts(self) -> None:
        """Letter keys act where the reviewer reads (inbox, detail, runs), never inside text fields."""
        self.shortcuts: list[QShortcut] = []
        decide = self._keyed_decision
        bindings: tuple[tuple[str, str, Callable[[], None]], ...] = (
            ("A", "approve (answer, for a question)", lambda: decide("approve")),
            ("Shift+A", "approve for this session", lambda: decide("approve_for_session")),
            ("E", "edit the arguments, then approve", lambda: decide("edit")),
            ("R", "reject (optional reason)", lambda: decide("reject")),
            ("S", "steer: send guidance instead", lambda: decide("steer")),
            ("N", "answer a question", lambda: decide("answer")),
            ("J", "next request (next run on the runs board, decision in the history)", lambda: self.move_request(1)),
            ("K", "previous request (previous run, decision)", lambda: self.move_request(-1)),
            ("Ctrl+C", "copy the id, command or arguments", self.open_copy_menu),
        )
        reading: tuple[QWidget, ...] = (self.inbox.view, self.inbox.queue.view, self.detail)
        for area in reading:
            self._shortcut("Q", area, "the flat queue (most urgent first) or the grouped tree", self.toggle_flat)
        for area in (*reading, self.runs.view):
            for keys, what, slot in bindings:
                if area in (self.inbox.view, self.inbox.queue.view) and keys in ("J", "K"):
                    continue  # the view handles them itself (keyPressEvent)
                self._shortcut(keys, area, what, slot)
        window = Qt.ShortcutContext.WindowShortcut
        self._shortcut("/", self, "search the inbox", self.focus_search, window)
        self._shortcut("?", self, "this keymap", self.show_keymap, window)
        self._shortcut(
            "Escape",
            self.inbox.search_box,
            "in the search box: clear it, back to the inbox",
            self.inbox.leave_search,
            Qt.ShortcutContext.WidgetShortcut,
        )
        self._shortcut(
            "Escape",
            self.inbox.view,
            "in the inbox: close the message, else clear the search and filters",
            self._escape_in_inbox,
        )
        for area in (self.detail, self.runs.view):
            self._shortcut("Escape", area, "close the message", self.banner.dismiss_if_shown)

    def _escape_in_inbox(self) -> None:
        if not self.banner.dismiss_if_shown():
            self.inbox.clear_filters()

    def _keyed_decision(self, kind: str) -> None:
        self.triage.confirm.keyed(kind)  # a high-risk approval by key asks for the key again

    def _connect(self) -> None:
        live = self.live
        live.pendingCountChanged.connect(self._on_pending_count)
        live.newPending.connect(self.notifier.notify_new)
        live.eventsLoaded.connect(self._on_events_loaded)
        live.eventsAppended.connect(self._on_events_appended)
        live.failed.connect(lambda text: self.banner.show_message(text, key="database"))
        live.refreshed.connect(self._on_refreshed)
        live.requestsChanged.connect(self.history.on_requests_changed)
        self.history.failed.connect(self.show_error)
        self.detail.failed.connect(self.show_error)
        self.detail.loaded.connect(self.requestShown)
        self.detail.decisionRequested.connect(self.decisions.request_decision)
        self.detail.timeline_view.detailActivated.connect(self._open_text_viewer)
        self.left_tabs.currentChanged.connect(self._on_tab_changed)
        for clock in (self.inbox.interacted, self.decisions.interacted, self.history.interacted):
            clock.connect(self._note_interaction)
        self.decision_op.decided.connect(self.decided)
        self.decision_op.deciding.connect(lambda hitl_id: self.decisions.deciding_here([hitl_id]))
        self.decisions.failed.connect(lambda text: self.banner.show_message(text, timeout_ms=DECISION_NEWS_MS))
        self.decisions.noticed.connect(lambda text: self.banner.show_message(text, error=False, timeout_ms=10_000))
        self.detail.copied.connect(lambda text: self.statusBar().showMessage(text, 3000))
        self.decisions.message.connect(lambda text, ms: self.statusBar().showMessage(text, ms))
        self.runs.failed.connect(self.show_error)
        self.runs.message.connect(lambda text: self.statusBar().showMessage(text, 4000))
        live.runsNeedAction.connect(self._runs_need_action)
        live.databaseStatus.connect(lambda text: self.statusBar().showMessage(text, 0 if text else 1))
        live.databaseStatus.connect(lambda text: self._condition("database-status", text))
        live.feedStatus.connect(
            lambda text: self.statusBar().showMessage(text or "Following the database again.", 0 if text else 3000)
        )
        live.feedStatus.connect(lambda text: self._condition("feed", text))
        self.notifier.showRequested.connect(self.bring_to_front)
        self.notifier.quitRequested.connect(self.close)

    # -- start and stop ---------------------------------------------------------------------------
    def start(self) -> None:
        """Begin following the database (call with the qasync loop running)."""
        self.live.start()
        self.inbox.reading_view.setFocus()

    def set_runtime(self, runtime: Runtime | None) -> None:
        """Attach the agent runtime once it exists (the app builds it after the first screen)."""
        self.runtime = runtime
        self.decision_op.runtime = runtime
        self.runs.set_runtime(runtime)

    @property
    def busy(self) -> bool:
        return self.tasks.busy or self.live.busy

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.db_label.fit(self.width() // 4)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.window_settings.save()
        self._tick.stop()
        self.live.close()
        self.triage.undo.flush()  # decisions still in their undo grace period are committed, never lost
        self.tasks.cancel_all()
        self.dialogs.close_all()
        self.ops.close()
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
        current = self.left_tabs.currentWidget()
        getattr(current, "reading_view", getattr(current, "view", current)).setFocus()

    def toggle_flat(self) -> None:
        """Q: the flat queue or the grouped tree (remembered)."""
        self.set_flat(not self.inbox.flat)

    def set_flat(self, on: bool) -> None:
        self.inbox.set_flat(on)
        self.settings.setValue(FLAT_QUEUE_KEY, on)
        self.statusBar().showMessage(
            "Flat queue: most urgent first (Q: grouped)" if on else "Grouped by session and run (Q: flat queue)", 3000
        )

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
        self._pending_in_db = count
        self._show_pending_count()

    def _show_pending_count(self) -> None:
        """The title and tray badge count what waits on the operator: decisions in their undo grace period are not
        committed yet, but the inbox no longer lists them, so neither does the count (seen: title 8, inbox 7)."""
        held = len(self.triage.undo.held_ids) if hasattr(self, "triage") else 0
        count = max(0, getattr(self, "_pending_in_db", 0) - held)
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

    def _on_refreshed(self) -> None:
        if not self.live.refresh_failed:  # the database answers again: its error is over
            self.banner.clear("database")

    def _runs_need_action(self, texts: list[str]) -> None:
        """Runs whose process died: every one in the banner, a line each, until dismissed (the status bar cut the
        list after the first run at 1,024 px and cleared it after 10 s); the status bar keeps the short news."""
        lines = "\n".join(f"• {text}" for text in texts)
        self.banner.show_message(f"{lines}\nThe Runs tab (Ctrl+2) lists them.", error=False)
        self.statusBar().showMessage("; ".join(texts), 10_000)

    def _condition(self, key: str, text: str) -> None:
        """A problem that says when it is over (empty text): the banner shows it while it lasts."""
        if text:
            self.banner.show_message(text, key=key)
        else:
            self.banner.clear(key)

    # -- theme and clipboard ---------------------------------------------------------------------------
    def set_theme(self, name: str, *, save: bool = True) -> None:
        """Follow the OS (``system``) or force ``light`` or ``dark``; remembered in the settings."""
        app = QApplication.instance()
        if name not in theme.PREFERENCES:
            name = "system"
        for action in self.theme_actions.actions():
            action.setChecked(action.data() == name)
        if isinstance(app, QApplication) and (name != "system" or theme.has_watcher(app)):
            theme.watcher_for(app).set_preference(name)
        if save:
            self.window_settings.set_value("ui/theme", name)

    def copy_menu_for_selection(self) -> QMenu:
        """What Ctrl+C offers: the selected request's id, command and arguments (or the group's id)."""
        if self.left_tabs.currentIndex() == RUNS_TAB:
            run = self.runs.selected_run()
            if run is not None:
                return clipboard.group_menu(self, "run", run.id, run.prompt)
        summary = self.detail.summary
        if summary is not None and self.left_tabs.currentIndex() == INBOX_TAB:
            prepared = self.detail.prepared
            shown = prepared.shown if prepared is not None else None
            return clipboard.request_menu(self, summary.hitl_id, shown, loaded=prepared is not None)
        return self.inbox.context_menu_for(self.inbox.view.currentIndex())

    def open_copy_menu(self) -> None:
        view = self.runs.view if self.left_tabs.currentIndex() == RUNS_TAB else self.inbox.view
        rect = view.visualRect(view.currentIndex())
        where = rect.bottomLeft() if rect.isValid() else view.rect().topLeft()
        self.copy_menu = self.copy_menu_for_selection()
        self.copy_menu.popup(view.viewport().mapToGlobal(where))

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
            self.history.detail.diff_highlighter.rehighlight()  # History's diff too (seen: light after dark)
        super().changeEvent(event)
