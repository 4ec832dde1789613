"""Crash safety with real processes: ``reviewer-app run`` is SIGKILLed, decisions come from
``reviewer-app decide``, and ``reviewer-app worker`` finishes the job exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from reviewer_app.domain.timeline import BlockKind, fold_events
from reviewer_app.persistence.store import Store

REPO_ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]


def cli(env: dict[str, str], *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reviewer_app", *args],
        env=env,
        cwd=REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_run(env: dict[str, str], db: Path, ws: Path, script: Path, prompt: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "reviewer_app",
            "run",
            "demo",
            prompt,
            "--db",
            str(db),
            "--workspaces",
            str(ws),
            "--script",
            str(script),
        ],
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until(
    probe: Callable[[], T | None],
    timeout: float = 60.0,
    what: str = "condition",
    *,
    process: subprocess.Popen[str] | None = None,
    stderr: Callable[[], str] | None = None,
) -> T:
    """``probe()`` once it is truthy (polled every 20 ms). When ``process`` exits first, fails at once with its stderr
    (read by ``stderr`` when a reader already owns the pipe) instead of waiting out ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        if process is not None and process.poll() is not None:
            value = probe()  # reached just before the exit
            if value:
                return value
            text = stderr() if stderr is not None else process.communicate(timeout=10)[1]
            raise AssertionError(f"{what}: never reached, the process exited ({process.returncode}) first:\n{text}")
        time.sleep(0.02)
    raise TimeoutError(f"{what} not reached within {timeout} s")


def write_script(path: Path, turns: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(turns))
    return path


def kill(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)  # reaped: its pid is gone, not a zombie


@pytest.fixture
def fresh_store(db_path: Path) -> Store:
    opened = Store.open(db_path)  # migrated before any child process touches it
    yield opened
    opened.close()


