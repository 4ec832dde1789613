"""End to end with the real Qwen Code CLI (npm ``@qwen-code/qwen-code``) against a fake OpenAI chat-completions
API on 127.0.0.1 (``OPENAI_BASE_URL``), the PreToolUse hook installed by ``hook install qwen``.

Qwen's PreToolUse answer carries no edited input, so these requests offer no "edit" (a PermissionRequest hook
would, but Qwen's non-interactive mode refuses a call before that hook fires). ``--approval-mode yolo`` makes
Reviewer the gate, as with Gemini.
"""

from __future__ import annotations

import json

import pytest

from tests.integrations.agent_run import HostE2E, decided_calls, merge_json
from tests.integrations.fake_chat import FakeChat
from tests.integrations.npm_cli import qwen_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

OFFLINE = {
    "security": {"auth": {"selectedType": "openai"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


CALLS = decided_calls(None)
"""Approved and rejected in one session: each start of the CLI costs ~10 s of CPU."""


async def test_real_qwen_runs_each_command_exactly_as_decided(host_e2e: HostE2E) -> None:
    env = host_e2e.install(
        "qwen", OPENAI_API_KEY="dummy", OPENAI_MODEL="fake-model", QWEN_CODE_SUPPRESS_YOLO_WARNING="1"
    )
    settings = host_e2e.home / ".qwen" / "settings.json"
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"]
    merge_json(settings, OFFLINE)
    with FakeChat("run_shell_command", *(call.asked(description="a marker") for call in CALLS)) as api:
        env["OPENAI_BASE_URL"] = api.url
        command = [str(qwen_binary()), "--approval-mode", "yolo", "-p", "touch a marker"]
        result = await host_e2e.run(env, command, CALLS)
        results = api.tool_results()
    await host_e2e.check(result, CALLS, results, host="qwen", tool="run_shell_command", edits=False)
