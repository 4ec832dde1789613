"""Issue 19's inbox items, each as the operator meets it in the real window.

Search into results by keyboard, narrow layouts, human titles and copying ids, the order of one
model turn, settings saved on change and a visible hidden-by-filter notice, the generated keymap,
the theme switch and self-clearing banners that do not shift the layout.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import shiboken6
from PySide6.QtCore import QSettings, Qt
from PySide6.QtGui import QAction, QGuiApplication, QShortcut
from PySide6.QtWidgets import QApplication, QLabel, QStyleOptionViewItem

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.runner import Runtime
from reviewer_app.ui.inbox.cells import COL_AGE, COL_AGENT, COL_REQUEST, COL_SUMMARY
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OFFSCREEN_NOISE, OpenMainWindow, run_async

LONG_PATH = "reports/quarterly/2026/summary-of-the-whole-year.txt"


@pytest.fixture
def runtime(qt_backend: SQLHITLBackend, tmp_path: Path, qtbot: Any) -> Iterator[Runtime]:
    rt = Runtime(qt_backend, AgentCatalog(), workspaces_dir=tmp_path / "workspaces")
    run_async(qtbot, rt.start())
    yield rt
    run_async(qtbot, rt.stop())


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any, qtmodeltester: Any
) -> Iterator[MainWindow]:
    win = open_main_window()
    qtmodeltester.check(win.inbox.model)
    yield win
    if shiboken6.isValid(win):
        win.close()


def create(qtbot: Any, backend: SQLHITLBackend, n: int, tool: str = "run_shell", **args: Any) -> str:
    hitl_id = f"req-{n}"
    run_async(
        qtbot,
        backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="ses-1",
            invocation_id="inv-1",
            tool_name=tool,
            data={"arguments": args or {"command": f"echo {n}"}},
        ),
    )
    return hitl_id


def wait_shown(qtbot: Any, win: MainWindow, hitl_id: str | None = None) -> str:
    def ready() -> bool:
        s = win.detail.summary
        wanted = s is not None and (hitl_id is None or s.hitl_id == hitl_id)
        return wanted and win.detail.decidable() and win.detail.checked()

    qtbot.waitUntil(ready, timeout=10_000)
    assert win.detail.summary is not None
    return win.detail.summary.hitl_id


# -- 1. search into the results ---------------------------------------------------------------------
@pytest.mark.parametrize("key", [Qt.Key.Key_Down, Qt.Key.Key_Return])
def test_down_or_return_from_search_moves_into_results_and_a_approves(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any, key: Qt.Key
) -> None:
    create(qtbot, qt_backend, 1, command="echo alpha")
    wanted = create(qtbot, qt_backend, 2, command="echo bravo")
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 2, timeout=10_000)
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Slash)
    assert window.inbox.search_box.hasFocus()
    qtbot.keyClicks(window.inbox.search_box, "bravo")
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 1)
    qtbot.keyClick(window.inbox.search_box, key)
    assert window.inbox.view.hasFocus()
    assert window.inbox.search_box.text() == "bravo"  # the filter is kept
    wait_shown(qtbot, window, wanted)
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_A)
    assert window.inbox.search_box.text() == "bravo"  # 'a' was not typed into the search
    qtbot.waitUntil(lambda: (run_async(qtbot, qt_backend.get(wanted)) or {}).get("status") == "completed")
    assert "0 ms" not in window.inbox.status_label.text()
    assert "filtered in" not in window.inbox.status_label.text()


def test_tab_from_the_search_reaches_the_results_in_one_key(window: MainWindow, qtbot: Any) -> None:
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_Slash)
    qtbot.keyClicks(window.inbox.search_box, "deploy")
    qtbot.keyClick(window.inbox.search_box, Qt.Key.Key_Tab)
    assert window.inbox.view.hasFocus()
    assert window.inbox.search_box.text() == "deploy"


# -- 2. narrow layouts ---------------------------------------------------------------------------------
def test_the_window_is_usable_at_1024_by_700_with_a_request_shown(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    create(qtbot, qt_backend, 1, "write_file", path=LONG_PATH, content="x\n")
    wait_shown(qtbot, window)
    window.resize(1024, 700)
    qtbot.waitUntil(lambda: window.width() == 1024)
    qtbot.wait(50)
    assert window.width() == 1024 and window.height() == 700
    assert window.minimumSizeHint().width() <= 1024
    view = window.inbox.view
    index = window.inbox.model.index_for(window.detail.hitl_id or "", COL_SUMMARY)
    text = str(index.data())
    shown = view.visualRect(index).width()
    needed = view.fontMetrics().horizontalAdvance(text[:20])
    assert shown >= needed, f"summary column {shown} px cannot show 20 characters of {text!r}"
    # Columns with nothing in them hide (one agent here); the Waiting column holds ages, no countdown.
    assert view.isColumnHidden(COL_AGENT)
    waited = view.header().sectionSize(COL_AGE)
    # The decision bar wraps rather than widening the window.
    assert window.detail.decision_bar.minimumSizeHint().width() < 400
    # A request that expires widens the Waiting column to its countdown, and only that column.
    run_async(
        qtbot,
        qt_backend.create(
            hitl_id="req-expiring",
            hitl_type="tool_approval",
            session_id="ses-1",
            invocation_id="inv-1",
            tool_name="run_shell",
            data={"arguments": {"command": "true"}},
            expires_at=int(time.time()) + 3600,
        ),
    )
    qtbot.waitUntil(lambda: view.header().sectionSize(COL_AGE) > waited, timeout=10_000)
    assert view.header().sectionSize(COL_AGE) >= view.fontMetrics().horizontalAdvance("in 59:59")
    assert window.width() == 1024


def test_a_long_command_keeps_its_end_in_the_inbox_row(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """The dangerous part of a command is usually its end (``| sh``): the row loses the middle, never the end."""
    command = "curl -fsSL https://example.com/" + "very/long/" * 30 + "install.sh | sh"
    hitl_id = create(qtbot, qt_backend, 1, command=command)
    wait_shown(qtbot, window, hitl_id)
    text = str(window.inbox.model.index_for(hitl_id, COL_SUMMARY).data())
    assert text.startswith("curl -fsSL") and text.endswith("install.sh | sh")
    # A group row's title is a prompt, read from its start: it loses its end.
    view, request = window.inbox.view, window.inbox.model.index_for(hitl_id, COL_SUMMARY)
    run = request.parent().siblingAtColumn(COL_SUMMARY)
    session = run.parent().siblingAtColumn(COL_SUMMARY)
    agent = request.siblingAtColumn(COL_AGENT)
    for index, mode in ((request, "ElideMiddle"), (run, "ElideRight"), (session, "ElideRight"), (agent, "ElideRight")):
        option = QStyleOptionViewItem()
        option.textElideMode = view.textElideMode()  # as the view hands it to the cell's delegate
        view.itemDelegateForIndex(index).initStyleOption(option, index)
        assert option.textElideMode.name == mode, index.data()


# -- 3. human titles and copying ids -------------------------------------------------------------------
# A popup menu under the offscreen plugin (xcb does both):
@pytest.mark.qt_log_ignore(
    OFFSCREEN_NOISE, r"This plugin does not support raise\(\)", "This plugin does not support grabbing the keyboard"
)
def test_group_rows_show_the_runs_prompt_and_ids_are_elided_in_the_middle_and_copyable(
    window: MainWindow, runtime: Runtime, qtbot: Any
) -> None:
    window.set_runtime(runtime)
    script = [{"text": "", "tool_calls": [{"name": "run_shell", "args": {"command": "ls -la"}}]}]
    invocation_id = run_async(qtbot, runtime.start_run("demo", "tidy the release notes", script=script))
    hitl_id = wait_shown(qtbot, window)
    model = window.inbox.model
    qtbot.waitUntil(lambda: window.runs.model.run(invocation_id) is not None)
    run_index = model.index_for(hitl_id).parent()
    session_index = run_index.parent()
    qtbot.waitUntil(lambda: str(run_index.siblingAtColumn(COL_SUMMARY).data()) == "tidy the release notes")
    assert str(session_index.siblingAtColumn(COL_SUMMARY).data()) == "tidy the release notes"
    assert str(run_index.siblingAtColumn(COL_REQUEST).data()) == "1 pending"
    from reviewer_app.ui.common.texts import short_id

    elided = short_id("inv_0123456789abcdef0123")
    assert elided.startswith("inv_01") and elided.endswith("0123") and "…" in elided
    # Selecting the session row names it by its title too.
    window.inbox.view.setCurrentIndex(session_index)
    assert "tidy the release notes" in window.detail.empty_label.text()
    window.inbox.select_request(hitl_id)
    wait_shown(qtbot, window, hitl_id)
    # Ctrl+C: a small menu copying the request's id, command, arguments.
    window.inbox.view.setFocus()
    menu = window.copy_menu_for_selection()
    labels = [a.text().replace("&", "") for a in menu.actions() if a.text()]
    assert labels[:3] == ["Copy id", "Copy command", "Copy arguments"]
    menu.actions()[0].trigger()
    assert QGuiApplication.clipboard().text() == hitl_id
    menu.actions()[1].trigger()
    assert QGuiApplication.clipboard().text() == "ls -la"
    menu.close()
    # A group row's context menu copies its id.
    group_menu = window.inbox.context_menu_for(run_index)
    copy = next(a for a in group_menu.actions() if a.text().replace("&", "") == "Copy id")
    copy.trigger()
    assert QGuiApplication.clipboard().text() == invocation_id
    group_menu.close()
    # The key itself opens the menu at the selected row.
    window.inbox.select_request(hitl_id)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: hasattr(window, "copy_menu") and window.copy_menu.isVisible())
    assert [a.text().replace("&", "") for a in window.copy_menu.actions()][:1] == ["Copy id"]
    window.copy_menu.close()


# -- 4. the order of one model turn --------------------------------------------------------------------
def test_requests_of_one_model_turn_show_in_creation_order(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    window.set_runtime(runtime)
    calls = [{"name": "run_shell", "args": {"command": f"echo {n}"}} for n in range(8)]
    run_async(qtbot, runtime.start_run("demo", "many calls", script=[{"text": "", "tool_calls": calls}]))
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 8, timeout=10_000)
    shown = [s.summary for s in window.inbox.model.iter_requests()]
    assert shown == [f"echo {n}" for n in range(8)], shown
    stored = run_async(qtbot, window.backend.list_summaries())
    assert [s.summary for s in stored] == [f"echo {n}" for n in range(8)]


# -- 5. settings saved on change; a visible filter notice ------------------------------------------------
def test_settings_are_saved_on_change_without_closing(
    window: MainWindow, ui_settings: QSettings, qtbot: Any, tmp_path: Path
) -> None:
    window.inbox.type_combo.setCurrentIndex(2)
    window.inbox.search_box.setText("deploy")
    window.resize(900, 560)

    def saved() -> bool:
        fresh = QSettings(ui_settings.fileName(), QSettings.Format.IniFormat)
        return fresh.value("filters/search") == "deploy" and fresh.value("filters/type") == "Questions"

    qtbot.waitUntil(saved, timeout=5000)
    fresh = QSettings(ui_settings.fileName(), QSettings.Format.IniFormat)
    assert fresh.value("window/geometry") is not None


def test_a_restored_filter_that_hides_requests_says_so_in_the_inbox(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    ui_settings.setValue("filters/search", "nothing-matches-this")
    ui_settings.sync()
    win = open_main_window()
    try:
        create(qtbot, qt_backend, 1)
        create(qtbot, qt_backend, 2)
        qtbot.waitUntil(lambda: win.inbox.model.source_count == 2, timeout=10_000)
        notice = win.inbox.filter_notice
        qtbot.waitUntil(notice.isVisible)
        assert "2 hidden" in notice.text() and "Esc" in notice.text()
        win.inbox.view.setFocus()
        qtbot.keyClick(win.inbox.view, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda: win.inbox.model.visible_count == 2)
        assert win.inbox.search_box.text() == ""
        assert not notice.isVisible()
    finally:
        win.close()


# -- 6. the keymap is generated from the real keys --------------------------------------------------------
def test_every_key_of_the_window_is_in_the_keymap(window: MainWindow) -> None:
    from reviewer_app.ui.window.keymap import as_typed, keymap_entries

    entries = keymap_entries(window)
    listed = {keys for keys, _what in entries}
    assert all(what for _keys, what in entries)
    bound: set[str] = set()
    for action in window.findChildren(QAction):
        for sequence in action.shortcuts():
            if not sequence.isEmpty():
                bound.add(as_typed(sequence.toString(sequence.SequenceFormat.NativeText)))
    for shortcut in window.findChildren(QShortcut):
        if not shortcut.key().isEmpty():
            assert shortcut.whatsThis(), f"{shortcut.key().toString()} has no description"
            bound.add(as_typed(shortcut.key().toString(shortcut.key().SequenceFormat.NativeText)))
    assert bound <= listed, bound - listed
    for key in ("F5", "Ctrl+N", "Ctrl+Q", "a", "Shift+A", "/", "?"):  # letters as typed (issue 25)
        assert key in listed, key
    window.show_keymap()
    assert "F5" in window.keymap_dialog.findChild(QLabel).text()


# -- 7. the theme switch -----------------------------------------------------------------------------
def test_the_view_menu_switches_the_theme_and_remembers_it(
    window: MainWindow, ui_settings: QSettings, qapp: Any, qtbot: Any
) -> None:
    from reviewer_app.ui.common import theme

    original_palette, original_style = qapp.palette(), qapp.style().name()
    qapp.setStyle("Fusion")
    try:
        actions = {a.text().replace("&", ""): a for a in window.theme_actions.actions()}
        assert set(actions) == {"System", "Light", "Dark"}
        actions["Dark"].trigger()
        assert theme.is_dark() and actions["Dark"].isChecked()
        assert QSettings(ui_settings.fileName(), QSettings.Format.IniFormat).value("ui/theme") == "dark"
        actions["Light"].trigger()
        assert not theme.is_dark()
        assert QSettings(ui_settings.fileName(), QSettings.Format.IniFormat).value("ui/theme") == "light"
    finally:
        window.set_theme("system", save=False)
        watcher = theme.watcher_for(qapp)
        watcher.setParent(None)  # later tests start without one, as they did before this test
        watcher.deleteLater()
        qapp.setStyle(original_style)
        qapp.setPalette(original_palette)


# -- 8. banners clear themselves and do not move the layout ---------------------------------------------
def test_an_error_banner_clears_itself_once_the_database_answers_and_never_shifts_the_layout(
    window: MainWindow, qtbot: Any
) -> None:
    top_before = window.splitter.mapTo(window, window.splitter.rect().topLeft()).y()
    window.live.failed.emit("Could not refresh from the database: disk I/O error")
    assert window.banner.isVisible()
    QApplication.processEvents()
    assert window.splitter.mapTo(window, window.splitter.rect().topLeft()).y() == top_before
    window.live.request_refresh()  # the next read works: the problem is gone
    qtbot.waitUntil(lambda: not window.banner.isVisible(), timeout=5000)
    # A status from the write retries clears when the retries end.
    window.live.databaseStatus.emit("database busy — retrying")
    assert window.banner.isVisible()
    window.live.databaseStatus.emit("")
    assert not window.banner.isVisible()
    # A decision's error (no condition to watch) stays until dismissed.
    window.show_error("Could not approve: conflict")
    window.live.request_refresh()
    qtbot.wait(300)
    assert window.banner.isVisible()


def test_a_run_the_board_does_not_hold_gets_its_title_from_the_database(
    qt_backend: SQLHITLBackend, qloop: Any, qtbot: Any
) -> None:
    """A big inbox's old runs are not on the runs board (it loads the newest 2,000): their titles are read lazily."""
    from reviewer_app.ui.inbox.titles import RunTitles
    from reviewer_app.ui.runs.model import RunsModel
    from reviewer_app.ui.window.live import LiveController

    run_async(
        qtbot,
        qt_backend.register_run(session_id="ses-old", invocation_id="inv-old", prompt="migrate the\n  old database"),
    )
    live = LiveController(qt_backend)
    titles = RunTitles(RunsModel(), fetch=qt_backend.get_run, spawn=live.spawn)
    assert titles.run_title("inv-old") is None  # not known yet: asked for in the background
    with qtbot.waitSignal(titles.changed, timeout=5000):
        pass
    assert titles.run_title("inv-old") == "migrate the old database"
    assert titles.session_title("ses-old", "inv-old") == "migrate the old database"
    with qtbot.waitSignal(titles.changed, timeout=5000):
        assert titles.run_title("inv-missing") is None
    assert titles.run_title("inv-missing") is None  # read once: no run, no title, no second read
    qtbot.waitUntil(lambda: not live.busy)  # the background read ends
    live.close()


