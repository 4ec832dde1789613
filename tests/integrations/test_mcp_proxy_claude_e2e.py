"""End to end with a real MCP host: the real Claude Code CLI (``claude -p --mcp-config``) against a fake Messages
API, its MCP server started behind ``reviewer-app mcp-proxy``; the test decides the waiting call as a reviewer
would, and the upstream tool runs (or not) exactly as decided.

Claude Code's own permission prompt is switched off for the one MCP tool (``--allowedTools``), so Reviewer's
proxy is the only gate. ``claude -p`` waits for its MCP servers to connect before the first model request, up to
``MCP_TIMEOUT`` (raised here: the proxy and its upstream are two Python processes on a busy machine). Tool search
is off (``ENABLE_TOOL_SEARCH=false``): by default Claude Code defers MCP tools behind its ``ToolSearch`` tool, so
the model's first request would not list ``mcp__testsrv__add_note``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.timeline import BlockKind
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.conftest import NOTES_SERVER
from tests.integrations.fake_anthropic import FakeAnthropic
from tests.integrations.hook_helpers import wait_pending
from tests.integrations.npm_cli import claude_binary
from tests.integrations.test_claude_code_e2e import _env
from tests.runtime.test_runner_support import approval, eventually, timeline

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

SERVER = "testsrv"
TOOL = f"mcp__{SERVER}__add_note"
PROMPT = "please add a note saying buy milk"


def _mcp_config(path: Path, db_path: Path, notes_file: Path) -> Path:
    """Claude Code's ``--mcp-config`` file: the test server, started behind the proxy."""
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": [
            "-m",
            "reviewer_app",
            "mcp-proxy",
            "--name",
            SERVER,
            "--db",
            str(db_path),
            "--",
            sys.executable,
            str(NOTES_SERVER),
        ],
        "env": {"NOTES_FILE": str(notes_file)},
    }
    path.write_text(json.dumps({"mcpServers": {SERVER: server}}), encoding="utf-8")
    return path


def _tool_results(api: FakeAnthropic) -> list[dict[str, Any]]:
    """Every tool_result block the CLI sent back to the fake API, as sent."""
    return [
        block
        for body in api.requests
        for message in body.get("messages") or []
        if message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]


def _text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


@pytest.mark.parametrize(
    ("kind", "extra"),
    [(DecisionKind.APPROVE, {}), (DecisionKind.REJECT, {"message": "not today"})],
)
async def test_real_claude_code_calls_an_mcp_tool_through_the_proxy_as_decided(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, kind: DecisionKind, extra: dict[str, Any]
) -> None:
    claude = claude_binary()
    project = tmp_path / "project"
    project.mkdir()
    notes_file = tmp_path / "notes.txt"
    config = _mcp_config(tmp_path / "mcp.json", db_path, notes_file)
    arguments = {"text": "buy milk"}
    command = [
        str(claude),
        "-p",
        PROMPT,
        "--output-format",
        "json",
        "--mcp-config",
        str(config),
        "--strict-mcp-config",
        "--allowedTools",
        TOOL,
    ]
    with FakeAnthropic(TOOL, arguments) as api:
        agent = await asyncio.to_thread(
            subprocess.Popen,
            command,
            cwd=project,
            env={**_env(tmp_path, api.url), "ENABLE_TOOL_SEARCH": "false", "MCP_TIMEOUT": "120000"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            [record] = await wait_pending(backend, timeout=90)
            assert record["tool_name"] == TOOL
            assert record["metadata"]["agent"] == "claude-code"  # the clientInfo name Claude Code sends
            assert record["data"]["arguments"] == arguments
            assert not notes_file.exists()  # the upstream waits for the decision
            await backend.decide(record["hitl_id"], approval(record, kind, **extra))
            out, err = await asyncio.to_thread(agent.communicate, timeout=120)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.communicate()
        assert agent.returncode == 0, err.decode()[-2000:]
        results = _tool_results(api)

    answer = json.loads(out)
    [result] = {r["tool_use_id"]: r for r in results}.values()
    assert result["tool_use_id"] == "toolu_fake_0001"
    if kind is DecisionKind.APPROVE:
        assert notes_file.read_text() == "[misc] buy milk\n"
        assert "added note: buy milk" in _text(result) and not result.get("is_error")
        assert "added note: buy milk" in answer["result"]
    else:
        assert not notes_file.exists()  # the upstream never ran
        assert result.get("is_error") is True
        assert "rejected by reviewer: not today" in _text(result)

    # the proxy's session: host and server as its title, the call in its timeline
    [run] = [run for run in await backend.list_runs() if run.id == record["invocation_id"]]
    assert run.prompt == f"claude-code · {SERVER}"
    assert run.agent == "claude-code" and run.external is True

    async def finished_call() -> list[Any] | None:
        blocks = [b for b in await timeline(backend, run.id) if b.kind is BlockKind.TOOL_USE]
        return blocks if blocks and blocks[0].data.get("status") in ("success", "error") else None

    [block] = await eventually(finished_call, backend)
    assert block.data["name"] == TOOL and block.data["gated"] is True
    assert block.data["status"] == ("success" if kind is DecisionKind.APPROVE else "error")
    [hitl] = [b for b in await timeline(backend, run.id) if b.kind is BlockKind.HITL]
    assert hitl.data["decision"] == kind.value
    assert (await backend.verify_audit()).ok
