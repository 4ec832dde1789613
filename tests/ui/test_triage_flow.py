"""Triaging a queue top to bottom by keyboard (seen in the real window, 45 requests): a bulk decision leaves the
selection where the operator was, and a request decided a moment ago is not decided again by a bulk one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import QSettings, Qt

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.triage.bulk import BulkDialog
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import OpenMainWindow
from tests.ui.triage_helpers import call, dialog_of, shell, show, status, triage_models


@pytest.fixture
def window(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, ui_settings: QSettings, qtbot: Any
) -> Iterator[MainWindow]:
    win = open_main_window(checked=triage_models)
    win.triage.set_grace(30)  # decisions wait out their grace period (approvals too), as held ones do
    win.triage.set_hold_approvals(True)
    yield win
    win.close()


def three_runs(qtbot: Any, backend: SQLHITLBackend, window: MainWindow) -> dict[str, list[str]]:
    runs = {
        run: [shell(qtbot, backend, f"{run}{n}", f"echo {run}{n}", invocation=run) for n in range(2)] for run in "abc"
    }
    every = [hitl_id for ids in runs.values() for hitl_id in ids]
    qtbot.waitUntil(lambda: all(window.inbox.model.index_for(h).isValid() for h in every), timeout=10_000)
    return runs


def test_after_deciding_a_whole_run_the_next_run_is_shown(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """The selection jumped back to the top of the inbox: the shown request had left with the run before the next
    one was looked up."""
    runs = three_runs(qtbot, qt_backend, window)
    show(qtbot, window, runs["b"][1])
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_W, Qt.KeyboardModifier.ShiftModifier)
    dialog = dialog_of(qtbot, window, BulkDialog)
    qtbot.waitUntil(dialog.approve_button.isEnabled, timeout=10_000)
    dialog.approve_button.click()
    assert window.triage.undo.held_ids == set(runs["b"])
    assert window.detail.hitl_id == runs["c"][0]
    # The last run: the request before it.
    qtbot.waitUntil(lambda: not window.dialogs.open_dialogs)
    qtbot.waitUntil(lambda: window.detail.summary is not None and window.detail.summary.hitl_id == runs["c"][0])
    last = window.triage.bulk.decide_run()
    assert last is not None
    qtbot.waitUntil(last.approve_button.isEnabled, timeout=10_000)
    last.approve_button.click()
    assert window.detail.hitl_id == runs["a"][1]


def test_a_bulk_decision_leaves_out_a_request_decided_here_a_moment_ago(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen: a request just steered (its decision in its undo countdown) was listed again in the whole run's
    preview and approved with it; the approval then failed as "decided elsewhere"."""
    runs = three_runs(qtbot, qt_backend, window)
    show(qtbot, window, runs["b"][0])
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_R)
    qtbot.waitUntil(lambda: bool(window.dialogs.open_dialogs))
    reject = window.dialogs.open_dialogs[0]
    reject.editor.setPlainText("not this one")
    reject.try_submit()
    assert window.triage.undo.held_ids == {runs["b"][0]}
    assert window.detail.hitl_id == runs["b"][1]
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_W, Qt.KeyboardModifier.ShiftModifier)
    dialog = dialog_of(qtbot, window, BulkDialog)
    qtbot.waitUntil(dialog.approve_button.isEnabled, timeout=10_000)
    assert dialog.model.hitl_ids() == [runs["b"][1]]
    assert "1 request." in dialog.explanation.text()
    dialog.approve_button.click()
    assert window.triage.undo.held_ids == set(runs["b"])
    window.triage.undo.flush()
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, runs["b"][1])[:2] == ("completed", "approve"), timeout=10_000)
    assert status(qtbot, qt_backend, runs["b"][0])[:2] == ("completed", "reject")