def test_a_session_without_titled_runs_is_named_by_its_working_directory(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any, tmp_path: Path
) -> None:
    """A Claude Code session whose transcript gave no first prompt: its directory says what it is."""
    project = tmp_path / "src" / "api"

    def work(tx: Any) -> None:
        tx.runs.ensure_session("ses-cc", agent="claude-code", workspace=str(project), external=True)
        tx.runs.ensure("inv-cc", "ses-cc", agent="claude-code", external=True)

    run_async(qtbot, qt_backend.write(work))
    run_async(
        qtbot,
        qt_backend.create(
            hitl_id="req-cc",
            hitl_type="tool_approval",
            session_id="ses-cc",
            invocation_id="inv-cc",
            tool_name="Bash",
            data={"arguments": {"command": "make test"}},
            metadata={"external": True},
        ),
    )
    qtbot.waitUntil(lambda: window.inbox.model.index_for("req-cc").isValid(), timeout=10_000)
    session_index = window.inbox.model.index_for("req-cc").parent().parent()
    window.inbox.view.viewport().repaint()
    qtbot.waitUntil(lambda: str(session_index.siblingAtColumn(COL_SUMMARY).data()) == f"in {project}")
    run_index = window.inbox.model.index_for("req-cc").parent()
    assert str(run_index.siblingAtColumn(COL_SUMMARY).data()).startswith("run inv-cc")  # no title: its id


