"""Resume in one transaction, crash by crash: a process that decides its own run's request is SIGKILLed before
the decision's COMMIT, right after it, and inside the tool; another process recovers the run from the same SQLite
file. In every case the call runs at most once, and it is never lost: it runs, or the run says it was interrupted."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.runner import Runtime
from tests.helpers.crash_around_decision import counting_agent, counting_tools
from tests.runtime.test_runner_support import approval, eventually, run_state

REPO_ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.asyncio, pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")]


@pytest.fixture(params=["thread", "loop"])
def mode(request: pytest.FixtureRequest) -> str:
    """Where the crashing process writes: on its database thread, or on its loop's thread (``writes_on_loop``)."""
    return str(request.param)


def crash(db: Path, workspaces: Path, point: str, mode: str) -> str:
    """Run the helper until it kills itself at ``point``; returns its run's invocation id.

    ``mode`` ``loop``: its backend writes on the loop's thread (``writes_on_loop``), and the decision did."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "tests.helpers.crash_around_decision", str(db), str(workspaces), point, mode],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == -9, f"expected SIGKILL at {point}, got {done.returncode}: {done.stderr[-2000:]}"
    if point != "in-tool":
        thread = "MainThread" if mode == "loop" else "reviewer-db"
        assert f"decision on {thread}" in done.stderr
    return done.stdout.split()[0]


def times_run(workspaces: Path) -> int:
    counters = list(workspaces.glob("*/count.txt"))
    return sum(len(counter.read_text().splitlines()) for counter in counters)


@asynccontextmanager
async def crashed_then_recovered(
    tmp_path: Path, point: str, mode: str
) -> AsyncIterator[tuple[str, SQLHITLBackend, Runtime]]:
    """Crash the helper at ``point``, then recover its run in this process (its owner is gone)."""
    inv = crash(tmp_path / "crash.db", tmp_path / "ws", point, mode)
    backend = SQLHITLBackend(tmp_path / "crash.db")
    runtime = Runtime(
        backend,
        AgentCatalog([counting_agent()]),
        workspaces_dir=tmp_path / "ws",
        tools=counting_tools(die_inside=False),
    )
    await runtime.start(recover=True)
    try:
        yield inv, backend, runtime
    finally:
        await runtime.stop()
        await backend.aclose()


async def test_killed_before_the_decision_commits_nothing_of_it_exists_and_the_call_runs_once_later(
    tmp_path: Path, mode: str
) -> None:
    async with crashed_then_recovered(tmp_path, "before-commit", mode) as (inv, backend, runtime):
        (request,) = await backend.get_pending_by_invocation(inv)  # the decision was rolled back with its step
        await run_state(backend, inv, "waiting")
        assert times_run(tmp_path / "ws") == 0
        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        done = await runtime.wait_for_run(inv, timeout=30)
    assert done.state == "done"
    assert times_run(tmp_path / "ws") == 1


async def test_killed_right_after_the_decision_commits_the_call_is_already_running_so_it_is_interrupted(
    tmp_path: Path, mode: str
) -> None:
    async with crashed_then_recovered(tmp_path, "after-commit", mode) as (inv, backend, runtime):
        interrupted = await run_state(backend, inv, "interrupted")
        assert "count" in (interrupted.error or "")
        (record,) = await backend.list_records(RequestQuery(statuses=(), invocation_id=inv))
        assert record["status"] == HITLStatus.COMPLETED.value  # decided in the same commit as the call's running
        assert times_run(tmp_path / "ws") == 0  # not run, and not run by the recovery either: nothing guessed
        await runtime.rerun_or_abort(inv, "rerun")  # the operator's choice (count is declared idempotent)
        done = await runtime.wait_for_run(inv, timeout=30)
    assert done.state == "done"
    assert times_run(tmp_path / "ws") == 1


async def test_killed_inside_the_tool_the_call_is_never_run_again_unasked(tmp_path: Path, mode: str) -> None:
    async with crashed_then_recovered(tmp_path, "in-tool", mode) as (inv, backend, runtime):
        await run_state(backend, inv, "interrupted")
        assert times_run(tmp_path / "ws") == 1
        await runtime.rerun_or_abort(inv, "abort", "the operator checked: it ran")

        async def finished() -> bool:
            record = await backend.get_run(inv)
            return record is not None and record.state == "done"

        await eventually(finished, backend, timeout=30)
    assert times_run(tmp_path / "ws") == 1
