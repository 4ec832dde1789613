"""The window's first screen: painted from a read-only sqlite3 page before the backend loads, then replaced by the
main window showing the same rows, with the same selection, without decisions in between."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, QRect, QSettings, Qt

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.persistence.store import Store
from reviewer_app.ui.inbox.cells import HEADERS
from reviewer_app.ui.inbox.filters import FLAT_QUEUE_KEY
from reviewer_app.ui.inbox.model import InboxModel
from reviewer_app.ui.inbox.view import NO_PENDING_TEXT
from reviewer_app.ui.startup.first_screen import (
    FIRST_SCREEN_ROWS,
    WAIT_TEXT,
    FirstScreenWindow,
    wants_first_screen,
)
from tests.helpers.hostile_requests import overwrite_summaries, seed_hostile_requests
from tests.ui.conftest import OpenMainWindow, run_async

REPO_ROOT = Path(__file__).resolve().parents[2]
ROLES = (
    Qt.ItemDataRole.DisplayRole,
    Qt.ItemDataRole.ToolTipRole,
    Qt.ItemDataRole.AccessibleTextRole,
    Qt.ItemDataRole.ForegroundRole,
    Qt.ItemDataRole.FontRole,
)


def seeded(db_path: Path, count: int = 40) -> None:
    store = Store.open(db_path)
    try:
        seed_hostile_requests(store, count)
    finally:
        store.close()
    overwrite_summaries(db_path, count)


def open_first_screen(qtbot: Any, qtmodeltester: Any, settings: QSettings, db_path: Path) -> FirstScreenWindow:
    """A first screen opened on the test's qasync loop (tests using it take the ``qloop`` fixture)."""
    first = FirstScreenWindow(settings)
    qtbot.addWidget(first)
    qtmodeltester.check(first.model)
    run_async(qtbot, first.open(str(db_path)))
    return first


def request_cells(model: InboxModel, hitl_id: str) -> list[Any]:
    cells = []
    for column in range(len(HEADERS)):
        index = model.index_for(hitl_id, column)
        assert index.isValid()
        cells.append([repr(model.data(index, role)) for role in ROLES])
    return cells


def test_the_first_screen_shows_exactly_what_the_main_window_shows(
    db_path: Path, qtbot: Any, qtmodeltester: Any, ui_settings: QSettings, qloop: Any, open_main_window: OpenMainWindow
) -> None:
    seeded(db_path)
    first = open_first_screen(qtbot, qtmodeltester, ui_settings, db_path)
    window = open_main_window(checked=lambda w: (w.inbox.model,))
    shown = [s.hitl_id for s in first.model.iter_requests()]
    assert len(shown) == 39  # every pending request (one of the 40 is decided)
    assert shown == [s.hitl_id for s in window.inbox.model.iter_requests()]  # same order
    # Risk chips arrive in the main window later, from a worker (the first screen paints before the risk rules are
    # imported): the window's cells are compared as it shows them before their risk is known, whenever that is.
    window.inbox.model.set_risk_source(lambda hitl_id: None)
    for hitl_id in shown:  # every cell, every role: the hostile texts shown (or escaped) the same way
        assert request_cells(first.model, hitl_id) == request_cells(window.inbox.model, hitl_id), hitl_id
    assert first.windowTitle() == "Reviewer (39 pending)"
    assert first.selected_hitl_id() == shown[0] == window.detail.hitl_id  # both select the oldest request
    for column in range(len(HEADERS)):
        assert first.view.isColumnHidden(column) == window.inbox.view.isColumnHidden(column), HEADERS[column]


def test_keys_move_through_the_first_screen_and_decisions_wait_for_the_window(
    db_path: Path, qtbot: Any, qtmodeltester: Any, ui_settings: QSettings, qloop: Any
) -> None:
    seeded(db_path, 12)
    first = open_first_screen(qtbot, qtmodeltester, ui_settings, db_path)
    first.show()
    order = [s.hitl_id for s in first.model.iter_requests()]
    qtbot.keyClick(first.view, Qt.Key.Key_J)
    qtbot.keyClick(first.view, Qt.Key.Key_J)
    qtbot.keyClick(first.view, Qt.Key.Key_K)
    assert first.selected_hitl_id() == order[1]
    for key, modifier in (
        (Qt.Key.Key_A, Qt.KeyboardModifier.NoModifier),
        (Qt.Key.Key_R, Qt.KeyboardModifier.NoModifier),
    ):
        first.statusBar().clearMessage()
        qtbot.keyClick(first.view, key, modifier)
        assert first.statusBar().currentMessage() == WAIT_TEXT
    store = Store.open(db_path)
    try:  # nothing was decided: the first screen has no decision path at all
        assert store.requests.get(order[1])["status"] == HITLStatus.PENDING.value  # type: ignore[index]
        assert store.requests.count_pending() == 11
    finally:
        store.close()
    first.close()  # closed before the main window came: the app then opens none
    assert first.closed_by_operator


