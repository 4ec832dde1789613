"""Persistent rules at our runtime's gate: allow runs with no human, deny tells the model why, ask beats a waiver.

Every automatic decision is on the record: a request decided by ``rule:<id>`` with its audit row.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.records import RequestQuery
from reviewer_app.domain.rules import Rule
from reviewer_app.domain.timeline import BlockKind
from reviewer_app.hitl import SQLHITLBackend
from tests.runtime.test_runner_support import (
    approval,
    messages,
    pending_requests,
    started_runtime,
    timeline,
    tool_results,
)

pytestmark = pytest.mark.asyncio


async def _requests_of(backend: SQLHITLBackend, invocation_id: str) -> list[dict]:
    records = await backend.list_records(RequestQuery(statuses=()))
    return [r for r in records if r["invocation_id"] == invocation_id]


async def test_allow_rule_runs_the_call_with_no_human_and_records_the_decision(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    stored = await backend.add_rule(Rule.create("allow", "write_file(notes/*.txt)", now=time.time()))
    rule_id = stored.rule.id
    arguments = {"path": "notes/out.txt", "content": "hi\n"}
    script = [{"tool_calls": [{"name": "write_file", "args": arguments}]}]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert (Path(done.workspace) / "notes" / "out.txt").read_text() == "hi\n"
    (request,) = await _requests_of(backend, inv)
    assert request["status"] == "completed"
    assert request["user_response"]["decision"] == "approve"
    assert request["user_response"]["reviewer"] == f"rule:{rule_id}"
    assert request["user_response"]["message"] == f"allowed by rule {rule_id}: write_file(notes/*.txt)"
    (entry,) = await backend.audit(request["hitl_id"])
    assert entry.decision == "approve" and entry.reviewer == f"rule:{rule_id}"
    assert entry.shown_args == arguments
    assert (await backend.verify_audit()).ok
    (listed,) = await backend.list_rules()
    assert listed.hit_count == 1 and listed.last_hit_at is not None
    hitl = next(b for b in await timeline(backend, inv) if b.kind is BlockKind.HITL)
    assert hitl.data["reviewer"] == f"rule:{rule_id}" and hitl.data["decision"] == "approve"


async def test_deny_rule_blocks_the_call_and_the_model_is_told_which_rule(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    stored = await backend.add_rule(Rule.create("deny", "write_file(*.env)", note="no secrets", now=time.time()))
    rule_id = stored.rule.id
    script = [{"tool_calls": [{"name": "write_file", "args": {"path": "config/.env", "content": "KEY=1"}}]}]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert not (Path(done.workspace) / "config" / ".env").exists()
    result = tool_results(await messages(backend, inv))["call_0_0"]
    assert f"denied by rule {rule_id}: write_file(*.env)" in result and "no secrets" in result
    (request,) = await _requests_of(backend, inv)
    assert request["status"] == "completed" and request["user_response"]["decision"] == "reject"
    assert request["user_response"]["reviewer"] == f"rule:{rule_id}"
    (entry,) = await backend.audit(request["hitl_id"])
    assert entry.decision == "reject" and entry.reviewer == f"rule:{rule_id}"
    assert (await backend.verify_audit()).ok
    tool = next(b for b in await timeline(backend, inv) if b.kind is BlockKind.TOOL_USE)
    assert tool.data["status"] == "error"


async def test_ask_rule_beats_an_approve_for_session_waiver(backend: SQLHITLBackend, tmp_path: Path) -> None:
    script = [
        {"tool_calls": [{"name": "run_shell", "args": {"command": "echo one >> log.txt"}}]},
        {"tool_calls": [{"name": "run_shell", "args": {"command": "echo one >> log.txt"}}]},
    ]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        (first,) = await pending_requests(backend, inv)
        # The session waiver would let the second, identical command through; an ask rule added now must not.
        await backend.add_rule(Rule.create("ask", "run_shell(echo:*)", now=time.time()))
        await runtime.decide_and_resume(first["hitl_id"], approval(first, DecisionKind.APPROVE_FOR_SESSION))

        async def second_pending() -> list[dict] | None:
            pending = await backend.get_pending_by_invocation(inv)
            return pending or None

        from tests.runtime.test_runner_support import eventually

        (second,) = await eventually(second_pending, backend)
        assert second["hitl_id"] != first["hitl_id"]
        assert await backend.session_rules(first["session_id"])  # the waiver exists, and was overruled
        await runtime.decide_and_resume(second["hitl_id"], approval(second))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert (Path(done.workspace) / "log.txt").read_text() == "one\none\n"


async def test_high_risk_command_is_not_settled_by_a_prefix_allow(backend: SQLHITLBackend, tmp_path: Path) -> None:
    await backend.add_rule(Rule.create("allow", "run_shell(rm:*)", now=time.time()))
    script = [{"tool_calls": [{"name": "run_shell", "args": {"command": "rm -rf src"}}]}]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        (request,) = await pending_requests(backend, inv)  # asked: the prefix rule does not waive rm -rf
        assert request["status"] == "pending"
        await runtime.decide_and_resume(request["hitl_id"], approval(request, DecisionKind.REJECT))
        await runtime.wait_for_run(inv, timeout=10)
    (listed,) = await backend.list_rules()
    assert listed.hit_count == 0


async def test_expired_and_revoked_rules_decide_nothing(backend: SQLHITLBackend, tmp_path: Path) -> None:
    expired = Rule("allow", "run_shell(echo:*)", expires_at=time.time() - 1, created_at=time.time() - 10)
    await backend.add_rule(expired)
    revoked = await backend.add_rule(Rule.create("allow", "run_shell(echo hi)", now=time.time()))
    assert await backend.revoke_rule(revoked.rule.id)
    assert not await backend.revoke_rule(revoked.rule.id)
    assert await backend.list_rules() == []
    script = [{"tool_calls": [{"name": "run_shell", "args": {"command": "echo hi"}}]}]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        (request,) = await pending_requests(backend, inv)
        assert request["status"] == "pending"
        await runtime.decide_and_resume(request["hitl_id"], approval(request))
        await runtime.wait_for_run(inv, timeout=10)


async def test_a_new_rule_settles_the_matching_pending_requests_and_the_run_goes_on(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    arguments = {"path": "notes/a.txt", "content": "a\n"}
    script = [
        {"tool_calls": [{"name": "write_file", "args": arguments}, {"name": "run_shell", "args": {"command": "ls"}}]}
    ]
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        requests = await pending_requests(backend, inv, count=2)
        rule = (await backend.add_rule(Rule.create("allow", "write_file(notes/**)", now=time.time()))).rule
        settled = await backend.settle_pending_by_rule(rule.id)
        write_request = next(r for r in requests if r["tool_name"] == "write_file")
        assert [r["hitl_id"] for r in settled] == [write_request["hitl_id"]]  # only what the rule matches
        assert settled[0]["user_response"]["reviewer"] == f"rule:{rule.id}"
        assert await backend.settle_pending_by_rule(rule.id) == []  # nothing left to settle
        (shell_request,) = await backend.get_pending_by_invocation(inv)
        await runtime.decide_and_resume(shell_request["hitl_id"], approval(shell_request, DecisionKind.REJECT))
        done = await runtime.wait_for_run(inv, timeout=10)
    assert done.state == "done"
    assert (Path(done.workspace) / "notes" / "a.txt").read_text() == "a\n"
    (entry,) = await backend.audit(write_request["hitl_id"])
    assert entry.reviewer == f"rule:{rule.id}" and entry.decision == "approve"
    assert (await backend.list_rules())[0].hit_count == 1
    assert (await backend.verify_audit()).ok
