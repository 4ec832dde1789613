"""Session events (tool results, prompts, turn and session ends) recorded on the hook's lean path.

Each scenario runs twice, on two databases at the schema head: once through the full path (``--no-lean``, the
backend), once through the lean path (:func:`reviewer_app.integrations.hosts.lean_session.record`, in this
process, then the full path for an event it leaves). The rows of the two must be the same, times aside; and the
lean path must have taken every event it is meant to take.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.integrations.claude_code.lean import hook_options
from reviewer_app.integrations.hosts import lean_session
from tests.integrations.hook_helpers import DATA, fixture, hook_env, run_hook
from tests.integrations.test_hosts_sessions import ENDS, SESSION, TOOL_RESULTS

TIMES = {"created_at", "updated_at", "started_at", "finished_at", "updated_at_ms", "ts_ms", "heartbeat_ms"}
TABLES = {
    "sessions": "id",
    "invocations": "id",
    "block_events": "seq",
    "blobs": "sha256",
    "hitl_requests": "hitl_id",
    "audit_log": "id",
}
CLAUDE_SESSION = "2ff3b57f-99fc-488c-b18d-8174f5bace81"
CLAUDE_PROMPT = "ec0974fe-475a-4083-80b1-ed5c6f69813c"


def rows(database: Path) -> dict[str, list[dict[str, Any]]]:
    """Every row the session events may write, times left out (the two paths run at different moments)."""
    connection = sqlite3.connect(database)
    try:
        dumped = {}
        for table, key in TABLES.items():
            cursor = connection.execute(f"SELECT * FROM {table} ORDER BY {key}")
            names = [column[0] for column in cursor.description]
            found = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            dumped[table] = [{k: v for k, v in row.items() if k not in TIMES} for row in found]
        return dumped
    finally:
        connection.close()


class Side:
    """One database and its own transcript cursors, fed the same events as the other side."""

    def __init__(self, tmp_path: Path, name: str, migrated: Path) -> None:
        self.tmp_path = tmp_path
        self.database = tmp_path / f"{name}.db"
        shutil.copyfile(migrated, self.database)
        self.state_dir = tmp_path / f"{name}-state"

    def argv(self, host: str, event: str) -> list[str]:
        return [host, "--db", str(self.database), "--event", event, "--state-dir", str(self.state_dir)]

    def full(self, host: str, event: str, payload: dict[str, Any] | bytes) -> None:
        code, answer, err = run_hook(
            self.tmp_path, self.database, payload, *self.argv(host, event)[3:], "--no-lean", host=host
        )
        assert code == 0 and answer is None and "not recorded" not in err, err

    def lean(self, host: str, event: str, payload: dict[str, Any] | bytes) -> bool:
        """True when the lean path recorded it; else the full path records it, as the hook's entry would."""
        options = hook_options(self.argv(host, event))
        assert options is not None
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        if lean_session.record(options, str(self.database), raw):
            return True
        self.full(host, event, payload)
        return False


Step = tuple[str, str, "dict[str, Any] | bytes", bool]
"""host, event name, payload, whether the lean path is meant to take it."""


def _claude(name: str, transcript: Path, **fields: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"session_id": CLAUDE_SESSION, "transcript_path": str(transcript), "cwd": "/home/dev/p"}
    event.update(hook_event_name=name, permission_mode="default", **fields)
    return event


def _run(tmp_path: Path, migrated: Path, steps: list[Step], between: Any = None) -> None:
    full, lean = Side(tmp_path, "full", migrated), Side(tmp_path, "lean", migrated)
    for index, (host, event, payload, lean_takes) in enumerate(steps):
        if between is not None:
            between(index)
        full.full(host, event, payload)
        assert lean.lean(host, event, payload) is lean_takes, (index, host, event)
        assert rows(lean.database) == rows(full.database), (index, host, event)


