"""Whole sessions: each host's tool-result and session-end events, recorded on its runs by ``hook <host> --event``.

Payload shapes: Gemini's, Qwen's and Copilot's as their CLIs send them (0.61.0, 0.24.4, 1.0.102), OpenCode's as
Reviewer's plugin sends them. These events never gate: the hook prints nothing and exits 0, even when it fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.runs import RunState
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import fixture, run_hook

pytestmark = pytest.mark.asyncio

SESSION = "s-1"
TOOL_RESULTS: dict[str, tuple[str, dict[str, Any], str]] = {
    "gemini": (
        "AfterTool",
        {
            "session_id": SESSION,
            "cwd": "/p",
            "hook_event_name": "AfterTool",
            "timestamp": "2026-11-27T00:40:41.770Z",
            "tool_name": "run_shell_command",
            "tool_input": {"command": "ls"},
            "tool_response": {"llmContent": "a.txt\nb.txt", "returnDisplay": "a.txt\nb.txt"},
        },
        "a.txt\nb.txt",
    ),
    "qwen": (
        "PostToolUse",
        {
            "session_id": SESSION,
            "prompt_id": f"{SESSION}########0",
            "hook_event_name": "PostToolUse",
            "tool_name": "run_shell_command",
            "tool_input": {"command": "ls"},
            "tool_response": "a.txt",
            "tool_use_id": "toolu_1",
        },
        "a.txt",
    ),
    "copilot": (
        "postToolUse",
        {
            "sessionId": SESSION,
            "timestamp": 1795741098694,
            "cwd": "/p",
            "toolName": "bash",
            "toolArgs": {"command": "ls"},
            "toolResult": {"resultType": "success", "textResultForLlm": "a.txt"},
        },
        "a.txt",
    ),
    "opencode": (
        "tool.execute.after",
        {"session_id": SESSION, "call_id": "call_1", "tool": "bash", "output": "a.txt"},
        "a.txt",
    ),
}
ENDS = {
    "gemini": ("SessionEnd", {"session_id": SESSION, "hook_event_name": "SessionEnd", "reason": "exit"}),
    "qwen": ("SessionEnd", {"session_id": SESSION, "hook_event_name": "SessionEnd"}),
    "factory": ("SessionEnd", {"session_id": SESSION, "hook_event_name": "SessionEnd"}),
    "copilot": ("sessionEnd", {"sessionId": SESSION, "timestamp": 1, "cwd": "/p", "reason": "complete"}),
}


def _claude_event(name: str, transcript: Path, cwd: str = "/p", **fields: Any) -> dict[str, Any]:
    """A Claude Code 2.x lifecycle event of session ``SESSION``; a PostToolUse's call is ``ls``."""
    event: dict[str, Any] = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": cwd}
    event["hook_event_name"] = name
    if name == "PostToolUse":
        event.update(tool_name="Bash", tool_input={"command": "ls"}, tool_use_id="toolu_01")
        event["tool_response"] = {"stdout": "a.txt", "stderr": "", "interrupted": False, "isImage": False}
    return {**event, **fields}


@pytest.mark.parametrize("host", list(TOOL_RESULTS))
async def test_a_tool_result_lands_on_the_run_and_the_session_end_finishes_it(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, host: str
) -> None:
    event, payload, text = TOOL_RESULTS[host]
    code, answer, err = run_hook(tmp_path, db_path, payload, "--event", event, host=host)
    assert code == 0 and answer is None, err
    [run] = [run for run in await backend.list_runs() if run.session_id == SESSION]
    assert run.agent == host
    blocks = [(event.kind.value, event.op.value, event.data) for event in await backend.events(run.id)]
    [(_, _, call)] = [block for block in blocks if block[1] == "apply"]
    [(_, _, result)] = [block for block in blocks if block[1] == "patch"]
    assert call["arguments"] in ({"command": "ls"}, None) and result == {"status": "success", "result": text}
    code, _, _ = run_hook(tmp_path, db_path, payload, "--event", event, host=host)  # the same call again: once
    assert len(await backend.events(run.id)) == len(blocks)

    if host in ENDS:
        name, end = ENDS[host]
        code, answer, err = run_hook(tmp_path, db_path, end, "--event", name, host=host)
        assert code == 0 and answer is None, err
        finished = await backend.get_run(run.id)
        assert finished is not None and finished.state == RunState.DONE.value


async def test_a_turn_end_finishes_the_prompt_it_names(tmp_path: Path, db_path: Path, backend: SQLHITLBackend) -> None:
    _, payload, _ = TOOL_RESULTS["qwen"]
    run_hook(tmp_path, db_path, payload, "--event", "PostToolUse", host="qwen")
    stop = {"session_id": SESSION, "prompt_id": payload["prompt_id"], "hook_event_name": "Stop"}
    code, answer, _ = run_hook(tmp_path, db_path, stop, "--event", "Stop", host="qwen")
    finished = await backend.get_run(payload["prompt_id"])
    assert code == 0 and answer is None and finished is not None and finished.state == "done"


