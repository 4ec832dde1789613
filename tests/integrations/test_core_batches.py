"""The adapter core's pieces the framework adapters share: batches, the transcript, saved host state."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import DecisionError, DecisionKind
from reviewer_app.domain.timeline import fold_events
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import (
    ExternalCall,
    ReviewClient,
    Said,
    ToolCalled,
    ToolReturned,
    TranscriptEntry,
    block_id_for,
    open_client,
    saved_state,
    stable_id,
)
from tests.integrations.support import decision, pending


def call(index: int, **extra: object) -> ExternalCall:
    return ExternalCall(
        hitl_id=stable_id("test", "s", str(index)),
        agent="tester",
        session_id="s",
        invocation_id="run-1",
        tool_name="write_file",
        arguments={"path": f"f{index}.txt", "content": "x"},
        tool_call_id=f"call_{index}",
        **extra,  # type: ignore[arg-type]
    )


@pytest.mark.asyncio
async def test_a_batch_returns_outcomes_in_call_order_whatever_the_decision_order(db_path: Path) -> None:
    async with open_client(db_path, agent="tester") as client, SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        calls = [call(0), call(1), call(2)]
        task = asyncio.create_task(client.review_batch(calls))
        records = {r["hitl_id"]: r for r in await pending(reviewer, 3)}
        [run] = await reviewer.list_runs()
        assert run.state == "waiting"
        kinds = [DecisionKind.APPROVE, DecisionKind.REJECT, DecisionKind.APPROVE]
        for kind, c in reversed(list(zip(kinds, calls, strict=True))):
            await reviewer.decide(c.hitl_id, decision(records[c.hitl_id], kind))
        outcomes = await task
        assert [o.kind for o in outcomes] == [DecisionKind.APPROVE, DecisionKind.REJECT, DecisionKind.APPROVE]
        assert [o.hitl_id for o in outcomes] == [c.hitl_id for c in calls]
        [run] = await reviewer.list_runs()
        assert run.state == "running"
        # Asking again finds the same, decided requests: nothing new, no waiting.
        again = await client.review_batch(calls)
        assert [o.kind for o in again] == [o.kind for o in outcomes]
        assert len(await reviewer.list_records()) == 0
        hitl = [b for b in fold_events(await reviewer.events("run-1")) if b.kind.value == "hitl"]
        assert [b.data["decision"] for b in hitl] == ["approve", "reject", "approve"]


@pytest.mark.asyncio
async def test_the_transcript_is_written_once_however_often_it_is_narrated(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="tester")
    await client.register_run(session_id="s", invocation_id="run-1", title="hello")
    entries: list[TranscriptEntry] = [
        Said("m1", "I will write."),
        ToolCalled("call_1", "write_file", {"path": "a"}),
        Said("m-empty", "   "),
    ]
    assert await client.narrate_transcript("s", "run-1", entries) == 2
    later: list[TranscriptEntry] = [*entries, ToolReturned("call_1", "wrote a"), Said("m2", "Done.")]
    assert await client.narrate_transcript("s", "run-1", later) == 2
    assert await client.narrate_transcript("s", "run-1", later) == 0
    blocks = fold_events(await backend.events("run-1"))
    assert [(b.kind.value, b.block_id) for b in blocks] == [
        ("text", block_id_for("run-1", "m1")),
        ("tool_use", block_id_for("run-1", "call_1")),
        ("text", block_id_for("run-1", "m2")),
    ]
    assert blocks[1].data == {
        "name": "write_file",
        "call_id": "call_1",
        "arguments": {"path": "a"},
        "status": "success",
        "result": "wrote a",
    }


@pytest.mark.asyncio
async def test_saved_batch_is_the_newest_pause_until_its_run_ends(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="tester")
    assert await client.saved_batch("s", "host") is None and await client.next_round("s", "host") == 0
    for round_, index in [(0, 0), (1, 0), (1, 1)]:
        await client.submit(call(10 * round_ + index, tool_state=saved_state("host", round_, index, {"round": round_})))
    batch = await client.saved_batch("s", "host")
    assert batch is not None and (batch.round, batch.state, batch.invocation_id) == (1, {"round": 1}, "run-1")
    assert [r["tool_state"]["index"] for r in batch.records] == [0, 1]
    assert await client.next_round("s", "host") == 2
    assert await client.saved_batch("s", "other-host") is None
    await client.finish_run("s", "run-1")
    assert await client.saved_batch("s", "host") is None


@pytest.mark.asyncio
async def test_an_answer_on_a_tool_approval_only_where_the_request_allows_it(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="tester")
    answerable = await client.submit(call(0, allowed_decisions=(DecisionKind.APPROVE, DecisionKind.RESPOND)))
    plain = await client.submit(call(1))
    with pytest.raises(DecisionError, match="not answered"):
        await backend.decide(plain["hitl_id"], decision(plain, DecisionKind.RESPOND, message="done"))
    decided = await backend.decide(answerable["hitl_id"], decision(answerable, DecisionKind.RESPOND, message="done"))
    assert decided["user_response"]["message"] == "done"


@pytest.mark.asyncio
async def test_a_batch_that_nobody_decides_in_time_leaves_its_requests_waiting(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="tester")
    with pytest.raises(TimeoutError):
        await client.review_batch([call(0), call(1)], timeout=0.05)
    assert len(await backend.list_records()) == 2  # still in the inbox; asking again picks them up
    [run] = await backend.list_runs()
    assert run.state == "waiting"
