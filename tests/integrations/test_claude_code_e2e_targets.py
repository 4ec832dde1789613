"""Installing Reviewer never makes the real Claude Code CLI less safe (issue 23): a private key under ``~`` that
Claude would ask about is asked about in Reviewer too, never allowed by a default nobody wrote."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.fake_anthropic import FakeAnthropic
from tests.integrations.hook_helpers import wait_pending
from tests.integrations.npm_cli import claude_binary
from tests.integrations.test_claude_code_e2e import _env, _reviewer, start_claude

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-test-key-material\n"


async def test_a_private_key_read_under_the_default_install_is_asked_not_allowed(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    claude = claude_binary()
    project = tmp_path / "project"
    project.mkdir()
    key = tmp_path / "home" / ".ssh" / "id_ed25519"
    key.parent.mkdir(parents=True)
    key.write_text(KEY)
    installed = _reviewer(tmp_path, "hook", "install", "claude-code", "--project", str(project), "--db", str(db_path))
    assert installed.returncode == 0, installed.stderr
    settings = (project / ".claude" / "settings.json").read_text()
    assert "--allow-tools" not in settings  # nothing is settled by a default the settings file does not show

    with FakeAnthropic("Read", {"file_path": str(key)}) as api:
        agent = await start_claude(claude, "show me my ssh key", project, _env(tmp_path, api.url))
        try:
            [record] = await wait_pending(backend, timeout=90)
            assert record["tool_name"] == "Read" and record["data"]["arguments"]["file_path"] == str(key)
            decided = await asyncio.to_thread(
                _reviewer, tmp_path, "decide", record["hitl_id"], "reject", "--message", "no", "--db", str(db_path)
            )
            assert decided.returncode == 0, decided.stderr
            await asyncio.to_thread(agent.communicate, timeout=120)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.communicate()
        results = api.tool_results()
    assert not any("PRIVATE KEY" in result for result in results)
    assert (await backend.verify_audit()).ok
