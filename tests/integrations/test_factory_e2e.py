"""End to end with Factory's real droid CLI (npm ``@factory/cli-linux-x64``) offline: ``FACTORY_AIRGAP_ENABLED``
and a custom model (``customModels``, a generic chat-completions provider) pointing at a fake API on 127.0.0.1,
no Factory login; the PreToolUse hook installed by ``hook install factory``, decisions from ``reviewer-app decide``.

``droid exec --auto high`` lets a non-interactive run act at all; Reviewer's hook is then the gate.
"""

from __future__ import annotations

import json

import pytest

from tests.integrations.agent_run import HostE2E, decided_calls, merge_json
from tests.integrations.fake_chat import FakeChat
from tests.integrations.npm_cli import droid_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

RISK = {"riskLevelReason": "creates a file", "riskLevel": "low"}
"""droid's Execute refuses a call without its risk fields."""


CALLS = decided_calls(RISK)
"""Approved, edited and rejected in one session: each start of the CLI costs ~6 s of CPU."""


async def test_real_droid_runs_each_command_exactly_as_decided(host_e2e: HostE2E) -> None:
    env = host_e2e.install("factory", FACTORY_AIRGAP_ENABLED="true", FACTORY_DISABLE_KEYRING="1")
    settings = host_e2e.home / ".factory" / "settings.json"
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"]
    with FakeChat("Execute", *(call.asked(**RISK) for call in CALLS)) as api:
        model = {"model": "fake-model", "displayName": "Fake", "baseUrl": api.url, "apiKey": "dummy"}
        merge_json(settings, {"customModels": [{**model, "provider": "generic-chat-completion-api"}]})
        command = [str(droid_binary()), "exec", "--auto", "high", "-m", "custom:fake-model", "touch a marker"]
        result = await host_e2e.run(env, command, CALLS)
        results = api.tool_results()
    await host_e2e.check(result, CALLS, results, host="factory", tool="Execute", edits=True)
