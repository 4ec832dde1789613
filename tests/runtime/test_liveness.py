"""Liveness: a runner killed with SIGKILL is noticed by an open watcher within seconds, its tools die with it.

Real processes: ``reviewer-app run`` drives a shell tool (``sleep 60`` in its own process group) and is
SIGKILLed; a watcher in this process (what the window and workers run every second) must mark the run
interrupted and leave no process of the tool behind.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reviewer_app.domain.runs import RunState
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import Store
from reviewer_app.runtime.checkpoint import CallStatus, Checkpoint, PendingCall
from reviewer_app.runtime.liveness import interrupt_dead_owners
from reviewer_app.runtime.process_groups import proc_group_members
from reviewer_app.runtime.recovery import pid_alive
from tests.runtime.test_recovery_process import cli, kill, start_run, wait_until, write_script

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux prctl")]


@pytest.fixture
def fresh_store(db_path: Path) -> Store:
    opened = Store.open(db_path)
    yield opened
    opened.close()


def test_a_sigkilled_runner_inside_a_tool_is_interrupted_within_seconds_and_its_tool_dies(
    fresh_store: Store, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    ws = tmp_path / "ws"
    command = "echo $$ > shell.pid; echo start >> effects.txt; sleep 60; echo end >> effects.txt"
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": "run_shell", "args": {"command": command}}]}, {"text": "finished"}],
    )
    proc = start_run(subprocess_env, db_path, ws, script, "slow work")
    shell_pid = 0
    try:
        (request,) = wait_until(fresh_store.requests.pending, what="the pending request", process=proc)
        inv = request["invocation_id"]
        workspace = Path(fresh_store.runs.get(inv).workspace)
        assert cli(subprocess_env, "decide", request["hitl_id"], "approve", "--db", str(db_path)).returncode == 0
        shell_pid = int(wait_until(lambda: _read(workspace / "shell.pid"), what="the shell pid"))
        # The owner's heartbeat records the tool's process group (the shell leads its own session).
        wait_until(lambda: fresh_store.runs.get(inv).process_group == shell_pid, what="the recorded group")
        assert proc_group_members(shell_pid)  # the shell and its sleep
        kill(proc)
        killed_at = time.monotonic()
    finally:
        if proc.poll() is None:
            kill(proc)
    assert fresh_store.runs.get(inv).state == "running"  # nobody has noticed yet

    noticed_after = asyncio.run(_watch_until_settled(db_path, inv, killed_at))

    run = fresh_store.runs.get(inv)
    assert run.state == "interrupted" and "run_shell" in (run.error or "")
    assert run.owner is None  # any worker or window may resolve it
    # Noticed by the sweep while it runs (the wait above is bounded); how soon is bench/liveness.py's goal.
    assert not pid_alive(shell_pid)  # the shell died with its runtime (PR_SET_PDEATHSIG)
    # The sweep SIGKILLed what the shell left in its group (the sleep); the kernel ends it a moment later.
    wait_until(lambda: proc_group_members(shell_pid) == [], timeout=30, what="the tool's process group to end")
    assert (workspace / "effects.txt").read_text() == "start\n"
    print(f"\nSIGKILL -> interrupted seen by the watcher: {noticed_after:.2f} s")


def test_the_shell_tool_dies_at_once_when_its_runtime_is_killed(
    fresh_store: Store, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """Without any watcher: PR_SET_PDEATHSIG alone ends the shell a killed runtime was running."""
    ws = tmp_path / "ws"
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": "run_shell", "args": {"command": "echo $$ > shell.pid; sleep 60; true"}}]}],
    )
    proc = start_run(subprocess_env, db_path, ws, script, "slow work")
    shell_pid = 0
    try:
        (request,) = wait_until(fresh_store.requests.pending, what="the pending request", process=proc)
        workspace = Path(fresh_store.runs.get(request["invocation_id"]).workspace)
        assert cli(subprocess_env, "decide", request["hitl_id"], "approve", "--db", str(db_path)).returncode == 0
        shell_pid = int(wait_until(lambda: _read(workspace / "shell.pid"), what="the shell pid"))
        kill(proc)
        wait_until(lambda: not pid_alive(shell_pid), timeout=10, what="the shell to die with its runtime")
    finally:
        if proc.poll() is None:
            kill(proc)
        for pid in proc_group_members(shell_pid) if shell_pid else ():
            os.kill(pid, signal.SIGKILL)


@pytest.mark.asyncio
async def test_a_live_owner_or_a_fresh_heartbeat_is_never_settled(db_path: Path, tmp_path: Path) -> None:
    """Only stale heartbeats of owners that are certainly gone count; a live process's runs are left alone."""
    dead_owner = await _dead_owner()
    live_owner = f"{socket.gethostname()}:{os.getpid()}:live"
    async with SQLHITLBackend(db_path, reviewer="tester") as backend:
        await _owned_run(backend, "inv_live", live_owner, running=True)
        await _owned_run(backend, "inv_fresh", dead_owner, running=True)
        await backend.write(lambda tx: tx.runs.heartbeat(dead_owner, {"inv_fresh": None}))
        assert await interrupt_dead_owners(backend, stale_after_s=30) == []  # fresh beat, live pid
        settled = await interrupt_dead_owners(backend, stale_after_s=0)
        assert [(s.invocation_id, s.outcome) for s in settled] == [("inv_fresh", "interrupted")]
        live = await backend.get_run("inv_live")
        assert live is not None and live.state == "running" and live.owner == live_owner


