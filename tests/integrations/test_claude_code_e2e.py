"""End to end with the real Claude Code CLI: ``claude -p`` against a fake Messages API, the hook installed by
``hook install``, decisions made with ``reviewer-app decide``; the command runs (or not) exactly as decided."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from reviewer_app.domain.timeline import fold_events
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.fake_anthropic import FakeAnthropic
from tests.integrations.hook_helpers import REPO_ROOT, wait_pending
from tests.integrations.npm_cli import claude_binary

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]

PROMPT = "please append a marker to marker.txt"


def _env(tmp_path: Path, api_url: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path / "home"),
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "dummy",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "PYTHONPATH": str(REPO_ROOT),
    }
    (tmp_path / "home").mkdir(exist_ok=True)
    return env


async def start_claude(claude: Path, prompt: str, project: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``claude -p PROMPT`` in ``project``, started off the event loop."""
    return await asyncio.to_thread(
        subprocess.Popen,
        [str(claude), "-p", prompt, "--output-format", "json"],
        cwd=project,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _reviewer(tmp_path: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONPATH": str(REPO_ROOT)}
    env.pop("REVIEWER_DB", None)
    return subprocess.run(
        [sys.executable, "-m", "reviewer_app", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def _project_with_hook(tmp_path: Path, db_path: Path, event: str) -> Path:
    """A project directory whose Claude Code settings run Reviewer's hook on ``event``."""
    project = tmp_path / "project"
    project.mkdir()
    installed = _reviewer(
        tmp_path, "hook", "install", "claude-code", "--project", str(project), "--db", str(db_path),
        "--event", event, "--hook-timeout", "120",
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    return project


@dataclass(frozen=True)
class DecidedBash:
    """One ``Bash`` call of the session, ``echo approved >> FILE``, and how ``reviewer-app decide`` decides it."""

    decision: str
    file: str
    extra: tuple[str, ...] = ()
    written: str | None = None
    """What the file holds afterwards (None: the command never ran)."""

    @property
    def command(self) -> str:
        return f"echo approved >> {self.file}"


EDITED = {"command": "echo edited >> edited.txt", "description": "x"}
SESSIONS = {
    "PermissionRequest": (
        DecidedBash("approve", "approved.txt", written="approved\n"),
        DecidedBash("reject", "rejected.txt", ("--message", "not today")),
    ),
    "PreToolUse": (
        DecidedBash("edit", "edited.txt", ("--args", json.dumps(EDITED)), written="edited\n"),
        DecidedBash("steer", "steered.txt", ("--message", "write the marker with printf")),
    ),
}
"""Each hook event's decisions, made in one session (each start of the CLI costs ~6 s of CPU)."""
REFUSED = {"reject": "rejected by reviewer: not today", "steer": "Reviewer guidance: write the marker with printf"}


@pytest.mark.parametrize("event", SESSIONS)
async def test_real_claude_code_runs_each_command_exactly_as_decided(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, event: str
) -> None:
    claude = claude_binary()
    project = _project_with_hook(tmp_path, db_path, event)
    calls = SESSIONS[event]
    inputs = [{"command": call.command, "description": "append a marker"} for call in calls]
    with FakeAnthropic("Bash", inputs[0], thinking="Plan: append.", then=tuple(inputs[1:])) as api:
        agent = await start_claude(claude, PROMPT, project, _env(tmp_path, api.url))
        records = []
        try:
            for call in calls:
                [record] = await wait_pending(backend, timeout=90)
                assert record["tool_name"] == "Bash" and record["data"]["arguments"]["command"] == call.command
                assert record["data"]["hook_event"] == event
                decided = await asyncio.to_thread(
                    _reviewer, tmp_path, "decide", record["hitl_id"], call.decision, *call.extra, "--db", str(db_path)
                )
                assert decided.returncode == 0, decided.stderr
                records.append(record)
            _, err = await asyncio.to_thread(agent.communicate, timeout=120)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.communicate()
        assert agent.returncode == 0, err.decode()[-2000:]
        results = api.tool_results()
    assert len(results) == len(calls), results  # one result a call, in the calls' order
    for call, result in zip(calls, results, strict=True):
        written = project / call.file
        if call.written is not None:
            assert written.read_text() == call.written
        else:
            assert not written.exists()
            assert REFUSED[call.decision] in result

    [invocation] = {record["invocation_id"] for record in records}  # the session's one run
    [run] = [run for run in await backend.list_runs() if run.id == invocation]
    assert run.prompt == PROMPT  # the run's title: its prompt, from the transcript
    blocks = fold_events(await backend.events(invocation))
    kinds = [block.kind.value for block in blocks]
    assert kinds[:3] == ["text", "thinking", "text"] and "tool_use" in kinds and "hitl" in kinds
    assert blocks[0].data == {"role": "user", "text": PROMPT}
    # The session events ``hook install`` added by default: the turn's end finishes the run, each tool's result
    # is on its block (PostToolUse, or the transcript read at Stop).
    assert run.state == "done", run
    tools = [block for block in blocks if block.kind.value == "tool_use"]
    assert len(tools) == len(calls), tools
    for tool in tools:
        assert tool.data["status"] in ("success", "error") and "result" in tool.data, tool.data
    assert (await backend.verify_audit()).ok


async def test_a_repeated_tool_use_id_with_other_input_is_asked_again(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    """A model endpoint repeats an approved call's ``tool_use`` id with another command: the approval of the first
    command does not carry over; the second is a new request (here rejected) and never runs."""
    claude = claude_binary()
    project = _project_with_hook(tmp_path, db_path, "PreToolUse")
    harmless = {"command": "echo harmless >> marker.txt", "description": "append a marker"}
    hostile = {"command": "echo PWNED >> marker.txt", "description": "append a marker"}
    with FakeAnthropic("Bash", harmless, repeat_input=hostile) as api:
        agent = await start_claude(claude, PROMPT, project, _env(tmp_path, api.url))
        try:
            [first] = await wait_pending(backend, timeout=90)
            assert first["data"]["arguments"]["command"] == harmless["command"]
            decided = await asyncio.to_thread(
                _reviewer, tmp_path, "decide", first["hitl_id"], "approve", "--db", str(db_path)
            )
            assert decided.returncode == 0, decided.stderr
            [second] = await wait_pending(backend, timeout=90)  # asked again: a new request, not the old approval
            assert second["hitl_id"] != first["hitl_id"]
            assert second["data"]["arguments"]["command"] == hostile["command"]
            rejected = await asyncio.to_thread(
                _reviewer, tmp_path, "decide", second["hitl_id"], "reject", "--message", "no", "--db", str(db_path)
            )
            assert rejected.returncode == 0, rejected.stderr
            await asyncio.to_thread(agent.communicate, timeout=120)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.communicate()
    assert (project / "marker.txt").read_text() == "harmless\n"
    events = await backend.events(first["invocation_id"])
    assert any(e.kind.value == "error" and "different arguments" in str(e.data) for e in events)
    assert (await backend.verify_audit()).ok
