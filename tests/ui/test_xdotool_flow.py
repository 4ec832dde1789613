"""The real app under a real X server and window manager, driven by real key events (Xvfb + openbox + xdotool).

Offscreen tests deliver keys straight to a widget; here they go through X, the window manager's focus and Qt's
xcb plugin, as an operator's keyboard does: ``a`` approves, ``r 4 5 Ctrl+Enter`` rejects with stock reason 5 (the
flow that once sent "…first.5" to an agent).
Skipped where Xvfb, openbox or xdotool is not installed (``apt-get install xvfb openbox xdotool``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.dialogs.reasons import CANNED_REJECT_REASONS
from tests.helpers.x_server import xvfb

TOOLS = ("Xvfb", "openbox", "xdotool")
pytestmark = pytest.mark.skipif(
    any(shutil.which(tool) is None for tool in TOOLS), reason="needs Xvfb, openbox and xdotool"
)


def backend_call(db_path: Path, work: Any) -> Any:
    async def main() -> Any:
        async with SQLHITLBackend(db_path, reviewer="setup") as backend:
            return await work(backend)

    return asyncio.run(main())


def until(test: Any, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = test()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def windows_named(env: dict[str, str], pattern: str) -> list[str]:
    """Visible X windows whose title matches ``pattern`` (empty while there is none)."""
    search = ["xdotool", "search", "--onlyvisible", "--name", pattern]
    return subprocess.run(search, env=env, capture_output=True, text=True, check=False).stdout.split()


@pytest.fixture
def x_display(tmp_path: Path) -> Iterator[dict[str, str]]:
    with xvfb() as display:
        env = {**os.environ, "DISPLAY": display}
        probe = ["xdotool", "getmouselocation"]
        until(
            lambda: subprocess.run(probe, env=env, capture_output=True, check=False).returncode == 0,
            10,
            "the X server",
        )
        manager = subprocess.Popen(["openbox"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            yield env
        finally:
            manager.terminate()
            manager.wait(5)


def test_approve_and_reject_with_a_numbered_reason_by_real_keys(x_display: dict[str, str], tmp_path: Path) -> None:
    db_path = tmp_path / "flow.db"

    async def seed(backend: SQLHITLBackend) -> None:
        for hitl_id, command in (("x1", "git status"), ("x2", "make deploy")):
            await backend.create(
                hitl_id=hitl_id,
                hitl_type="tool_approval",
                session_id="s1",
                invocation_id="i1",
                tool_name="Bash",
                data={"arguments": {"command": command}, "agent": "claude-code"},
            )

    backend_call(db_path, seed)
    env = {
        **x_display,
        "QT_QPA_PLATFORM": "xcb",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),  # the shipped settings, never the user's
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
    }
    (tmp_path / "run").mkdir(mode=0o700)
    app = subprocess.Popen(
        [sys.executable, "-m", "reviewer_app", "--db", str(db_path), "--reviewer", "operator", "gui"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def xdotool(*args: str) -> str:
        return subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, check=True).stdout

    def status(hitl_id: str) -> tuple[str, str | None, str | None]:
        async def get(backend: SQLHITLBackend) -> Any:
            return await backend.get(hitl_id)

        record = backend_call(db_path, get)
        response = record["user_response"] or {}
        return record["status"], response.get("decision"), response.get("message")

    try:
        # The first screen paints the inbox before the main window takes its place (a new X window), so the window
        # is found by its title each time, never held by id.
        def activated() -> bool:
            found = windows_named(env, r"^Reviewer \(")
            activate = ["xdotool", "windowactivate", "--sync", *found[-1:]]
            return bool(found) and subprocess.run(activate, env=env, capture_output=True, check=False).returncode == 0

        until(activated, 30, "the window")
        until(lambda: windows_named(env, r"^Reviewer \(2 pending\)"), 15, "the inbox loaded")

        # Until its record is loaded a request cannot be decided ("Still loading…"), and nothing outside the window
        # says when it is: press ``a`` again until it took (a press before that decides nothing).
        def pressed(key: str, took: Any) -> bool:
            xdotool("key", "--clearmodifiers", key)
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline:
                if took():
                    return True
                time.sleep(0.1)
            return False

        until(lambda: pressed("a", lambda: status("x1")[0] == "completed"), 20, "the approval")
        assert status("x1")[:2] == ("completed", "approve") and status("x2")[0] == "pending"
        until(lambda: windows_named(env, r"^Reviewer \(1 pending\)"), 10, "the next request")
        until(lambda: pressed("r", lambda: windows_named(env, "^Reject$")), 20, "the reject dialog")
        time.sleep(0.3)  # activated by the window manager
        xdotool("key", "--clearmodifiers", "4")
        xdotool("key", "--clearmodifiers", "5")  # a change of mind: 5 replaces 4 (it was typed after it)
        xdotool("key", "--clearmodifiers", "ctrl+Return")
        until(lambda: status("x2")[0] == "completed", 15, "the rejection (after its undo grace period)")
        assert status("x2") == ("completed", "reject", CANNED_REJECT_REASONS[4])
    finally:
        app.terminate()
        try:
            app.wait(15)
        except subprocess.TimeoutExpired:
            app.kill()
