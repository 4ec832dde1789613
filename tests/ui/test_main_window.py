"""The real main window, end to end: scripted runs raise requests, the keyboard decides, runs finish.

Every model of the window runs under QAbstractItemModelTester while this happens.
"""

from __future__ import annotations

import json
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QMessageBox

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.records import RequestQuery
from reviewer_app.domain.timeline import BlockKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.runner import Runtime
from reviewer_app.ui.dialogs.answer import AnswerDialog
from reviewer_app.ui.dialogs.edit import EditArgumentsDialog
from reviewer_app.ui.dialogs.submit import TextDialog
from reviewer_app.ui.inbox.cells import COL_DECIDED
from reviewer_app.ui.inbox.filters import Scope
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OpenMainWindow, run_async, window_models


@pytest.fixture
def runtime(qt_backend: SQLHITLBackend, tmp_path: Path, qtbot: Any) -> Iterator[Runtime]:
    rt = Runtime(qt_backend, AgentCatalog(), workspaces_dir=tmp_path / "workspaces")
    run_async(qtbot, rt.start())
    yield rt
    run_async(qtbot, rt.stop())


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, runtime: Runtime, ui_settings: QSettings, qtbot: Any
):
    win = open_main_window(runtime, checked=window_models)
    assert win.windowTitle() == "Reviewer (0 pending)"  # the loaded (empty) inbox is counted
    yield win
    win.close()


def start(qtbot: Any, runtime: Runtime, script: list[dict[str, Any]], prompt: str = "do it") -> str:
    return run_async(qtbot, runtime.start_run("demo", prompt, script=script))


def wait_for_request(qtbot: Any, win: MainWindow, tool: str | None = None) -> str:
    """The request shown, fully loaded and checked in the detail pane (the inbox selects the oldest itself)."""

    def ready() -> bool:
        summary = win.detail.summary
        wanted = summary is not None and (tool is None or summary.tool_name == tool)
        return wanted and win.detail.decidable() and win.detail.checked()

    qtbot.waitUntil(ready, timeout=10_000)
    assert win.detail.summary is not None
    return win.detail.summary.hitl_id


def finish(qtbot: Any, runtime: Runtime, invocation_id: str) -> Any:
    return run_async(qtbot, runtime.wait_for_run(invocation_id, timeout=15), timeout=20_000)


def tool_block(win: MainWindow, status: str) -> Any:
    for block in win.detail.timeline_model.blocks():
        if block.kind is BlockKind.TOOL_USE and block.data.get("status") == status:
            return block
    return None


def press(qtbot: Any, win: MainWindow, key: Any, modifier: Any = Qt.KeyboardModifier.NoModifier) -> None:
    win.inbox.view.setFocus()
    qtbot.keyClick(win.inbox.view, key, modifier)


def dialog_of(qtbot: Any, win: MainWindow, kind: type) -> Any:
    qtbot.waitUntil(lambda: any(isinstance(d, kind) for d in win.dialogs.open_dialogs))
    return next(d for d in win.dialogs.open_dialogs if isinstance(d, kind))


WRITE = [{"text": "Writing.", "tool_calls": [{"name": "write_file", "args": {"path": "a.txt", "content": "hello\n"}}]}]