@pytest.mark.parametrize("host", list(TOOL_RESULTS))
async def test_lifecycle_failures_stay_out_of_the_agents_way(tmp_path: Path, host: str) -> None:
    event, payload, _ = TOOL_RESULTS[host]
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"not a database" * 100)
    code, answer, err = run_hook(tmp_path, broken, payload, "--event", event, host=host)
    assert code == 0 and answer is None and "not recorded" in err
    code, answer, err = run_hook(tmp_path, tmp_path / "ok.db", b"{", "--event", event, host=host)
    assert code == 0 and answer is None and "not JSON" in err
    code, answer, err = run_hook(
        tmp_path, tmp_path / "ok.db", json.dumps(payload).encode(), "--event", "Nope", host=host
    )
    assert code == 0 and answer is None and "does not follow 'Nope'" in err


async def test_claude_code_turns_finish_on_stop(tmp_path: Path, db_path: Path, backend: SQLHITLBackend) -> None:
    """``hook install claude-code --sessions`` adds Stop and SessionEnd; a Stop finishes the session's prompt runs."""
    from tests.integrations.agent_run import agent_env, reviewer

    project = tmp_path / "project"
    project.mkdir()
    env = agent_env(tmp_path / "home")
    installed = reviewer(
        env, "hook", "install", "claude-code", "--project", str(project), "--db", str(db_path), "--sessions"
    )
    assert installed.returncode == 0, installed.stderr
    hooks = json.loads((project / ".claude" / "settings.json").read_text())["hooks"]
    assert {"PermissionRequest", "Stop", "SessionEnd"} <= set(hooks)
    assert hooks["Stop"][0]["hooks"][0]["command"].endswith("--event Stop")

    await backend.register_run(session_id=SESSION, invocation_id="prompt-1", agent="claude-code", external=True)
    stop = {"session_id": SESSION, "transcript_path": "/x.jsonl", "hook_event_name": "Stop", "stop_hook_active": False}
    code, answer, err = run_hook(tmp_path, db_path, stop, "--event", "Stop")
    finished = await backend.get_run("prompt-1")
    assert code == 0 and answer is None and finished is not None and finished.state == "done", err
    assert [run.id for run in await backend.list_runs()] == ["prompt-1"]  # the Stop made no run of its own
    assert reviewer(env, "hook", "uninstall", "claude-code", "--project", str(project)).returncode == 0
    assert "hooks" not in json.loads((project / ".claude" / "settings.json").read_text())


async def test_claude_code_post_tool_use_puts_the_result_on_the_call_s_transcript_block(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    """Claude's PostToolUse (as Claude Code 2.x sends it) patches the block its transcript gives the call."""
    from reviewer_app.domain.timeline import fold_events
    from reviewer_app.integrations.claude_code.transcript import tool_block_id

    payload = _claude_event("PostToolUse", tmp_path / "missing.jsonl")
    code, answer, err = run_hook(tmp_path, db_path, payload, "--event", "PostToolUse")
    assert code == 0 and answer is None and err == ""
    [block] = fold_events(await backend.events(SESSION))
    assert block.block_id == tool_block_id(SESSION, "toolu_01")
    assert block.data["name"] == "Bash" and block.data["status"] == "success" and block.data["result"] == "a.txt"


async def test_claude_code_prompt_submit_names_its_run_and_project(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    """UserPromptSubmit (installed with the session events) gives the prompt run its prompt and the session its
    project, so the Runs board names the run before its first call."""
    from reviewer_app.integrations.claude_code.events import Host
    from reviewer_app.integrations.hosts.session import LIFECYCLE_EVENTS

    assert "UserPromptSubmit" in LIFECYCLE_EVENTS[Host.CLAUDE_CODE]  # so `hook install` adds it
    submit = fixture("userpromptsubmit.json")  # as Claude Code 2.1.331 sends it: the prompt id its calls carry
    code, answer, err = run_hook(tmp_path, db_path, submit, "--event", "UserPromptSubmit")
    assert code == 0 and answer is None and err == ""
    run = await backend.get_run(submit["prompt_id"])
    assert run is not None and run.external and run.state == RunState.RUNNING.value
    assert run.prompt == "please append a marker to marker.txt" and run.workspace == "/home/dev/project"

    # no prompt id: nothing to name (a run per session would never see a call)
    code, _, err = run_hook(tmp_path, db_path, {**submit, "prompt_id": None}, "--event", "UserPromptSubmit")
    assert code == 0 and err == ""
    assert [r.id for r in await backend.list_runs()] == [submit["prompt_id"]]


async def test_a_run_made_before_its_prompt_was_known_gets_it_from_the_transcript(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    """A run first seen without its prompt (here: a tool result before the transcript had the prompt's line) is
    named when a later event copies the transcript line that holds it."""
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("", encoding="utf-8")
    result = _claude_event("PostToolUse", transcript, "/home/dev/shop-api", prompt_id="prompt-8")
    assert run_hook(tmp_path, db_path, result, "--event", "PostToolUse")[0] == 0
    run = await backend.get_run("prompt-8")
    assert run is not None and run.prompt is None and run.workspace == "/home/dev/shop-api"

    line = {"type": "user", "promptId": "prompt-8", "uuid": "u-1", "message": {"role": "user", "content": "Tidy up"}}
    transcript.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert run_hook(tmp_path, db_path, {**result, "tool_use_id": "toolu_02"}, "--event", "PostToolUse")[0] == 0
    run = await backend.get_run("prompt-8")
    assert run is not None and run.prompt == "Tidy up"
