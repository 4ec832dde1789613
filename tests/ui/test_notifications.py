"""Actionable notifications (issue 19): Approve / Reject from a notification decide exactly the request shown,
by id and by the hash of its arguments (compare-and-set); a request decided or changed meanwhile is not decided.

The handler path runs everywhere; the end-to-end test sends through desktop-notifier to a real notification
server (dunst on a private DBus session bus) and presses the button over DBus, as the server would.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QWidget

from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.ui.decide.operation import DecisionOp
from reviewer_app.ui.desktop.notifications import NativeNotifier, NotificationActions, shown_request
from tests.helpers.x_server import xvfb
from tests.ui.conftest import OpenMainWindow, RecordingRuntime, run_async


async def pending(backend: SQLHITLBackend, hitl_id: str, arguments: dict[str, Any] | None = None) -> Any:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s",
        invocation_id="i",
        data={"arguments": arguments or {"command": f"echo {hitl_id}"}},
        metadata={"agent": "demo"},
        tool_name="run_shell",
    )
    rows = await backend.list_summaries(RequestQuery(statuses=("pending",)))
    return next(row for row in rows if row.hitl_id == hitl_id)


def test_approve_decides_exactly_the_request_shown(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, pending(qt_backend, "h1"))
    row = run_async(qtbot, pending(qt_backend, "h2"))
    shown = run_async(qtbot, shown_request(qt_backend, row))
    assert shown is not None and shown.hitl_id == "h2" and shown.title == "demo is blocked on you: run_shell"
    actions = NotificationActions(DecisionOp(qt_backend))
    with qtbot.waitSignal(actions.decided) as signal:
        assert run_async(qtbot, actions.approve(shown))
    assert signal.args == ["h2", "approve"]
    h1, h2 = run_async(qtbot, qt_backend.get("h1")), run_async(qtbot, qt_backend.get("h2"))
    assert h1 is not None and h1["status"] == "pending"
    assert h2 is not None and h2["status"] == "completed" and h2["user_response"]["decision"] == "approve"
    assert h2["user_response"]["reviewer"] == qt_backend.reviewer


def test_approve_of_a_request_decided_meanwhile_decides_nothing(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    row = run_async(qtbot, pending(qt_backend, "h1"))
    shown = run_async(qtbot, shown_request(qt_backend, row))
    assert shown is not None
    run_async(qtbot, qt_backend.respond("h1", {"decision": "reject", "message": "by the other reviewer"}))
    actions = NotificationActions(DecisionOp(qt_backend))
    with qtbot.waitSignal(actions.refused) as signal:
        assert not run_async(qtbot, actions.approve(shown))
    assert signal.args[0].startswith("Nothing was decided from the notification for demo is blocked on you")
    assert "Someone else decided first: it was rejected by tester at " in signal.args[0]
    record = run_async(qtbot, qt_backend.get("h1"))
    assert record is not None and record["user_response"]["decision"] == "reject"
    assert [e.decision for e in run_async(qtbot, qt_backend.audit("h1"))] == ["reject"]


def test_approve_after_the_arguments_changed_decides_nothing(
    qtbot: Any, qt_backend: SQLHITLBackend, db_path: Path
) -> None:
    row = run_async(qtbot, pending(qt_backend, "h1", {"command": "ls"}))
    shown = run_async(qtbot, shown_request(qt_backend, row))
    assert shown is not None
    import sqlite3

    raw = sqlite3.connect(db_path)  # another process rewrites what would run
    with raw:
        raw.execute("""UPDATE hitl_requests SET data = '{"arguments": {"command": "rm -rf /"}}' WHERE hitl_id = 'h1'""")
    raw.close()
    actions = NotificationActions(DecisionOp(qt_backend))
    with qtbot.waitSignal(actions.refused) as signal:
        assert not run_async(qtbot, actions.approve(shown))
    assert "Nothing was decided from the notification" in signal.args[0]
    record = run_async(qtbot, qt_backend.get("h1"))
    assert record is not None and record["status"] == "pending"


def test_reject_and_open(qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings) -> None:
    row = run_async(qtbot, pending(qt_backend, "h1"))
    owner = QWidget()
    qtbot.addWidget(owner)
    tasks: list[asyncio.Task[Any]] = []
    notifier = NativeNotifier(
        owner, DecisionOp(qt_backend), ui_settings, lambda coro: tasks.append(asyncio.ensure_future(coro))
    )
    shown = run_async(qtbot, shown_request(qt_backend, row))
    assert shown is not None
    with qtbot.waitSignal(notifier.actions.openRequested) as opened:
        notifier.press("open", shown)
    assert opened.args == ["h1"]
    with qtbot.waitSignal(notifier.actions.decided) as decided:
        notifier.press("reject", shown)
    assert decided.args == ["h1", "reject"]
    record = run_async(qtbot, qt_backend.get("h1"))
    assert record is not None and record["user_response"]["message"] == "rejected from a desktop notification"


def test_sound_setting(qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings) -> None:
    owner = QWidget()
    qtbot.addWidget(owner)
    notifier = NativeNotifier(owner, DecisionOp(qt_backend), ui_settings, lambda coro: None)
    assert notifier.sound_enabled
    notifier.set_sound_enabled(False)
    assert not NativeNotifier(owner, DecisionOp(qt_backend), ui_settings, lambda coro: None).sound_enabled


# -- end to end, with a real notification server ------------------------------------------------------------------


@pytest.fixture
def notification_server(tmp_path: Path) -> Any:
    """A private DBus session bus with dunst on it (dunst needs an X display: Xvfb).

    dunst's "context" command pipes a notification's actions to its ``dmenu`` program and invokes the line that
    program prints; here that program picks the line named in ``$REVIEWER_TEST_PICK``, as a person would in dmenu.
    """
    missing = [tool for tool in ("dbus-daemon", "dunst", "dunstctl", "Xvfb") if shutil.which(tool) is None]
    if missing:
        pytest.skip(
            f"no notification server to test against: {', '.join(missing)} not installed (apt: dbus, dunst, xvfb)"
        )
    picker = tmp_path / "pick-action.sh"
    picker.write_text('#!/bin/sh\ngrep -m1 "^#$(cat "$0.choice") "\n', encoding="utf-8")
    picker.chmod(0o755)
    config = tmp_path / "dunstrc"
    config.write_text(f"[global]\n    dmenu = {picker}\n", encoding="utf-8")
    with xvfb(screen="800x600x24", extra=()) as display:
        yield from _bus_and_dunst(display, config, picker)


def _bus_and_dunst(display: str, config: Path, picker: Path) -> Any:
    bus = subprocess.Popen(
        ["dbus-daemon", "--session", "--print-address=1", "--nofork"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert bus.stdout is not None
    address = bus.stdout.readline().strip()
    env = {**os.environ, "DISPLAY": display, "DBUS_SESSION_BUS_ADDRESS": address}
    time.sleep(0.5)
    dunst = subprocess.Popen(
        ["dunst", "-config", str(config)], env=env, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL
    )
    old = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    os.environ["DBUS_SESSION_BUS_ADDRESS"] = address
    try:
        yield NotificationServer(env, Path(f"{picker}.choice"))
    finally:
        if old is None:
            os.environ.pop("DBUS_SESSION_BUS_ADDRESS", None)
        else:
            os.environ["DBUS_SESSION_BUS_ADDRESS"] = old
        for process in (dunst, bus):
            process.terminate()
            process.wait(timeout=10)


class NotificationServer:
    def __init__(self, env: dict[str, str], choice: Path) -> None:
        self.env = env
        self._choice = choice

    def press(self, button: str) -> None:
        """Choose ``button`` in the newest notification's action menu, through dunst."""
        self._choice.write_text(button, encoding="utf-8")
        subprocess.run(["dunstctl", "context"], env=self.env, check=True, timeout=10)


