"""Issue 19, the detail pane, decision dialogs, timeline and runs tab: each friction an operator met, fixed.

Real window, real runtime, real SQLite file; time moves by an injected clock, not by sleeping.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QTextDocument
from PySide6.QtWidgets import QApplication, QMessageBox, QPlainTextEdit

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import Block, BlockKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.runner import Runtime
from reviewer_app.ui.common import theme
from reviewer_app.ui.detail.edit_diff import edit_diff
from reviewer_app.ui.detail.timeline import KIND_ROLE, TimelineModel, block_status, block_title
from reviewer_app.ui.dialogs.edit import EditArgumentsDialog
from reviewer_app.ui.dialogs.reasons import CANNED_REJECT_REASONS
from reviewer_app.ui.dialogs.reject import RejectDialog
from reviewer_app.ui.runs.model import RunsModel
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui import test_main_window as main_window_tests
from tests.ui.conftest import OpenMainWindow, run_async
from tests.ui.test_main_window import WRITE, dialog_of, finish, press, start, wait_for_request

# The real window over a real runtime and SQLite file, as the main window's own tests use them.
runtime = main_window_tests.runtime
window = main_window_tests.window


def refocus(qtbot: Any, window: MainWindow) -> None:
    """The offscreen platform does not give the window back its activation when a dialog closes; a WM does."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)


SHELL = [{"text": "Listing.", "tool_calls": [{"name": "run_shell", "args": {"command": "ls -la /tmp"}}]}]


def create_external(
    backend: SQLHITLBackend,
    qtbot: Any,
    hitl_id: str,
    command: str,
    *,
    expires_at: int | None = None,
    agent: str = "ext",
) -> None:
    run_async(
        qtbot,
        backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="ext-session",
            invocation_id="ext-run",
            tool_name="run_shell",
            data={"arguments": {"command": command}},
            metadata={"agent": agent, "external": True},
            expires_at=expires_at,
        ),
    )


# -- 1. the header's age and the expiry countdown follow the clock --------------------------------------------


def test_header_age_ticks_and_the_countdown_turns_amber_then_red(window: MainWindow, qtbot: Any) -> None:
    now = int(time.time())
    create_external(window.backend, qtbot, "ticking", "make deploy", expires_at=now + 600)
    qtbot.waitUntil(lambda: window.detail.hitl_id == "ticking" and window.detail.decidable(), timeout=5_000)
    summary = window.detail.summary
    assert summary is not None
    clock = [float(summary.created_at + 2)]
    window.detail.now = lambda: clock[0]
    qtbot.waitUntil(lambda: "(2s ago)" in window.detail.header.text(), timeout=3_000)
    clock[0] += 30
    qtbot.waitUntil(lambda: "(32s ago)" in window.detail.header.text(), timeout=3_000)  # the pane's own timer
    colors = theme.current()
    assert colors.warning.name() not in window.detail.header.text()
    clock[0] = summary.expires_at - 45
    qtbot.waitUntil(lambda: "in 0:45" in window.detail.header.text(), timeout=3_000)
    assert colors.warning.name() in window.detail.header.text()
    clock[0] = summary.expires_at - 5
    qtbot.waitUntil(lambda: "in 0:05" in window.detail.header.text(), timeout=3_000)
    assert colors.danger.name() in window.detail.header.text()


def test_the_headers_creation_time_names_the_date_only_on_other_days(window: MainWindow, qtbot: Any) -> None:
    """Seen at 1,024 px: "created 2026-11-28 04:04:15 (26m ago)" put its "ago" on a line of its own, and today's
    date said nothing. Today the time alone, on other days with the date (as History's times)."""
    create_external(window.backend, qtbot, "today", "make deploy")
    qtbot.waitUntil(lambda: window.detail.hitl_id == "today" and window.detail.decidable(), timeout=5_000)
    summary = window.detail.summary
    assert summary is not None
    created = time.localtime(summary.created_at)
    window.detail.now = lambda: summary.created_at + 90
    qtbot.waitUntil(lambda: "(1m ago)" in window.detail.header.text(), timeout=3_000)
    assert f"created {time.strftime('%H:%M:%S', created)} (1m ago)" in window.detail.header.text()
    window.detail.now = lambda: summary.created_at + 2 * 86_400
    qtbot.waitUntil(lambda: "(2d 0h ago)" in window.detail.header.text(), timeout=3_000)
    assert f"created {time.strftime('%Y-%m-%d %H:%M:%S', created)} (2d 0h ago)" in window.detail.header.text()


def header_lines(label: Any, width: int) -> list[str]:
    """The lines the header label lays its text out in at ``width`` px (as QLabel's own document does)."""
    document = QTextDocument()
    document.setDefaultFont(label.font())
    document.setHtml(label.text())
    document.setTextWidth(width)
    document.size()  # lays it out
    lines = []
    block = document.begin()
    while block.isValid():
        layout = block.layout()
        for n in range(layout.lineCount()):
            line = layout.lineAt(n)
            lines.append(block.text()[line.textStart() : line.textStart() + line.textLength()])
        block = block.next()
    return lines


