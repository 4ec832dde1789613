"""The window's first screen: the oldest pending requests, painted before the backend and the full window exist.

Importing the persistence layer and building the main window cost about a second; on an existing SQLite file
at this build's schema the operator meanwhile sees the oldest requests (a screenful and more: ``FIRST_SCREEN_ROWS``,
the start of the main window's first page) and the pending count, read by the
backend package's SQLAlchemy-free reader (``hitl/first_screen.py``) on a worker thread. The rows are the same
``InboxModel`` and ``InboxView`` the inbox uses, laid out where the main window puts them; j/k move through them.
Decisions need the full window (the detail pane shows what a decision approves): their keys say so and do
nothing. When the main window has loaded its first page it takes this window's place (geometry, selected
request, scroll position) and this window closes.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QEvent, QItemSelectionModel, QObject, QSettings, Qt
from PySide6.QtGui import QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import QLabel, QMainWindow, QSplitter, QVBoxLayout, QWidget

from reviewer_app.hitl.first_screen import FirstScreen, first_screen, has_first_screen
from reviewer_app.ui.common.screen_fit import fit_to_screen
from reviewer_app.ui.inbox.filters import FILTER_KEYS, FLAT_QUEUE_KEY, UNFILTERED_TEXTS, Scope
from reviewer_app.ui.inbox.model import InboxModel
from reviewer_app.ui.inbox.view import NO_PENDING_TEXT, InboxView

if TYPE_CHECKING:
    from reviewer_app.ui.window.main_window import MainWindow

# The oldest requests the first screen reads: more than a tall screen shows (~100 rows), fewer than the main
# window's first page (the same oldest rows first); each row costs the first paint its read, grouping and layout.
FIRST_SCREEN_ROWS = 200
PAINT_WAIT_S = 1.0  # at most this long for the rows' first paint before the backend's imports start
STARTING_TEXT = "Starting: decisions are possible as soon as the request's details show."
WAIT_TEXT = "Still starting: decide once the request's details show (a moment)."
DECISION_KEYS = ("A", "Shift+A", "E", "R", "S", "N")


def wants_first_screen(database: str, settings: QSettings) -> bool:
    """A first screen only where it shows what the main window will: an existing SQLite file, the grouped
    pending inbox without a remembered search or filter."""
    if bool(settings.value(FLAT_QUEUE_KEY, False, type=bool)):
        return False
    for key in FILTER_KEYS:  # the remembered texts: empty or the "all" entry of each filter
        if str(settings.value(f"filters/{key}", "") or "") not in ("", UNFILTERED_TEXTS.get(key, "")):
            return False
    return has_first_screen(database)


def resolve_once(future: asyncio.Future[None]) -> None:
    """Complete ``future`` unless it already is (a signal may fire more than once)."""
    if not future.done():
        future.set_result(None)


class _PaintWatch(QObject):
    """Resolves a future at the first paint of a viewport that shows rows."""

    def __init__(self, view: InboxView, done: asyncio.Future[None]) -> None:
        super().__init__(view)
        self._view = view
        self._done = done
        view.viewport().installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.Paint and self._view.model().rowCount() and not self._done.done():
            self._done.get_loop().call_soon(resolve_once, self._done)
        return False


class FirstScreenWindow(QMainWindow):
    """The first screen's window: the inbox tree where the main window has it, a status line, no decisions."""

    def __init__(self, settings: QSettings) -> None:
        super().__init__()
        self.setObjectName("firstScreen")  # its icon is the app's, set once its rows are painted (run_gui)
        self.setWindowTitle("Reviewer")
        self.model = InboxModel(self)
        self.view = InboxView()
        self.view.setObjectName("inboxView")
        self.view.setAccessibleName("Inbox")
        self.view.setModel(self.model)
        self.view.use_inbox_columns()
        self.view.empty_text = lambda: "Loading…" if self.pending_count is None else NO_PENDING_TEXT
        self.view.moveRequested.connect(self.move_request)
        self.pending_count: int | None = None
        self.closed_by_operator = False  # closed before the main window took its place
        self._handed_over = False
        central = QWidget()
        outer = QVBoxLayout(central)
        outer.setContentsMargins(6, 6, 6, 6)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.addWidget(self.view)
        placeholder = QLabel("Loading…")
        placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.splitter.addWidget(placeholder)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        self.splitter.setSizes([520, 760])
        outer.addWidget(self.splitter, 1)
        self.setCentralWidget(central)
        self.statusBar().showMessage(STARTING_TEXT)
        self.resize(1320, 820)
        self._restore(settings)
        fit_to_screen(self)  # the main window takes this geometry: on a small screen it must fit there too
        self.shortcuts = [QShortcut(QKeySequence(keys), self.view) for keys in DECISION_KEYS]
        for shortcut in self.shortcuts:
            shortcut.activated.connect(lambda: self.statusBar().showMessage(WAIT_TEXT))

    def _restore(self, settings: QSettings) -> None:
        """The main window's remembered geometry and splitter (``ui/window/settings.py`` keeps them)."""
        geometry, splitter = settings.value("window/geometry"), settings.value("window/splitter")
        if isinstance(geometry, QByteArray | bytes):
            self.restoreGeometry(QByteArray(geometry))
        if isinstance(splitter, QByteArray | bytes):
            self.splitter.restoreState(QByteArray(splitter))

    # -- rows and keys --------------------------------------------------------------------------
    def show_first_screen(self, screen: FirstScreen) -> None:
        """The page and the count, the oldest request selected (as the main window selects it)."""
        self.model.set_requests(screen.summaries, Scope.PENDING)
        self.view.hide_empty_columns(Scope.PENDING)
        self.pending_count = screen.pending_count
        self.setWindowTitle(f"Reviewer ({screen.pending_count} pending)")
        first = self.model.first_request()
        if first is not None:
            self.select_request(first)

    def select_request(self, hitl_id: str) -> None:
        index = self.model.index_for(hitl_id)
        if index.isValid():
            self.view.scrollTo(index)
            flags = QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows
            self.view.selectionModel().setCurrentIndex(index, flags)

    def selected_hitl_id(self) -> str | None:
        request = self.model.request_at(self.view.currentIndex().siblingAtColumn(0))
        return request.hitl_id if request is not None else None

    def move_request(self, step: int) -> None:
        """j/k: the next (+1) or previous (-1) request in display order."""
        current = self.selected_hitl_id()
        target = self.model.neighbour(current, step) if current else self.model.first_request()
        if target is not None:
            self.select_request(target)

    # -- the start ------------------------------------------------------------------------------
    async def open(self, database: str) -> None:
        """Show the window, read the first screen off the GUI thread, and return once its rows are painted."""
        self.show()
        self.view.setFocus()
        screen = await asyncio.to_thread(first_screen, database, FIRST_SCREEN_ROWS)
        if screen is None:
            return
        if not screen.summaries:  # nothing waits: say so, as the inbox will
            self.show_first_screen(screen)
            return
        painted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        watch = _PaintWatch(self.view, painted)
        self.show_first_screen(screen)
        try:
            await asyncio.wait_for(painted, PAINT_WAIT_S)
        except TimeoutError:  # hidden or minimised: nothing to wait for
            pass
        finally:
            watch.deleteLater()

    def hand_over(self, window: MainWindow) -> None:
        """The main window takes this one's place: same geometry, request, scroll position and focus."""
        if self.isMaximized() or self.isFullScreen():
            window.restoreGeometry(self.saveGeometry())
        else:
            window.setGeometry(self.geometry())
        window.splitter.restoreState(self.splitter.saveState())
        selected = self.selected_hitl_id()
        if selected is not None and window.inbox.model.index_for(selected).isValid():
            window.inbox.select_request(selected)
        scroll = self.view.verticalScrollBar().value()
        window.show()
        window.inbox.view.verticalScrollBar().setValue(scroll)
        window.inbox.reading_view.setFocus()
        self._handed_over = True
        self.close()
        self.deleteLater()

    def bring_to_front(self) -> None:
        """Another launch on this database while the first screen shows: this window comes forward."""
        if self._handed_over:
            return  # the main window answers from now on
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def closeEvent(self, event: QCloseEvent) -> None:
        self.closed_by_operator = not self._handed_over
        super().closeEvent(event)
