"""Resuming after a decision: straight from Runtime.decide when this process drives the run, exactly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind
from reviewer_app.domain.timeline import BlockKind, BlockOp
from reviewer_app.hitl import SQLHITLBackend
from tests.runtime.test_runner_support import (
    approval,
    eventually,
    pending_requests,
    run_state,
    started_runtime,
    timeline,
)

pytestmark = pytest.mark.asyncio

WRITE = {"name": "write_file", "args": {"path": "notes.txt", "content": "hello\n"}}


async def test_a_decision_made_here_resumes_the_run_without_a_watcher_lookup(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        watcher = runtime.driver.watcher
        assert watcher is not None
        inv = await runtime.start_run("tester", "write", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        await run_state(backend, inv, "waiting")

        async def looked_once() -> bool:
            return watcher.queries >= 1  # the waiting run's first look, for a decision made before it waited

        await eventually(looked_once, backend)
        before = watcher.queries
        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert watcher.queries == before  # resumed by the committed record itself, not by a look-up
    assert (Path(done.workspace) / "notes.txt").read_text() == "hello\n"
    events = await backend.events(inv)
    running = [e for e in events if e.kind is BlockKind.TOOL_USE and e.data.get("status") == "running"]
    decided = [e for e in events if e.kind is BlockKind.HITL and e.op is BlockOp.PATCH]
    assert len(running) == 1 and len(decided) == 1  # the tool ran once
    assert decided[0].seq < running[0].seq  # the decision's outcome is on the timeline before the call runs


async def test_an_approved_run_waits_for_a_free_slot_before_it_runs(backend: SQLHITLBackend, tmp_path: Path) -> None:
    async with started_runtime(backend, tmp_path, max_concurrent_runs=1) as runtime:
        gated = await runtime.start_run("tester", "write", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, gated)
        await run_state(backend, gated, "waiting")  # waiting holds no slot
        # It holds the only slot for 6 s: long past the approval below, on a loaded machine.
        busy = await runtime.start_run("tester", "think", script=[{"text": "working", "delay_ms": 6000}])
        await run_state(backend, busy, "running")

        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        await run_state(backend, gated, "queued")  # approved, but the only slot is taken
        assert not list((tmp_path / "workspaces").glob("*/notes.txt"))  # nothing ran yet
        hitl = next(b for b in await timeline(backend, gated) if b.kind is BlockKind.HITL)
        assert hitl.data["status"] == "decided"  # the outcome is recorded while it queues
        finished = [await runtime.wait_for_run(inv, timeout=30) for inv in (busy, gated)]
    assert [r.state for r in finished] == ["done", "done"]
    assert finished[1].finished_at >= finished[0].finished_at
    tool = next(b for b in await timeline(backend, gated) if b.kind is BlockKind.TOOL_USE)
    assert tool.data["status"] == "success"


async def test_a_refused_decision_handed_to_its_run_leaves_the_request_pending_and_the_run_waiting(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "write", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)

        async def waits_here() -> bool:
            return runtime.driver.waits_for(request["hitl_id"])

        await eventually(waits_here, backend)
        with pytest.raises(DecisionError, match="arguments changed"):  # handed to the run, refused in its transaction
            await runtime.decide_and_resume(request["hitl_id"], Decision(DecisionKind.APPROVE, args_sha256="0" * 64))
        await eventually(waits_here, backend)  # waiting again, nothing of the refused decision written
        (still,) = await pending_requests(backend, inv)
        assert still["status"] == "pending"
        run = await backend.get_run(inv)
        assert run is not None and run.state == "waiting"
        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    events = await backend.events(inv)
    assert len([e for e in events if e.kind is BlockKind.TOOL_USE and e.data.get("status") == "running"]) == 1
