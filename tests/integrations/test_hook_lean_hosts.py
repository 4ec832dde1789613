"""The hook's lean path for every other host (Gemini CLI, Qwen Code, Factory, Copilot CLI, Cursor, OpenCode): each
host's real payload through the lean path and through the full path (``--no-lean``) gives the same stdout bytes,
exit code and stored request, decision, audit row and run; what the lean path cannot read or settle for certain
is left to the full path, which answers as before."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.hosts.host_tables import HOST_TABLES
from tests.integrations.hook_helpers import finish, hook_env, start_hook, wait_pending
from tests.integrations.test_hosts_hook import CASES, IDS, HostCase

IGNORED = {"created_at", "updated_at", "updated_at_ms", "responded_at", "started_at", "at_ms", "last_hit_at"}
IGNORED |= {"prev_hash", "row_hash", "id", "expires_at"}
HEAVY = ("argparse", "dataclasses", "typing", "bashlex", "pathspec", "reviewer_app.domain.rules")
HEAVY += ("threading", "math", "json", "reviewer_app.domain.hitl")  # test_hook_lean.LEAN_HEAVY
PROBE = (
    "import os, runpy, sys\n"
    "def _exit(code):\n"
    "    raise SystemExit(code)\n"
    "os._exit = _exit  # the hook ends with os._exit: keep this process alive to look at its modules\n"
    "sys.argv = ['reviewer_app', 'hook', *sys.argv[1:]]\n"
    "code = 0\n"
    "try:\n"
    "    runpy.run_module('reviewer_app', run_name='__main__')\n"
    "except SystemExit as exc:\n"
    "    code = exc.code\n"
    f"print('HEAVY', sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    "sys.stderr.flush()\n"
    "sys.exit(code)\n"
)


def shell_call(case: HostCase, command: str) -> dict[str, Any]:
    """The host's captured payload, made a call of its shell tool running ``command``."""
    payload = dict(case.payload)
    shell = HOST_TABLES[case.host]["shell_tools"][0]
    if case.host == "cursor":
        payload["command"] = command
    elif case.host == "copilot":
        payload.update(toolName=shell, toolArgs=json.dumps({"command": command, "description": "lean"}))
    elif case.host == "opencode":
        payload.update(tool=shell, args={"command": command, "description": "lean"})
    else:
        payload.update(tool_name=shell, tool_input={"command": command, "description": "lean"})
    return payload


