"""The aury-agent HITLBackend protocol on real SQLite files."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.hitl import RECORD_KEYS
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import HITLConflict, HITLNotFound, SQLHITLBackend, shown_arguments

pytestmark = pytest.mark.asyncio

WRITE_ARGS = {"path": "notes.txt", "content": "hello"}


async def make(backend: SQLHITLBackend, hitl_id: str, session: str = "s1", invocation: str = "i1", **extra):
    await backend.create(
        hitl_id=hitl_id,
        hitl_type=extra.pop("hitl_type", "tool_approval"),
        session_id=session,
        invocation_id=invocation,
        data=extra.pop("data", {"arguments": WRITE_ARGS}),
        tool_name=extra.pop("tool_name", "write_file"),
        **extra,
    )


async def test_round_trip_and_record_shape(backend: SQLHITLBackend) -> None:
    before = int(time.time())
    await backend.create(
        hitl_id="h1",
        hitl_type="tool_approval",
        session_id="s1",
        invocation_id="i1",
        block_id="b1",
        resume_mode="continuation",
        tool_state={"step": 3},
        checkpoint_id="cp1",
        tool_name="write_file",
        tool_call_id="call_1",
        node_id="node",
        expires_at=before + 60,
    )
    record = await backend.get("h1")
    assert record is not None
    assert tuple(record) == RECORD_KEYS
    assert record["data"] == {} and record["metadata"] == {}
    assert record["status"] == "pending"
    assert record["resume_mode"] == "continuation"
    assert record["tool_state"] == {"step": 3}
    assert (record["block_id"], record["checkpoint_id"], record["tool_call_id"], record["node_id"]) == (
        "b1",
        "cp1",
        "call_1",
        "node",
    )
    assert record["user_response"] is None and record["responded_at"] is None
    assert isinstance(record["created_at"], int) and before <= record["created_at"] <= before + 2
    assert record["updated_at"] == record["created_at"]

    await backend.respond("h1", {"answer": "yes"})
    done = await backend.get("h1")
    assert done is not None
    assert done["status"] == "completed"
    assert done["user_response"] == {"answer": "yes"}
    assert isinstance(done["responded_at"], int)
    assert tuple(done) == RECORD_KEYS


async def test_cancel_and_unknown(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    await backend.cancel("h1")
    record = await backend.get("h1")
    assert record is not None and record["status"] == "cancelled"
    assert await backend.get("missing") is None
    with pytest.raises(HITLNotFound, match="missing"):
        await backend.respond("missing", {})
    with pytest.raises(HITLNotFound):
        await backend.cancel("missing")


async def test_pending_by_session_and_invocation(backend: SQLHITLBackend) -> None:
    await make(backend, "a", "s1", "i1")
    await make(backend, "b", "s1", "i2")
    await make(backend, "c", "s2", "i3")
    await backend.respond("b", {"ok": True})
    by_session = await backend.get_pending_by_session("s1")
    assert [r["hitl_id"] for r in by_session] == ["a"]
    assert [r["hitl_id"] for r in await backend.get_pending_by_invocation("i3")] == ["c"]
    assert await backend.get_pending_by_invocation("nothing") == []
    # sessions and invocations were created on first use
    runs = {run.id: run for run in await backend.list_runs()}
    assert set(runs) == {"i1", "i2", "i3"}
    assert runs["i3"].session_id == "s2"


async def test_second_decision_conflicts_and_says_who(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    alice = SQLHITLBackend(store=backend.store, reviewer="alice")
    await alice.respond("h1", {"decision": "approve", "args_sha256": args_digest(WRITE_ARGS)})
    await alice.aclose()
    await make(backend, "h2")
    other_reviewer = SQLHITLBackend(store=backend.store, reviewer="dora")
    await other_reviewer.respond("h2", {"answer": "ok"})
    await other_reviewer.aclose()
    with pytest.raises(HITLConflict, match="by dora"):
        await backend.respond("h2", {"answer": "again"})
    with pytest.raises(HITLConflict) as caught:
        await backend.respond("h1", {"decision": "reject", "reviewer": "bob"})
    message = str(caught.value)
    assert "completed" in message and "approve" in message and "alice" in message
    assert caught.value.decided_by == "alice"
    with pytest.raises(HITLConflict):
        await backend.cancel("h1")
    record = await backend.get("h1")
    assert record is not None and record["user_response"]["reviewer"] == "alice"


async def test_duplicate_create_conflicts_and_overwrites_nothing(backend: SQLHITLBackend) -> None:
    await make(backend, "h1", data={"arguments": {"path": "a"}})
    with pytest.raises(HITLConflict, match="already exists"):
        await make(backend, "h1", data={"arguments": {"path": "b"}})
    record = await backend.get("h1")
    assert record is not None and record["data"] == {"arguments": {"path": "a"}}


async def test_bad_input_is_refused_clearly(backend: SQLHITLBackend) -> None:
    with pytest.raises(ValueError, match="resume_mode"):
        await make(backend, "h1", resume_mode="sometimes")
    with pytest.raises(ValueError, match="non-empty"):
        await make(backend, "", "s1")
    with pytest.raises(TypeError):
        await backend.respond("h1", "yes")  # type: ignore[arg-type]
    assert await backend.get("h1") is None


async def test_expiry(backend: SQLHITLBackend) -> None:
    now = int(time.time())
    await make(backend, "old", expires_at=now - 5)
    await make(backend, "fresh", expires_at=now + 3600)
    await make(backend, "never")
    expired = await backend.expire_due()
    assert [r["hitl_id"] for r in expired] == ["old"]
    old = await backend.get("old")
    assert old is not None and old["status"] == "expired"
    assert old["user_response"]["decision"] == "reject"
    assert old["user_response"]["reviewer"] == "system:expiry"
    assert {r["hitl_id"] for r in await backend.get_pending_by_session("s1")} == {"fresh", "never"}
    # a later clock expires the next one, with a per-request default decision
    expired = await backend.expire_due(now + 7200, default_decision=lambda record: "approve")
    assert [r["hitl_id"] for r in expired] == ["fresh"]
    audit = await backend.audit()
    assert [(a.hitl_id, a.decision, a.reviewer) for a in audit] == [
        ("old", "reject", "system:expiry"),
        ("fresh", "approve", "system:expiry"),
    ]
    assert await backend.expire_due(now + 7200) == []


async def test_data_survives_close_and_reopen(db_path: Path) -> None:
    first = SQLHITLBackend(db_path, reviewer="r1")
    big = {"arguments": {"path": "big.txt", "content": "x" * (10 * 1024 * 1024)}}
    await make(first, "big", data=big)
    await make(first, "h2")
    await first.respond("h2", {"decision": "approve", "args_sha256": args_digest(WRITE_ARGS)})
    await first.aclose()

    second = SQLHITLBackend(db_path, reviewer="r2")
    try:
        record = await second.get("big")
        assert record is not None and record["data"] == big
        decided = await second.get("h2")
        assert decided is not None and decided["status"] == "completed"
        assert (await second.verify_audit()).ok
    finally:
        await second.aclose()


async def test_wait_for_response_in_process(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    waiter = asyncio.create_task(backend.wait_for_response("h1", timeout=10))
    await asyncio.sleep(0.05)
    assert not waiter.done()
    await backend.respond("h1", {"answer": 42})
    record = await asyncio.wait_for(waiter, 5)
    assert record["user_response"] == {"answer": 42}


async def test_wait_for_response_times_out_and_not_found(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    with pytest.raises(TimeoutError):
        await backend.wait_for_response("h1", timeout=0.2)
    with pytest.raises(HITLNotFound):
        await backend.wait_for_response("nope", timeout=0.2)


async def test_decide_checks_hash_and_schema(backend: SQLHITLBackend) -> None:
    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
        "additionalProperties": False,
    }
    await make(backend, "h1", data={"arguments": WRITE_ARGS, "schema": schema})
    with pytest.raises(DecisionError, match="must name the SHA-256"):
        await backend.decide("h1", Decision(DecisionKind.APPROVE))
    with pytest.raises(DecisionError, match="arguments changed"):
        await backend.decide("h1", Decision(DecisionKind.APPROVE, args_sha256=args_digest({"path": "other"})))
    with pytest.raises(DecisionError, match="content"):
        await backend.decide(
            "h1",
            Decision(DecisionKind.EDIT, edited_args={"path": "x"}, args_sha256=args_digest(WRITE_ARGS)),
        )
    record = await backend.get("h1")
    assert record is not None and record["status"] == "pending"  # nothing applied by refused decisions

    edited = {"path": "notes.txt", "content": "edited"}
    decided = await backend.decide(
        "h1", Decision(DecisionKind.EDIT, edited_args=edited, args_sha256=args_digest(shown_arguments(record)))
    )
    assert decided["status"] == "completed"
    assert decided["user_response"]["args"] == edited
    assert decided["data"]["arguments"] == WRITE_ARGS  # the original stays in the record
    [entry] = await backend.audit("h1")
    assert entry.shown_args == WRITE_ARGS and entry.edited_args == edited
    assert entry.shown_args_sha256 == args_digest(WRITE_ARGS)
    assert entry.reviewer == "tester"


async def test_approve_for_session_adds_rule(backend: SQLHITLBackend) -> None:
    args = {"command": "git status"}
    await make(backend, "h1", data={"arguments": args}, tool_name="run_shell")
    await backend.decide("h1", Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=args_digest(args)))
    rules = await backend.run(backend.store.waivers.of_session, "s1")
    assert [r.to_dict() for r in rules] == [
        {
            "tool_name": "run_shell",
            "scope": {
                "kind": "exact",
                "text": "git status",
                "words": ["git", "status"],
                "waivable": True,
                "plain": True,  # nothing its text hides: judged once, when the waiver is made (issue 23)
            },
        }
    ]
    assert rules[0].matches("run_shell", {"command": "git status"})
    assert not rules[0].matches("run_shell", {"command": "git log"})
    assert not rules[0].matches("run_shell", {"command": "git status; rm -rf /"})


async def test_approve_for_session_of_an_unwaivable_command_adds_no_rule(backend: SQLHITLBackend) -> None:
    args = {"command": "git $(touch X)"}
    await make(backend, "h1", data={"arguments": args}, tool_name="run_shell")
    await backend.decide("h1", Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=args_digest(args)))
    assert (await backend.get("h1"))["status"] == "completed"
    assert await backend.run(backend.store.waivers.of_session, "s1") == []


async def test_filtered_paged_listing(backend: SQLHITLBackend) -> None:
    for index in range(30):
        await make(
            backend,
            f"h{index:02d}",
            f"s{index % 3}",
            f"i{index % 6}",
            tool_name="run_shell" if index % 2 else "write_file",
            data={"arguments": {"command": f"echo {index}"} if index % 2 else {"path": f"f{index}.txt"}},
        )
    page = await backend.list_records(RequestQuery(limit=10, offset=10))
    assert [r["hitl_id"] for r in page] == [f"h{i:02d}" for i in range(10, 20)]
    shells = await backend.list_summaries(RequestQuery(tool_name="run_shell", session_id="s1"))
    assert {s.hitl_id for s in shells} == {f"h{i:02d}" for i in range(30) if i % 2 and i % 3 == 1}
    found = await backend.list_summaries(RequestQuery(text="ECHO 17"))
    assert [s.hitl_id for s in found] == ["h17"]
    carol = SQLHITLBackend(store=backend.store, reviewer="carol")
    await carol.respond("h03", {"decision": "reject", "reviewer": "someone else"})
    await carol.aclose()
    history = await backend.list_summaries(RequestQuery(statuses=("completed",)))
    assert [(s.hitl_id, s.decision, s.decided_by) for s in history] == [("h03", "reject", "carol")]


async def test_external_blocks(backend: SQLHITLBackend) -> None:
    first = await backend.emit_block(session_id="s1", invocation_id="i1", kind="text", data={"content": "Hel"})
    await backend.emit_block(
        session_id="s1", invocation_id="i1", kind="text", op="delta", data={"content": "lo"}, block_id=first.block_id
    )
    events = await backend.events("i1")
    assert [e.seq for e in events] == sorted(e.seq for e in events)
    assert events[-1].data == {"content": "lo"} and events[0].block_id == events[1].block_id


async def test_external_runs_and_requests_are_marked(backend: SQLHITLBackend) -> None:
    assert await backend.register_run(session_id="ext-s", invocation_id="ext-i", agent="remote", prompt="go")
    assert not await backend.register_run(session_id="ext-s", invocation_id="ext-i")
    await make(backend, "ext-h", "ext-s", "ext-i", metadata={"agent": "remote", "external": True})
    await make(backend, "local-h", "s1", "i1")
    summaries = {s.hitl_id: s for s in await backend.list_summaries()}
    assert summaries["ext-h"].external and summaries["ext-h"].agent == "remote"
    assert not summaries["local-h"].external
    [run] = [r for r in await backend.list_runs() if r.id == "ext-i"]
    assert run.external and run.agent == "remote" and run.prompt == "go" and run.pending == 1