@pytest.mark.asyncio
async def test_a_dead_owner_between_tool_calls_is_released_for_a_worker(db_path: Path) -> None:
    dead_owner = await _dead_owner()
    async with SQLHITLBackend(db_path, reviewer="tester") as backend:
        await _owned_run(backend, "inv_waiting", dead_owner, running=False)
        settled = await interrupt_dead_owners(backend, stale_after_s=0)
        assert [(s.invocation_id, s.outcome) for s in settled] == [("inv_waiting", "released")]
        run = await backend.get_run("inv_waiting")
        assert run is not None and run.state == "running" and run.owner is None  # resumable
        assert await interrupt_dead_owners(backend, stale_after_s=0) == []  # settled once


async def _dead_owner() -> str:
    """An owner id of this host whose process has exited (and was reaped)."""
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", "pass")
    await child.wait()
    return f"{socket.gethostname()}:{child.pid}:dead"


async def _owned_run(backend: SQLHITLBackend, inv: str, owner: str, *, running: bool) -> None:
    ckpt = Checkpoint(agent="demo", messages=[{"role": "user", "content": "x"}], prompt_index=0)
    if running:
        ckpt.pending = [PendingCall(call_id="c1", name="run_shell", arguments={}, status=CallStatus.RUNNING)]
    state = ckpt.to_json()

    def create(tx: object) -> None:
        tx.runs.ensure_session("ses_" + inv, agent="demo")  # type: ignore[attr-defined]
        tx.runs.ensure(inv, "ses_" + inv, agent="demo", state=RunState.RUNNING, owner=owner)  # type: ignore[attr-defined]
        tx.checkpoints.save_whole(f"{inv}:1", inv, "ses_" + inv, state)  # type: ignore[attr-defined]

    await backend.write(create)
    await backend.write(lambda tx: tx.runs.heartbeat(owner, {inv: None}))
    await asyncio.sleep(0.01)  # the beat is older than "now" for a sweep with stale_after_s=0


async def _watch_until_settled(db_path: Path, inv: str, killed_at: float) -> float:
    """What the window's live controller does every second: sweep for dead owners until the run is settled."""
    async with SQLHITLBackend(db_path, reviewer="watcher") as backend:
        while True:
            settled = await interrupt_dead_owners(backend)
            if any(s.invocation_id == inv for s in settled):
                return time.monotonic() - killed_at
            if time.monotonic() - killed_at > 30:
                raise AssertionError("the dead owner was never noticed")
            await asyncio.sleep(0.2)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def test_a_running_worker_notices_a_runner_killed_after_it_started(
    fresh_store: Store, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """Not only at start-up: a worker already serving interrupts a run whose process dies later."""
    ws = tmp_path / "ws"
    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [{"name": "run_shell", "args": {"command": "echo $$ > shell.pid; sleep 60; true"}}]}],
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "reviewer_app", "worker", "--db", str(db_path), "--workspaces", str(ws)],
        env=subprocess_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc = start_run(subprocess_env, db_path, ws, script, "slow work")
    try:
        (request,) = wait_until(fresh_store.requests.pending, what="the pending request", process=proc)
        inv = request["invocation_id"]
        workspace = Path(fresh_store.runs.get(inv).workspace)
        assert cli(subprocess_env, "decide", request["hitl_id"], "approve", "--db", str(db_path)).returncode == 0
        shell_pid = int(wait_until(lambda: _read(workspace / "shell.pid"), what="the shell pid"))
        wait_until(lambda: fresh_store.runs.get(inv).process_group == shell_pid, what="the recorded group")
        kill(proc)
        killed_at = time.monotonic()
        wait_until(lambda: fresh_store.runs.get(inv).state == "interrupted", timeout=30, what="the worker to notice")
        noticed_after = time.monotonic() - killed_at
        wait_until(lambda: proc_group_members(shell_pid) == [], timeout=30, what="the tool's group to end")
    finally:
        if proc.poll() is None:
            kill(proc)
        worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=30)
    assert worker.returncode == 0, stderr
    # Noticed by the sweep while it runs (the wait above is bounded); how soon is bench/liveness.py's goal.
    print(f"\nSIGKILL -> a running worker marked the run interrupted: {noticed_after:.2f} s")
