"""End to end with the real GitHub Copilot CLI (npm ``@github/copilot``) in its offline mode: ``COPILOT_OFFLINE``
with a BYOK provider (``COPILOT_PROVIDER_BASE_URL``) pointing at a fake chat-completions API on 127.0.0.1, no
GitHub login; the preToolUse hook installed by ``hook install copilot``, decisions from ``reviewer-app decide``.

``--allow-all-tools`` lets a non-interactive run act at all; Reviewer's hook is then the gate.
"""

from __future__ import annotations

import json

import pytest

from tests.integrations.agent_run import HostE2E, decided_calls
from tests.integrations.fake_chat import FakeChat
from tests.integrations.npm_cli import copilot_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


CALLS = decided_calls({"description": "edited"})
"""Approved, edited and rejected in one session: each start of the CLI costs ~8 s of CPU."""


async def test_real_copilot_runs_each_command_exactly_as_decided(host_e2e: HostE2E) -> None:
    tokens = ("GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN", "COPILOT_HOME")
    env = host_e2e.install("copilot", drop=tokens, COPILOT_OFFLINE="true", COPILOT_AUTO_UPDATE="false")
    assert json.loads((host_e2e.home / ".copilot" / "hooks" / "reviewer.json").read_text())["hooks"]["preToolUse"]
    with FakeChat("bash", *(call.asked(description="a marker") for call in CALLS)) as api:
        env.update(COPILOT_PROVIDER_BASE_URL=api.url, COPILOT_MODEL="fake-model", COPILOT_PROVIDER_API_KEY="dummy")
        command = [str(copilot_binary()), "-p", "touch a marker", "--allow-all-tools"]
        result = await host_e2e.run(env, command, CALLS)
        results = api.tool_results()
    await host_e2e.check(result, CALLS, results, host="copilot", tool="bash", edits=True)
