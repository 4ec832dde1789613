"""Every approved, executed call keeps its timeline block and its approval, whatever ids the model server sends.

Real OpenAI-compatible servers stream tool calls with no ``id`` or number them per message (``call_0`` at every
turn). Reviewer named blocks by call id alone, so a second turn's call overwrote the first one's block and
approval, and the ids it invented were sent back to the server as duplicates.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.timeline import fold_events
from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.hitl import SQLHITLBackend
from tests.runtime.test_openai_client import FakeOpenAI, delta, sse_reply
from tests.runtime.test_runner_support import agent, approval, pending_requests, run_state, started_runtime

pytestmark = pytest.mark.asyncio


def streamed_call(path: str, call_id: str | None) -> list[dict[str, Any]]:
    """One write_file call streamed in two fragments, with or without an id."""
    first: dict[str, Any] = {"index": 0, "type": "function", "function": {"name": "write_file", "arguments": ""}}
    if call_id is not None:
        first["id"] = call_id
    args = json.dumps({"path": path, "content": "x"})
    return [
        delta(tool_calls=[first]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": args[:10]}}]),
        delta("tool_calls", tool_calls=[{"index": 0, "function": {"arguments": args[10:]}}]),
    ]


def openai_agent(server: FakeOpenAI) -> Any:
    return agent(
        "streamer",
        model={"type": "openai", "base_url": server.base_url, "model": "m", "api_key": "k-test", "max_retries": 0},
        policy=ApprovalPolicy(gated=frozenset({"write_file"})),
    )


@pytest.mark.parametrize("ids", [(None, None), ("call_0", "call_0")], ids=["no-ids", "repeated-ids"])
async def test_two_turns_keep_both_calls_blocks_and_approvals(
    backend: SQLHITLBackend, tmp_path: Path, server: FakeOpenAI, ids: tuple[str | None, str | None]
) -> None:
    server.plan.extend(
        [
            sse_reply(streamed_call("one.txt", ids[0])),
            sse_reply(streamed_call("two.txt", ids[1])),
            sse_reply([delta(content="both written"), delta("stop")]),
        ]
    )
    async with started_runtime(backend, tmp_path, openai_agent(server)) as runtime:
        inv = await runtime.start_run("streamer", "write two files")
        for _ in range(2):
            (request,) = await pending_requests(backend, inv)
            await runtime.decide_and_resume(request["hitl_id"], approval(request))
            await run_state(backend, inv, "running", "waiting", "done")
        done = await run_state(backend, inv, "done", "failed")
    assert done.state == "done", done.error

    blocks = fold_events(await backend.events(inv))
    tools = [b for b in blocks if b.kind.value == "tool_use"]
    assert [b.data["arguments"]["path"] for b in tools] == ["one.txt", "two.txt"]
    assert all(b.data["status"] == "success" for b in tools)
    hitls = [b for b in blocks if b.kind.value == "hitl"]
    assert len(hitls) == 2 and all(b.data.get("decision") == "approve" for b in hitls)
    assert len({b.block_id for b in blocks}) == len(blocks)
    assert len(await backend.audit()) == 2

    # what went back to the server: distinct ids, each tool result paired with its own call
    last = server.requests[-1]["json"]["messages"]
    call_ids = [c["id"] for m in last if m["role"] == "assistant" for c in m.get("tool_calls") or []]
    result_ids = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert len(call_ids) == 2 and len(set(call_ids)) == 2
    assert result_ids == call_ids
