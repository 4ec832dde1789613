"""The hook's lean path: the session's exact waiver answered with the standard library alone, exactly as the fast
and backend paths answer it (rows, audit chain, words), and everything it cannot settle for certain left to them."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import platformdirs
import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLType
from reviewer_app.domain.lean_settlement import COVERS, NOT_COVERED, stored_waiver_verdict
from reviewer_app.domain.rules import Rule
from reviewer_app.domain.waivers import SessionRule, rule_for
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.claude_code import hook, lean, lean_store, request
from reviewer_app.integrations.claude_code.events import Host, parse_event
from reviewer_app.persistence import blobs
from reviewer_app.persistence.audit_seal import user_data_dir
from tests.integrations.hook_helpers import fixture, hook_env, import_probe, run_hook

LEAN_HEAVY = ("threading", "math", "json", "reviewer_app.domain.hitl")
"""What a settled call does without either (issue 29: answered near the interpreter's own start): ``threading``
for the wake-up hint's lock, ``math`` and ``json`` (its import compiles six regular expressions) for a few
checks and texts, the request module's enums for one summary line."""
TIME_COLUMNS = {"created_at", "updated_at", "updated_at_ms", "responded_at", "started_at", "at_ms", "last_hit_at"}
SESSION = "lean-session"


async def _waive(db: Path, command: str, *, tool: str = "Bash", agent: str = "claude-code", **flags: Any) -> None:
    """An approve-for-session decision on ``command``: the session's waiver for it."""
    arguments = {"command": command, **flags}
    async with SQLHITLBackend(db, reviewer="tester") as backend:
        await backend.create(
            hitl_id=f"seed-{command}",
            hitl_type="tool_approval",
            session_id=SESSION,
            invocation_id="seed-run",
            data={"arguments": arguments},
            metadata={"agent": agent, "external": True},
            tool_name=tool,
        )
        await backend.decide(
            f"seed-{command}", Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=args_digest(arguments))
        )


def bash_event(name: str, command: str, call: str, **arguments: Any) -> dict[str, Any]:
    payload = dict(fixture(name))
    payload.update(session_id=SESSION, prompt_id="lean-run", tool_name="Bash")
    payload["tool_input"] = {"command": command, "description": "lean", **arguments}
    if name == "pretooluse.json":
        payload["tool_use_id"] = call
    return payload


def _rows(db: Path, table: str, where: str, value: str) -> list[dict[str, Any]]:
    connection = sqlite3.connect(db)
    connection.row_factory = sqlite3.Row
    try:
        columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
        types = ", ".join(f"typeof({c}) AS type_of_{c}" for c in columns)
        rows = connection.execute(f"SELECT *, {types} FROM {table} WHERE {where} = ?", (value,)).fetchall()
        return [
            {k: v for k, v in dict(row).items() if k not in TIME_COLUMNS and k not in ("prev_hash", "row_hash", "id")}
            for row in rows
        ]
    finally:
        connection.close()


def decided_rows(db: Path, decided_by: str = "session-rule:%") -> list[dict[str, Any]]:
    """The one request decided by ``decided_by`` (a LIKE pattern), its audit row and its run."""
    connection = sqlite3.connect(db)
    try:
        [(hitl_id,)] = connection.execute("SELECT hitl_id FROM hitl_requests WHERE decided_by LIKE ?", (decided_by,))
    finally:
        connection.close()
    requests, audit = _rows(db, "hitl_requests", "hitl_id", hitl_id), _rows(db, "audit_log", "hitl_id", hitl_id)
    if requests[0]["tool_call_id"] is None:  # a PermissionRequest has no call id: a random request id each time
        for row in (*requests, *audit):
            row["hitl_id"] = "random"
    return [requests, audit, _rows(db, "invocations", "id", "lean-run")]


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["pretooluse.json", "permissionrequest.json"])
async def test_lean_path_writes_and_answers_as_the_fast_and_backend_paths(
    tmp_path: Path, fresh_db: Callable[[str], Path], name: str
) -> None:
    """The same waived call through the three paths: the same answer; the fast path's request, audit row and run
    (the audit chain of each database verifies)."""
    command = "git status --short"
    paths = {"lean": (), "fast": ("--no-lean",), "backend": ("--no-lean", "--no-fast-path")}
    results = {}
    for label, args in paths.items():
        db = fresh_db(f"{label}.db")
        await _waive(db, command)
        code, answer, err = run_hook(tmp_path, db, bash_event(name, command, "toolu_lean_1"), "--no-transcript", *args)
        assert code == 0, err
        results[label] = (answer, decided_rows(db))
        async with SQLHITLBackend(db) as backend:
            assert (await backend.verify_audit()).ok
    # the rows as the fast path writes them (its own test holds them to the backend's for the same fields; the
    # backend path here also stamps the waiting hook's process and expiry, written before it knew a waiver settles)
    assert results["lean"][1] == results["fast"][1]
    assert results["lean"][0] == results["fast"][0] == results["backend"][0]
    [audit_row] = results["lean"][1][1]
    assert (
        audit_row["message"] == "waived by this session's rule: allow `git status --short` exactly (Bash, this session)"
    )


