"""End to end with the real OpenCode CLI (npm ``opencode-ai``): ``opencode run`` against a fake chat-completions
API on 127.0.0.1 (a custom ``@ai-sdk/openai-compatible`` provider in ``OPENCODE_CONFIG_CONTENT``), Reviewer's
plugin installed by ``hook install opencode``, decisions from ``reviewer-app decide``.

OpenCode's own permissions are set to allow, so Reviewer's plugin is the gate. It starts slowly offline (it
tries to fetch its plugin SDK for the config directory first), hence the longer start-up allowance.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.agent_run import (
    EDITED,
    MARKER,
    agent_env,
    check_decided,
    decisions,
    install_hook,
    run_and_decide,
)
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
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, decision: str, extra: list[str]
) -> None:
    opencode = opencode_binary()
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    env = agent_env(home, PWD=str(project), **QUIET)  # OpenCode takes its directory from $PWD
    for key in [key for key in env if key.startswith("XDG_")]:
        del env[key]
    install_hook(env, "opencode", db_path)
    with FakeChat("bash", {"command": MARKER, "description": "a marker"}) as api:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Fake",
            "options": {"baseURL": api.url, "apiKey": "dummy"},
            "models": {"fake-model": {"name": "Fake", "tool_call": True}},
        }
        config = {"provider": {"fake": provider}, "model": "fake/fake-model", "permission": {"bash": "allow"}}
        env["OPENCODE_CONFIG_CONTENT"] = json.dumps(config)
        command = [str(opencode), "run", "touch a marker"]
        result = await run_and_decide(backend, db_path, env, command, project, decision, *extra, start_within=120)
        results = api.tool_results()
    await check_decided(
        backend, result, project, decision, results, host="opencode", tool="bash", edits=True, session_end=False
    )
