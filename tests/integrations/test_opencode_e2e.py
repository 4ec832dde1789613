"""End to end with the real OpenCode CLI (npm ``opencode-ai``): ``opencode run`` against a fake chat-completions
API on 127.0.0.1 (a custom ``@ai-sdk/openai-compatible`` provider in ``OPENCODE_CONFIG_CONTENT``), Reviewer's
plugin installed by ``hook install opencode``, decisions from ``reviewer-app decide``.

OpenCode's own permissions are set to allow, so Reviewer's plugin is the gate. It starts slowly offline (it
tries to fetch its plugin SDK for the config directory first), hence the longer start-up allowance.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.integrations.agent_run import EDITED, MARKER, HostE2E, decisions
from tests.integrations.fake_chat import FakeChat
from tests.integrations.npm_cli import opencode_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}


@pytest.mark.parametrize(("decision", "extra"), decisions({"command": EDITED, "description": "edited"}))
async def test_real_opencode_runs_the_command_exactly_as_decided(
    host_e2e: HostE2E, decision: str, extra: list[str]
) -> None:
    xdg = [key for key in os.environ if key.startswith("XDG_")]  # its config folder: the temporary home's
    env = host_e2e.install("opencode", drop=xdg, **QUIET)
    with FakeChat("bash", {"command": MARKER, "description": "a marker"}) as api:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": api.url, "apiKey": "dummy"},
            "models": {"fake-model": {"name": "Fake", "tool_call": True}},
        }
        config = {"provider": {"fake": provider}, "model": "fake/fake-model", "permission": {"bash": "allow"}}
        env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
        command = [str(opencode_binary()), "run", "touch a marker"]
        result = await host_e2e.run(env, command, decision, extra, start_within=120)
        results = api.tool_results()
    await host_e2e.check(result, decision, results, host="opencode", tool="bash", edits=True, session_end=False)