def sent_notification(qtbot: Any, backend: SQLHITLBackend, settings: QSettings, row: Any) -> NativeNotifier:
    owner = QWidget()  # never shown, so never active: the notification goes out
    qtbot.addWidget(owner)
    tasks: list[asyncio.Task[Any]] = []
    notifier = NativeNotifier(
        owner, DecisionOp(backend), settings, lambda coro: tasks.append(asyncio.ensure_future(coro))
    )
    identifier = run_async(qtbot, notifier.send_for([row]))
    assert identifier is not None and notifier.available, "dunst refused the notification"
    assert notifier.shown[identifier].hitl_id == row.hitl_id
    from desktop_notifier import Capability

    assert notifier._capabilities is not None and Capability.BUTTONS in notifier._capabilities
    return notifier


def test_approve_pressed_in_the_notification_server_decides_that_request(
    qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings, notification_server: NotificationServer
) -> None:
    run_async(qtbot, pending(qt_backend, "h0"))
    row = run_async(qtbot, pending(qt_backend, "h1"))
    notifier = sent_notification(qtbot, qt_backend, ui_settings, row)
    with qtbot.waitSignal(notifier.actions.decided, timeout=15_000) as decided:
        notification_server.press("Approve")
    assert decided.args == ["h1", "approve"]
    h0, h1 = run_async(qtbot, qt_backend.get("h0")), run_async(qtbot, qt_backend.get("h1"))
    assert h0 is not None and h0["status"] == "pending"
    assert h1 is not None and h1["user_response"]["decision"] == "approve"