def _run(tmp_path: Path, db: Path, host: str, payload: bytes, *args: str) -> tuple[int, bytes, list[str]]:
    """The hook in a real process: exit code, stdout bytes and the heavy modules it loaded."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, host, "--db", str(db), *args],
        input=payload,
        capture_output=True,
        check=False,
        env=hook_env(tmp_path),
        timeout=120,
    )
    err = result.stderr.decode()
    line = next(line for line in err.splitlines() if line.startswith("HEAVY "))
    return result.returncode, result.stdout, json.loads(line[6:].replace("'", '"'))


def _rows(db: Path) -> dict[str, list[dict[str, Any]]]:
    """Every row the hook wrote, without times, hashes and row ids; a request's random id (no call id) named so."""
    connection = sqlite3.connect(db)
    connection.row_factory = sqlite3.Row
    try:
        found = {}
        for table in ("hitl_requests", "audit_log", "invocations", "sessions"):
            rows = [dict(row) for row in connection.execute(f"SELECT * FROM {table} ORDER BY rowid")]
            found[table] = [{k: v for k, v in row.items() if k not in IGNORED} for row in rows]
    finally:
        connection.close()
    random = {request["hitl_id"] for request in found["hitl_requests"] if request["tool_call_id"] is None}
    for row in (*found["hitl_requests"], *found["audit_log"]):
        if row["hitl_id"] in random:
            row["hitl_id"] = "random"
    return found


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("command", ["ls -la", "echo bench"])
def test_a_call_allow_tools_settles_is_answered_lean_as_the_full_path_answers_it(
    tmp_path: Path, fresh_db: Callable[[str], Path], case: HostCase, command: str
) -> None:
    shell = HOST_TABLES[case.host]["shell_tools"][0]
    payload = json.dumps(shell_call(case, command)).encode()
    results = {}
    for label, extra in {"lean": (), "full": ("--no-lean",)}.items():
        db = fresh_db(f"{label}.db")
        code, out, heavy = _run(tmp_path, db, case.host, payload, "--allow-tools", f"Read,{shell}", *extra)
        results[label] = (code, out, _rows(db))
        if label == "lean":
            assert heavy == [], heavy  # answered by the lean path: no argparse, dataclasses, rules engine
    assert results["lean"] == results["full"]
    code, out, rows = results["lean"]
    assert code == 0 and f"allowed by --allow-tools in the hook command ({shell})".encode() in out
    [request] = rows["hitl_requests"]
    assert (request["status"], request["decided_by"], request["agent"]) == ("completed", "rule:allow-tools", case.host)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_a_call_allow_tools_may_not_settle_goes_to_the_full_path(
    tmp_path: Path, fresh_db: Callable[[str], Path], case: HostCase
) -> None:
    """A destructive command, a word naming a key file: the full path's risk check (it refuses the wildcard; with
    no reviewer the call times out into the host's own prompt), the same answer as with ``--no-lean``."""
    shell = HOST_TABLES[case.host]["shell_tools"][0]
    for command in ("rm -rf build", "cat id_rsa"):
        payload = json.dumps(shell_call(case, command)).encode()
        answers = []
        for extra in ((), ("--no-lean",)):
            db = fresh_db(f"{command[:2]}{len(extra)}.db")
            code, out, heavy = _run(
                tmp_path, db, case.host, payload, "--allow-tools", shell, "--timeout", "1", "--no-watchdog", *extra
            )
            assert "reviewer_app.domain.rules" in heavy  # the full check decided
            answers.append((code, out))
        assert answers[0] == answers[1]
        assert b"allowed by --allow-tools" not in answers[0][1]


HOSTILE: dict[str, list[Any]] = {
    "gemini": [{"hook_event_name": "AfterTool"}, {"tool_input": ["x"]}, {"session_id": 5}, {"tool_name": ""}],
    "qwen": [{"hook_event_name": "Stop"}, {"tool_input": "x"}, {"session_id": "s" * 300}],
    "factory": [{"hook_event_name": "PostToolUse"}, {"tool_input": None}, {"tool_name": "a\u0000b"}],
    "copilot": [{"hook_event_name": "postToolUse"}, {"toolArgs": "{not json"}, {"toolArgs": "[1]"}, {"toolName": 1}],
    "cursor": [{"hook_event_name": "afterShellExecution"}, {"command": ""}, {"conversation_id": None}],
    "opencode": [{"hook_event_name": "tool.execute.after"}, {"args": "x"}, {"tool": ["bash"]}],
}


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_hostile_input_is_answered_by_the_full_path_as_before(
    tmp_path: Path, fresh_db: Callable[[str], Path], case: HostCase
) -> None:
    """An unknown event, a field of the wrong type, too long or with a NUL, broken JSON: the lean path reads it as
    the full path does and leaves it there: the same fallback answer and exit code, nothing stored."""
    shell = HOST_TABLES[case.host]["shell_tools"][0]
    variants: list[bytes] = [b"{", b"[]", json.dumps(shell_call(case, "ls")).encode()[:-1]]
    variants += [json.dumps({**shell_call(case, "ls"), **change}).encode() for change in HOSTILE[case.host]]
    db = fresh_db("hostile.db")
    for payload in variants:
        answers = []
        for extra in ((), ("--no-lean",)):
            code, out, _ = _run(tmp_path, db, case.host, payload, "--allow-tools", shell, *extra)
            answers.append((code, out))
        assert answers[0] == answers[1], payload
        assert b"Reviewer could not decide" in answers[0][1], (payload, answers[0])
    assert _rows(db)["hitl_requests"] == []