def test_a_waived_call_loads_no_argparse_dataclasses_typing_or_rules(tmp_path: Path, db_path: Path) -> None:
    """The lean path's promise, in a real process: the waived call is answered without the typed event
    (dataclasses, typing), argparse, the rules engine, the shell parser, platformdirs or tempfile."""
    import asyncio

    asyncio.run(_waive(db_path, "echo lean"))
    heavy = ("argparse", "dataclasses", "typing", "bashlex", "platformdirs", "tempfile", "asyncio", "uuid")
    heavy += ("reviewer_app.domain.rules", "reviewer_app.domain.risk", "reviewer_app.domain.shell")
    heavy += LEAN_HEAVY
    probe = import_probe(
        (*heavy, "reviewer_app.integrations.claude_code.events", "reviewer_app.integrations.claude_code.hook")
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(db_path)],
        input=json.dumps(bash_event("pretooluse.json", "echo lean", "toolu_imports")).encode(),
        capture_output=True,
        check=False,
        env=hook_env(tmp_path),
        timeout=60,
    )
    answer = json.loads(result.stdout)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert "HEAVY []" in result.stderr.decode(), result.stderr.decode()


@pytest.mark.asyncio
async def test_what_the_lean_path_cannot_tell_is_decided_as_before(tmp_path: Path, db_path: Path) -> None:
    """A rule about the tool, --allow-tools, a waiver that needs the parser (other quoting of the approved
    command), a flag the waiver was not granted for: the full path answers, with its own words."""
    await _waive(db_path, "echo lean")
    quoted = bash_event("pretooluse.json", "'echo' lean", "toolu_quoted")  # the same command for the parser
    _, answer, _ = run_hook(tmp_path, db_path, quoted, "--no-transcript")
    assert answer is not None and "allow `echo lean` exactly" in json.dumps(answer)

    flagged = bash_event("pretooluse.json", "echo lean", "toolu_flag", run_in_background=True)
    _, answer, _ = run_hook(tmp_path, db_path, flagged, "--no-transcript", "--timeout", "1")
    assert answer is not None and answer["hookSpecificOutput"]["permissionDecision"] == "ask"  # nobody decided

    async with SQLHITLBackend(db_path, reviewer="tester") as backend:
        await backend.add_rule(Rule.create("deny", "Bash(echo:*)", now=1.0))
    denied = bash_event("pretooluse.json", "echo lean", "toolu_denied")
    _, answer, _ = run_hook(tmp_path, db_path, denied, "--no-transcript")
    assert answer is not None and answer["hookSpecificOutput"]["permissionDecision"] == "deny"  # the rule wins


def test_stored_waiver_verdicts_agree_with_the_waiver_itself() -> None:
    """Over approved and asked command pairs (and prefix waivers): the lean verdict is never "covers" where the
    waiver does not cover the call, nor "not covered" where it does."""
    commands = [
        "git status",
        "git  status",
        "'git' status",
        "git status --short",
        "git push",
        "git push --force",
        "FOO=1 git status",
        "ls -la /tmp",
        "ls",
        "echo a=b",
        "time git status",
        "npm run test:unit",
        "echo $HOME",
        "echo hi > out.txt",
        "git status; touch x",
        "cat a | sh",
        "echo ok 2>&1",
    ]
    scopes = []
    for approved in commands:
        rule = rule_for("Bash", {"command": approved})
        if rule is not None:
            scopes.append((rule, rule.stored_scope()))
    for words in (("git",), ("git", "push"), ("npm", "run")):
        from reviewer_app.domain.shell_scopes import CommandScope

        prefix = SessionRule("Bash", CommandScope.prefix(words))
        scopes.append((prefix, prefix.stored_scope()))
    told = 0
    for rule, stored in scopes:
        for asked in commands:
            for arguments in ({"command": asked}, {"command": asked, "run_in_background": True}):
                verdict = stored_waiver_verdict("Bash", arguments, stored)
                matches = rule.matches("Bash", arguments)
                if verdict == COVERS:
                    assert matches, (stored, arguments)
                elif verdict == NOT_COVERED:
                    assert not matches, (stored, arguments)
                told += verdict != "unsure"
    assert told > len(scopes) * len(commands)  # most pairs are told without the parser