def test_an_empty_inbox_says_so_on_the_first_screen(
    db_path: Path, qtbot: Any, qtmodeltester: Any, ui_settings: QSettings, qloop: Any
) -> None:
    Store.open(db_path).close()
    first = open_first_screen(qtbot, qtmodeltester, ui_settings, db_path)
    assert first.model.rowCount() == 0
    assert first.windowTitle() == "Reviewer (0 pending)"
    assert first.view.empty_text() == NO_PENDING_TEXT


def test_the_main_window_takes_the_first_screens_place(
    db_path: Path, qtbot: Any, qtmodeltester: Any, ui_settings: QSettings, qloop: Any, open_main_window: OpenMainWindow
) -> None:
    seeded(db_path)
    first = open_first_screen(qtbot, qtmodeltester, ui_settings, db_path)
    first.setGeometry(QRect(10, 20, 780, 560))  # within the offscreen screen (800 x 600)
    first.move_request(1)
    first.move_request(1)
    chosen = first.selected_hitl_id()
    window = open_main_window(show=False)
    first.hand_over(window)
    assert window.isVisible() and not first.isVisible()
    assert window.geometry() == first.geometry()
    qtbot.waitUntil(lambda: window.detail.hitl_id == chosen)
    current: QModelIndex = window.inbox.view.currentIndex()
    assert window.inbox.model.request_at(current.siblingAtColumn(0)).hitl_id == chosen  # type: ignore[union-attr]
    assert not first.closed_by_operator


def test_the_first_screen_reads_a_screenful_and_the_window_the_rest(
    db_path: Path, qtbot: Any, qtmodeltester: Any, ui_settings: QSettings, qloop: Any, open_main_window: OpenMainWindow
) -> None:
    """The first screen reads only what a screen can show (each row costs the first paint); the main window the
    rest, the first screen's rows first in the same order."""
    seeded(db_path, FIRST_SCREEN_ROWS + 30)
    first = open_first_screen(qtbot, qtmodeltester, ui_settings, db_path)
    shown = [s.hitl_id for s in first.model.iter_requests()]
    assert len(shown) == FIRST_SCREEN_ROWS <= 250  # a tall screen shows ~100 rows
    assert first.windowTitle() == f"Reviewer ({FIRST_SCREEN_ROWS + 29} pending)"  # one of them is decided
    window = open_main_window()  # (the model tester over 229 rows' inserts would outlast the wait on a busy machine)
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == first.pending_count)
    everything = window.inbox.model
    oldest = sorted(everything.requests_in_scope(), key=lambda s: (s.created_at, s.updated_at_ms, s.hitl_id))
    assert set(shown) == {s.hitl_id for s in oldest[:FIRST_SCREEN_ROWS]}  # the oldest, as the window loads them
    assert [h for h in (s.hitl_id for s in everything.iter_requests()) if h in set(shown)] == shown  # same order


def test_a_first_screen_only_where_it_shows_what_the_window_will(db_path: Path, tmp_path: Path) -> None:
    seeded(db_path, 3)
    settings = QSettings(str(tmp_path / "ui.ini"), QSettings.Format.IniFormat)
    assert wants_first_screen(str(db_path), settings)
    settings.setValue("filters/scope", "Pending")  # the default texts, as a window saves them
    settings.setValue("filters/tool", "All tools")
    assert wants_first_screen(str(db_path), settings)
    assert not wants_first_screen(str(tmp_path / "new.db"), settings)  # the backend creates it
    assert not wants_first_screen("postgresql+psycopg://u@localhost/reviews", settings)
    settings.setValue("filters/search", "rm -rf")  # the window would show only what matches
    assert not wants_first_screen(str(db_path), settings)
    settings.remove("filters/search")
    settings.setValue(FLAT_QUEUE_KEY, True)  # the flat queue orders by urgency, not arrival
    assert not wants_first_screen(str(db_path), settings)