def test_claude_code_session_events_write_the_full_paths_rows(tmp_path: Path, migrated_sqlite: Path) -> None:
    """A prompt, its tool result (the transcript copied in two parts), a turn end and the session's end."""
    lines = (DATA / "claude_transcript.jsonl").read_bytes().splitlines(keepends=True)
    transcript = tmp_path / "session.jsonl"
    transcript.write_bytes(b"")

    def between(index: int) -> None:
        transcript.write_bytes(b"".join(lines[: (3 if index == 1 else len(lines))]) if index else b"")

    result = {"stdout": "marker appended", "stderr": "", "interrupted": False, "isImage": False}
    call = {"tool_name": "Bash", "tool_input": {"command": "echo marker >> marker.txt"}}
    steps: list[Step] = [
        ("claude-code", "UserPromptSubmit", _claude("UserPromptSubmit", transcript, prompt_id=CLAUDE_PROMPT,
                                                     prompt="please append a marker"), True),
        ("claude-code", "PostToolUse", _claude("PostToolUse", transcript, prompt_id=CLAUDE_PROMPT,
                                                tool_use_id="toolu_fake_0001", tool_response=result, **call), True),
        ("claude-code", "PostToolUse", _claude("PostToolUse", transcript, prompt_id=CLAUDE_PROMPT,
                                                tool_use_id="toolu_late", tool_response="ok", **call), True),
        ("claude-code", "PostToolUse", _claude("PostToolUse", transcript, tool_use_id="toolu_no_prompt",
                                                tool_response={"stdout": "x"}, **call), True),
        ("claude-code", "PostToolUse", _claude("PostToolUse", transcript, prompt_id=CLAUDE_PROMPT,
                                                tool_use_id="toolu_big", tool_response={"stdout": "é\x01" * 15_000},
                                                tool_name="Write", tool_input={"content": "z" * 9_000}), True),
        ("claude-code", "Stop", _claude("Stop", transcript, stop_hook_active=False), True),
        ("claude-code", "SessionEnd", _claude("SessionEnd", transcript, reason="exit"), True),
    ]  # fmt: skip
    _run(tmp_path, migrated_sqlite, steps, between)
    written = rows(tmp_path / "lean.db")
    assert {row["kind"] for row in written["block_events"]} == {"text", "thinking", "tool_use", "end"}
    assert {(row["id"], row["state"], row["prompt"]) for row in written["invocations"]} == {
        (CLAUDE_PROMPT, "done", "please append a marker"),
        (CLAUDE_SESSION, "done", None),
    }


def test_a_transcript_line_nested_too_deep_is_skipped_not_fatal(tmp_path: Path, migrated_sqlite: Path) -> None:
    """A line json cannot read for its nesting (RecursionError) is skipped like any unreadable line: it must not
    stop every later event of the session from copying the transcript (the cursor would never move past it)."""
    transcript = tmp_path / "session.jsonl"
    deep = b'{"type": "user", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    said = {"type": "user", "promptId": "p-1", "uuid": "u-1", "message": {"role": "user", "content": "Tidy up"}}
    transcript.write_bytes(deep + json.dumps(said).encode() + b"\n")
    steps: list[Step] = [("claude-code", "Stop", _claude("Stop", transcript), True)]
    _run(tmp_path, migrated_sqlite, steps)
    assert [row["prompt"] for row in rows(tmp_path / "lean.db")["invocations"]] == ["Tidy up"]


def test_the_captured_prompt_event_writes_the_full_paths_rows(tmp_path: Path, migrated_sqlite: Path) -> None:
    submit = fixture("userpromptsubmit.json")  # its transcript path does not exist here: nothing to copy
    steps: list[Step] = [
        ("claude-code", "UserPromptSubmit", submit, True),
        ("claude-code", "UserPromptSubmit", {**submit, "prompt_id": None}, True),
        ("claude-code", "UserPromptSubmit", {**submit, "prompt": "x" * 2000, "prompt_id": "p-2"}, True),
    ]
    _run(tmp_path, migrated_sqlite, steps)


@pytest.mark.parametrize("host", [*TOOL_RESULTS, "factory"])
def test_each_hosts_tool_result_and_end_write_the_full_paths_rows(
    tmp_path: Path, migrated_sqlite: Path, host: str
) -> None:
    event, payload, _ = TOOL_RESULTS["qwen" if host == "factory" else host]  # Factory sends Qwen's shape
    steps: list[Step] = [(host, event, payload, True), (host, event, payload, True)]  # the same result twice
    if host in ("qwen", "factory"):
        steps.append((host, "Stop", {"session_id": SESSION, "prompt_id": payload["prompt_id"]}, True))
        steps.append((host, "Stop", {"session_id": SESSION, "prompt_id": "never-seen"}, True))
    if host in ENDS:
        name, end = ENDS[host]
        steps += [(host, name, end, True), (host, name, end, True)]
    _run(tmp_path, migrated_sqlite, steps)