def test_killed_run_is_decided_from_the_cli_and_finished_by_a_worker_exactly_once(
    fresh_store: Store, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    script = write_script(
        tmp_path / "script.json",
        [
            {
                "text": "Appending.",
                "tool_calls": [{"name": "run_shell", "args": {"command": "echo line >> effects.txt"}}],
            }
        ],
    )
    proc = start_run(subprocess_env, db_path, ws, script, "append one line")
    try:
        (request,) = wait_until(fresh_store.requests.pending, what="the pending request", process=proc)
        kill(proc)
    finally:
        if proc.poll() is None:
            kill(proc)
    inv = request["invocation_id"]
    run = fresh_store.runs.get(inv)
    assert run.state == "waiting" and run.owner and run.owner.split(":")[1] == str(proc.pid)
    effects = Path(run.workspace) / "effects.txt"

    decided = cli(subprocess_env, "decide", request["hitl_id"], "approve", "--db", str(db_path))
    assert decided.returncode == 0, decided.stderr
    assert "echo line >> effects.txt" in decided.stderr  # the CLI shows what it approved
    assert not effects.exists()  # nobody acted on it yet: the run's process is dead

    began = time.perf_counter()
    worker = cli(
        subprocess_env, "worker", "--exit-when-idle", "--db", str(db_path), "--workspaces", str(ws), timeout=90
    )
    elapsed = time.perf_counter() - began
    assert worker.returncode == 0, worker.stderr
    assert "Traceback" not in worker.stderr
    done = fresh_store.runs.get(inv)
    assert done.state == "done", (done, worker.stderr)
    assert effects.read_text() == "line\n"  # the side effect happened exactly once
    events = fresh_store.timeline.of_run(inv)
    running = [e for e in events if e.kind is BlockKind.TOOL_USE and e.data.get("status") == "running"]
    assert len(running) == 1
    assert fresh_store.audit.verify().ok
    print(f"\nworker start -> recovered run done (incl. interpreter start-up): {elapsed:.2f} s")


def test_run_killed_inside_a_tool_is_interrupted_and_the_operator_aborts_it(
    fresh_store: Store, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    command = "echo $$ > shell.pid; echo start >> effects.txt; sleep 60; echo end >> effects.txt"
    script = write_script(
        tmp_path / "script.yaml",
        [{"tool_calls": [{"name": "run_shell", "args": {"command": command}}]}, {"text": "finished"}],
    )
    proc = start_run(subprocess_env, db_path, ws, script, "slow work")
    shell_pid = None
    try:
        (request,) = wait_until(fresh_store.requests.pending, what="the pending request", process=proc)
        workspace = Path(fresh_store.runs.get(request["invocation_id"]).workspace)
        assert cli(subprocess_env, "decide", request["hitl_id"], "approve", "--db", str(db_path)).returncode == 0
        wait_until((workspace / "effects.txt").exists, what="the tool to start")
        shell_pid = int(wait_until(lambda: (workspace / "shell.pid").read_text().strip(), what="the shell pid"))
        kill(proc)
    finally:
        if proc.poll() is None:
            kill(proc)
        if shell_pid is not None:
            try:
                os.killpg(shell_pid, signal.SIGKILL)  # the tool's own process group (our grandchild)
            except ProcessLookupError:
                pass
    inv = request["invocation_id"]
    assert fresh_store.runs.get(inv).state == "running"

    worker = cli(subprocess_env, "worker", "--exit-when-idle", "--db", str(db_path), "--workspaces", str(ws))
    assert worker.returncode == 0, worker.stderr
    interrupted = fresh_store.runs.get(inv)
    assert interrupted.state == "interrupted" and "run_shell" in interrupted.error

    refused = cli(subprocess_env, "resolve", inv, "rerun", "--db", str(db_path), "--workspaces", str(ws))
    assert refused.returncode == 3 and "not declared idempotent" in refused.stderr

    aborted = cli(subprocess_env, "resolve", inv, "abort", "--message", "killed by the test", "--db", str(db_path))
    assert aborted.returncode == 0, aborted.stderr
    assert aborted.stdout.strip() == "finished"
    done = fresh_store.runs.get(inv)
    assert done.state == "done"
    (_, state) = fresh_store.checkpoints.latest(inv)
    results = [m["content"] for m in state["messages"] if m["role"] == "tool"]
    assert results == ["<aborted: killed by the test>"]
    assert (workspace / "effects.txt").read_text() == "start\n"  # never re-run
    blocks = fold_events(fresh_store.timeline.of_run(inv))
    tool = next(b for b in blocks if b.kind is BlockKind.TOOL_USE)
    assert tool.data["status"] == "error" and tool.data.get("interrupted") is True


def test_a_live_run_process_resumes_on_a_decision_made_by_another_process(
    fresh_store: Store, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": "write_file", "args": {"path": "out.txt", "content": "x"}}]}, {"text": "bye"}],
    )
    proc = start_run(subprocess_env, db_path, ws, script, "write")
    try:
        (request,) = wait_until(fresh_store.requests.pending, what="the pending request", process=proc)
        inv = request["invocation_id"]
        decided = cli(subprocess_env, "decide", request["hitl_id"], "approve", "--db", str(db_path))
        assert decided.returncode == 0, decided.stderr
        wait_until(lambda: fresh_store.runs.get(inv).state == "done", what="the run to finish")
        decided_ms = fresh_store.requests.extras(request["hitl_id"])["updated_at_ms"]
        tool_done_ms = max(e.ts_ms for e in fresh_store.timeline.of_run(inv) if e.data.get("status") == "success")
        latency_ms = tool_done_ms - decided_ms
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            kill(proc)
    assert proc.returncode == 0, err
    assert out.strip() == "bye"
    assert f"approval needed {request['hitl_id']}" in err and "run done" in err
    assert latency_ms >= 0  # the tool finished after the decision was committed, never before
    print(f"\ncross-process resume: decision committed by another process -> tool done {latency_ms} ms later")