CHILD = r"""
import json, subprocess, sys
from PySide6.QtCore import QEvent, QObject, QTimer, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QAbstractItemView, QApplication
app = QApplication([sys.argv[0]])
from reviewer_app import cli
from reviewer_app.ui.inbox.model import InboxModel
seen = {}
LATER = ("reviewer_app.ui.inbox.queue", "reviewer_app.cli.audit", "reviewer_app.cli.runs", "reviewer_app.cli.rules",
         "multiprocessing.connection", "orjson")

def ids(view):
    return [s.hitl_id for s in view.model().iter_requests()][:12]

def windows():
    return {w.objectName(): w for w in app.topLevelWidgets() if w.objectName() in ("firstScreen", "mainWindow")}

class Watch(QObject):
    def eventFilter(self, watched, event):
        if event.type() != QEvent.Type.Paint:
            return False
        view = watched.parent()
        if not isinstance(view, QAbstractItemView) or not isinstance(view.model(), InboxModel):
            return False
        if not view.model().rowCount() or not view.window().isVisible():
            return False
        name = view.window().objectName()
        if "first" not in seen:
            later = [m for m in LATER if m in sys.modules]
            seen["first"] = {"window": name, "ids": ids(view), "backend": "sqlalchemy" in sys.modules, "later": later}
            if name == "firstScreen":
                QTest.keyClick(view, Qt.Key.Key_J)  # the operator moves before the backend is there
                seen["moved_to"] = view.window().selected_hitl_id()
                second = subprocess.run(  # another launch on the same database while the first screen shows
                    [sys.executable, "-m", "reviewer_app", "--db", sys.argv[1], "gui"],
                    capture_output=True, text=True, timeout=60)
                seen["second"] = [second.returncode, second.stdout]
        elif name == "mainWindow" and "main" not in seen:
            main = view.window()
            shell = windows().get("firstScreen")
            seen["main"] = {"ids": ids(view), "selected": main.inbox.model.request_at(
                view.currentIndex().siblingAtColumn(0)).hitl_id, "first_visible": bool(shell and shell.isVisible()),
                "icon": not app.windowIcon().isNull() and not main.windowIcon().isNull(),
                "orjson": "orjson" in sys.modules}
            close_when_loaded(main)
        return False

def close_when_loaded(main):
    if main.live.loading or main.live.busy:
        QTimer.singleShot(20, lambda: close_when_loaded(main))
    else:
        main.close()

watch = Watch()
app.installEventFilter(watch)
QTimer.singleShot(60_000, lambda: app.exit(3))
code = cli.main(["--db", sys.argv[1], "--reviewer", "tester", "gui"])
print("RESULT " + json.dumps({"code": code, **seen}), flush=True)
"""


def test_the_app_paints_the_first_screen_before_the_backend_then_hands_over(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    seeded(db_path)
    env = dict(subprocess_env, XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_DATA_HOME=str(tmp_path / "data"))
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(db_path)],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, done.stderr[-3000:]
    result = json.loads(line[len("RESULT ") :])
    assert result["code"] == 0, done.stderr[-3000:]
    assert result["first"]["window"] == "firstScreen"
    assert result["first"]["backend"] is False  # painted before SQLAlchemy was even imported
    assert result["first"]["later"] == []  # nor the other commands' modules, nor the flat queue's
    assert result["main"]["icon"] is True  # the app icon, set once the first screen is painted
    # orjson (~14 ms to import) is imported behind the first screen, not when the first large request is selected
    assert result["main"]["orjson"] is True and "orjson" not in result["first"]["later"]
    assert result["main"]["ids"] == result["first"]["ids"]  # the same rows in the same order: no flicker, no doubles
    assert result["main"]["selected"] == result["moved_to"] == result["first"]["ids"][1]  # j pressed on the first
    assert result["main"]["first_visible"] is False  # one window at a time
    code, said = result["second"]
    assert code == 0 and "already open" in said  # a second launch meanwhile found this one and opened no window


def test_the_first_screen_fits_the_screen_it_opens_on(qtbot: Any, ui_settings: QSettings) -> None:
    """Seen at 1024 x 640: the first screen opened at 1,320 x 820 and the main window took its place, so the window
    ran off the screen (its detail cut at the right, its status line below the bottom)."""
    first = FirstScreenWindow(ui_settings)
    qtbot.addWidget(first)
    available = first.screen().availableGeometry()  # the offscreen screen: 800 x 600
    assert first.width() <= available.width() and first.height() <= available.height()
    assert available.contains(first.frameGeometry().topLeft())