def test_the_header_never_breaks_an_agents_name_at_its_hyphen(window: MainWindow, qtbot: Any) -> None:
    """Seen at 1,024 px: "run_shell tool approval · agent external-" and "python-agent" on the next line. The
    agent's name moves to the next line whole, at any width."""
    create_external(window.backend, qtbot, "h-wide", "ls -la infra", agent="external-python-agent")
    qtbot.waitUntil(lambda: window.detail.hitl_id == "h-wide", timeout=5_000)
    for width in range(180, 560, 4):  # the header's width from a 1,024 px window's narrowest detail pane up
        lines = [line.replace("\u2011", "-") for line in header_lines(window.detail.header, width)]  # as it reads
        assert any("external-python-agent" in line for line in lines), (width, lines)  # on one line, whole


# -- 2. expiry is said, the timeline names things as they are, runs are grouped as they ended ------------------


def test_an_expired_request_is_announced_by_name(window: MainWindow, qtbot: Any) -> None:
    now = int(time.time())
    create_external(window.backend, qtbot, "soon-gone", "make deploy", expires_at=now + 3600)
    qtbot.waitUntil(lambda: window.detail.hitl_id == "soon-gone" and window.detail.decidable(), timeout=5_000)
    expired = run_async(qtbot, window.backend.expire_due(now=now + 3601))
    assert [r["hitl_id"] for r in expired] == ["soon-gone"]
    qtbot.waitUntil(lambda: "expired" in window.statusBar().currentMessage(), timeout=5_000)
    notice = window.statusBar().currentMessage()
    assert "make deploy" in notice and "run_shell" in notice
    assert "unix time" not in notice
    assert any("expired" in text and "make deploy" in text for text in window.decisions.notices)


def _hitl(data: dict[str, Any], block_id: str = "i:hitl:c1", parent: str | None = "i:tool:c1") -> Block:
    return Block(block_id, BlockKind.HITL, data, parent, 1000, 2000, 2)


def _tool(data: dict[str, Any], children: list[str] | None = None) -> Block:
    return Block("i:tool:c1", BlockKind.TOOL_USE, data, None, 1000, 2000, 3, children or [])


def test_the_timeline_says_expired_and_steered_not_rejected_or_error() -> None:
    expired_review = _hitl(
        {
            "tool_name": "run_shell",
            "status": "decided",
            "decision": "reject",
            "expired": True,
            "message": "expired without a decision at unix time 1795385677",
        }
    )
    assert block_status(expired_review) == "expired"
    assert "expired" in block_title(expired_review).lower() and "reject" not in block_title(expired_review)
    tool = _tool({"name": "run_shell", "status": "error", "outcome": "rejected", "decision": "reject"}, ["i:hitl:c1"])
    blocks = {b.block_id: b for b in (tool, expired_review)}
    assert block_status(tool, blocks) == "expired"
    assert "rejected" not in block_title(tool, blocks)

    external = _hitl({"tool_name": "Bash", "status": "decided", "decision": "reject", "reviewer": "system:expiry"})
    assert block_status(external) == "expired"  # an integration's review names the expiry as its reviewer

    steered = _tool({"name": "write_file", "status": "error", "outcome": "steered", "decision": "steer"})
    assert block_status(steered) == "steered"
    colors = theme.current()
    assert colors.status_color("steered") not in (colors.danger, colors.ok)
    aborted = _tool({"name": "run_shell", "status": "error", "outcome": "aborted", "decision": "cancel"})
    assert block_status(aborted) == "aborted"
    assert colors.status_color("aborted") not in (colors.danger, colors.ok)
    failed = _tool({"name": "run_shell", "status": "error", "result": "exit 2"})
    assert block_status(failed) == "error"


def test_a_hook_requests_review_in_the_timeline_names_its_command() -> None:
    """A coding agent's hook run has no tool blocks, only its reviews: each read "Waiting for review: Bash", and a
    run of forty such rows could not be told apart without opening each one."""
    arguments = {"command": "grep -r PRIVATE ~", "description": "Search for private keys"}
    waiting = _hitl({"tool_name": "Bash", "arguments": arguments, "status": "pending"}, parent=None)
    assert block_title(waiting) == "Waiting for review: Bash  grep -r PRIVATE ~"
    decided = {"tool_name": "Bash", "arguments": arguments, "status": "decided", "decision": "reject"}
    assert block_title(_hitl(decided, parent=None)).startswith("Reviewed: Bash  grep -r PRIVATE ~ → ")
    assert block_title(_hitl(decided)).startswith("Reviewed: Bash → ")  # its tool block above already says it