@pytest.mark.parametrize("host", [Host.CLAUDE_CODE, Host.CODEX])
@pytest.mark.parametrize("tool_input", [{"command": "ls", "description": "list"}, {"file_path": "/x", "content": ""}])
def test_request_row_is_the_request_fields_of_the_event(host: Host, tool_input: dict[str, Any]) -> None:
    payload = {**fixture("permissionrequest.json"), "tool_name": "Write", "tool_input": tool_input}
    payload.update(model="m", permission_mode="default", tool_use_id="toolu_row")
    event = parse_event(json.dumps(payload).encode(), host)
    fields = request.request_fields(event, title="the title")
    row = lean.request_row(host.value, lean_event(payload, host.value), "the title")
    assert row["data"] == fields.request_data() and row["metadata"] == fields.request_metadata()
    for name in ("hitl_id", "hitl_type", "session_id", "invocation_id", "tool_name", "tool_call_id", "expires_at"):
        assert row[name] == getattr(fields, name), name
    assert (row["agent"], row["title"]) == (fields.agent, fields.title)


WRITER_CALLS = {
    "Write": (Host.CLAUDE_CODE, "Write", {"file_path": "notes.txt", "content": "one\nTWO\n"}),
    "Edit": (Host.CLAUDE_CODE, "Edit", {"file_path": "{p}/notes.txt", "old_string": "two", "new_string": "2"}),
    "MultiEdit": (
        Host.CLAUDE_CODE,
        "MultiEdit",
        {
            "file_path": "notes.txt",
            "edits": [{"old_string": "one", "new_string": "1"}, {"old_string": "nine", "new_string": ""}],
        },
    ),
    "qwen edit": (Host.QWEN, "edit", {"file_path": "{p}/notes.txt", "old_string": "one", "new_string": "ONE"}),
    "cut at 200 KB": (Host.CLAUDE_CODE, "Write", {"file_path": "new.txt", "content": "a line of text\n" * 20_000}),
    "a FIFO": (Host.CLAUDE_CODE, "Write", {"file_path": "pipe", "content": "x"}),
    "a symlink out": (Host.CLAUDE_CODE, "Write", {"file_path": "{p}/out.txt", "content": "x"}),
}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX: a FIFO, a symlink")
@pytest.mark.parametrize("case", list(WRITER_CALLS))
def test_a_file_writes_request_row_is_the_full_paths_with_its_diff(tmp_path: Path, case: str) -> None:
    """A file write's waiting request as the lean path builds it (``request_row`` with ``diff_for``'s diff, as
    ``_create_waiting`` does) against the full path's (``hook._waiting_fields``): the same data, diff and note."""
    from reviewer_app.integrations.claude_code.diffs import diff_for
    from reviewer_app.integrations.hosts.lean_wire import event_fields

    host, tool, arguments = WRITER_CALLS[case]
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("one\ntwo\n")
    os.mkfifo(project / "pipe")
    (project / "out.txt").symlink_to(tmp_path / "elsewhere.txt")
    filled = json.loads(json.dumps(arguments).replace("{p}", str(project)))
    payload = fixture("qwen_pretooluse.json" if host is Host.QWEN else "permissionrequest.json")
    payload.update(cwd=str(project), tool_name=tool, tool_input=filled, tool_use_id="toolu_writer")
    event = parse_event(json.dumps(payload).encode(), host)
    fields, expires_at = hook._waiting_fields(event, hook.HookOptions(host=host, database="x.db"), "the title")
    lean_fields = event_fields(host.value, payload)
    diff = diff_for(tool, lean_fields["tool_input"], lean_fields["cwd"])
    row = lean.request_row(
        host.value, lean_fields, "the title", metadata=fields.metadata, expires_at=expires_at, diff=diff
    )
    assert diff is not None and row["data"] == fields.request_data() and row["metadata"] == fields.request_metadata()
    assert list(row["data"]) == list(fields.request_data())  # the same key order: the same stored text
    for name in ("hitl_id", "hitl_type", "session_id", "invocation_id", "tool_name", "tool_call_id", "expires_at"):
        assert row[name] == getattr(fields, name), name
    if case == "cut at 200 KB":
        assert diff["note"] == "new.txt does not exist yet; first 200 KB of the diff"
    elif case == "a FIFO":
        assert diff["note"] == "pipe is a FIFO (named pipe): not read, compared with nothing"


