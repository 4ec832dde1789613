"""External runs whose host is gone: idle after a while without activity, then ended with the reason (issue #25)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reviewer_app.domain.timeline import BlockKind, fold_events
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import ExternalCall, ReviewClient
from reviewer_app.persistence.store import now_ms
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.idle_runs import ENDED, IDLE, idle_block_id, sweep_idle_external_runs
from reviewer_app.runtime.runner import Runtime

pytestmark = pytest.mark.asyncio

MINUTE_MS = 60_000


async def _sweep(backend: SQLHITLBackend, after_ms: int) -> list[tuple[str, str]]:
    done = await sweep_idle_external_runs(backend, idle_after_s=30 * 60, end_after_s=4 * 3600, now=now_ms() + after_ms)
    return sorted((run.invocation_id, run.outcome) for run in done)


async def test_a_quiet_external_run_is_marked_idle_once_then_ended_with_the_reason(backend: SQLHITLBackend) -> None:
    await backend.register_run(session_id="s1", invocation_id="gone", agent="claude-code", prompt="fix the tests")
    await backend.register_run(session_id="s2", invocation_id="local", agent="coder", external=False)

    assert await _sweep(backend, 10 * MINUTE_MS) == []  # quiet, but not for long
    assert await _sweep(backend, 31 * MINUTE_MS) == [("gone", IDLE)]  # a local run is its runtime's business
    assert await _sweep(backend, 40 * MINUTE_MS) == []  # marked once
    run = await backend.get_run("gone")
    assert run is not None and run.state == "running"
    [note] = [b for b in fold_events(await backend.events("gone")) if b.block_id == idle_block_id("gone")]
    assert note.kind is BlockKind.ERROR and "idle: no activity from its host for 31 min" in note.data["message"]

    assert await _sweep(backend, 5 * 60 * MINUTE_MS) == [("gone", ENDED)]
    run = await backend.get_run("gone")
    assert run is not None and run.state == "done" and run.error is not None and "the host is gone" in run.error
    [end] = [b for b in fold_events(await backend.events("gone")) if b.kind is BlockKind.END]
    assert end.data["state"] == "done" and "no activity from its host for 5 h 0 min" in end.data["error"]
    assert await _sweep(backend, 6 * 60 * MINUTE_MS) == []  # ended runs are left alone


async def test_a_run_with_a_pending_request_or_recent_activity_is_not_idle(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="claude-code")
    await client.register_run(session_id="s1", invocation_id="asking")
    call = ExternalCall("req-1", "claude-code", "s1", "asking", "Bash", {"command": "ls"})
    await client.submit(call)
    assert await _sweep(backend, 5 * 60 * MINUTE_MS) == []  # its request has a hook, an expiry and a sweep of its own

    await client.abandon("req-1")  # the host settled it itself: activity now
    assert await _sweep(backend, 10 * MINUTE_MS) == []
    assert await _sweep(backend, 31 * MINUTE_MS) == [("asking", IDLE)]


async def test_the_supervision_loop_ends_a_gone_host_s_run(backend: SQLHITLBackend, tmp_path: Path) -> None:
    await backend.register_run(session_id="s1", invocation_id="gone", agent="gemini")
    runtime = Runtime(backend, AgentCatalog(), workspaces_dir=tmp_path / "ws", idle_limits_s=(0.05, 0.1))
    await runtime.start(recover=False)
    try:
        await asyncio.sleep(0.2)
        ended = [(r.invocation_id, r.outcome) for r in await runtime.sweep_idle_runs(force=True)]
        assert ended in ([("gone", ENDED)], [])  # [] when the loop's own sweep ended it first (checked below)
    finally:
        await runtime.stop()
    run = await backend.get_run("gone")
    assert run is not None and run.state == "done"
