"""Recovery inside one process: ownership is never stolen, a stopped runtime's runs resume elsewhere,
a tool cut off mid-run makes the run interrupted, and the operator re-runs or aborts it."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.runs import RunState
from reviewer_app.domain.timeline import BlockKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.recovery import new_owner_id, owner_is_gone, parse_owner, pid_alive
from reviewer_app.runtime.tools import ToolContext, ToolSpec, builtin_tools
from tests.runtime.test_runner_support import (
    agent,
    approval,
    eventually,
    messages,
    pending_requests,
    run_state,
    started_runtime,
    timeline,
    tool_results,
)

APPEND = {"name": "run_shell", "args": {"command": "echo line >> effects.txt"}}


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_owner_ids_and_liveness() -> None:
    owner = new_owner_id()
    host, pid = parse_owner(owner)
    assert host == socket.gethostname() and pid_alive(pid)
    assert not owner_is_gone(owner)
    assert owner_is_gone(None) and owner_is_gone("")
    assert owner_is_gone(f"{socket.gethostname()}:{dead_pid()}:abcd")
    assert not owner_is_gone("some-other-host:1:abcd")  # cannot check another host: never steal
    assert not owner_is_gone("not-an-owner-id")


class SlowTool:
    """A tool that counts starts and completions, so a test can see whether it ran once or twice."""

    def __init__(self) -> None:
        self.started = 0
        self.finished = 0
        self.gate = asyncio.Event()

    async def __call__(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.started += 1
        await self.gate.wait()
        (ctx.workspace / args["path"]).write_text(args["content"])
        self.finished += 1
        return f"slowly wrote {args['path']}"


def registry_with(tool: SlowTool, *, idempotent: bool):
    tools = builtin_tools()
    tools.register(
        ToolSpec(
            name="slow_write",
            description="writes a file slowly",
            parameters={
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
            handler=tool,
            side_effects=True,
            idempotent=idempotent,
        )
    )
    return tools


SLOW_CALL = {"name": "slow_write", "args": {"path": "slow.txt", "content": "slow\n"}}
SLOW_AGENT = agent("slowpoke", tools=["slow_write", "read_file"])


async def interrupt_mid_tool(backend: SQLHITLBackend, tmp_path: Path, tool: SlowTool, *, idempotent: bool) -> str:
    """Start a run, approve its slow tool, stop the runtime while the tool runs (a crash, as far as the
    database can tell), and return the invocation id."""
    tools = registry_with(tool, idempotent=idempotent)
    async with started_runtime(backend, tmp_path, SLOW_AGENT, tools=tools) as first:
        inv = await first.start_run("slowpoke", "x", script=[{"tool_calls": [SLOW_CALL]}])
        (request,) = await pending_requests(backend, inv)
        await first.decide_and_resume(request["hitl_id"], approval(request))

        async def tool_running() -> bool:
            events = await backend.events(inv)
            return tool.started == 1 and any(e.data.get("status") == "running" for e in events)

        await eventually(tool_running, backend)
    return inv


@pytest.mark.asyncio
async def test_run_cut_off_inside_an_idempotent_tool_is_interrupted_then_rerun_once(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    tool = SlowTool()
    inv = await interrupt_mid_tool(backend, tmp_path, tool, idempotent=True)
    assert tool.finished == 0
    tools = registry_with(tool, idempotent=True)
    async with started_runtime(backend, tmp_path, SLOW_AGENT, tools=tools) as second:
        interrupted = await run_state(backend, inv, "interrupted")
        assert "slow_write" in interrupted.error
        assert inv not in second.active_runs()  # nothing runs on its own
        assert tool.started == 1
        blocks = await timeline(backend, inv)
        assert any(b.kind is BlockKind.ERROR and b.data.get("interrupted") for b in blocks)

        tool.gate.set()
        await second.rerun_or_abort(inv, "rerun")
        done = await second.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert (tool.started, tool.finished) == (2, 1)
    assert (Path(done.workspace) / "slow.txt").read_text() == "slow\n"
    assert tool_results(await messages(backend, inv)) == {"call_0_0": "slowly wrote slow.txt"}


@pytest.mark.asyncio
async def test_interrupted_non_idempotent_tool_cannot_be_rerun_and_abort_tells_the_model(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    tool = SlowTool()
    inv = await interrupt_mid_tool(backend, tmp_path, tool, idempotent=False)
    tools = registry_with(tool, idempotent=False)
    async with started_runtime(backend, tmp_path, SLOW_AGENT, tools=tools) as second:
        await run_state(backend, inv, "interrupted")
        with pytest.raises(ValueError, match="not declared idempotent"):
            await second.rerun_or_abort(inv, "rerun")
        await second.rerun_or_abort(inv, "abort", "the operator killed it")
        done = await second.wait_for_run(inv, timeout=10)
        with pytest.raises(ValueError, match="not interrupted"):
            await second.rerun_or_abort(inv, "abort")
    assert done.state == "done"
    assert (tool.started, tool.finished) == (1, 0)
    assert tool_results(await messages(backend, inv)) == {"call_0_0": "<aborted: the operator killed it>"}
    tool_block = next(b for b in await timeline(backend, inv) if b.kind is BlockKind.TOOL_USE)
    assert tool_block.data["status"] == "error" and tool_block.data["outcome"] == "aborted"


@pytest.mark.asyncio
async def test_a_live_owner_is_never_robbed_and_a_stopped_one_is_taken_over(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as first:
        inv = await first.start_run("tester", "x", script=[{"tool_calls": [APPEND]}])
        (request,) = await pending_requests(backend, inv)
        async with started_runtime(backend, tmp_path) as second:
            assert await second.recover() == []  # the first runtime is alive in this very process
            run = await backend.run(backend.store.runs.get, inv)
            assert run.owner == first.owner
    # ``first`` stopped: its runs are released and still waiting.
    released = await backend.run(backend.store.runs.get, inv)
    assert released.state == "waiting" and released.owner is None
    async with started_runtime(backend, tmp_path) as third:
        assert inv in third.active_runs()
        await third.decide_and_resume(request["hitl_id"], approval(request))
        done = await third.wait_for_run(inv, timeout=10)
        assert done.owner == third.owner
    assert (Path(done.workspace) / "effects.txt").read_text() == "line\n"


@pytest.mark.asyncio
async def test_runs_of_a_dead_process_are_recovered_and_other_hosts_are_left_alone(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as first:
        dead = await first.start_run("tester", "dead owner", script=[{"tool_calls": [APPEND]}])
        remote = await first.start_run("tester", "remote owner", script=[{"tool_calls": [APPEND]}])
        await pending_requests(backend, dead)
        await pending_requests(backend, remote)
    dead_owner = f"{socket.gethostname()}:{dead_pid()}:0000"

    def reassign(tx):
        tx.runs.claim(dead, dead_owner, expected_owner=None)
        tx.runs.claim(remote, "elsewhere.example:1234:0000", expected_owner=None)

    await backend.write(reassign)
    async with started_runtime(backend, tmp_path) as second:
        assert second.active_runs() == [dead]
        assert (await backend.run(backend.store.runs.get, remote)).owner == "elsewhere.example:1234:0000"
        (request,) = await pending_requests(backend, dead)
        await second.decide_and_resume(request["hitl_id"], approval(request))
        assert (await second.wait_for_run(dead, timeout=10)).state == "done"


@pytest.mark.asyncio
async def test_recovered_run_continues_from_its_checkpoint_without_asking_the_model_again(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    script = [
        {"text": "step one", "tool_calls": [{"name": "list_dir", "args": {}}]},
        {"text": "step two", "tool_calls": [APPEND]},
        {"text": "step three"},
    ]
    async with started_runtime(backend, tmp_path) as first:
        inv = await first.start_run("tester", "x", script=script)
        (request,) = await pending_requests(backend, inv)
    async with started_runtime(backend, tmp_path) as second:
        await second.decide_and_resume(request["hitl_id"], approval(request))
        done = await second.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    conversation = await messages(backend, inv)
    assert [m["content"] for m in conversation if m["role"] == "assistant"] == ["step one", "step two", "step three"]
    texts = [b.data["text"] for b in await timeline(backend, inv) if b.kind is BlockKind.TEXT]
    assert texts == ["step one", "step two", "step three"]
    assert (Path(done.workspace) / "effects.txt").read_text() == "line\n"


@pytest.mark.asyncio
async def test_run_queued_for_a_slot_when_its_process_died_applies_its_decisions_after_recovery(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    """The process died after decisions arrived but before a slot was free (state queued, the checkpoint
    still says awaiting): the next process applies the decision it finds and waits for the other one."""
    two = [
        {"name": "run_shell", "args": {"command": "echo first >> effects.txt"}},
        {"name": "write_file", "args": {"path": "second.txt", "content": "2"}},
    ]
    async with started_runtime(backend, tmp_path) as first:
        inv = await first.start_run("tester", "x", script=[{"tool_calls": two}])
        by_tool = {r["tool_name"]: r for r in await pending_requests(backend, inv, count=2)}
        requests = [by_tool["run_shell"], by_tool["write_file"]]
    await backend.write(lambda tx: tx.runs.set_state(inv, RunState.QUEUED))
    await backend.decide(requests[0]["hitl_id"], approval(requests[0]))
    async with started_runtime(backend, tmp_path) as second:

        async def first_ran_second_waits() -> Any:
            run = await backend.run(backend.store.runs.get, inv)
            events = await backend.events(inv)
            ran = any(e.data.get("status") == "success" for e in events)
            return run if ran and run.state == "waiting" else None

        waiting = await eventually(first_ran_second_waits, backend)
        assert (Path(waiting.workspace) / "effects.txt").read_text() == "first\n"
        assert waiting.pending == 1
        await second.decide_and_resume(requests[1]["hitl_id"], approval(requests[1]))
        done = await second.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert (Path(done.workspace) / "second.txt").read_text() == "2"
    assert (Path(done.workspace) / "effects.txt").read_text() == "first\n"