def test_approve_pressed_after_another_decision_decides_nothing(
    qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings, notification_server: NotificationServer
) -> None:
    row = run_async(qtbot, pending(qt_backend, "h1"))
    notifier = sent_notification(qtbot, qt_backend, ui_settings, row)
    run_async(qtbot, qt_backend.respond("h1", {"decision": "reject", "message": "decided in another window"}))
    with qtbot.waitSignal(notifier.actions.refused, timeout=15_000) as refused:
        notification_server.press("Approve")
    assert "Nothing was decided from the notification" in refused.args[0]
    record = run_async(qtbot, qt_backend.get("h1"))
    assert record is not None and record["user_response"]["decision"] == "reject"
    assert [entry.decision for entry in run_async(qtbot, qt_backend.audit("h1"))] == ["reject"]


def test_open_pressed_in_the_notification_server(
    qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings, notification_server: NotificationServer
) -> None:
    row = run_async(qtbot, pending(qt_backend, "h1"))
    notifier = sent_notification(qtbot, qt_backend, ui_settings, row)
    with qtbot.waitSignal(notifier.actions.openRequested, timeout=15_000) as opened:
        subprocess.run(["dunstctl", "action", "0"], env=notification_server.env, check=True, timeout=10)  # a click
    assert opened.args == ["h1"]
    record = run_async(qtbot, qt_backend.get("h1"))
    assert record is not None and record["status"] == "pending"


def test_a_notification_decides_through_the_runtime_when_the_window_has_one(
    open_main_window: OpenMainWindow, qtbot: Any, qt_backend: SQLHITLBackend, ui_settings: QSettings, tmp_path: Path
) -> None:
    """A run waiting in this process resumes at once from a notification's Approve, as from the window's key."""
    runtime = RecordingRuntime(qt_backend, AgentCatalog(), workspaces_dir=tmp_path / "workspaces")
    run_async(qtbot, runtime.start())
    try:
        script = [{"tool_calls": [{"name": "run_shell", "args": {"command": "echo from-a-notification"}}]}]
        invocation_id = run_async(qtbot, runtime.start_run("demo", "do it", script=script))
        window = open_main_window(runtime, show=False, loaded=False)
        qtbot.waitUntil(lambda: window.inbox.model.visible_count == 1, timeout=10_000)
        row = next(iter(window.inbox.model.requests_in_scope()))
        shown = run_async(qtbot, shown_request(qt_backend, row))
        assert shown is not None
        with qtbot.waitSignal(window.decided) as decided:
            window.native_notifier.press("approve", shown)
        assert decided.args == [row.hitl_id, "approve"]
        assert runtime.decided_here == [(row.hitl_id, "approve")]
        record = run_async(qtbot, runtime.wait_for_run(invocation_id, timeout=15), timeout=20_000)
        assert record.state == "done"
    finally:
        run_async(qtbot, runtime.stop())
