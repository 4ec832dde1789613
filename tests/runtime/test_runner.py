"""The runtime end to end with the scripted model on real SQLite: every decision kind, the gate, the timeline."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.records import RequestQuery
from reviewer_app.domain.shell_scopes import CommandScope
from reviewer_app.domain.timeline import BlockKind, BlockOp
from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.hitl import SQLHITLBackend
from tests.runtime.test_runner_support import (
    agent,
    approval,
    eventually,
    messages,
    pending_requests,
    started_runtime,
    timeline,
    tool_results,
)

pytestmark = pytest.mark.asyncio

WRITE = {"name": "write_file", "args": {"path": "notes.txt", "content": "hello\n"}}


def workspace_of(record) -> Path:
    return Path(record.workspace)


async def test_approve_runs_the_tool_once_and_the_timeline_tells_the_story(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "write a note", script=[{"text": "Writing.", "tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        run = await backend.run(backend.store.runs.get, inv)
        assert run.state == "waiting" and run.pending == 1
        assert not (workspace_of(run) / "notes.txt").exists()  # nothing acts before the decision
        assert request["tool_name"] == "write_file"
        assert request["data"]["arguments"] == WRITE["args"]
        assert request["data"]["schema"]["required"] == ["path", "content"]
        assert request["metadata"] == {"agent": "tester"}
        assert request["checkpoint_id"] and request["block_id"] and request["tool_call_id"] == "call_0_0"
        assert await backend.run(backend.store.checkpoints.get, request["checkpoint_id"]) is not None

        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done" and done.finished_at is not None and done.error is None
    assert (workspace_of(done) / "notes.txt").read_text() == "hello\n"
    assert tool_results(await messages(backend, inv)) == {"call_0_0": "wrote 6 bytes to notes.txt"}

    events = await backend.events(inv)
    tool_events = [e for e in events if e.kind is BlockKind.TOOL_USE]
    assert [(e.op, e.data.get("status")) for e in tool_events] == [
        (BlockOp.APPLY, "pending"),
        (BlockOp.PATCH, "running"),
        (BlockOp.PATCH, "success"),
    ]
    assert tool_events[-1].data["result"] == "wrote 6 bytes to notes.txt"
    assert isinstance(tool_events[-1].data["duration_ms"], int)
    blocks = {b.kind: b for b in await timeline(backend, inv)}
    hitl = blocks[BlockKind.HITL]
    assert hitl.data["status"] == "decided" and hitl.data["decision"] == "approve"
    assert hitl.data["resolved_ms"] >= hitl.started_ms
    assert hitl.parent_id == blocks[BlockKind.TOOL_USE].block_id
    assert blocks[BlockKind.END].data["state"] == "done"
    assert [e.seq for e in events] == sorted(e.seq for e in events)


async def test_edit_runs_the_edited_arguments_and_keeps_the_original_on_record(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        edited = {"path": "notes.txt", "content": "edited by reviewer\n"}
        await runtime.decide_and_resume(request["hitl_id"], approval(request, DecisionKind.EDIT, edited_args=edited))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert (workspace_of(done) / "notes.txt").read_text() == "edited by reviewer\n"
    stored = await backend.get(request["hitl_id"])
    assert stored["data"]["arguments"] == WRITE["args"]  # the original stays in the record
    (entry,) = await backend.audit(request["hitl_id"])
    assert entry.decision == "edit" and entry.edited_args == edited and entry.shown_args == WRITE["args"]
    result = tool_results(await messages(backend, inv))["call_0_0"]
    assert "reviewer edited the arguments" in result and "edited by reviewer" in result


async def test_edit_that_breaks_the_schema_is_refused_and_the_run_keeps_waiting(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        with pytest.raises(DecisionError, match="content"):
            await runtime.decide_and_resume(
                request["hitl_id"], approval(request, DecisionKind.EDIT, edited_args={"path": "a"})
            )
        with pytest.raises(DecisionError, match="arguments changed"):
            await runtime.decide_and_resume(
                request["hitl_id"], Decision(DecisionKind.APPROVE, args_sha256=args_digest({}))
            )
        await asyncio.sleep(0.2)
        run = await backend.run(backend.store.runs.get, inv)
        assert run.state == "waiting" and run.pending == 1
        assert not (workspace_of(run) / "notes.txt").exists()
        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        assert (await runtime.wait_for_run(inv, timeout=10)).state == "done"


async def test_reject_with_reason_skips_the_tool_and_tells_the_model(backend: SQLHITLBackend, tmp_path: Path) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=[{"tool_calls": [WRITE]}, {"text": "Understood."}])
        (request,) = await pending_requests(backend, inv)
        await runtime.decide_and_resume(request["hitl_id"], Decision(DecisionKind.REJECT, message="not in this folder"))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert not (workspace_of(done) / "notes.txt").exists()
    conversation = await messages(backend, inv)
    assert tool_results(conversation) == {"call_0_0": "rejected by reviewer: not in this folder"}
    assert conversation[-1] == {"role": "assistant", "content": "Understood."}
    tool_block = next(b for b in await timeline(backend, inv) if b.kind is BlockKind.TOOL_USE)
    assert tool_block.data["status"] == "error" and tool_block.data["decision"] == "reject"


async def test_steer_skips_the_tool_and_sends_guidance_as_a_user_message(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    script = [
        {"tool_calls": [WRITE]},
        {"tool_calls": [{"name": "write_file", "args": {"path": "NOTES.md", "content": "steered\n"}}]},
    ]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        (first,) = await pending_requests(backend, inv)
        await runtime.decide_and_resume(first["hitl_id"], Decision(DecisionKind.STEER, message="use NOTES.md instead"))
        (second,) = await pending_requests(backend, inv)
        assert second["hitl_id"] != first["hitl_id"]
        conversation = await messages(backend, inv)
        guidance = [m for m in conversation if m["role"] == "user"][-1]
        assert guidance["content"] == "Reviewer guidance: use NOTES.md instead"
        tool_index = next(i for i, m in enumerate(conversation) if m["role"] == "tool")
        assert conversation.index(guidance) == tool_index + 1  # after the tool results, before the next turn
        assert "not run" in tool_results(conversation)["call_0_0"]
        await runtime.decide_and_resume(second["hitl_id"], approval(second))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert not (workspace_of(done) / "notes.txt").exists()
    assert (workspace_of(done) / "NOTES.md").read_text() == "steered\n"


async def test_respond_answers_ask_user_and_the_answer_is_the_tool_result(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    ask = {"name": "ask_user", "args": {"question": "Which colour?", "options": ["red", "blue"]}}
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=[{"tool_calls": [ask]}])
        (request,) = await pending_requests(backend, inv)
        assert request["hitl_type"] == "ask_user" and request["resume_mode"] == "response"
        assert request["data"]["question"] == "Which colour?" and request["data"]["options"] == ["red", "blue"]
        with pytest.raises(DecisionError):
            await runtime.decide_and_resume(
                request["hitl_id"], approval(request)
            )  # a question is answered, not approved
        await runtime.decide_and_resume(request["hitl_id"], Decision(DecisionKind.RESPOND, message="blue"))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert tool_results(await messages(backend, inv)) == {"call_0_0": "blue"}


async def test_parallel_calls_each_get_a_request_and_approved_siblings_run_when_one_is_rejected(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    calls = [
        {"name": "write_file", "args": {"path": "a.txt", "content": "a"}},
        {"name": "write_file", "args": {"path": "b.txt", "content": "b"}},
        {"name": "run_shell", "args": {"command": "echo c > c.txt"}},
        {"name": "list_dir", "args": {}},  # not gated: runs at once
    ]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=[{"tool_calls": calls}, {"text": "ok"}])
        requests = await pending_requests(backend, inv, count=3)
        by_path = {r["data"]["arguments"].get("path") or "shell": r for r in requests}
        assert len({r["hitl_id"] for r in requests}) == 3
        ws = workspace_of(await backend.run(backend.store.runs.get, inv))

        await runtime.decide_and_resume(by_path["a.txt"]["hitl_id"], approval(by_path["a.txt"]))

        # The approved call runs while its siblings still wait; the run does not continue yet.
        async def ran_and_waiting() -> Any:
            run = await backend.run(backend.store.runs.get, inv)
            # a.txt exists only once the call's ``running`` was committed: this ``waiting`` is the one after it
            return run if run.state == "waiting" and (ws / "a.txt").exists() else None

        run = await eventually(ran_and_waiting, backend, timeout=30)
        assert (ws / "a.txt").read_text() == "a"
        assert run.pending == 2
        assert sum(1 for m in await messages(backend, inv) if m["role"] == "assistant") == 1

        await runtime.decide_and_resume(by_path["b.txt"]["hitl_id"], Decision(DecisionKind.REJECT, message="no b"))
        await runtime.decide_and_resume(
            by_path["shell"]["hitl_id"], Decision(DecisionKind.STEER, message="skip the shell")
        )
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert (ws / "a.txt").exists() and not (ws / "b.txt").exists() and not (ws / "c.txt").exists()
    conversation = await messages(backend, inv)
    results = tool_results(conversation)
    assert results["call_0_0"].startswith("wrote 1 bytes")
    assert results["call_0_1"] == "rejected by reviewer: no b"
    assert results["call_0_2"].startswith("not run")
    assert results["call_0_3"] == "(empty directory)"  # list_dir ran at once, before any decision
    roles = [m["role"] for m in conversation]
    assert roles == ["system", "user", "assistant", "tool", "tool", "tool", "tool", "user", "assistant"]
    assert [m["tool_call_id"] for m in conversation if m["role"] == "tool"] == [f"call_0_{i}" for i in range(4)]
    assert conversation[7]["content"] == "Reviewer guidance: skip the shell"


async def test_approve_for_session_waives_the_identical_command_but_not_others(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    script = [
        {"tool_calls": [{"name": "run_shell", "args": {"command": "echo one >> log.txt"}}]},
        {"tool_calls": [{"name": "run_shell", "args": {"command": "echo one  >>log.txt"}}]},  # the same, parsed
        {"tool_calls": [{"name": "run_shell", "args": {"command": "touch other.txt"}}]},
    ]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        (first,) = await pending_requests(backend, inv)
        await runtime.decide_and_resume(first["hitl_id"], approval(first, DecisionKind.APPROVE_FOR_SESSION))
        (third,) = await pending_requests(backend, inv)
        assert third["data"]["arguments"]["command"] == "touch other.txt"  # a different command is asked again
        await runtime.decide_and_resume(third["hitl_id"], approval(third))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert (workspace_of(done) / "log.txt").read_text() == "one\none\n"
    all_requests = [r for r in await backend.list_records(RequestQuery(statuses=())) if r["invocation_id"] == inv]
    # the second echo was not asked, but it is on the record: decided by the rule, with its audit row
    asked = [r for r in all_requests if r["user_response"]["reviewer"] == "tester"]
    waived = [r for r in all_requests if r["user_response"]["reviewer"].startswith("session-rule:")]
    assert len(asked) == 2 and len(waived) == 1
    assert waived[0]["data"]["arguments"]["command"] == "echo one  >>log.txt"
    (audit_row,) = await backend.audit(waived[0]["hitl_id"])
    assert audit_row.decision == "approve" and audit_row.reviewer == waived[0]["user_response"]["reviewer"]
    assert (await backend.verify_audit()).ok
    rules = await backend.run(backend.store.waivers.of_session, done.session_id)
    assert [(r.tool_name, r.scope) for r in rules] == [("run_shell", CommandScope.exact("echo one >> log.txt"))]
    second_tool = [b for b in await timeline(backend, inv) if b.kind is BlockKind.TOOL_USE][1]
    assert second_tool.data["gated"] is False and second_tool.data["status"] == "success"
    assert second_tool.data["waived_by"] == waived[0]["user_response"]["reviewer"]


@pytest.mark.skipif(sys.platform == "win32", reason="symlinks")
async def test_workspace_escapes_are_refused_through_the_runner(backend: SQLHITLBackend, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    calls = [
        {"name": "write_file", "args": {"path": "../escape.txt", "content": "x"}},
        {"name": "write_file", "args": {"path": str(tmp_path / "abs.txt"), "content": "x"}},
        {"name": "write_file", "args": {"path": "link/planted.txt", "content": "x"}},
        {"name": "read_file", "args": {"path": "link/secret.txt"}},  # not gated, still confined
    ]
    ws = tmp_path / "workspaces" / "ses_escape"  # where the runtime puts this session's workspace
    ws.mkdir(parents=True)
    os.symlink(outside, ws / "link")
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", session_id="ses_escape", script=[{"tool_calls": calls}])
        requests = await pending_requests(backend, inv, count=3)
        assert workspace_of(await backend.run(backend.store.runs.get, inv)) == ws
        for request in requests:
            await runtime.decide_and_resume(request["hitl_id"], approval(request))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    results = tool_results(await messages(backend, inv))
    assert all(results[f"call_0_{i}"].startswith("error:") for i in range(4)), results
    assert "'..' is not allowed" in results["call_0_0"]
    assert "absolute paths are not allowed" in results["call_0_1"]
    assert "outside the workspace" in results["call_0_2"] and "outside the workspace" in results["call_0_3"]
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "workspaces" / "escape.txt").exists()
    assert not (tmp_path / "abs.txt").exists() and not (outside / "planted.txt").exists()
    statuses = [b.data["status"] for b in await timeline(backend, inv) if b.kind is BlockKind.TOOL_USE]
    assert statuses == ["error"] * 4


async def test_unknown_tools_and_invalid_arguments_go_back_to_the_model_without_a_request(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    calls = [
        {"name": "delete_everything", "args": {}},
        {"name": "write_file", "args": {"path": "x.txt"}},
    ]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=[{"tool_calls": calls}])
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    results = tool_results(await messages(backend, inv))
    assert results["call_0_0"].startswith("error: unknown tool 'delete_everything'")
    assert "content" in results["call_0_1"] and results["call_0_1"].startswith("error:")
    assert await backend.list_records() == []


async def test_expired_request_gets_the_default_reject_recorded_in_the_audit_log(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    expiring = agent("expiring", policy=ApprovalPolicy(expires_after_s=1))
    async with started_runtime(backend, tmp_path, expiring, expiry_interval_s=0.2) as runtime:
        inv = await runtime.start_run("expiring", "x", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        assert request["expires_at"] is not None
        done = await runtime.wait_for_run(inv, timeout=15)
    assert done.state == "done"
    assert not (workspace_of(done) / "notes.txt").exists()
    stored = await backend.get(request["hitl_id"])
    assert stored["status"] == "expired" and stored["user_response"]["decision"] == "reject"
    (entry,) = await backend.audit(request["hitl_id"])
    assert entry.decision == "reject" and entry.reviewer == "system:expiry"
    assert "expired" in tool_results(await messages(backend, inv))["call_0_0"]
    hitl = next(b for b in await timeline(backend, inv) if b.kind is BlockKind.HITL)
    assert hitl.data["expired"] is True and hitl.data["decision"] == "reject"


async def test_expiry_uses_the_agents_configured_default(backend: SQLHITLBackend, tmp_path: Path) -> None:
    lenient = agent("lenient", policy=ApprovalPolicy(expires_after_s=1, default_on_expiry="approve"))
    async with started_runtime(backend, tmp_path, lenient, expiry_interval_s=0.2) as runtime:
        inv = await runtime.start_run("lenient", "x", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        done = await runtime.wait_for_run(inv, timeout=15)
    assert done.state == "done"
    assert (workspace_of(done) / "notes.txt").read_text() == "hello\n"
    (entry,) = await backend.audit(request["hitl_id"])
    assert entry.decision == "approve" and entry.reviewer == "system:expiry"


async def test_cancel_stops_the_run_and_cancels_its_requests_then_follow_up_continues(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=[{"tool_calls": [WRITE]}, {"text": "second"}])
        (request,) = await pending_requests(backend, inv)
        await runtime.cancel_run(inv)
        cancelled = await backend.run(backend.store.runs.get, inv)
        assert cancelled.state == "cancelled" and cancelled.pending == 0
        assert (await backend.get(request["hitl_id"]))["status"] == "cancelled"
        assert inv not in runtime.active_runs()
        with pytest.raises(ValueError, match="already cancelled"):
            await runtime.cancel_run(inv)

        follow = await runtime.follow_up(inv, "carry on")
        done = await runtime.wait_for_run(follow, timeout=10)
    assert done.state == "done" and done.parent_id == inv and done.session_id == cancelled.session_id
    conversation = await messages(backend, follow)
    assert tool_results(conversation)["call_0_0"].startswith("<aborted:")
    assert [m["content"] for m in conversation if m["role"] == "user"] == ["x", "carry on"]
    assert conversation[-1]["content"] == "second"
    assert not (workspace_of(done) / "notes.txt").exists()


async def test_follow_up_continues_the_conversation_in_the_same_session(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    script = [
        {"tool_calls": [{"name": "write_file", "args": {"path": "one.txt", "content": "1"}}]},
        {"text": "first part done"},
        {"tool_calls": [{"name": "read_file", "args": {"path": "one.txt"}}]},
        {"text": "second part done"},
    ]
    async with started_runtime(backend, tmp_path) as runtime:
        first = await runtime.start_run("tester", "part one", script=script)
        (request,) = await pending_requests(backend, first)
        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        assert (await runtime.wait_for_run(first, timeout=10)).state == "done"
        with pytest.raises(ValueError, match="only a failed run"):
            await runtime.retry_run(first)
        second = await runtime.follow_up(first, "part two")
        done = await runtime.wait_for_run(second, timeout=10)
    assert done.state == "done" and done.parent_id == first
    conversation = await messages(backend, second)
    assert [m["content"] for m in conversation if m["role"] == "user"] == ["part one", "part two"]
    assert tool_results(conversation)["call_2_0"] == "1"  # the same workspace, the model's next scripted turn
    assert conversation[-1]["content"] == "second part done"


async def test_retry_starts_a_failed_run_again_from_its_prompt(backend: SQLHITLBackend, tmp_path: Path) -> None:
    short = agent("short", max_turns=1)
    script = [{"tool_calls": [{"name": "list_dir", "args": {}}]}, {"text": "never reached"}]
    async with started_runtime(backend, tmp_path, short) as runtime:
        inv = await runtime.start_run("short", "do it", script=script)
        failed = await runtime.wait_for_run(inv, timeout=10)
        assert failed.state == "failed" and "max_turns" in failed.error
        blocks = await timeline(backend, inv)
        assert [b.kind for b in blocks][-2:] == [BlockKind.ERROR, BlockKind.END]
        retried = await runtime.retry_run(inv)
        again = await runtime.wait_for_run(retried, timeout=10)
    assert again.parent_id == inv and again.session_id == failed.session_id and again.prompt == "do it"
    assert again.state == "failed"
    conversation = await messages(backend, retried)
    assert [m["role"] for m in conversation[:2]] == ["system", "user"] and conversation[1]["content"] == "do it"


async def test_wall_time_budget_excludes_waiting_for_a_reviewer(backend: SQLHITLBackend, tmp_path: Path) -> None:
    # The budget is wide enough for the run's own work on a loaded machine; the wait alone is longer than it.
    budgeted = agent("budgeted", time_budget_s=3.0)
    waited_s = 3.5
    slow = agent("slow", time_budget_s=0.3)
    async with started_runtime(backend, tmp_path, budgeted, slow) as runtime:
        inv = await runtime.start_run("budgeted", "x", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        await asyncio.sleep(waited_s)  # longer than the budget, but spent waiting for a human
        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        done = await runtime.wait_for_run(inv, timeout=30)
        assert done.state == "done"  # the wait, longer than the budget, used none of it
        assert done.active_ms < waited_s * 1000  # the wait is not in the run's active time

        over = await runtime.start_run(
            "slow", "x", script=[{"text": "thinking hard", "delay_ms": 2000, "tool_calls": [WRITE]}]
        )
        failed = await runtime.wait_for_run(over, timeout=10)
    assert failed.state == "failed" and "budget" in failed.error


async def test_concurrency_cap_queues_runs_beyond_it(backend: SQLHITLBackend, tmp_path: Path) -> None:
    # The first two runs last 4 s: still running when all five are started and looked at, on a loaded machine. They
    # take the two slots (each run's task takes its slot before its first await, and runs before the next start
    # returns); the three queued behind them need no such wait to show they run once a slot frees.
    long, short = [{"text": "working", "delay_ms": 4000}], [{"text": "working"}]
    async with started_runtime(backend, tmp_path, max_concurrent_runs=2) as runtime:
        runs = [await runtime.start_run("tester", f"job {i}", script=long if i < 2 else short) for i in range(5)]

        async def two_running() -> list[str] | None:
            states = [(await backend.run(backend.store.runs.get, inv)).state for inv in runs]
            return states if states.count("running") == 2 else None

        states = await eventually(two_running, backend)
        assert states.count("queued") == 3
        finished = [await runtime.wait_for_run(inv, timeout=30) for inv in runs]
    assert [r.state for r in finished] == ["done"] * 5


async def test_a_decision_from_another_backend_resumes_the_run(backend: SQLHITLBackend, db_path: Path, tmp_path: Path):
    """A second connection stands in for another process (the CLI, another window)."""
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        other = SQLHITLBackend(db_path, reviewer="someone-else")
        try:
            await other.decide(request["hitl_id"], approval(request))
        finally:
            await other.aclose()
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    hitl = next(b for b in await timeline(backend, inv) if b.kind is BlockKind.HITL)
    assert hitl.data["reviewer"] == "someone-else"
