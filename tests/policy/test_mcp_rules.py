"""The MCP proxy (the real ``reviewer-app mcp-proxy`` process, a real upstream) obeys the persistent rules."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.records import RequestQuery
from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.conftest import connect, decide_first, notes_upstream, proxy_command

pytestmark = pytest.mark.asyncio


def text_of(result: Any) -> str:
    return "\n".join(item.text for item in result.content if getattr(item, "type", None) == "text")


async def test_deny_allow_and_ask_rules_reach_the_mcp_proxy(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    notes_file.write_text("[misc] keep\n")
    deny = await backend.add_rule(Rule.create("deny", "mcp__notes__wipe_notes", now=time.time()))
    allow = await backend.add_rule(Rule.create("allow", "mcp__notes__add_note", now=time.time()))
    await backend.add_rule(Rule.create("ask", "mcp__notes__read_notes", now=time.time()))
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        await session.list_tools()
        wiped = await session.call_tool("wipe_notes", {})  # no reviewer acts: the deny rule answers
        assert wiped.is_error is True
        assert text_of(wiped) == f"denied by rule {deny.rule.id}: mcp__notes__wipe_notes"
        added = await session.call_tool("add_note", {"text": "one"})  # gated by default; the allow rule runs it
        assert added.is_error is not True
        # read_notes is read-only (never asked by default); the ask rule makes it wait for a human
        reading = asyncio.ensure_future(session.call_tool("read_notes", {}))
        await decide_first(backend, DecisionKind.APPROVE)
        assert "[misc] one" in text_of(await reading)
    assert notes_file.read_text() == "[misc] keep\n[misc] one\n"
    records = {r["tool_name"]: r for r in await backend.list_records(RequestQuery(statuses=()))}
    assert records["mcp__notes__wipe_notes"]["user_response"]["reviewer"] == f"rule:{deny.rule.id}"
    assert records["mcp__notes__add_note"]["user_response"]["reviewer"] == f"rule:{allow.rule.id}"
    assert records["mcp__notes__read_notes"]["user_response"]["reviewer"] != f"rule:{allow.rule.id}"
    assert (await backend.verify_audit()).ok
