"""OpenCode's plugin file, as ``hook install opencode`` writes it, run by the real node: its
``tool.execute.before`` asks Reviewer, lets an approved call through (with edited arguments replacing the old ones)
and throws the reason for everything else, including a hook that cannot run."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import shown_arguments
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.agent_run import agent_env, install_hook
from tests.integrations.hook_helpers import wait_pending

pytestmark = pytest.mark.asyncio

DRIVER = """
const { ReviewerPlugin } = await import(process.argv[2]);
const hooks = await ReviewerPlugin({ directory: process.argv[3] });
const output = { args: { command: "npm publish", description: "publish" } };
try {
  await hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_1", callID: "call_1" }, output);
  console.log(JSON.stringify({ ran: output.args }));
} catch (error) {
  console.log(JSON.stringify({ thrown: error.message }));
}
"""


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: cannot run OpenCode's plugin")
    return node


def _start(tmp_path: Path, env: dict[str, str], plugin: Path) -> subprocess.Popen[bytes]:
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    return subprocess.Popen(
        [_node(), str(driver), plugin.as_uri(), str(tmp_path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def _result(process: subprocess.Popen[bytes]) -> dict[str, Any]:
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err.decode()
    return dict(json.loads(out.decode().strip().splitlines()[-1]))


@pytest.mark.parametrize(
    ("decision", "expected"),
    [
        (Decision(DecisionKind.REJECT, message="not today"), {"thrown": "rejected by reviewer: not today"}),
        (
            Decision(DecisionKind.EDIT, edited_args={"command": "npm publish --dry-run"}),
            {"ran": {"command": "npm publish --dry-run"}},
        ),
        (Decision(DecisionKind.APPROVE), {"ran": {"command": "npm publish", "description": "publish"}}),
    ],
)
async def test_the_plugin_runs_only_what_was_decided(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, decision: Decision, expected: dict[str, Any]
) -> None:
    home = tmp_path / "home"
    env = agent_env(home)
    env.pop("XDG_CONFIG_HOME", None)
    install_hook(env, "opencode", db_path)
    plugin = home / ".config" / "opencode" / "plugin" / "reviewer.js"
    process = await asyncio.to_thread(_start, tmp_path, env, plugin)
    [record] = await wait_pending(backend)
    assert record["metadata"]["agent"] == "opencode" and record["data"]["arguments"]["command"] == "npm publish"
    if decision.kind.needs_hash:
        decision = Decision(
            decision.kind,
            message=decision.message,
            edited_args=decision.edited_args,
            args_sha256=args_digest(shown_arguments(record)),
        )
    await backend.decide(record["hitl_id"], decision)
    assert await asyncio.to_thread(_result, process) == expected


async def test_a_hook_that_cannot_run_is_a_deny(tmp_path: Path) -> None:
    home = tmp_path / "home"
    env = agent_env(home)
    env.pop("XDG_CONFIG_HOME", None)
    install_hook(env, "opencode", tmp_path / "r.db")
    plugin = home / ".config" / "opencode" / "plugin" / "reviewer.js"
    plugin.write_text(plugin.read_text().replace("reviewer_app hook opencode", "reviewer_app_missing hook opencode"))
    result = await asyncio.to_thread(_result, await asyncio.to_thread(_start, tmp_path, env, plugin))
    assert set(result) == {"thrown"} and "Reviewer" in result["thrown"]
