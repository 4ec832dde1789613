"""Context flags are part of what a rule or waiver covers (issue 23): Claude Code's ``dangerouslyDisableSandbox``
and ``run_in_background``, and MCP annotations, where ``destructiveHint`` outranks ``readOnlyHint``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reviewer_app.domain.risk import assess
from reviewer_app.domain.rules import Rule, ToolCall, evaluate
from reviewer_app.domain.waivers import rule_for
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.mcp_proxy.gating import GatePolicy, risk_of
from tests.integrations.conftest import connect, notes_upstream, pending_request, proxy_command

NOW = 1_000_000.0
SANDBOXED = {"command": "npm test", "description": "run the tests"}
UNSANDBOXED = {**SANDBOXED, "dangerouslyDisableSandbox": True}
BACKGROUND = {**SANDBOXED, "run_in_background": True}


def test_a_session_waiver_for_a_sandboxed_call_does_not_cover_an_unsandboxed_one() -> None:
    waiver = rule_for("Bash", SANDBOXED)
    assert waiver is not None
    assert waiver.matches("Bash", SANDBOXED, cwd="/w")
    assert not waiver.matches("Bash", UNSANDBOXED, cwd="/w")
    assert not waiver.matches("Bash", BACKGROUND, cwd="/w")
    granted = rule_for("Bash", UNSANDBOXED)
    assert granted is not None and granted.matches("Bash", UNSANDBOXED, cwd="/w")
    assert "sandbox" in granted.describe()


def test_a_rule_never_allows_a_call_with_a_flag_it_does_not_name() -> None:
    rules = [Rule("allow", "Bash(npm test)", created_at=NOW)]
    assert evaluate(rules, ToolCall("Bash", SANDBOXED, cwd="/w"), NOW) is not None
    assert evaluate(rules, ToolCall("Bash", UNSANDBOXED, cwd="/w"), NOW) is None
    deny = [Rule("deny", "Bash(npm test)", created_at=NOW)]
    verdict = evaluate(deny, ToolCall("Bash", UNSANDBOXED, cwd="/w"), NOW)
    assert verdict is not None and verdict.effect == "deny"


def test_the_unsandboxed_flag_is_shown_as_a_risk_reason() -> None:
    risk = assess(ToolCall("Bash", UNSANDBOXED, cwd="/w"))
    assert risk.high and any("sandbox" in reason for reason in risk.reasons)
    assert any("background" in reason for reason in assess(ToolCall("Bash", BACKGROUND, cwd="/w")).reasons)


BOTH = {"annotations": {"readOnlyHint": True, "destructiveHint": True}}


def test_destructive_outranks_read_only_in_the_gate() -> None:
    assert GatePolicy("notes").needs_review("purge", BOTH)
    assert "destructive" in risk_of(BOTH)


@pytest.mark.asyncio
async def test_a_tool_that_says_read_only_and_destructive_waits_for_review(
    db_path: Path,
    env: dict[str, str],
    backend: SQLHITLBackend,
    notes_file: Path,
) -> None:
    notes_file.write_text("[misc] keep me\n")
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        await session.list_tools()
        call = asyncio.ensure_future(session.call_tool("tidy_notes", {}))
        (record,) = await pending_request(backend)
        assert not call.done() and notes_file.read_text() == "[misc] keep me\n"
        assert record["tool_name"] == "mcp__notes__tidy_notes"
        call.cancel()