def test_approve_with_the_keyboard_runs_the_tool_and_the_timeline_shows_success(
    window: MainWindow, runtime: Runtime, qtbot: Any, tmp_path: Path
) -> None:
    workspace_file = None
    invocation_id = start(qtbot, runtime, WRITE)
    hitl_id = wait_for_request(qtbot, window, "write_file")
    assert window.windowTitle() == "Reviewer (1 pending)"
    assert window.inbox.view.hasFocus()  # the inbox has the keyboard from the start
    assert window.detail.prepared is not None
    assert "+hello" in window.detail.diff_view.toPlainText()  # new file: diff against nothing
    qtbot.waitUntil(lambda: tool_block(window, "pending") is not None)

    press(qtbot, window, Qt.Key.Key_A)
    record = finish(qtbot, runtime, invocation_id)
    assert record.state == "done"
    workspace_file = Path(record.workspace) / "a.txt"
    assert workspace_file.read_text() == "hello\n"
    qtbot.waitUntil(lambda: tool_block(window, "success") is not None, timeout=10_000)
    qtbot.waitUntil(lambda: window.windowTitle() == "Reviewer (0 pending)")
    assert window.inbox.model.visible_count == 0
    # The approval named exactly what was shown.
    audit = run_async(qtbot, window.backend.audit(hitl_id))
    assert audit[-1].decision == "approve"
    assert audit[-1].shown_args_sha256 == args_digest({"path": "a.txt", "content": "hello\n"})
    # The strip drew the tool call and the wait for a human.
    lanes = {span.lane for span in window.detail.strip.spans}
    assert lanes == {0, 1}


def test_letters_are_not_swallowed_by_type_ahead_and_j_k_move(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    script = [
        {
            "tool_calls": [
                {"name": "run_shell", "args": {"command": "echo one"}},
                {"name": "run_shell", "args": {"command": "echo two"}},
            ]
        }
    ]
    start(qtbot, runtime, script)
    first = wait_for_request(qtbot, window, "run_shell")
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 2)
    press(qtbot, window, Qt.Key.Key_J)
    qtbot.waitUntil(lambda: window.detail.hitl_id not in (None, first))
    second = window.detail.hitl_id
    press(qtbot, window, Qt.Key.Key_K)
    qtbot.waitUntil(lambda: window.detail.hitl_id == first)
    assert window.inbox.view.currentIndex().siblingAtColumn(0) == window.inbox.model.index_for(first)
    # "/" focuses the search box, typing there filters, Escape clears it and returns to the inbox.
    press(qtbot, window, Qt.Key.Key_Slash)
    assert window.inbox.search_box.hasFocus()
    qtbot.keyClicks(window.inbox.search_box, "echo two")
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 1)
    assert window.inbox.search_box.text() == "echo two"  # 'e', 'c', 'h', 'o' were typed, not shortcuts
    echo_two = first if window.inbox.model.summary(first).summary == "echo two" else second
    assert window.detail.hitl_id == echo_two  # the selection follows what the search leaves
    qtbot.keyClick(window.inbox.search_box, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 2)
    assert window.inbox.view.hasFocus()
    # "?" opens the keymap.
    press(qtbot, window, Qt.Key.Key_Question)
    qtbot.waitUntil(lambda: getattr(window, "keymap_dialog", None) is not None and window.keymap_dialog.isVisible())
    window.keymap_dialog.close()


