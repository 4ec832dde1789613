"""Requests whose hook process is gone are settled "answered elsewhere" by whoever opens the database."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLConflict
from reviewer_app.domain.hook_lease import ANSWERED_ELSEWHERE, process_start_ticks, this_host
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.runner import Runtime

pytestmark = pytest.mark.asyncio

ARGS = {"command": "true"}


def _gone_process() -> dict:
    """The hook_process of a process that started and ended (its pid now names nothing, or something else)."""
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    ticks = process_start_ticks(child.pid)
    child.communicate(b"")
    return {"pid": child.pid, "start_ticks": ticks, "host": this_host()}


async def _make(backend: SQLHITLBackend, hitl_id: str, hook_process: dict | None) -> None:
    metadata: dict = {"agent": "claude-code", "external": True}
    if hook_process is not None:
        metadata["hook_process"] = hook_process
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s",
        invocation_id="i",
        tool_name="Bash",
        data={"arguments": ARGS},
        metadata=metadata,
    )


async def test_only_requests_whose_hook_is_certainly_gone_are_settled(backend: SQLHITLBackend) -> None:
    await _make(backend, "gone", _gone_process())
    alive = {"pid": os.getpid(), "start_ticks": process_start_ticks(os.getpid())}
    await _make(backend, "alive", {**alive, "host": this_host()})
    await _make(backend, "elsewhere", {**_gone_process(), "host": "another-host"})
    await _make(backend, "no-hook", None)
    reused = {**alive, "start_ticks": (alive["start_ticks"] or 0) + 1, "host": this_host()}  # the pid, reused
    await _make(backend, "reused-pid", reused)

    settled = {record["hitl_id"] for record in await backend.settle_abandoned_hooks()}
    assert settled == {"gone", "reused-pid"}
    for hitl_id in settled:
        [entry] = await backend.audit(hitl_id)
        assert entry.decision == "cancel" and entry.message.startswith(ANSWERED_ELSEWHERE)
        assert entry.reviewer == "system:claude-code"
    assert {r["hitl_id"] for r in await backend.list_records()} == {"alive", "elsewhere", "no-hook"}
    assert await backend.settle_abandoned_hooks() == []  # once only


async def test_a_decision_on_it_is_refused_and_the_live_ones_are_decided(backend: SQLHITLBackend) -> None:
    await _make(backend, "gone", _gone_process())
    await _make(backend, "no-hook", None)
    approval = Decision(DecisionKind.APPROVE, args_sha256=args_digest(ARGS))
    with pytest.raises(HITLConflict, match="answered elsewhere") as refused:
        await backend.decide("gone", approval)
    assert refused.value.decided_by == "system:claude-code"
    with pytest.raises(HITLConflict, match=r"already cancelled .* answered elsewhere"):  # asked again: same reason
        await backend.decide("gone", approval)
    await _make(backend, "gone-too", _gone_process())
    with pytest.raises(HITLConflict, match="answered elsewhere"):
        await backend.respond("gone-too", {"approved": True})  # a bare protocol answer too
    assert (await backend.decide("no-hook", approval))["status"] == "completed"


async def test_a_worker_settles_them_without_any_hook_or_watchdog(backend: SQLHITLBackend, tmp_path: Path) -> None:
    await _make(backend, "gone", _gone_process())
    runtime = Runtime(backend, AgentCatalog(), workspaces_dir=tmp_path / "ws", expiry_interval_s=0.1)
    await runtime.start()
    try:
        deadline = time.monotonic() + 10
        while (await backend.get("gone"))["status"] == "pending":  # type: ignore[index]
            assert time.monotonic() < deadline, "the supervision loop never settled it"
            await asyncio.sleep(0.05)
    finally:
        await runtime.stop()
    assert (await backend.get("gone"))["status"] == "cancelled"  # type: ignore[index]
