"""End to end with the real Gemini CLI (npm ``@google/gemini-cli``) against a fake Gemini API on 127.0.0.1, the
BeforeTool hook installed by ``hook install gemini``, decisions from ``reviewer-app decide``.

Gemini applies its own approval mode after a hook's allow: the runs use ``--approval-mode yolo`` so Reviewer is
the gate (documented in docs/hosts.md).
"""

from __future__ import annotations

import json

import pytest

from tests.integrations.agent_run import HostE2E, decided_calls, merge_json
from tests.integrations.fake_gemini import FakeGemini
from tests.integrations.npm_cli import gemini_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

OFFLINE = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


CALLS = decided_calls({"description": "edited"})
"""Approved, edited and rejected in one session: each start of the CLI costs ~8 s of CPU."""


async def test_real_gemini_runs_each_command_exactly_as_decided(host_e2e: HostE2E) -> None:
    env = host_e2e.install("gemini", GEMINI_API_KEY="dummy")
    settings = host_e2e.home / ".gemini" / "settings.json"
    assert json.loads(settings.read_text())["hooks"]["BeforeTool"]
    merge_json(settings, OFFLINE)
    with FakeGemini("run_shell_command", *(call.asked(description="a marker") for call in CALLS)) as api:
        env["GOOGLE_GEMINI_BASE_URL"] = api.url
        command = [str(gemini_binary()), "--approval-mode", "yolo", "-p", "touch a marker"]
        result = await host_e2e.run(env, command, CALLS)
        responses = api.function_responses()
    await host_e2e.check(result, CALLS, responses, host="gemini", tool="run_shell_command", edits=True)
