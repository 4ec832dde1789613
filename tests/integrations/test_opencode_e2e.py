"""End to end with the real OpenCode CLI (npm ``opencode-ai``): ``opencode run`` against a fake chat-completions
API on 127.0.0.1 (a custom ``@ai-sdk/openai-compatible`` provider in ``OPENCODE_CONFIG_CONTENT``), Reviewer's
plugin installed by ``hook install opencode``, decisions from ``reviewer-app decide``.

OpenCode's own permissions are set to allow, so Reviewer's plugin is the gate. Before it loads a plugin from a
config folder, OpenCode installs its plugin SDK there (``npm install @opencode-ai/plugin``, ~60 MB: most of its
start-up, and a long wait where the registry is slow or unreachable) unless the folder's lockfile already lists it.
The temporary home's config folder gets that install, made once into the test cache, as a user's folder has it
after OpenCode's first start.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.integrations.agent_run import HostE2E, decided_calls
from tests.integrations.fake_chat import FakeChat
from tests.integrations.npm_cli import opencode_binary, opencode_config_dependencies

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

QUIET = {
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_SHARE": "1",
}


def with_plugin_sdk(config: Path) -> None:
    """OpenCode's config folder as its own install of the plugin SDK leaves it. The modules are shared: with the SDK
    in the lockfile OpenCode only checks that ``node_modules`` exists, and Reviewer's plugin imports none of them."""
    installed = opencode_config_dependencies()
    config.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copyfile(installed / name, config / name)
    (config / "node_modules").symlink_to(installed / "node_modules", target_is_directory=True)


CALLS = decided_calls({"description": "edited"})
"""Approved, edited and rejected in one session: each start of the CLI costs ~10 s of CPU."""


async def test_real_opencode_runs_each_command_exactly_as_decided(host_e2e: HostE2E) -> None:
    xdg = [key for key in os.environ if key.startswith("XDG_")]  # its config folder: the temporary home's
    env = host_e2e.install("opencode", drop=xdg, **QUIET)
    with_plugin_sdk(host_e2e.home / ".config" / "opencode")
    with FakeChat("bash", *(call.asked(description="a marker") for call in CALLS)) as api:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": api.url, "apiKey": "dummy"},
            "models": {"fake-model": {"name": "Fake", "tool_call": True}},
        }
        config = {"provider": {"fake": provider}, "model": "fake/fake-model", "permission": {"bash": "allow"}}
        env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
        command = [str(opencode_binary()), "run", "touch a marker"]
        result = await host_e2e.run(env, command, CALLS, start_within=120)
        results = api.tool_results()
    await host_e2e.check(result, CALLS, results, host="opencode", tool="bash", edits=True, session_end=False)
