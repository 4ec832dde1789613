"""End to end with Factory's real droid CLI (npm ``@factory/cli-linux-x64``) offline: ``FACTORY_AIRGAP_ENABLED``
and a custom model (``customModels``, a generic chat-completions provider) pointing at a fake API on 127.0.0.1,
no Factory login; the PreToolUse hook installed by ``hook install factory``, decisions from ``reviewer-app decide``.

``droid exec --auto high`` lets a non-interactive run act at all; Reviewer's hook is then the gate.
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
    merge_json,
    run_and_decide,
)
from tests.integrations.fake_chat import FakeChat
from tests.integrations.npm_cli import droid_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

RISK = {"riskLevelReason": "creates a file", "riskLevel": "low"}
"""droid's Execute refuses a call without its risk fields."""


@pytest.mark.parametrize(("decision", "extra"), decisions({"command": EDITED, **RISK}))
async def test_real_droid_runs_the_command_exactly_as_decided(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, decision: str, extra: list[str]
) -> None:
    droid = droid_binary()
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    env = agent_env(home, PWD=str(project), FACTORY_AIRGAP_ENABLED="true", FACTORY_DISABLE_KEYRING="1")
    install_hook(env, "factory", db_path)
    settings = home / ".factory" / "settings.json"
    assert json.loads(settings.read_text())["hooks"]["PreToolUse"]
    with FakeChat("Execute", {"command": MARKER, **RISK}) as api:
        model = {"model": "fake-model", "displayName": "Fake", "baseUrl": api.url, "apiKey": "dummy"}
        merge_json(settings, {"customModels": [{**model, "provider": "generic-chat-completion-api"}]})
        command = [str(droid), "exec", "--auto", "high", "-m", "custom:fake-model", "touch a marker"]
        result = await run_and_decide(backend, db_path, env, command, project, decision, *extra)
        results = api.tool_results()
    await check_decided(
        backend, result, project, decision, results, host="factory", tool="Execute", edits=True, session_end=True
    )