def test_large_results_and_arguments_are_stored_as_the_stores_blobs(tmp_path: Path, migrated_sqlite: Path) -> None:
    """A field the store keeps as a blob (4 KiB of JSON or more) is one here too, once however often it is sent."""
    event, payload, _ = TOOL_RESULTS["gemini"]
    big = {**payload, "tool_input": {"command": "echo " + "y" * 10_000}, "tool_response": "r" * 30_000}
    large_list = {**payload, "tool_input": {"paths": [f"/p/{i}" for i in range(2_000)]}, "tool_response": [1] * 3_000}
    steps: list[Step] = [("gemini", event, big, True), ("gemini", event, large_list, True)]
    steps += [("copilot", "postToolUse", {**TOOL_RESULTS["copilot"][1], "toolArgs": {"a": "b" * 5_000}}, True)] * 2
    _run(tmp_path, migrated_sqlite, steps)
    written = rows(tmp_path / "lean.db")
    naming_blobs = [row for row in written["block_events"] if row["blob_refs"] not in (None, "null")]
    assert len(written["blobs"]) == 5 and len(naming_blobs) == 5


def test_what_the_lean_path_cannot_write_for_certain_goes_to_the_full_path(
    tmp_path: Path, migrated_sqlite: Path
) -> None:
    """A run in a state only the backend moves on, an event it does not follow, a session id with a NUL, JSON it
    cannot read: the full path's, with the same rows (or the same refusal) in the end."""
    event, payload, _ = TOOL_RESULTS["gemini"]
    steps: list[Step] = [
        ("gemini", event, {**payload, "session_id": "s\x00x"}, False),
        ("gemini", "Nope", payload, False),
        ("gemini", event, b"{", False),
        ("gemini", event, json.dumps(payload).encode()[:-1] + b', "x": ' + b"[" * 5000 + b"]" * 5000 + b"}", False),
    ]
    full, lean = Side(tmp_path, "full", migrated_sqlite), Side(tmp_path, "lean", migrated_sqlite)
    for host, name, body, lean_takes in steps:
        code, _, err = run_hook(tmp_path, full.database, body, *full.argv(host, name)[3:], "--no-lean", host=host)
        options = hook_options(lean.argv(host, name))
        assert options is not None and code == 0
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        assert lean_session.record(options, str(lean.database), raw) is lean_takes
        code, _, lean_err = run_hook(tmp_path, lean.database, body, *lean.argv(host, name)[3:], host=host)
        assert code == 0 and ("not recorded" in err) == ("not recorded" in lean_err), (err, lean_err)
    assert rows(lean.database) == rows(full.database)

    # an interrupted run: the backend's state machine moves it on (running first), the lean path leaves it
    _, result, _ = TOOL_RESULTS["qwen"]
    stop = {"session_id": SESSION, "prompt_id": result["prompt_id"], "hook_event_name": "Stop"}
    lean.full("qwen", "PostToolUse", result)
    connection = sqlite3.connect(lean.database)
    connection.execute("UPDATE invocations SET state = 'interrupted' WHERE id = ?", (result["prompt_id"],))
    connection.commit()
    connection.close()
    assert lean.lean("qwen", "Stop", stop) is False
    assert [row["state"] for row in rows(lean.database)["invocations"] if row["id"] == result["prompt_id"]] == ["done"]


def test_the_hook_entry_records_a_session_event_without_the_backend(tmp_path: Path, migrated_sqlite: Path) -> None:
    """``python -m reviewer_app hook claude-code --event PostToolUse``: recorded, and SQLAlchemy never imported."""
    database = tmp_path / "reviews.db"
    shutil.copyfile(migrated_sqlite, database)
    probe = (
        "import os, runpy, sys\n"
        "def _exit(code):\n"
        "    raise SystemExit(code)\n"
        "os._exit = _exit\n"
        "sys.argv = ['reviewer_app', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('reviewer_app', run_name='__main__')\n"
        "except SystemExit as exc:\n"
        "    print('EXIT', exc.code, file=sys.stderr)\n"
        "print('HEAVY', sorted(m for m in ('sqlalchemy', 'argparse', 'dataclasses') if m in sys.modules), "
        "file=sys.stderr)\n"
    )
    event = _claude("PostToolUse", tmp_path / "missing.jsonl", tool_use_id="toolu_1", tool_name="Bash")
    event.update(tool_input={"command": "ls"}, tool_response={"stdout": "a"})
    command = [sys.executable, "-c", probe, "hook", "claude-code", "--db", str(database), "--event", "PostToolUse"]
    done = subprocess.run(
        command, input=json.dumps(event).encode(), capture_output=True, env=hook_env(tmp_path), check=False
    )
    err = done.stderr.decode()
    assert done.stdout == b"" and "EXIT 0" in err and "HEAVY []" in err, err
    assert [row["kind"] for row in rows(database)["block_events"]] == ["tool_use", "tool_use"]
