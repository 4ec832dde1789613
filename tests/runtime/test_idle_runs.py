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


async def _prompt_runs(backend: SQLHITLBackend, agent: str, *names: str) -> None:
    """Runs of one session, one per prompt, each started a second after the one before (runs are timed in s)."""
    for n, name in enumerate(names):
        if n:
            await asyncio.sleep(1.05)
        await backend.register_run(session_id="s1", invocation_id=name, agent=agent)


async def test_a_prompt_run_its_session_moved_on_from_is_ended_within_minutes(backend: SQLHITLBackend) -> None:
    """Claude Code names every event of a prompt with its prompt id until the next prompt: a run of an older
    prompt with nothing pending is over once a newer one exists, so it leaves "Running" after a short grace, not
    4 hours; the newest prompt's run is left alone however quiet."""
    await _prompt_runs(backend, "claude-code", "first", "second")
    assert await _sweep(backend, 0) == []  # a straggling tool result of the first prompt may still land
    assert await _sweep(backend, 3 * MINUTE_MS) == [("first", ENDED)]
    first, second = await backend.get_run("first"), await backend.get_run("second")
    assert first is not None and first.state == "done" and first.error is not None
    assert "a later prompt" in first.error
    assert second is not None and second.state == "running"


async def test_a_moved_on_prompt_run_with_a_pending_request_or_of_a_session_host_is_not_ended(
    backend: SQLHITLBackend,
) -> None:
    await _prompt_runs(backend, "claude-code", "asking", "next")
    client = ReviewClient(backend, agent="claude-code")
    await client.submit(ExternalCall("req-1", "claude-code", "s1", "asking", "Bash", {"command": "ls"}))
    assert await _sweep(backend, 3 * MINUTE_MS) == []  # its hook still waits for a decision

    # a host whose runs are not one per prompt: a newer run of the session says nothing about the older one
    await backend.register_run(session_id="s2", invocation_id="g1", agent="my-framework")
    await asyncio.sleep(1.05)
    await backend.register_run(session_id="s2", invocation_id="g2", agent="my-framework")
    assert await _sweep(backend, 3 * MINUTE_MS) == []