def lean_event(payload: dict[str, Any], host: str) -> dict[str, Any]:
    from reviewer_app.integrations.claude_code.wire import claude_event_fields

    return claude_event_fields(payload, host)


@pytest.mark.parametrize(
    ("argv", "wanted"),
    [
        (["claude-code", "--db", "x.db"], {"--db": "x.db"}),
        (["codex", "--db=x.db", "--timeout", "5", "--no-transcript"], {"--db": "x.db", "timeout": 5.0}),
        (["claude-code", "--db", "x.db", "--allow-tools", "Read,Bash", "--on-error", "deny"], {"--on-error": "deny"}),
        (["claude-code", "--db", "x.db", "--timeout", "0"], {"timeout": lean.DEFAULT_TIMEOUT_S}),
        (["gemini", "--db", "x.db"], {"host": "gemini"}),  # every host, in its own format
        (["aider", "--db", "x.db"], None),  # no such host: the full parser says so
        (["claude-code", "--db", "x.db", "--event", "PostToolUse"], {"--event": "PostToolUse"}),  # a session event
        (["claude-code", "--db", "x.db", "--no-trans"], None),  # argparse's abbreviations: the full parser's
        (["claude-code", "--db", "x.db", "--on-error", "allow"], None),  # refused by the full parser
        (["claude-code", "-h"], None),
        (["claude-code", "--db", "x.db", "--no-lean"], None),
    ],
)
def test_hook_options_reads_only_what_it_knows(argv: list[str], wanted: dict[str, Any] | None) -> None:
    options = lean.hook_options(argv)
    if wanted is None:
        assert options is None
    else:
        assert options is not None and wanted.items() <= options.items()


def test_constants_the_lean_path_keeps_are_the_full_paths() -> None:
    assert lean_store.SMALL_VALUE_BYTES == blobs.BLOB_THRESHOLD
    assert lean_store.BLOB_REFS_KEY == blobs.REFS_KEY
    assert HITLType.ASK_USER.value == lean_store.ASK_USER
    assert lean.DEFAULT_TIMEOUT_S == hook.DEFAULT_TIMEOUT_S