def test_the_undo_countdown_leaves_room_for_the_status_message(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen at 1024 px: a held decision on a long command filled the status bar, and the message beside it (the
    previous decision, committed) was cut to "Answere"."""
    command = "python scripts/migrate.py --from-snapshot " + "very/long/path/segment/" * 8 + "end.json"
    first = shell(qtbot, qt_backend, "h1", command)
    shell(qtbot, qt_backend, "h2", "git status")
    window.resize(1024, 640)
    show(qtbot, window, first)
    window.inbox.view.setFocus()
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_A)
    bar = window.triage.undo_bar
    assert bar.isVisible()
    text = bar.label.text()
    assert text.startswith("Approved: ") and text.endswith("commits in 30 s"), text
    wide = bar.sizeHint().width()  # no message: the bar takes the room
    message = "Answered: question “Which?”"  # the decision before, committed
    window.statusBar().showMessage(message)
    qtbot.waitUntil(lambda: window.fontMetrics().horizontalAdvance(message) <= message_room(window))
    assert bar.sizeHint().width() < wide
    text = bar.label.text()
    assert text.startswith("Approved: ") and text.endswith("commits in 30 s"), text
    assert bar.label.toolTip().startswith("Approved: Bash") and len(bar.label.toolTip()) > len(text)  # all of it


def test_a_held_edit_says_what_was_decided_and_on_what_first_and_a_narrow_bar_cuts_only_the_tail(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen at 1024 px: the countdown of an edit read "Edited and approved: write_file…ited: content) · commits in
    5 s": cut in the middle of the line, the file it writes was gone and the tail naming the changed field stayed."""
    long_path = "/work/proj/services/billing/src/invoices/render_monthly_statement.py"
    edits = {"h1": long_path, "h2": "src/a.py"}
    for hitl_id, path in edits.items():
        call(qtbot, qt_backend, hitl_id, "write_file", {"path": path, "content": "old"})
    shell(qtbot, qt_backend, "h3", "git status")
    window.resize(1024, 640)
    bar = window.triage.undo_bar
    for hitl_id, path in edits.items():
        show(qtbot, window, hitl_id)
        edited = {"path": path, "content": "new"}
        digest = window.detail.prepared.digest
        window.decisions.send_decision(hitl_id, Decision(DecisionKind.EDIT, edited_args=edited, args_sha256=digest))
        assert bar.isVisible()
        text = bar.label.text()
        assert text.startswith(f"Edited and approved: write_file “{path[:2]}") and text.endswith(" · commits in 30 s")
        said = bar.label.toolTip()  # all of it
        assert said.startswith("Edited and approved: write_file “") and ".py” (edited: content)" in said, said
        assert bar.sizeHint().width() + window.db_label.sizeHint().width() <= window.width()
        if path == long_path:  # cut inside the call, which keeps both of its ends
            assert "(edited: content)" not in text, text  # the detail is the tail: what a narrow bar cuts first
            assert "“/w" in text and "…" in text and "ment.py” · commits in 30 s" in text, text
            window.triage.undo.undo_last()
        else:  # whole
            assert text.startswith("Edited and approved: write_file “src/a.py” ("), text
    window.resize(1920, 1080)  # room for all of it: nothing is cut
    bar.refresh()
    assert bar.label.text() == bar.label.toolTip()


def message_room(window: MainWindow) -> int:
    """The px the status bar leaves its message: up to its first permanent widget, less a margin each side."""
    permanent = [window.triage.undo_bar, window.db_label]
    return min(widget.geometry().left() for widget in permanent if widget.isVisible()) - 2 * 6


def test_a_held_decision_on_a_long_path_keeps_its_file_name_and_the_message_beside_it_whole(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    """Seen at 1,024 px: "Edited and approved: Edit “/ho…tatement.py” · commits in 5 s". The bar kept half the
    window for a status message that was not there, and cut the path anywhere. It takes the room the message leaves
    and cuts a path at its slashes, keeping the file name; a message shown later keeps its room."""
    long_path = "/home/dev/shop-api/src/shop_api/orders/repository/render_monthly_statement.py"
    call(qtbot, qt_backend, "h1", "write_file", {"path": long_path, "content": "old"})
    shell(qtbot, qt_backend, "h2", "git status")
    window.resize(1024, 640)
    qtbot.waitUntil(lambda: window.width() == 1024)
    show(qtbot, window, "h1")
    window.statusBar().clearMessage()
    edited = {"path": long_path, "content": "new"}
    digest = window.detail.prepared.digest
    window.decisions.send_decision("h1", Decision(DecisionKind.EDIT, edited_args=edited, args_sha256=digest))
    window.statusBar().clearMessage()
    bar = window.triage.undo_bar
    qtbot.waitUntil(bar.isVisible)
    text = bar.label.text()
    assert text.startswith("Edited and approved: write_file “/home/") and text.endswith(" · commits in 30 s"), text
    assert "/repository/render_monthly_statement.py”" in text, text  # the file and its folder, whole
    assert "…/" in text, text  # cut at a slash
    message = "Rejected: Bash “git status”"
    window.statusBar().showMessage(message)
    qtbot.waitUntil(lambda: window.fontMetrics().horizontalAdvance(message) <= message_room(window))
    assert "statement.py” · commits in " in bar.label.text(), bar.label.text()  # less room: still the call's end


def test_the_database_label_gives_up_its_middle_in_a_narrow_window(window: MainWindow, qtbot: Any) -> None:
    """Seen at 1,024 px: a long database path in the status bar (half of it in a test's temporary directory) left a
    held decision's countdown a few characters of its call. The label keeps its start and its end (the reviewer) in a
    quarter of the window; the tooltip has all of it."""
    label = window.db_label
    whole = label.toolTip()
    assert whole.endswith(f" · reviewer {window.backend.reviewer}") and str(window.backend.database_url) != ""
    window.resize(1024, 640)
    qtbot.waitUntil(lambda: window.width() == 1024)
    assert label.sizeHint().width() <= 1024 // 4, label.text()
    assert "…" in label.text() and label.text().endswith(f"reviewer {window.backend.reviewer}"), label.text()
    window.resize(1920, 1080)
    qtbot.waitUntil(lambda: window.width() == 1920)
    assert label.text() == whole or label.sizeHint().width() <= 1920 // 4
