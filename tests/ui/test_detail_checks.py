"""The detail pane shows a request before its slow checks end (the secret scan, a write's diff), and stays safe.

Issue 29 item 6b: a request with 1 MB of arguments is on screen in a few tens of ms; the secret scan of its
arguments and a write's diff follow off the GUI thread. Meanwhile the risk chip says it is still checking, the
approval key asks for a second press (as for a high-risk call), and a late result never lands on another request.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.detail.prepared import PreparedRequest, RequestChecks, check_request
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.triage_helpers import call, shell, status

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"  # the documented example access key id: detect-secrets' AWS detector finds it


class HeldChecks:
    """The pane's real checks, held in their worker thread until the test lets them go."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started: list[str] = []
        self.finished: list[str] = []

    def __call__(self, prepared: PreparedRequest, *args: Any, **kwargs: Any) -> RequestChecks:
        hitl_id = str(prepared.record["hitl_id"])
        self.started.append(hitl_id)
        self.gate.wait(10)
        try:
            return check_request(prepared, *args, **kwargs)
        finally:
            self.finished.append(hitl_id)


@pytest.fixture
def window(triage_window: MainWindow) -> MainWindow:
    return triage_window


@pytest.fixture
def held(window: MainWindow) -> Iterator[HeldChecks]:
    checks = HeldChecks()
    window.detail.checker.check_request = checks
    yield checks
    checks.gate.set()


def shown(qtbot: Any, win: MainWindow, hitl_id: str) -> None:
    """Select ``hitl_id`` and wait until its arguments are on screen (its checks may still run)."""
    qtbot.waitUntil(lambda: win.inbox.model.index_for(hitl_id).isValid(), timeout=10_000)
    win.inbox.select_request(hitl_id)
    qtbot.waitUntil(lambda: win.detail.hitl_id == hitl_id and win.detail.decidable(), timeout=10_000)


def first_press_waits(qtbot: Any, win: MainWindow, backend: SQLHITLBackend, hitl_id: str) -> str:
    """Press ``a`` once in the inbox: the request stays pending; returns what the status bar says."""
    view = win.inbox.view
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_A)
    qtbot.wait(200)
    assert status(qtbot, backend, hitl_id)[0] == "pending"
    return win.statusBar().currentMessage()


def write(qtbot: Any, backend: SQLHITLBackend, hitl_id: str, content: str) -> str:
    """A write_file request of ``content`` to a file the workspace does not hold: a new file's diff."""
    return call(qtbot, backend, hitl_id, "write_file", {"path": "notes.txt", "content": content})


def test_the_chip_says_checking_until_the_scan_ends_then_shows_the_secret(
    window: MainWindow, qt_backend: SQLHITLBackend, held: HeldChecks, qtbot: Any
) -> None:
    hitl_id = shell(qtbot, qt_backend, "h1", f"aws configure set aws_access_key_id {AWS_KEY}")
    shown(qtbot, window, hitl_id)
    chip = window.detail.risk_chip
    assert AWS_KEY in window.detail.args_view.toPlainText()  # what an approval names is on screen
    assert chip.isVisible() and "checking" in chip.text().lower()
    assert "checking" in chip.accessibleName().lower()
    assert not window.detail.checked()
    held.gate.set()
    qtbot.waitUntil(window.detail.checked, timeout=10_000)
    assert "secret-looking value" in chip.text() and "checking" not in chip.text().lower()
    assert "MEDIUM RISK" in chip.text()
    assert window.triage.risks.risk(hitl_id) == window.detail.prepared.risk  # type: ignore[union-attr]


def test_approving_by_key_while_the_scan_runs_needs_the_key_twice(
    window: MainWindow, qt_backend: SQLHITLBackend, held: HeldChecks, qtbot: Any
) -> None:
    calm = shell(qtbot, qt_backend, "h1", "ls")
    shown(qtbot, window, calm)
    message = first_press_waits(qtbot, window, qt_backend, calm)  # the first press only says the scan still runs
    assert "still checking" in message.lower() and "press a again" in message
    qtbot.keyClick(window.inbox.view, Qt.Key.Key_A)
    qtbot.waitUntil(lambda: status(qtbot, qt_backend, calm)[:2] == ("completed", "approve"), timeout=10_000)


def test_high_risk_is_known_before_the_scan_ends(
    window: MainWindow, qt_backend: SQLHITLBackend, held: HeldChecks, qtbot: Any
) -> None:
    risky = shell(qtbot, qt_backend, "h1", "rm -rf build")
    shown(qtbot, window, risky)
    chip = window.detail.risk_chip
    assert "HIGH RISK" in chip.text() and "checking" in chip.text().lower()
    assert "HIGH RISK" in first_press_waits(qtbot, window, qt_backend, risky)


def test_a_late_scan_never_lands_on_the_next_request(
    window: MainWindow, qt_backend: SQLHITLBackend, held: HeldChecks, qtbot: Any
) -> None:
    secret = shell(qtbot, qt_backend, "h1", f"export AWS_ACCESS_KEY_ID={AWS_KEY}")
    calm = shell(qtbot, qt_backend, "h2", "ls")
    shown(qtbot, window, secret)
    shown(qtbot, window, calm)
    held.gate.set()
    qtbot.waitUntil(lambda: window.detail.checked() and len(held.finished) == 2, timeout=10_000)
    qtbot.wait(50)
    assert window.detail.hitl_id == calm
    assert "secret" not in window.detail.risk_chip.text()
    assert not window.detail.risk_chip.isVisible()  # ls: low risk, nothing to say
    assert window.detail.prepared is not None and window.detail.prepared.risk is not None
    assert window.detail.prepared.risk.level == "low"


def test_a_write_shows_its_arguments_first_then_its_diff(
    window: MainWindow, qt_backend: SQLHITLBackend, held: HeldChecks, qtbot: Any
) -> None:
    hitl_id = write(qtbot, qt_backend, "w1", "hello\n")
    shown(qtbot, window, hitl_id)
    detail = window.detail
    assert detail.tabs.currentWidget() is detail.args_panel  # the arguments are what is on screen
    assert "working out the diff" in detail.diff_view.toPlainText().lower()
    held.gate.set()
    qtbot.waitUntil(detail.checked, timeout=10_000)
    assert "+hello" in detail.diff_view.toPlainText()
    assert detail.tabs.currentWidget() is detail.diff_view


def test_a_request_checked_once_is_shown_checked_when_selected_again(
    window: MainWindow, qt_backend: SQLHITLBackend, qtbot: Any
) -> None:
    secret = shell(qtbot, qt_backend, "h1", f"export AWS_ACCESS_KEY_ID={AWS_KEY}")
    calm = shell(qtbot, qt_backend, "h2", "ls")
    shown(qtbot, window, secret)
    qtbot.waitUntil(window.detail.checked, timeout=10_000)
    shown(qtbot, window, calm)
    qtbot.waitUntil(window.detail.checked, timeout=10_000)
    held = HeldChecks()  # from now on a scan would hang until the test ends: the cache must answer
    window.detail.checker.check_request = held
    try:
        shown(qtbot, window, secret)
        assert window.detail.checked()
        assert "secret-looking value" in window.detail.risk_chip.text()
        assert held.started == []
    finally:
        held.gate.set()