@pytest.mark.parametrize(
    "env",
    [
        {"XDG_DATA_HOME": "/srv/data", "HOME": "/home/a"},
        {"XDG_DATA_HOME": "", "HOME": "/home/a"},
        {"HOME": "/home/a/"},
        {"XDG_DATA_HOME": "relative/dir", "HOME": "/home/a"},
    ],
)
def test_user_data_dir_is_platformdirs(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert user_data_dir() == Path(platformdirs.user_data_dir("reviewer-app", appauthor=False))


@pytest.mark.parametrize("env", [{}, {"TMPDIR": "/var/tmp"}, {"TMP": ""}])
def test_temporary_dir_is_tempfiles(env: dict[str, str]) -> None:
    clean = {k: v for k, v in os.environ.items() if k not in ("TMPDIR", "TEMP", "TMP")}
    code = "import tempfile; from reviewer_app.persistence.wakeup import _temporary_dir\n"
    code += "print(_temporary_dir() == tempfile.gettempdir())"
    result = subprocess.run(
        [sys.executable, "-c", code], env={**clean, **env}, capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "True", (env, tempfile.gettempdir())


@pytest.mark.asyncio
async def test_the_waiting_request_is_the_fast_paths_and_is_waited_on(
    tmp_path: Path, fresh_db: Callable[[str], Path]
) -> None:
    """A call nothing settles: the lean path writes the waiting request (the fast path's row, the hook's process in
    its metadata) and the full path waits on it; a reviewer's decision reaches the agent."""
    from tests.integrations.hook_helpers import finish, start_hook, wait_pending

    rows = {}
    for label, args in {"lean": (), "fast": ("--no-lean",)}.items():
        db = fresh_db(f"{label}.db")
        async with SQLHITLBackend(db, reviewer="tester") as backend:
            started = time.time()
            process = start_hook(tmp_path, db, bash_event("pretooluse.json", "touch waiting", "toolu_wait"), *args)
            [pending] = await wait_pending(backend)
            found = _rows(db, "hitl_requests", "hitl_id", pending["hitl_id"])
            await backend.decide(pending["hitl_id"], Decision(DecisionKind.REJECT, message="not now"))
            code, answer, err = finish(process)
            assert code == 0 and answer is not None, err
            assert answer["hookSpecificOutput"]["permissionDecision"] == "deny"
            assert (await backend.verify_audit()).ok
        metadata = json.loads(found[0].pop("metadata"))
        assert set(metadata["hook_process"]) == {"pid", "start_ticks", "host"}
        expires_at = found[0].pop("expires_at")
        assert started + hook.DEFAULT_TIMEOUT_S <= expires_at <= time.time() + hook.DEFAULT_TIMEOUT_S + 4
        rows[label] = (found, metadata["agent"])
    assert rows["lean"] == rows["fast"]


def test_constants_for_the_waiting_request_are_the_full_paths() -> None:
    from reviewer_app.integrations.claude_code import diffs

    assert lean.EXPIRY_GRACE_S == hook.EXPIRY_GRACE_S
    assert diffs.WRITE_TOOLS | diffs.EDIT_TOOLS == lean.DIFF_TOOLS


@pytest.mark.skipif(sys.platform != "linux", reason="posix_spawn with /proc: Linux")
def test_the_watchdog_starts_detached_with_nothing_of_the_hooks() -> None:
    """Spawned without subprocess, the watchdog gets what Popen(start_new_session=True, close_fds=True) gives
    it: a session of its own, /dev/null for stdout and stderr, for stdin the pipe only the hook writes (its reason,
    then end-of-file when it exits), no other descriptor (the host's stdout pipe above all: the host waits for it
    to close)."""
    from reviewer_app.integrations.claude_code.watchdog import stop_watchdog

    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)  # as a host may pass one
    try:
        process = lean.spawn_watchdog(["/bin/sleep", "30"])
        assert isinstance(process, lean.SpawnedProcess)
        try:
            fds = _settled_fds(process.pid)
            assert sorted(fds) == ["0", "1", "2"], fds
            assert {fds["1"], fds["2"]} == {os.devnull}
            assert lean._reason_fd is not None
            assert fds["0"] == os.readlink(f"/proc/self/fd/{lean._reason_fd}")  # the pipe the hook writes
            assert fds["0"].startswith("pipe:")
            assert os.getsid(process.pid) == process.pid
        finally:
            stop_watchdog(process)
        with pytest.raises(ProcessLookupError):
            os.kill(process.pid, 0)  # stopped and reaped
    finally:
        os.close(read_end)
        os.close(write_end)


def _settled_fds(pid: int) -> dict[str, str]:
    """The child's descriptors once its exec has closed the close-on-exec ones (the parent of a vfork-style spawn
    resumes a moment before that)."""
    deadline = time.monotonic() + 5
    while True:
        try:
            fds = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except FileNotFoundError:  # one closed while read
            continue
        if set(fds) == {"0", "1", "2"} or time.monotonic() > deadline:
            return fds
        time.sleep(0.01)


def test_the_full_path_gets_the_garbage_collector_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lean path runs without the cyclic collector (a settled call ends at once); a call it hands over (here:
    no database named) reaches the full path, which may wait for minutes, with the collector on."""
    import gc

    monkeypatch.delenv("REVIEWER_DB", raising=False)
    assert gc.isenabled()
    assert lean.run(["claude-code", "--no-transcript"]) == (None, None)
    assert gc.isenabled()


def test_hooks_alone_on_a_database_keep_its_write_ahead_log_short(tmp_path: Path, db_path: Path) -> None:
    """Each hook process ends without closing its connection; the next one rebuilds the log's index by reading
    every frame of it, and nothing restarted the log: with no window open, the log grew by every settled call
    and every call read all of it (the bench's later calls paid milliseconds for it). A hook that finds the log
    past the limit empties it, so it stays within the limit plus what one call writes."""
    import asyncio

    asyncio.run(_waive(db_path, "echo short"))
    wal = Path(f"{db_path}-wal")
    sizes = []
    for index in range(30):
        code, answer, err = run_hook(tmp_path, db_path, bash_event("pretooluse.json", "echo short", f"toolu_{index}"))
        assert code == 0 and answer is not None, err
        assert answer["hookSpecificOutput"]["permissionDecision"] == "allow", answer
        sizes.append(wal.stat().st_size if wal.exists() else 0)
    assert max(sizes) <= lean_store.WAL_LIMIT_BYTES + 512 * 1024, sizes
    connection = sqlite3.connect(db_path)
    try:  # every call recorded, its audit row with it
        query = (
            "SELECT count(*) FROM hitl_requests JOIN audit_log USING (hitl_id) WHERE decided_by LIKE 'session-rule:%'"
        )
        assert connection.execute(query).fetchone() == (30,)
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    finally:
        connection.close()