def test_a_hook_review_that_expired_reads_as_expired() -> None:
    """A hook's request that nobody decided is patched with the decision ``expire`` and no reviewer: the timeline
    said "Reviewed: Bash → expired", as if someone had reviewed it."""
    expired = _hitl({"tool_name": "Bash", "status": "expired", "decision": "expire"}, parent=None)
    assert block_status(expired) == "expired"
    assert block_title(expired) == "Expired: Bash (nobody decided in time)"


def test_the_timeline_model_shows_the_expired_chip_on_the_tool(qtmodeltester: Any) -> None:
    from reviewer_app.domain.timeline import BlockEvent, BlockOp
    from reviewer_app.ui.detail.timeline import STATUS_ROLE

    def event(seq: int, block_id: str, kind: BlockKind, op: BlockOp, data: dict[str, Any], parent: str | None = None):
        return BlockEvent(
            block_id=block_id,
            kind=kind,
            op=op,
            data=data,
            session_id="s",
            invocation_id="i",
            ts_ms=1000 + seq,
            seq=seq,
            parent_id=parent,
        )

    model = TimelineModel()
    qtmodeltester.check(model)
    model.set_events(
        "i",
        [
            event(1, "i:tool:c1", BlockKind.TOOL_USE, BlockOp.APPLY, {"name": "run_shell", "status": "pending"}),
            event(2, "i:hitl:c1", BlockKind.HITL, BlockOp.APPLY, {"tool_name": "run_shell"}, "i:tool:c1"),
        ],
    )
    model.append_events(
        [
            event(
                3,
                "i:hitl:c1",
                BlockKind.HITL,
                BlockOp.PATCH,
                {"status": "decided", "decision": "reject", "expired": True},
            ),
            event(4, "i:tool:c1", BlockKind.TOOL_USE, BlockOp.PATCH, {"status": "error", "outcome": "rejected"}),
        ]
    )
    tool = model.index(0, 0)
    assert tool.data(STATUS_ROLE) == "expired"
    review = model.index(1, 0, tool)  # the detail row comes first, then the review block
    assert review.data(STATUS_ROLE) == "expired"


def _run(run_id: str, state: str, **extra: Any) -> RunRecord:
    return RunRecord(
        id=run_id,
        session_id="s",
        agent="demo",
        prompt=f"prompt of {run_id}",
        state=state,
        parent_id=None,
        external=False,
        owner=None,
        error=None,
        created_at=1_700_000_000,
        started_at=None,
        finished_at=None,
        updated_at_ms=0,
        active_ms=0,
        **extra,
    )


def test_runs_that_ended_after_an_expiry_or_an_abort_are_not_done(qtmodeltester: Any) -> None:
    model = RunsModel()
    qtmodeltester.check(model)
    model.set_runs(
        [
            _run("inv_ok", "done"),
            _run("inv_expired", "done", expired=1),
            _run("inv_aborted", "done", aborted=2),
        ]
    )
    titles = {}
    for row in range(model.rowCount()):
        group = model.index(row, 0)
        for child in range(model.rowCount(group)):
            titles[model.index(child, 0, group).data(Qt.ItemDataRole.UserRole + 1)] = (
                group.data(),
                group.data(Qt.ItemDataRole.ForegroundRole),
            )
    colors = theme.current()
    assert titles["inv_ok"][0].startswith("Done") and titles["inv_ok"][1] == colors.ok
    assert titles["inv_expired"][0].startswith("Expired") and titles["inv_expired"][1] != colors.ok
    assert titles["inv_aborted"][0].startswith("Aborted") and titles["inv_aborted"][1] != colors.ok
    # A later change moves the run out of Done.
    model.apply_changes([_run("inv_ok", "done", expired=1)])
    group_of_ok = model.index_for("inv_ok").parent()
    assert group_of_ok.data().startswith("Expired")


