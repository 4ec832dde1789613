"""Framework adapters and the MCP proxy reach the rules through ReviewClient: one engine, on the record."""

from __future__ import annotations

import time

import pytest

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import ExternalCall, ReviewClient

pytestmark = pytest.mark.asyncio


def _call(hitl_id: str, tool_name: str, arguments: dict, **extra) -> ExternalCall:
    return ExternalCall(
        hitl_id=hitl_id,
        agent="langgraph",
        session_id="s-adapter",
        invocation_id="i-adapter",
        tool_name=tool_name,
        arguments=arguments,
        title="triage issues",
        **extra,
    )


async def test_allow_and_deny_rules_settle_adapter_calls_on_the_record(backend: SQLHITLBackend) -> None:
    allow = await backend.add_rule(Rule.create("allow", "mcp__github__*", now=time.time()))
    deny = await backend.add_rule(Rule.create("deny", "mcp__github__delete_repo", now=time.time()))
    client = ReviewClient(backend, agent="langgraph")

    allowed = await client.review(_call("h-allow", "mcp__github__create_issue", {"title": "bug"}), timeout=5)
    assert allowed.runs_tool and allowed.kind is DecisionKind.APPROVE
    assert allowed.reviewer == f"rule:{allow.rule.id}" and allowed.arguments == {"title": "bug"}

    denied = await client.review(_call("h-deny", "mcp__github__delete_repo", {"repo": "x"}), timeout=5)
    assert not denied.runs_tool and denied.kind is DecisionKind.REJECT
    assert f"denied by rule {deny.rule.id}: mcp__github__delete_repo" in denied.text_for_model()

    for hitl_id, decision, rule_id in (("h-allow", "approve", allow.rule.id), ("h-deny", "reject", deny.rule.id)):
        (entry,) = await backend.audit(hitl_id)
        assert entry.decision == decision and entry.reviewer == f"rule:{rule_id}"
    run = await backend.get_run("i-adapter")
    assert run is not None  # the run is on the board with its decided requests
    assert (await backend.verify_audit()).ok
    hits = {entry.rule.id: entry.hit_count for entry in await backend.list_rules()}
    assert hits == {allow.rule.id: 1, deny.rule.id: 1}

    # The same call submitted again (a host retrying) finds its record; the rule is not counted twice.
    again = await client.review(_call("h-allow", "mcp__github__create_issue", {"title": "bug"}), timeout=5)
    assert again.hitl_id == "h-allow"
    assert {entry.rule.id: entry.hit_count for entry in await backend.list_rules()}[allow.rule.id] == 1


async def test_an_ask_rule_or_no_rule_leaves_the_call_to_a_human(backend: SQLHITLBackend) -> None:
    await backend.add_rule(Rule.create("allow", "mcp__github__*", now=time.time()))
    await backend.add_rule(Rule.create("ask", "mcp__github__merge_pr", now=time.time()))
    client = ReviewClient(backend, agent="langgraph")
    asked = await client.submit(_call("h-ask", "mcp__github__merge_pr", {"pr": 1}))
    nothing = await client.submit(_call("h-none", "mcp__slack__post", {"text": "hi"}))
    assert asked["status"] == "pending" and nothing["status"] == "pending"


async def test_rule_scopes_apply_to_adapter_calls(backend: SQLHITLBackend) -> None:
    await backend.add_rule(Rule.create("allow", "mcp__github__*", scope="agent:someone-else", now=time.time()))
    client = ReviewClient(backend, agent="langgraph")
    record = await client.submit(_call("h-scope", "mcp__github__create_issue", {"title": "bug"}))
    assert record["status"] == "pending"  # the rule is for another agent
