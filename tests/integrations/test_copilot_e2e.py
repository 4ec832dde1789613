"""End to end with the real GitHub Copilot CLI (npm ``@github/copilot``) in its offline mode: ``COPILOT_OFFLINE``
with a BYOK provider (``COPILOT_PROVIDER_BASE_URL``) pointing at a fake chat-completions API on 127.0.0.1, no
GitHub login; the preToolUse hook installed by ``hook install copilot``, decisions from ``reviewer-app decide``.

``--allow-all-tools`` lets a non-interactive run act at all; Reviewer's hook is then the gate.
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
from tests.integrations.npm_cli import copilot_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


@pytest.mark.parametrize(("decision", "extra"), decisions({"command": EDITED, "description": "edited"}))
async def test_real_copilot_runs_the_command_exactly_as_decided(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, decision: str, extra: list[str]
) -> None:
    copilot = copilot_binary()
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    env = agent_env(home, PWD=str(project), COPILOT_OFFLINE="true", COPILOT_AUTO_UPDATE="false")
    for key in ("GITHUB_TOKEN", "GH_TOKEN", "COPILOT_GITHUB_TOKEN", "COPILOT_HOME"):
        env.pop(key, None)
    install_hook(env, "copilot", db_path)
    assert json.loads((home / ".copilot" / "hooks" / "reviewer.json").read_text())["hooks"]["preToolUse"]
    with FakeChat("bash", {"command": MARKER, "description": "a marker"}) as api:
        env.update(COPILOT_PROVIDER_BASE_URL=api.url, COPILOT_MODEL="fake-model", COPILOT_PROVIDER_API_KEY="dummy")
        command = [str(copilot), "-p", "touch a marker", "--allow-all-tools"]
        result = await run_and_decide(backend, db_path, env, command, project, decision, *extra)
        results = api.tool_results()
    await check_decided(
        backend, result, project, decision, results, host="copilot", tool="bash", edits=True, session_end=True
    )