def test_the_store_counts_a_runs_expired_and_cancelled_requests(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    backend = qt_backend

    def make(tx: Any) -> None:
        tx.runs.ensure_session("s1", agent="demo")
        tx.runs.ensure("inv_1", "s1", agent="demo", prompt="p")

    run_async(qtbot, backend.write(make))
    for n in range(3):
        run_async(
            qtbot,
            backend.create(
                hitl_id=f"r{n}",
                hitl_type="tool_approval",
                session_id="s1",
                invocation_id="inv_1",
                tool_name="run_shell",
                data={"arguments": {"command": "true"}},
                expires_at=100 if n == 0 else None,
            ),
        )
    run_async(qtbot, backend.expire_due(now=200))
    run_async(qtbot, backend.cancel("r1"))
    run = run_async(qtbot, backend.get_run("inv_1"))
    assert (run.expired, run.aborted, run.pending) == (1, 1, 1)


# -- 3. the runs tab: confirmed cancel bound to its run, keys, honest Retry, an empty state ---------------------


def _waiting_runs(window: MainWindow, runtime: Runtime, qtbot: Any, count: int) -> list[str]:
    runs = [start(qtbot, runtime, WRITE, prompt=f"job number {n}") for n in range(count)]
    qtbot.waitUntil(lambda: window.runs.model.count(RunState.WAITING) == count, timeout=10_000)
    return runs


def test_double_clicking_cancel_cancels_one_run_after_a_confirmation_naming_it(
    window: MainWindow, runtime: Runtime, qtbot: Any
) -> None:
    _waiting_runs(window, runtime, qtbot, 2)
    window.show_tab(1)
    waiting = window.runs.model.index(0, 0)
    window.runs.view.setCurrentIndex(window.runs.model.index(0, 0, waiting))
    first = window.runs.selected_run()
    assert first is not None
    qtbot.mouseClick(window.runs.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(window.runs.cancel_button, Qt.MouseButton.LeftButton)
    confirm = dialog_of(qtbot, window, QMessageBox)
    assert len([d for d in window.dialogs.open_dialogs if isinstance(d, QMessageBox)]) == 1
    assert first.id in confirm.text() and (first.prompt or "") in confirm.text()
    window.runs.view.setCurrentIndex(window.runs.model.index(1, 0, waiting))  # the selection moves meanwhile
    confirm.button(QMessageBox.StandardButton.Yes).click()
    qtbot.waitUntil(lambda: window.runs.model.count(RunState.CANCELLED) == 1, timeout=10_000)
    assert window.runs.model.run(first.id).state == "cancelled"
    qtbot.wait(200)
    assert window.runs.model.count(RunState.WAITING) == 1  # the other run is untouched
    # Its request was withdrawn with it: said as a cancellation, not as somebody else's decision.
    qtbot.waitUntil(lambda: any(n.startswith("Cancelled:") for n in window.decisions.notices))
    assert not any("elsewhere" in n for n in window.decisions.notices)


def test_empty_run_groups_are_hidden_and_titles_span_the_row(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    _waiting_runs(window, runtime, qtbot, 1)
    window.show_tab(1)
    model, view = window.runs.model, window.runs.view
    rows = {model.index(r, 0).data(Qt.ItemDataRole.UserRole + 2): r for r in range(model.rowCount())}
    root = model.index(0, 0).parent()
    # The board tidies its groups once per burst of changes (the next turn of the event loop), not per row.
    qtbot.waitUntil(lambda: view.isRowHidden(rows["running"], root))
    assert not view.isRowHidden(rows["waiting"], root)
    assert view.isFirstColumnSpanned(rows["waiting"], root)


def test_declining_the_confirmation_cancels_nothing(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    _waiting_runs(window, runtime, qtbot, 1)
    window.show_tab(1)
    window.runs.view.setCurrentIndex(window.runs.model.index(0, 0, window.runs.model.index(0, 0)))
    qtbot.keyClick(window.runs.view, Qt.Key.Key_Delete)  # the Cancel run key
    confirm = dialog_of(qtbot, window, QMessageBox)
    confirm.button(QMessageBox.StandardButton.No).click()
    qtbot.waitUntil(lambda: not window.dialogs.open_dialogs)
    qtbot.wait(200)
    assert window.runs.model.count(RunState.WAITING) == 1


def test_j_and_k_go_from_run_to_run_over_the_group_rows(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    _waiting_runs(window, runtime, qtbot, 1)
    cancelled = start(qtbot, runtime, WRITE, prompt="to be cancelled")
    qtbot.waitUntil(lambda: window.runs.model.count(RunState.WAITING) == 2, timeout=10_000)
    run_async(qtbot, runtime.cancel_run(cancelled))
    qtbot.waitUntil(lambda: window.runs.model.count(RunState.CANCELLED) == 1, timeout=10_000)
    window.show_tab(1)
    window.runs.view.setCurrentIndex(window.runs.model.index(0, 0, window.runs.model.index(0, 0)))
    qtbot.keyClick(window.runs.view, Qt.Key.Key_J)
    qtbot.waitUntil(lambda: window.runs.selected_run() is not None and window.runs.selected_run().id == cancelled)
    qtbot.keyClick(window.runs.view, Qt.Key.Key_K)
    qtbot.waitUntil(lambda: window.runs.selected_run() is not None and window.runs.selected_run().state == "waiting")


def test_run_actions_are_described_keyed_actions(window: MainWindow) -> None:
    runs = window.runs
    actions = {a.text().replace("&", ""): a for a in window.findChildren(QAction)}
    for text in ("Cancel run…", "Retry run", "Abort interrupted calls", "Follow up…"):
        assert text in actions, text
        assert not actions[text].shortcut().isEmpty(), text
    assert runs.cancel_action.shortcut().toString() in runs.cancel_button.toolTip()


def test_retry_is_enabled_only_where_the_runtime_accepts_it(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    def make(tx: Any) -> None:
        tx.runs.ensure_session("ext-s", agent="claude", external=True)
        tx.runs.ensure("inv_external", "ext-s", agent="claude", prompt="external job", external=True)
        tx.runs.set_state("inv_external", RunState.FAILED, error="boom")

    run_async(qtbot, window.backend.write(make))
    window.show_tab(1)
    qtbot.waitUntil(lambda: window.runs.model.run("inv_external") is not None, timeout=5_000)
    window.runs.view.setCurrentIndex(window.runs.model.index_for("inv_external"))
    refusal = run_async(qtbot, runtime.retry_refusal("inv_external"))
    assert refusal is not None and "checkpoint" in refusal
    qtbot.waitUntil(lambda: refusal in window.runs.retry_button.toolTip(), timeout=5_000)
    assert not window.runs.retry_button.isEnabled() and not window.runs.retry_action.isEnabled()
    try:
        run_async(qtbot, runtime.retry_run("inv_external"))
    except ValueError as exc:
        assert str(exc) == refusal  # the same words: one predicate
    else:
        raise AssertionError("retry_run accepted a run the button said it would refuse")


def test_no_run_selected_shows_an_empty_state_not_an_arguments_editor(window: MainWindow, qtbot: Any) -> None:
    window.show_tab(1)
    qtbot.waitUntil(window.detail.empty_label.isVisible)
    assert not window.detail.tabs.isVisible()
    assert not window.detail.decision_bar.isVisible()
    assert "run" in window.detail.empty_label.text().lower()


# -- 4. decided elsewhere while read or while a dialog is open -------------------------------------------------


def test_a_dialog_closes_when_someone_else_decides_and_says_who_and_when(
    window: MainWindow, runtime: Runtime, qtbot: Any, db_path: Path
) -> None:
    start(qtbot, runtime, WRITE)
    hitl_id = wait_for_request(qtbot, window, "write_file")
    press(qtbot, window, Qt.Key.Key_R)
    dialog = dialog_of(qtbot, window, RejectDialog)
    other = SQLHITLBackend(db_path, reviewer="alice")
    try:
        run_async(qtbot, other.decide(hitl_id, Decision(DecisionKind.REJECT, message="mine")))
    finally:
        other.close()
    qtbot.waitUntil(lambda: dialog not in window.dialogs.open_dialogs, timeout=5_000)
    qtbot.waitUntil(window.banner.isVisible)
    text = window.banner.label.text()
    assert "alice" in text and "unix time" not in text
    assert re.search(r"\d\d:\d\d:\d\d", text)
    assert "not sent" in text


def test_a_conflict_on_submit_says_the_time_in_human_terms(
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
    qtbot.waitUntil(lambda: window.banner.isVisible() and "alice" in window.banner.label.text())
    assert "unix time" not in window.banner.label.text()
    assert re.search(r"\d\d:\d\d:\d\d", window.banner.label.text())


def test_a_request_decided_elsewhere_does_not_vanish_without_a_word(
    window: MainWindow, qtbot: Any, db_path: Path
) -> None:
    create_external(window.backend, qtbot, "first", "make build")
    create_external(window.backend, qtbot, "second", "make deploy")
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 2, timeout=5_000)
    other = SQLHITLBackend(db_path, reviewer="bob")
    try:
        run_async(qtbot, other.decide("second", Decision(DecisionKind.REJECT, message="no")))
    finally:
        other.close()
    qtbot.waitUntil(lambda: window.inbox.model.visible_count == 1, timeout=5_000)
    qtbot.waitUntil(lambda: "bob" in window.statusBar().currentMessage())
    assert "make deploy" in window.statusBar().currentMessage()


def test_decisions_made_here_are_not_announced_as_made_elsewhere(
    window: MainWindow, runtime: Runtime, qtbot: Any
) -> None:
    invocation_id = start(qtbot, runtime, SHELL)
    wait_for_request(qtbot, window, "run_shell")
    press(qtbot, window, Qt.Key.Key_A)
    finish(qtbot, runtime, invocation_id)
    qtbot.wait(300)
    assert not any("elsewhere" in text or "tester" in text for text in window.decisions.notices)


# -- 5. editing long strings, a diff preview, canned reject reasons ---------------------------------------------


def test_edit_diff_shows_string_fields_line_by_line() -> None:
    text = edit_diff({"path": "a.txt", "content": "one\ntwo\n"}, {"path": "a.txt", "content": "one\nTWO\n"})
    assert "-two" in text and "+TWO" in text
    assert "\\n" not in text
    assert "path" not in text.replace("content", "")  # unchanged fields are not in the diff
    assert edit_diff({"a": 1}, {"a": 1}) == ""
    one_line = edit_diff({"command": "ls"}, {"command": "ls -la"})
    assert "-ls\n+ls -la\n" in one_line and "No newline" not in one_line
    assert "No newline" in edit_diff({"command": "ls"}, {"command": "ls\n"})  # an added newline is shown
    added = edit_diff({"a": 1}, {"a": 1, "b": [1, 2]})
    assert "+" in added and "b" in added


def test_edit_string_fields_in_a_text_editor_and_preview_the_diff(
    window: MainWindow, runtime: Runtime, qtbot: Any
) -> None:
    invocation_id = start(qtbot, runtime, WRITE)
    hitl_id = wait_for_request(qtbot, window, "write_file")
    press(qtbot, window, Qt.Key.Key_E)
    dialog = dialog_of(qtbot, window, EditArgumentsDialog)
    content = dialog.field_editor("content")
    assert isinstance(content, QPlainTextEdit)
    assert content.toPlainText() == "hello\n"  # the real text, not an escaped JSON string
    content.setPlainText("hello\nsecond line\n")
    qtbot.waitUntil(dialog.ok_button.isEnabled)
    qtbot.keyClick(content, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert dialog.isVisible() and dialog.previewing  # first the diff, nothing sent yet
    assert "+second line" in dialog.diff_view.toPlainText()
    assert run_async(qtbot, window.backend.get(hitl_id))["status"] == "pending"
    qtbot.keyClick(dialog.diff_view, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    record = finish(qtbot, runtime, invocation_id)
    assert (Path(record.workspace) / "a.txt").read_text() == "hello\nsecond line\n"
    decided = run_async(qtbot, window.backend.get(hitl_id))
    assert decided["user_response"]["args"] == {"path": "a.txt", "content": "hello\nsecond line\n"}


def test_the_json_tab_and_the_fields_agree(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    start(qtbot, runtime, WRITE)
    wait_for_request(qtbot, window, "write_file")
    press(qtbot, window, Qt.Key.Key_E)
    dialog = dialog_of(qtbot, window, EditArgumentsDialog)
    dialog.field_editor("path").setPlainText("b.txt")
    dialog.show_json()
    assert json.loads(dialog.editor.toPlainText()) == {"path": "b.txt", "content": "hello\n"}
    dialog.editor.setPlainText('{"path": "c.txt", "content": "x\\ny\\n"}')
    dialog.show_fields()
    assert dialog.field_editor("path").toPlainText() == "c.txt"
    assert dialog.field_editor("content").toPlainText() == "x\ny\n"


def test_reject_with_a_canned_reason_by_number_and_recent_reasons_come_back(
    window: MainWindow, runtime: Runtime, qtbot: Any
) -> None:
    first_run = start(qtbot, runtime, WRITE, prompt="first")
    hitl_id = wait_for_request(qtbot, window, "write_file")
    press(qtbot, window, Qt.Key.Key_R)
    dialog = dialog_of(qtbot, window, RejectDialog)
    qtbot.keyClick(dialog.reasons, Qt.Key.Key_2)
    assert dialog.editor.toPlainText() == CANNED_REJECT_REASONS[1]
    qtbot.keyClick(dialog.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    finish(qtbot, runtime, first_run)
    assert run_async(qtbot, window.backend.get(hitl_id))["user_response"]["message"] == CANNED_REJECT_REASONS[1]

    seen = {hitl_id}

    def next_request_shown() -> bool:
        shown = window.detail.hitl_id
        return shown is not None and shown not in seen and window.detail.decidable()

    second_run = start(qtbot, runtime, WRITE, prompt="second")
    qtbot.waitUntil(next_request_shown, timeout=10_000)
    seen.add(window.detail.hitl_id)
    refocus(qtbot, window)
    press(qtbot, window, Qt.Key.Key_R)
    dialog = dialog_of(qtbot, window, RejectDialog)
    qtbot.keyClicks(dialog.editor, "use the staging bucket")
    qtbot.keyClick(dialog.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    finish(qtbot, runtime, second_run)

    start(qtbot, runtime, WRITE, prompt="third")
    qtbot.waitUntil(next_request_shown, timeout=10_000)
    refocus(qtbot, window)
    press(qtbot, window, Qt.Key.Key_R)
    dialog = dialog_of(qtbot, window, RejectDialog)
    assert dialog.reason_texts()[len(CANNED_REJECT_REASONS)] == "use the staging bucket"  # recent ones after 1-5
    assert dialog.reason_texts().count(CANNED_REJECT_REASONS[1]) == 1


# -- 6. the clipboard ------------------------------------------------------------------------------------------


def test_copy_id_command_and_arguments(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    start(qtbot, runtime, SHELL)
    hitl_id = wait_for_request(qtbot, window, "run_shell")
    clipboard = QApplication.clipboard()
    detail = window.detail
    detail.copy_id_action.trigger()
    assert clipboard.text() == hitl_id
    assert detail.copy_command_action.isEnabled()
    detail.copy_command_action.trigger()
    assert clipboard.text() == "ls -la /tmp"
    assert window.statusBar().currentMessage() == "Copied the command: ls -la /tmp"
    detail.copy_args_action.trigger()
    assert json.loads(clipboard.text()) == {"command": "ls -la /tmp"}
    for action in (detail.copy_id_action, detail.copy_command_action, detail.copy_args_action):
        assert action in detail.header.actions()  # the header's context menu
        assert action.text()


def test_copy_command_is_off_for_calls_without_one(window: MainWindow, runtime: Runtime, qtbot: Any) -> None:
    start(qtbot, runtime, WRITE)
    wait_for_request(qtbot, window, "write_file")
    assert not window.detail.copy_command_action.isEnabled()
    assert window.detail.copy_args_action.isEnabled()


def test_return_in_a_one_line_field_is_not_a_newline_and_never_approves_from_the_preview(
    window: MainWindow, runtime: Runtime, qtbot: Any
) -> None:
    start(qtbot, runtime, SHELL)
    hitl_id = wait_for_request(qtbot, window, "run_shell")
    press(qtbot, window, Qt.Key.Key_E)
    dialog = dialog_of(qtbot, window, EditArgumentsDialog)
    command = dialog.field_editor("command")
    command.moveCursor(command.textCursor().MoveOperation.End)
    qtbot.keyClicks(command, " -h")
    qtbot.keyClick(command, Qt.Key.Key_Return)  # at once, before the typing is validated: the preview, not a newline
    assert command.toPlainText() == "ls -la /tmp -h"
    qtbot.waitUntil(lambda: dialog.previewing)
    qtbot.keyClick(dialog.diff_view, Qt.Key.Key_Return)  # a stray Return does not approve
    qtbot.wait(100)
    assert dialog.isVisible()
    assert run_async(qtbot, window.backend.get(hitl_id))["status"] == "pending"


def test_settled_requests_are_said_in_sentences_with_human_time() -> None:
    from reviewer_app.ui.detail.settled import conflict_phrase, describe_request, settled_phrase
    from tests.ui.conftest import make_summary

    now = time.time()
    rejected = make_summary(1, status="decided", decision="reject", decided_by="alice", summary="make deploy")
    rejected = dataclasses.replace(rejected, updated_at_ms=int((now - 5) * 1000))
    said = settled_phrase(rejected, now)
    assert said.startswith("was rejected by alice at ") and said.endswith("(5s ago)")
    assert describe_request(rejected) == "run_shell “make deploy”"
    long = dataclasses.replace(rejected, summary="cd /p && git clean -fdx && git reset --hard origin/main && rm -rf /")
    assert describe_request(long).endswith("&& rm -rf /”")  # what was decided keeps its dangerous end
    # Seen triaging: "Answered: question “question: …QL 16 or 15?”": "question: " twice, the question cut.
    asked = make_summary(2, hitl_type="ask_user", tool=None, summary="question: Use PostgreSQL 16 or 15?")
    assert describe_request(asked) == "question “Use PostgreSQL 16 or 15?”"
    expired = dataclasses.replace(rejected, status="expired", decided_by="system:expiry")
    assert settled_phrase(expired, now).startswith("expired at ")
    assert "(so it was rejected)" in settled_phrase(expired, now)
    yesterday = dataclasses.replace(rejected, updated_at_ms=int((now - 86_400 * 2) * 1000))
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", settled_phrase(yesterday, now))
    record = {"hitl_id": "h", "status": "decided", "user_response": {"decision": "approve", "reviewer": "bob"}}
    conflict = conflict_phrase({**record, "responded_at": int(now) - 60}, now)
    assert conflict is not None and conflict.startswith("it was approved by bob at ") and "unix" not in conflict


def test_an_edit_that_keeps_the_headline_names_the_fields_it_changed() -> None:
    """Editing a WebFetch's prompt said 'WebFetch “url” (shown: u̶r̶l̶)': the same URL struck, the change unsaid."""
    from reviewer_app.ui.detail.settled import describe_edit
    from tests.ui.conftest import make_summary

    fetch = dataclasses.replace(make_summary(1), tool_name="WebFetch")
    shown = {"url": "https://docs.example.com/a", "prompt": "Summarize"}
    said = describe_edit(fetch, shown, {**shown, "prompt": "Only the login part"})
    assert said == "WebFetch “https://docs.example.com/a” (edited: prompt)"
    bash = dataclasses.replace(make_summary(2), tool_name="Bash")
    said = describe_edit(bash, {"command": "rm -rf build"}, {"command": "rm -r build/tmp"})
    assert said.startswith("Bash “rm -r build/tmp” (shown: ") and "\u0336" in said


def test_non_string_fields_are_json_and_a_bad_one_is_named(qtbot: Any) -> None:
    schema = {"type": "object", "properties": {"items": {"type": "array"}, "name": {"type": "string"}}}
    dialog = EditArgumentsDialog("tool", {"name": "x", "items": [1, 2]}, schema)
    qtbot.addWidget(dialog)
    items = dialog.field_editor("items")
    assert json.loads(items.toPlainText()) == [1, 2]
    items.setPlainText("[1,")
    assert not dialog.validate()
    assert "items: not valid JSON" in dialog.error_label.text()
    items.setPlainText('"not a list"')
    assert not dialog.validate()
    assert "items" in dialog.error_label.text() and "array" in dialog.error_label.text()
    items.setPlainText("[3]")
    assert dialog.validate()
    submitted: list[dict[str, Any]] = []
    dialog.submitted.connect(submitted.append)
    dialog.try_submit()
    assert dialog.previewing and submitted == []
    assert "--- items (JSON) (as shown)" in dialog.diff_view.toPlainText() and "+  3" in dialog.diff_view.toPlainText()
    dialog.back_to_editing()
    assert not dialog.previewing
    dialog.try_submit()
    dialog.try_submit()
    assert submitted == [{"name": "x", "items": [3]}]


def test_a_huge_edit_preview_is_cut_with_a_note(qtbot: Any) -> None:
    original = {"content": "".join(f"line {n}\n" for n in range(60_000))}
    dialog = EditArgumentsDialog("write_file", original, None)
    qtbot.addWidget(dialog)
    dialog.field_editor("content").setPlainText("".join(f"LINE {n}\n" for n in range(60_000)))
    assert dialog.validate()
    dialog.try_submit()
    text = dialog.diff_view.toPlainText()
    assert len(text) < 210_000 and "more diff lines not shown" in text


def test_a_run_whose_request_expired_end_to_end(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: Any, tmp_path: Path, qtbot: Any
) -> None:
    """The real runtime expires the request (its default: reject); the window says so everywhere."""
    from reviewer_app.domain.waivers import ApprovalPolicy
    from reviewer_app.runtime.agents import AgentCatalog
    from reviewer_app.ui.detail.timeline import STATUS_ROLE
    from tests.runtime.test_runner_support import agent

    catalog = AgentCatalog((agent("expiring", policy=ApprovalPolicy(expires_after_s=1)),))
    rt = Runtime(qt_backend, catalog, workspaces_dir=tmp_path / "workspaces", expiry_interval_s=0.2)
    run_async(qtbot, rt.start())
    win = open_main_window(rt, checked=lambda window: (window.runs.model,), loaded=False)
    try:
        invocation_id = run_async(qtbot, rt.start_run("expiring", "write it", script=WRITE))
        qtbot.waitUntil(lambda: win.detail.summary is not None, timeout=10_000)
        done = run_async(qtbot, rt.wait_for_run(invocation_id, timeout=15), timeout=20_000)
        assert done.state == "done"
        qtbot.waitUntil(lambda: any(n.startswith("Expired: write_file") for n in win.decisions.notices), timeout=10_000)
        qtbot.waitUntil(lambda: win.runs.model.count("expired") == 1, timeout=10_000)
        assert win.runs.model.count(RunState.DONE) == 0  # not under the green Done
        win.show_tab(1)
        win.runs.view.setCurrentIndex(win.runs.model.index_for(invocation_id))
        qtbot.waitUntil(lambda: win.detail.timeline_model.invocation_id == invocation_id)

        def tool_chip() -> str | None:
            model = win.detail.timeline_model
            for row in range(model.rowCount()):
                index = model.index(row, 0)
                if index.data(KIND_ROLE) == BlockKind.TOOL_USE.value:
                    return index.data(STATUS_ROLE)
            return None

        qtbot.waitUntil(lambda: tool_chip() == "expired", timeout=10_000)
    finally:
        win.close()
        run_async(qtbot, rt.stop())


def test_the_request_being_read_decided_elsewhere_is_said_in_the_banner(
    window: MainWindow, qtbot: Any, db_path: Path
) -> None:
    create_external(window.backend, qtbot, "reading", "terraform apply")
    qtbot.waitUntil(lambda: window.detail.hitl_id == "reading" and window.detail.decidable(), timeout=5_000)
    other = SQLHITLBackend(db_path, reviewer="carol")
    try:
        run_async(qtbot, other.decide("reading", Decision(DecisionKind.REJECT, message="not today")))
    finally:
        other.close()
    qtbot.waitUntil(lambda: window.banner.isVisible() and "carol" in window.banner.label.text(), timeout=5_000)
    text = window.banner.label.text()
    assert "terraform apply" in text and "was rejected by carol at " in text
    assert re.search(r"\d\d:\d\d:\d\d", text) and "unix time" not in text