def test_run_updates_do_not_recompute_titles_only_new_runs_do(qtbot: Any) -> None:
    """bench/ui_load.py: re-deriving every title and repainting the inbox on each run update held the GUI thread
    up to 94 ms under 100 concurrent runs. A run's title is its prompt, which never changes."""
    from dataclasses import replace

    from reviewer_app.domain.records import RunRecord
    from reviewer_app.ui.inbox.titles import RunTitles
    from reviewer_app.ui.runs.model import RunsModel

    def run(run_id: str, session: str, prompt: str, created: int, state: str = "running") -> RunRecord:
        return RunRecord(run_id, session, "a", prompt, state, None, False, None, None, created, None, None, 0, 0)

    model = RunsModel()
    first = run("r1", "s1", "tidy the notes", 100)
    model.set_runs([first])
    titles = RunTitles(model)
    assert titles.session_title("s1") == "tidy the notes"
    emitted: list[int] = []
    titles.changed.connect(lambda: emitted.append(1))
    model.apply_changes([replace(first, state="waiting", updated_at_ms=5)])  # moves between state groups
    model.apply_changes([replace(first, state="waiting", updated_at_ms=6, active_ms=3)])  # updated in place
    assert emitted == []
    model.apply_changes([run("r0", "s1", "plan the release", 50)])  # an earlier run of the session arrives
    assert emitted == [1]
    assert titles.session_title("s1") == "plan the release"
    model.apply_changes([run("r2", "s2", "new work", 200)])
    assert titles.session_title("s2") == "new work" and titles.run_title("r2") == "new work"
