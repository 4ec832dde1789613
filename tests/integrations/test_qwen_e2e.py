"""End to end with the real Qwen Code CLI (npm ``@qwen-code/qwen-code``) against a fake OpenAI chat-completions
API on 127.0.0.1 (``OPENAI_BASE_URL``), the PreToolUse hook installed by ``hook install qwen``.

Qwen's PreToolUse answer carries no edited input, so these requests offer no "edit" (a PermissionRequest hook
would, but Qwen's non-interactive mode refuses a call before that hook fires). ``--approval-mode yolo`` makes
Reviewer the gate, as with Gemini.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.agent_run import (
    MARKER,
    agent_env,
    check_decided,
    decisions,
    install_hook,
    merge_json,
    run_and_decide,
)
from tests.integrations.fake_chat import FakeChat
from tests.integrations.npm_cli import qwen_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

OFFLINE = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


@pytest.mark.parametrize(("decision", "extra"), decisions(None))
async def test_real_qwen_runs_the_command_exactly_as_decided(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, decision: str, extra: list[str]
) -> None:
    qwen = qwen_binary()
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    env = agent_env(home, OPENAI_API_KEY="dummy", OPENAI_MODEL="fake-model", QWEN_CODE_SUPPRESS_YOLO_WARNING="1")
    install_hook(env, "qwen", db_path)
    settings = home / ".qwen" / "settings.json"
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"]
    merge_json(settings, OFFLINE)
    with FakeChat("run_shell_command", {"command": MARKER, "description": "a marker"}) as api:
        env["OPENAI_BASE_URL"] = api.url
        command = [str(qwen), "--approval-mode", "yolo", "-p", "touch a marker"]
        result = await run_and_decide(backend, db_path, env, command, project, decision, *extra)
        results = api.tool_results()
    await check_decided(
        backend,
        result,
        project,
        decision,
        results,
        host="qwen",
        tool="run_shell_command",
        edits=False,
        session_end=True,
    )