@pytest.mark.asyncio
@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_the_waiting_request_is_the_full_paths_and_is_waited_on(
    tmp_path: Path, fresh_db: Callable[[str], Path], case: HostCase
) -> None:
    """A call nothing settles: the lean path writes the waiting request (the full path's row) and the full path
    waits on it; a reviewer's decision reaches the agent in the host's format, the same with ``--no-lean``."""
    found = {}
    for label, args in {"lean": (), "full": ("--no-lean",)}.items():
        db = fresh_db(f"{label}.db")
        async with SQLHITLBackend(db, reviewer="tester") as backend:
            process = start_hook(tmp_path, db, shell_call(case, "touch waiting"), *args, host=case.host)
            [pending] = await wait_pending(backend)
            [request] = _rows(db)["hitl_requests"]  # as written, before the full path's backend touches the run
            await backend.decide(pending["hitl_id"], Decision(DecisionKind.REJECT, message="not now"))
            code, answer, err = finish(process)
            assert code == 0 and answer is not None, err
            assert case.verdict(answer) == "deny" and "not now" in case.reason(answer)
        metadata = json.loads(request.pop("metadata"))
        assert set(metadata.pop("hook_process")) == {"pid", "start_ticks", "host"}
        found[label] = (request, metadata, answer)
    assert found["lean"] == found["full"]


WAITING_PROBE = (
    "import runpy, sys\n"
    "from reviewer_app.integrations.claude_code import lean\n"
    "create = lean._create_waiting\n"
    "def traced(*args, **kwargs):\n"
    "    handover = create(*args, **kwargs)\n"
    "    print('LEAN', type(handover).__name__, file=sys.stderr)\n"
    "    return handover\n"
    "lean._create_waiting = traced\n"
    "sys.argv = ['reviewer_app', 'hook', *sys.argv[1:]]\n"
    "runpy.run_module('reviewer_app', run_name='__main__')\n"
)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_lean_path_writes_each_hosts_waiting_request(
    tmp_path: Path, fresh_db: Callable[[str], Path], case: HostCase
) -> None:
    """The waiting request is the lean path's (handed over to the full path, which waits, here for 1 s)."""
    db = fresh_db("waiting.db")
    result = subprocess.run(
        [sys.executable, "-c", WAITING_PROBE, case.host, "--db", str(db), "--timeout", "1", "--no-watchdog"],
        input=json.dumps(shell_call(case, "touch waiting")).encode(),
        capture_output=True,
        check=False,
        env=hook_env(tmp_path),
        timeout=120,
    )
    assert "LEAN Handover" in result.stderr.decode(), result.stderr.decode()
    assert b"no reviewer decided within 1 s" in result.stdout


def test_every_host_has_its_tables_and_the_lean_path_reads_it() -> None:
    from reviewer_app.integrations.claude_code import lean
    from reviewer_app.integrations.claude_code.events import Host

    assert set(HOST_TABLES) == {host.value for host in Host} == set(lean.LEAN_HOSTS)


@pytest.mark.parametrize("host", ["gemini", "claude-code"])
def test_a_payload_over_the_limit_is_refused_with_its_reason(
    tmp_path: Path, fresh_db: Callable[[str], Path], host: str
) -> None:
    """The lean path reads at most the limit and one byte more; the full path then refuses the event for its size
    (not as broken JSON), as it does on its own."""
    from reviewer_app.integrations.claude_code.wire import MAX_STDIN_BYTES

    db = fresh_db("huge.db")
    payload = b'{"padding": "' + b"x" * MAX_STDIN_BYTES + b'"}'
    said = []
    for extra in ((), ("--no-lean",)):
        result = subprocess.run(
            [sys.executable, "-m", "reviewer_app", "hook", host, "--db", str(db), *extra],
            input=payload,
            capture_output=True,
            check=False,
            env=hook_env(tmp_path),
            timeout=120,
        )
        said.append((result.returncode, result.stdout))
        assert b"larger than 32 MB" in result.stderr, result.stderr
    assert said[0] == said[1]
