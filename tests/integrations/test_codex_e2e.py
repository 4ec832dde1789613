"""End to end with the real Codex CLI (npm ``@openai/codex``): ``codex exec`` against a fake Responses API, the
PermissionRequest hook installed by ``hook install codex``, decisions from ``reviewer-app decide``.

Codex runs hooks only once they are trusted (``/hooks`` in its TUI); the test passes
``--dangerously-bypass-hook-trust`` instead. ``--approve-for-me`` gives ``exec`` an approval path (without it
``exec`` never asks, so no PermissionRequest fires), and the fake model asks to run outside the sandbox
(``require_escalated``), which always needs approval; a hook decision settles it before Codex's own reviewer.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.fake_responses import FakeResponses
from tests.integrations.hook_helpers import REPO_ROOT, wait_pending
from tests.integrations.npm_cli import codex_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


def _reviewer(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reviewer_app", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


@pytest.mark.parametrize(("decision", "extra"), [("approve", []), ("reject", ["--message", "not here"])])
async def test_real_codex_runs_the_command_exactly_as_decided(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, decision: str, extra: list[str]
) -> None:
    codex = codex_binary()
    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    env = {
        **os.environ,
        "HOME": str(home),
        "CODEX_HOME": str(home / ".codex"),
        "PYTHONPATH": str(REPO_ROOT),
        "FAKE_KEY": "dummy",
    }
    env.pop("REVIEWER_DB", None)
    installed = await asyncio.to_thread(_reviewer, env, "hook", "install", "codex", "--db", str(db_path))
    assert installed.returncode == 0, installed.stderr
    assert json.loads((home / ".codex" / "hooks.json").read_text())["hooks"]["PermissionRequest"]
    with FakeResponses("touch marker.txt") as api:
        provider = (
            f'model_providers.fake={{name="fake", base_url="{api.url}", env_key="FAKE_KEY", wire_api="responses"}}'
        )
        command = [str(codex), "exec", "--skip-git-repo-check", "--dangerously-bypass-hook-trust", "--approve-for-me"]
        command += ["-c", 'model_provider="fake"', "-c", provider, "-c", 'model="gpt-5-codex"', "touch a marker"]
        agent = await asyncio.to_thread(
            subprocess.Popen,
            command,
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            [record] = await wait_pending(backend, timeout=90)
            assert record["metadata"]["agent"] == "codex"
            assert record["tool_name"] == "Bash" and record["data"]["arguments"]["command"] == "touch marker.txt"
            decided = await asyncio.to_thread(
                _reviewer, env, "decide", record["hitl_id"], decision, *extra, "--db", str(db_path)
            )
            assert decided.returncode == 0, decided.stderr
            _, err = await asyncio.to_thread(agent.communicate, timeout=120)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.communicate()
        assert agent.returncode == 0, err.decode()[-2000:]
        outputs = api.outputs()
    if decision == "approve":
        assert (project / "marker.txt").exists()
    else:
        assert not (project / "marker.txt").exists()
        assert any("rejected by reviewer: not here" in output for output in outputs), outputs
