"""``reviewer-app run`` as a real process: a FIFO does not hang it, and SIGTERM ends it while a tool is blocked."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reviewer_app.cli.errors import EXIT_INTERRUPTED
from reviewer_app.persistence.store import Store

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals and FIFOs")

AGENTS = """
[agents.blocker]
system_prompt = "test"
tools = ["read_file", "run_shell"]
model = { type = "scripted", script = [] }
[agents.blocker.policy]
ungated = ["run_shell"]
"""


def tool_events(store: Store, invocation_id: str, name: str) -> list[dict[str, object]]:
    calls = {
        e.block_id
        for e in store.timeline.of_run(invocation_id)
        if e.kind.value == "tool_use" and e.data.get("name") == name
    }
    return [e.data for e in store.timeline.of_run(invocation_id) if e.block_id in calls]


def wait_for(probe, timeout: float = 60.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError("condition not met")


def test_a_fifo_does_not_hang_the_run_and_sigterm_ends_it_while_a_tool_blocks(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    db = tmp_path / "reviews.db"
    agents = tmp_path / "agents.toml"
    agents.write_text(AGENTS)
    script = tmp_path / "script.json"
    script.write_text(
        json.dumps(
            [
                {"tool_calls": [{"name": "run_shell", "args": {"command": "mkfifo pipe"}}]},
                {"tool_calls": [{"name": "read_file", "args": {"path": "pipe"}}]},
                {"tool_calls": [{"name": "run_shell", "args": {"command": "sleep 600", "timeout_s": 3600}}]},
            ]
        )
    )
    store = Store.open(db)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reviewer_app",
            "run",
            "blocker",
            "go",
            "--db",
            str(db),
            "--agents",
            str(agents),
            "--workspaces",
            str(tmp_path / "ws"),
            "--script",
            str(script),
            "--quiet",
        ],
        env=subprocess_env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run = wait_for(store.runs.list)[0]
        # The FIFO read ends at once with an error and the run goes on to the next turn.
        read = wait_for(lambda: [d for d in tool_events(store, run.id, "read_file") if d.get("status") == "error"])
        assert "FIFO" in str(read[0]["result"])
        wait_for(lambda: len([d for d in tool_events(store, run.id, "run_shell") if d.get("status") == "running"]) == 2)
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        try:
            code = proc.wait(timeout=5)  # the requirement: gone within 5 s of SIGTERM
        except subprocess.TimeoutExpired:
            pytest.fail("reviewer-app run was still alive 5 s after SIGTERM")
        print(f"\nexited {time.monotonic() - signalled:.2f} s after SIGTERM")
        _, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert code == EXIT_INTERRUPTED, err
    assert "stopped by signal" in err
    after = store.runs.get(run.id)
    assert after is not None and after.owner is None  # released: a worker can take it over
    store.close()


def test_sigterm_ends_the_process_while_a_tool_thread_never_returns(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.helpers.blocking_tool_run", str(tmp_path / "r.db"), str(tmp_path / "ws")],
        env=subprocess_env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline().strip() == "tool blocked"
        proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        try:
            code = proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pytest.fail("the process was still alive 5 s after SIGTERM (waiting for the stuck tool thread)")
        print(f"\nexited {time.monotonic() - signalled:.2f} s after SIGTERM")
        _, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert code == EXIT_INTERRUPTED, err
    assert "stopped by signal" in err