def test_edit_refuses_invalid_json_and_schema_errors_then_runs_the_edit(
    window: MainWindow, runtime: Runtime, qtbot: Any
) -> None:
    invocation_id = start(qtbot, runtime, WRITE)
    hitl_id = wait_for_request(qtbot, window, "write_file")
    press(qtbot, window, Qt.Key.Key_E)
    dialog = dialog_of(qtbot, window, EditArgumentsDialog)
    assert json.loads(dialog.editor.toPlainText()) == {"path": "a.txt", "content": "hello\n"}
    assert dialog.ok_button.isEnabled()
    dialog.show_json()  # the whole JSON (the Fields tab is tested in test_detail_ux)

    dialog.editor.setPlainText('{"path": "a.txt", "content": ')
    assert not dialog.ok_button.isEnabled()  # disabled at once, before validation runs
    qtbot.waitUntil(lambda: "not valid JSON" in dialog.error_label.text())
    qtbot.keyClick(dialog.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.isVisible()  # Ctrl+Enter refused: nothing was sent
    dialog.editor.setPlainText('{"path": "a.txt"}')
    qtbot.waitUntil(lambda: "content" in dialog.error_label.text())  # required by the tool's schema
    assert not dialog.ok_button.isEnabled()
    dialog.editor.setPlainText('{"path": "a.txt", "content": 5}')
    qtbot.waitUntil(lambda: "content" in dialog.error_label.text() and "string" in dialog.error_label.text())
    assert run_async(qtbot, window.backend.get(hitl_id))["status"] == "pending"

    dialog.editor.setPlainText('{"path": "b.txt", "content": "edited\\n"}')
    qtbot.waitUntil(dialog.ok_button.isEnabled)
    qtbot.keyClick(dialog.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.previewing and run_async(qtbot, window.backend.get(hitl_id))["status"] == "pending"
    # The first Ctrl+Enter showed the diff; the second approves what it shows.
    qtbot.keyClick(dialog.diff_view, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    record = finish(qtbot, runtime, invocation_id)
    assert record.state == "done"
    assert (Path(record.workspace) / "b.txt").read_text() == "edited\n"
    assert not (Path(record.workspace) / "a.txt").exists()
    decided = run_async(qtbot, window.backend.get(hitl_id))
    assert decided["user_response"]["decision"] == "edit"
    qtbot.waitUntil(lambda: tool_block(window, "success") is not None)


def test_reject_with_a_reason(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    invocation_id = start(qtbot, runtime, WRITE)
    hitl_id = wait_for_request(qtbot, window, "write_file")
    press(qtbot, window, Qt.Key.Key_R)
    dialog = dialog_of(qtbot, window, TextDialog)
    assert dialog.objectName() == "rejectDialog"
    assert dialog.ok_button.isEnabled()  # the reason is optional
    qtbot.keyClicks(dialog.editor, "not in this repo")
    qtbot.keyClick(dialog.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    record = finish(qtbot, runtime, invocation_id)
    assert record.state == "done"
    assert not (Path(record.workspace) / "a.txt").exists()
    decided = run_async(qtbot, window.backend.get(hitl_id))
    assert decided["user_response"] == {
        "decision": "reject",
        "message": "not in this repo",
        "args_sha256": args_digest({"path": "a.txt", "content": "hello\n"}),
        "reviewer": "tester",
    }
    block = None

    def rejected() -> bool:
        nonlocal block
        block = tool_block(window, "error")
        return block is not None

    qtbot.waitUntil(rejected)
    assert "not in this repo" in block.data["result"]


def test_steer_needs_guidance_and_the_tool_does_not_run(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    invocation_id = start(qtbot, runtime, WRITE)
    hitl_id = wait_for_request(qtbot, window, "write_file")
    press(qtbot, window, Qt.Key.Key_S)
    dialog = dialog_of(qtbot, window, TextDialog)
    assert dialog.objectName() == "steerDialog"
    assert not dialog.ok_button.isEnabled()  # guidance is required
    qtbot.keyClick(dialog.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.isVisible()
    qtbot.keyClicks(dialog.editor, "write to docs/a.txt instead")
    qtbot.keyClick(dialog.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    record = finish(qtbot, runtime, invocation_id)
    assert record.state == "done"
    assert not (Path(record.workspace) / "a.txt").exists()
    decided = run_async(qtbot, window.backend.get(hitl_id))
    assert decided["user_response"]["decision"] == "steer"
    assert decided["user_response"]["message"] == "write to docs/a.txt instead"


def test_answer_a_question_with_an_option_key(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    script = [
        {
            "text": "Asking.",
            "tool_calls": [
                {"name": "ask_user", "args": {"question": "Which db?", "options": ["PostgreSQL", "SQLite"]}}
            ],
        }
    ]
    invocation_id = start(qtbot, runtime, script)
    hitl_id = wait_for_request(qtbot, window)
    assert window.detail.is_ask
    assert "Which db?" in window.detail.question_label.text()
    assert window.detail.answer_button.isEnabled() and not window.detail.approve_button.isVisible()
    press(qtbot, window, Qt.Key.Key_A)  # on a question, "a" answers
    dialog = dialog_of(qtbot, window, AnswerDialog)
    assert not dialog.ok_button.isEnabled()
    qtbot.keyClick(dialog, Qt.Key.Key_2)
    assert dialog.answer() == "SQLite"
    qtbot.keyClick(dialog, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    record = finish(qtbot, runtime, invocation_id)
    assert record.state == "done"
    decided = run_async(qtbot, window.backend.get(hitl_id))
    assert decided["user_response"]["decision"] == "respond"
    assert decided["user_response"]["message"] == "SQLite"
    qtbot.waitUntil(lambda: tool_block(window, "success") is not None)
    assert tool_block(window, "success").data["result"] == "SQLite"


def test_approve_for_session_waives_the_second_call(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    script = [
        {"tool_calls": [{"name": "run_shell", "args": {"command": "echo one"}}]},
        {"tool_calls": [{"name": "run_shell", "args": {"command": "echo  'one'"}}]},  # the same command, parsed
    ]
    invocation_id = start(qtbot, runtime, script)
    wait_for_request(qtbot, window, "run_shell")
    assert "allow `echo one` exactly" in window.detail.approve_session_button.toolTip()
    press(qtbot, window, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)  # the first press says what it waives
    assert "allow `echo one` exactly" in window.statusBar().currentMessage()
    press(qtbot, window, Qt.Key.Key_A, Qt.KeyboardModifier.ShiftModifier)
    record = finish(qtbot, runtime, invocation_id)
    assert record.state == "done"
    asked = run_async(qtbot, window.backend.list_summaries(RequestQuery(statuses=(), invocation_id=invocation_id)))
    # the second call was not asked, but it is on the record: decided by the session rule
    assert [(s.decision, s.decided_by.startswith("session-rule:")) for s in asked] == [
        ("approve_for_session", False),
        ("approve", True),
    ]
    qtbot.waitUntil(
        lambda: (
            sum(
                1
                for b in window.detail.timeline_model.blocks()
                if b.kind is BlockKind.TOOL_USE and b.data.get("status") == "success"
            )
            == 2
        )
    )


def test_next_pending_request_is_selected_after_a_decision(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    first_run = start(qtbot, runtime, WRITE, prompt="first")
    first = wait_for_request(qtbot, window, "write_file")
    start(qtbot, runtime, [{"tool_calls": [{"name": "run_shell", "args": {"command": "echo later"}}]}])
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 2)
    assert window.detail.hitl_id == first  # the oldest stays selected while new ones arrive
    press(qtbot, window, Qt.Key.Key_A)
    qtbot.waitUntil(lambda: window.detail.summary is not None and window.detail.summary.tool_name == "run_shell")
    finish(qtbot, runtime, first_run)
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 1)
    assert window.detail.summary.tool_name == "run_shell"


def test_a_conflict_is_said_plainly_and_the_view_refreshes(
    window: MainWindow, runtime: Runtime, qtbot: Any, db_path: Path
) -> None:
    start(qtbot, runtime, WRITE)
    hitl_id = wait_for_request(qtbot, window, "write_file")
    digest = window.detail.prepared.digest
    other = SQLHITLBackend(db_path, reviewer="alice")
    try:
        run_async(qtbot, other.decide(hitl_id, Decision(DecisionKind.REJECT, message="mine")))
    finally:
        other.close()
    window.decisions.send_decision(hitl_id, Decision(DecisionKind.APPROVE, args_sha256=digest))
    # The feed may say "decided elsewhere" first (it saw alice's decision): the conflict is said either way.
    qtbot.waitUntil(lambda: any("Someone else decided first" in text for text in window.banner.history))
    assert "alice" in window.banner.label.text()
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 0)


def test_a_request_from_another_process_appears(
    window: MainWindow, qtbot: Any, db_path: Path, subprocess_env: dict[str, str], python_exe: str
) -> None:
    code = textwrap.dedent(
        f"""
        import asyncio
        from reviewer_app.hitl import SQLHITLBackend

        async def main():
            async with SQLHITLBackend({str(db_path)!r}, reviewer="other") as backend:
                await backend.create(hitl_id="from-elsewhere", hitl_type="tool_approval", session_id="ext-session",
                                     invocation_id="ext-run", tool_name="run_shell",
                                     data={{"arguments": {{"command": "make deploy"}}}}, metadata={{"agent": "ext"}})

        asyncio.run(main())
        """
    )
    subprocess.run([python_exe, "-c", code], env=subprocess_env, check=True, timeout=60)
    qtbot.waitUntil(lambda: window.inbox.model.index_for("from-elsewhere").isValid(), timeout=5_000)
    qtbot.waitUntil(lambda: window.detail.hitl_id == "from-elsewhere" and window.detail.decidable())
    assert window.windowTitle() == "Reviewer (1 pending)"
    # Decided by another process as well: it leaves the inbox without a manual refresh.
    decide = textwrap.dedent(
        f"""
        import asyncio
        from reviewer_app.hitl import SQLHITLBackend, Decision, DecisionKind

        async def main():
            async with SQLHITLBackend({str(db_path)!r}, reviewer="cli-user") as backend:
                await backend.decide("from-elsewhere", Decision(DecisionKind.REJECT, message="no"))

        asyncio.run(main())
        """
    )
    subprocess.run([python_exe, "-c", decide], env=subprocess_env, check=True, timeout=60)
    qtbot.waitUntil(lambda: not window.inbox.model.index_for("from-elsewhere").isValid(), timeout=5_000)
    assert window.windowTitle() == "Reviewer (0 pending)"
    # The history scope shows who decided and how.
    window.inbox.scope_combo.setCurrentIndex(1)
    qtbot.waitUntil(lambda: window.inbox.model.filter.scope is Scope.HISTORY and window.inbox.model.visible_count == 1)
    assert window.inbox.model.index_for("from-elsewhere", COL_DECIDED).data() == "reject by cli-user"


def test_runs_board_new_run_cancel_and_follow_up(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    from reviewer_app.ui.dialogs.new_run import NewRunDialog
    from reviewer_app.ui.runs.model import RUN_ID_ROLE

    window.show_tab(1)
    assert window.runs.new_button.isEnabled()
    qtbot.mouseClick(window.runs.new_button, Qt.MouseButton.LeftButton)
    dialog = dialog_of(qtbot, window, NewRunDialog)
    assert dialog.agent.currentText() == "demo"
    qtbot.keyClicks(dialog.prompt, "tidy up")
    qtbot.keyClick(dialog.prompt, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    # The demo agent's script lists the directory, then waits for a write_file approval.
    qtbot.waitUntil(lambda: window.runs.model.count(window_state("waiting")) == 1, timeout=10_000)
    waiting = window.runs.model.index(0, 0)
    run_index = window.runs.model.index(0, 0, waiting)
    invocation_id = run_index.data(RUN_ID_ROLE)
    window.runs.view.setCurrentIndex(run_index)
    qtbot.waitUntil(lambda: window.detail.timeline_model.invocation_id == invocation_id)
    qtbot.waitUntil(lambda: window.detail.timeline_model.rowCount() > 0)
    assert window.runs.cancel_button.isEnabled() and not window.runs.follow_up_button.isEnabled()
    qtbot.mouseClick(window.runs.cancel_button, Qt.MouseButton.LeftButton)
    confirm = dialog_of(qtbot, window, QMessageBox)  # a cancel is confirmed first, naming the run
    assert invocation_id in confirm.text()
    confirm.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: window.runs.model.count(window_state("cancelled")) == 1, timeout=10_000)
    qtbot.waitUntil(lambda: window.windowTitle() == "Reviewer (0 pending)")
    cancelled = window.runs.model.index_for(invocation_id)
    window.runs.view.setCurrentIndex(cancelled)
    qtbot.waitUntil(window.runs.follow_up_button.isEnabled)
    qtbot.mouseClick(window.runs.follow_up_button, Qt.MouseButton.LeftButton)
    follow = dialog_of(qtbot, window, TextDialog)
    window.runs.view.setCurrentIndex(window.runs.model.index(0, 0))  # a group row: no run selected any more
    qtbot.keyClicks(follow.editor, "carry on")
    qtbot.keyClick(follow.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: len(window.runs.model._runs) == 2, timeout=10_000)
    follow_up = next(r for r in window.runs.model._runs.values() if r.id != invocation_id)
    assert follow_up.parent_id == invocation_id and follow_up.prompt == "carry on"


def window_state(name: str) -> Any:
    from reviewer_app.domain.runs import RunState

    return RunState(name)


def test_settings_restore_geometry_splitters_and_filters(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    first = open_main_window(show=False, start=False)
    first.resize(700, 520)  # the offscreen screen is 800x600: stay inside it
    first.splitter.setSizes([300, 700])
    first.inbox.type_combo.setCurrentIndex(2)
    first.inbox.search_box.setText("deploy")
    first.inbox.scope_combo.setCurrentIndex(1)  # "Decided"
    sizes = first.splitter.sizes()
    first.close()
    second = open_main_window(show=False, start=False)
    assert second.size().width() == 700 and second.size().height() == 520
    assert second.inbox.type_combo.currentIndex() == 2
    assert second.inbox.search_box.text() == "deploy"
    assert second.inbox.model.filter.text == "deploy" and second.inbox.model.filter.hitl_type == "ask_user"
    assert second.splitter.saveState() == first.splitter.saveState() or second.splitter.sizes() == sizes
    assert second.inbox.scope_combo.currentText() == "Decided" and second.live.scope is Scope.HISTORY
    assert not second.inbox.view.isColumnHidden(COL_DECIDED)  # the restored scope's columns, as if chosen
    assert not second.runs.new_button.isEnabled()  # no runtime: starting runs is off, reviewing is on
    second.close()


def test_about_names_the_versions_and_the_database(window: MainWindow) -> None:
    import PySide6

    window.show_about()
    text = window.about_box.text()
    assert PySide6.__version__ in text
    assert "Python" in text and "Qt" in text
    assert str(window.backend.store.url).removeprefix("sqlite:///") in text
    assert not window.about_box.isModal()
    window.about_box.close()


def test_object_and_accessible_names(window: MainWindow) -> None:
    names = [
        "inboxView",
        "detailPane",
        "argsView",
        "timelineView",
        "approveButton",
        "approveSessionButton",
        "editButton",
        "rejectButton",
        "steerButton",
        "answerButton",
        "searchBox",
        "runsView",
        "newRunButton",
    ]
    from PySide6.QtWidgets import QWidget

    for name in names:
        widget = window.findChild(QWidget, name)
        assert widget is not None, name
        assert widget.accessibleName(), name


def test_a_huge_request_shows_truncated_and_show_all_renders_everything(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> None:
    content = "a line an agent wants to write\n" * 100_000  # ~3 MB
    run_async(
        qtbot,
        qt_backend.create(
            hitl_id="huge",
            hitl_type="tool_approval",
            session_id="s-huge",
            invocation_id="i-huge",
            tool_name="write_file",
            data={"arguments": {"path": "big.txt", "content": content}},
        ),
    )
    win = open_main_window(loaded=False)
    qtbot.waitUntil(lambda: win.detail.hitl_id == "huge" and win.detail.decidable(), timeout=10_000)
    panel = win.detail.args_panel
    assert "showing the first" in panel.notice.text()
    assert panel.show_all_button.isVisibleTo(panel)
    assert len(win.detail.args_view.toPlainText()) < 300_000
    assert win.detail.prepared.digest == args_digest({"path": "big.txt", "content": content})
    qtbot.mouseClick(panel.show_all_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not panel.show_all_button.isVisibleTo(panel), timeout=20_000)
    shown = win.detail.args_view.toPlainText()
    assert shown.replace(" ↩\n", "").count("a line an agent wants to write") == 100_000  # splits rejoin
    assert "wrapped" in panel.notice.text()
    win.close()


def test_a_new_request_notifies_when_the_window_is_not_active(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    from PySide6.QtWidgets import QWidget

    other = QWidget()
    qtbot.addWidget(other)
    other.show()
    other.activateWindow()
    qtbot.waitUntil(lambda: not window.isActiveWindow())
    start(qtbot, runtime, WRITE)
    qtbot.waitUntil(lambda: len(window.notifier.notifications) == 1, timeout=10_000)
    assert window.notifier.notifications[0] == "write_file: a.txt"
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    start(qtbot, runtime, WRITE)
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 2)
    assert len(window.notifier.notifications) == 1  # the operator is looking: no notification


def test_dark_scheme_switches_palette_and_colours(qapp: Any, monkeypatch: Any) -> None:
    from reviewer_app.ui.common import theme

    original = qapp.palette()
    qapp.setStyle("Fusion")
    watcher = theme.ThemeWatcher(qapp)
    try:
        monkeypatch.setattr(watcher, "os_prefers_dark", lambda: True)
        watcher.apply()
        assert theme.is_dark() and theme.current() is theme.DARK
        monkeypatch.setattr(watcher, "os_prefers_dark", lambda: False)
        watcher.apply()
        assert not theme.is_dark() and theme.current() is theme.LIGHT
    finally:
        qapp.setPalette(original)
        watcher.deleteLater()
    icon = theme.badge_icon(7)
    assert not icon.isNull()


def test_j_k_on_the_runs_board_move_between_runs_and_decision_keys_do_nothing_there(
    window: MainWindow, runtime: Runtime, qtbot: Any
) -> None:
    from reviewer_app.ui.runs.model import RUN_ID_ROLE

    runs = [start(qtbot, runtime, WRITE, prompt=f"run {n}") for n in range(2)]
    qtbot.waitUntil(lambda: window.runs.model.count(window_state("waiting")) == 2, timeout=10_000)
    window.show_tab(1)
    waiting = window.runs.model.index(0, 0)
    window.runs.view.setCurrentIndex(window.runs.model.index(0, 0, waiting))
    top = window.runs.selected_run()
    assert top is not None and top.id in runs
    qtbot.waitUntil(lambda: window.detail.timeline_model.invocation_id == top.id)
    qtbot.keyClick(window.runs.view, Qt.Key.Key_J)
    qtbot.waitUntil(lambda: window.runs.selected_run() is not None and window.runs.selected_run().id != top.id)
    below = window.runs.selected_run()
    assert below is not None and below.id in runs
    assert window.runs.view.currentIndex().siblingAtColumn(0).data(RUN_ID_ROLE) == below.id
    qtbot.waitUntil(lambda: window.detail.timeline_model.invocation_id == below.id)  # the board shows what it selects
    qtbot.keyClick(window.runs.view, Qt.Key.Key_K)
    qtbot.waitUntil(lambda: window.runs.selected_run() is not None and window.runs.selected_run().id == top.id)
    decided: list[str] = []
    window.decided.connect(lambda hitl_id, _kind: decided.append(hitl_id))
    qtbot.keyClick(window.runs.view, Qt.Key.Key_A)  # approving is the inbox's: nothing is decided from the board
    qtbot.waitUntil(lambda: not window.busy)  # a decision would be a task of the window until it is committed
    assert decided == [] and window.dialogs.open_dialogs == []
    assert all(s.status == "pending" for s in window.inbox.model.iter_requests())
    assert window.inbox.model.visible_count == 2


def test_the_window_never_starts_larger_than_the_screen(window: Any) -> None:
    """Seen on a 1280 x 800 desktop: the default 1,320 px window put the decision buttons off screen."""
    available = window.screen().availableGeometry()
    window.resize(available.width() + 400, available.height() + 300)
    window.fit_to_screen()
    assert window.width() <= available.width() and window.height() <= available.height()
    assert window.width() >= window.minimumWidth()
