"""The lean waiter (``integrations/claude_code/lean_wait.py``) against the full path's wait, on real hook processes.

Each sequence runs twice, on two databases at the schema head, each in a folder of its own (its own transcript
cursor): once waited on by the lean waiter (the product's default), once by the full path
(``REVIEWER_HOOK_WAITER=full``); the lean path writes the waiting request both times. The answers must be the
same, and every row of every table, times and per-process values aside (the hook's pid, the audit chain's hashes,
which cover the times).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import shown_arguments
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.claude_code.diffs import MAX_DIFF_CHARS, MAX_FILE_BYTES
from reviewer_app.integrations.claude_code.lean_wait import WAITER_ENV
from reviewer_app.persistence.store import Store
from tests.integrations.hook_helpers import DATA, finish, fixture, hook_env, import_probe, wait_pending

pytestmark = pytest.mark.asyncio

TIMES = {
    "created_at",
    "updated_at",
    "started_at",
    "finished_at",
    "updated_at_ms",
    "ts_ms",
    "heartbeat_ms",
    "responded_at",
    "at_ms",
    "last_hit_at",
    "expires_at",
    "waited_s",
    "waited_index",
}
"""``waited_index`` is the statistics' bucket of ``waited_s`` (under 10 s, under 60 s…), made by the database's
triggers from ``created_at`` and ``responded_at``: a time too. Under load one side's wait crossed 10 s and the other's
did not (seen on main at load ~15 in five of these tests)."""
PER_PROCESS = {"prev_hash", "row_hash"}
"""The audit chain's hashes cover ``at_ms``: equal fields give other hashes a millisecond apart."""
JSON_TIMES = {"resolved_ms", "expires_at", "hook_process"}
RANDOM_META = {"audit_head", "database_id"}
SKIPPED_TABLES = {"alembic_version"}
CLAUDE = "claude-code"

Act = Callable[[SQLHITLBackend, dict[str, Any], subprocess.Popen[bytes]], Awaitable[None]]


def _tables(connection: sqlite3.Connection) -> list[str]:
    names = connection.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    return [name for (name,) in names if name not in SKIPPED_TABLES and not name.startswith("sqlite_")]


def _value(column: str, value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, dict):
            return {k: v for k, v in parsed.items() if k not in JSON_TIMES}
        return parsed
    return value


def rows(database: Path) -> dict[str, list[dict[str, Any]]]:
    """Every row of every table, times and per-process values left out, JSON read (the key order is kept: the
    two waiters must write the same text)."""
    connection = sqlite3.connect(database)
    try:
        dumped = {}
        for table in _tables(connection):
            cursor = connection.execute(f"SELECT * FROM {table}")
            names = [column[0] for column in cursor.description]
            found = []
            for row in cursor.fetchall():
                mapping = dict(zip(names, row, strict=True))
                if table == "reviewer_meta" and mapping.get("key") in RANDOM_META:
                    continue
                found.append({k: _value(k, v) for k, v in mapping.items() if k not in TIMES and k not in PER_PROCESS})
            dumped[table] = sorted(found, key=lambda row: json.dumps(row, sort_keys=True, default=str))
        return dumped
    finally:
        connection.close()


def _approval(record: dict[str, Any], kind: DecisionKind = DecisionKind.APPROVE, **fields: Any) -> Decision:
    return Decision(kind, args_sha256=args_digest(shown_arguments(record)), **fields)


class Side:
    """One waiter's database, transcript and hook process; the call is Claude Code's captured ``PreToolUse`` unless
    ``payload`` (of ``host``) says otherwise."""

    def __init__(
        self, tmp_path: Path, migrated: Path, waiter: str, payload: dict[str, Any] | None = None, host: str = CLAUDE
    ) -> None:
        self.tmp_path = tmp_path
        self.folder = tmp_path / waiter
        self.folder.mkdir()
        self.database = self.folder / "reviews.db"
        shutil.copyfile(migrated, self.database)
        self.waiter = waiter
        self.payload = payload if payload is not None else fixture("pretooluse.json")
        self.host = host
        self.started = 0.0
        self.process: subprocess.Popen[bytes] | None = None
        self.transcript = tmp_path / "session.jsonl"  # one transcript; each side's cursor beside its database
        if not self.transcript.exists():
            shutil.copyfile(DATA / "claude_transcript.jsonl", self.transcript)

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        payload = dict(self.payload)
        if self.host == CLAUDE:
            payload["transcript_path"] = str(self.transcript)
        env = hook_env(self.tmp_path)
        env[WAITER_ENV] = self.waiter
        command = [sys.executable, "-m", "reviewer_app", "hook", self.host, "--db", str(self.database), *args]
        self.started = time.monotonic()
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        assert process.stdin is not None
        process.stdin.write(json.dumps(payload).encode())
        process.stdin.close()
        process.stdin = None
        self.process = process
        return process

    async def run(self, act: Act, *args: str) -> tuple[int, dict[str, Any] | None, str]:
        process = self.start("--timeout", "60", *args) if "--timeout" not in args else self.start(*args)
        async with SQLHITLBackend(self.database, reviewer="tester") as backend:
            [record] = await wait_pending(backend)
            await act(backend, record, process)
            return await asyncio.to_thread(finish, process)


async def _both(
    tmp_path: Path,
    migrated: Path,
    act: Act,
    *args: str,
    sides: list[Side] | None = None,
    payload: dict[str, Any] | None = None,
    host: str = CLAUDE,
    full_args: tuple[str, ...] = (),
    at_once: bool = False,
) -> tuple[dict[str, Any] | None, str, str]:
    """The same sequence under each waiter; their answers and rows compared. The answer and each stderr.
    ``sides``: filled with each side as it starts (for an act that needs it); ``full_args``: the full side's own
    options (``--no-lean``: the full path writes the request too). ``at_once``: both sequences run at the same
    time (each on its own database, transcript cursor and hook process), for those that wait out a budget: the
    two waits then overlap instead of following each other."""
    lean, full = Side(tmp_path, migrated, "lean", payload, host), Side(tmp_path, migrated, "full", payload, host)
    if at_once:
        if sides is not None:
            sides += [lean, full]
        (lean_code, lean_answer, lean_err), (full_code, full_answer, full_err) = await asyncio.gather(
            lean.run(act, *args), full.run(act, *args, *full_args)
        )
    else:
        if sides is not None:
            sides.append(lean)
        lean_code, lean_answer, lean_err = await lean.run(act, *args)
        if sides is not None:
            sides.append(full)
        full_code, full_answer, full_err = await full.run(act, *args, *full_args)
    assert lean_code == full_code == 0, (lean_err, full_err)
    assert lean_answer == full_answer, (lean_err, full_err)
    lean_rows, full_rows = rows(lean.database), rows(full.database)
    assert lean_rows == full_rows, differences(lean_rows, full_rows)
    return lean_answer, lean_err, full_err


def differences(lean: dict[str, Any], full: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Where the two sides' rows differ: (table, row, column, lean's value, full's value), or a count."""
    found: list[tuple[Any, ...]] = []
    for table in sorted(set(lean) | set(full)):
        mine, theirs = lean.get(table, []), full.get(table, [])
        if len(mine) != len(theirs):
            found.append((table, "rows", len(mine), len(theirs)))
            continue
        for index, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            found.extend(
                (table, index, key, a.get(key), b.get(key)) for key in a.keys() | b.keys() if a.get(key) != b.get(key)
            )
    return found


async def _shown(backend: SQLHITLBackend, record: dict[str, Any], settle_s: float = 1.0) -> None:
    """Once the waiter has shown the request on its run's timeline; then ``settle_s`` for its signal handlers."""
    deadline = time.monotonic() + 30
    block = f"hitl_{record['hitl_id']}"
    while not any(event.block_id == block for event in await backend.events(record["invocation_id"])):
        assert time.monotonic() < deadline, "the request never appeared on the timeline"
        await asyncio.sleep(0.05)
    await asyncio.sleep(settle_s)


def _deciding(decision: Callable[[dict[str, Any]], Decision]) -> Act:
    async def act(backend: SQLHITLBackend, record: dict[str, Any], _process: subprocess.Popen[bytes]) -> None:
        await _shown(backend, record)
        await backend.decide(record["hitl_id"], decision(record))

    return act


def _verdict(answer: dict[str, Any] | None) -> tuple[str, str]:
    assert answer is not None
    output = answer["hookSpecificOutput"]
    return output["permissionDecision"], output.get("permissionDecisionReason", "")


@pytest.mark.parametrize(
    ("decision", "verdict", "words"),
    [
        (_approval, "allow", "approved in Reviewer by tester"),
        (lambda r: _approval(r, DecisionKind.APPROVE_FOR_SESSION), "allow", "for this session"),
        (
            lambda r: _approval(r, DecisionKind.EDIT, edited_args={"command": "echo edited"}),
            "allow",
            "with edited input",
        ),
        (lambda r: _approval(r, DecisionKind.REJECT, message="not today"), "deny", "rejected by reviewer: not today"),
        (lambda r: _approval(r, DecisionKind.STEER, message="use ls"), "deny", "Reviewer guidance: use ls"),
    ],
    ids=["approve", "approve-for-session", "edit", "reject", "steer"],
)
async def test_each_decision_is_answered_and_recorded_as_the_full_path_does(
    tmp_path: Path, migrated_sqlite: Path, decision: Callable[[dict[str, Any]], Decision], verdict: str, words: str
) -> None:
    answer, _, _ = await _both(tmp_path, migrated_sqlite, _deciding(decision))
    found, reason = _verdict(answer)
    assert found == verdict and words in reason


async def test_an_answer_instead_of_the_tool_is_a_deny_in_both(tmp_path: Path, migrated_sqlite: Path) -> None:
    """A stored ``respond`` decision (the gate offers it on questions only; another client may store it): both
    waiters deny the call with the reviewer's answer."""

    async def act(backend: SQLHITLBackend, record: dict[str, Any], _process: subprocess.Popen[bytes]) -> None:
        await _shown(backend, record)
        response = _approval(record, DecisionKind.RESPOND, message="42").to_user_response()
        await backend.write(lambda tx: tx.requests.decide(record["hitl_id"], response, reviewer="tester"))

    answer, _, _ = await _both(tmp_path, migrated_sqlite, act)
    assert _verdict(answer) == ("deny", "the reviewer answered instead of approving: 42")


async def test_a_cancel_in_reviewer_is_a_deny_in_both(tmp_path: Path, migrated_sqlite: Path) -> None:
    async def act(backend: SQLHITLBackend, record: dict[str, Any], _process: subprocess.Popen[bytes]) -> None:
        await _shown(backend, record)
        await backend.cancel(record["hitl_id"], reason="not needed")

    answer, _, _ = await _both(tmp_path, migrated_sqlite, act)
    assert _verdict(answer) == ("deny", "the request was cancelled in Reviewer; the call was not run")


def _project(root: Path) -> Path:
    """A project with what an agent may leave at a path it then writes: text, a FIFO, a symlink and a hard link to a
    file outside, a folder, Latin-1 bytes, a file over the diff's 2 MB limit, one whose rewrite diffs past 200 KB."""
    project = root / "project"
    project.mkdir()
    (root / "outside.txt").write_text("OUTSIDE-SECRET\n")
    (project / "notes.txt").write_text("one\ntwo\nthree\n")
    (project / "folder").mkdir()
    (project / "latin1.txt").write_bytes(b"caf\xe9\n")
    (project / "huge.txt").write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    (project / "long.txt").write_text("".join(f"old line {n}\n" for n in range(12_000)))
    if sys.platform != "win32":
        os.mkfifo(project / "pipe")
        (project / "link.txt").symlink_to(root / "outside.txt")
        os.link(root / "outside.txt", project / "hard.txt")
    return project


NOT_READ = "not read, compared with nothing"
LONG = "".join(f"new line {n}\n" for n in range(12_000))
WRITES: dict[str, tuple[str, str, dict[str, Any], str]] = {
    # case: (host, tool, arguments ({p}: the project), the diff's note)
    "write-new": (CLAUDE, "Write", {"file_path": "{p}/new.txt", "content": "hi\n"}, "{p}/new.txt does not exist yet"),
    "edit": (CLAUDE, "Edit", {"file_path": "{p}/notes.txt", "old_string": "two", "new_string": "TWO"}, ""),
    "multiedit": (
        CLAUDE,
        "MultiEdit",
        {
            "file_path": "notes.txt",
            "edits": [{"old_string": "one", "new_string": "1"}, {"old_string": "3", "new_string": ""}],
        },
        "old_string is not in the file as it is now: the agent will refuse this edit",
    ),
    "qwen-edit": ("qwen", "edit", {"file_path": "{p}/notes.txt", "old_string": "three", "new_string": "3"}, ""),
    "cut-at-200KB": (CLAUDE, "Write", {"file_path": "long.txt", "content": LONG}, "first 200 KB of the diff"),
    "fifo": (CLAUDE, "Write", {"file_path": "pipe", "content": "x"}, f"pipe is a FIFO (named pipe): {NOT_READ}"),
    "symlink-out": (
        CLAUDE,
        "Write",
        {"file_path": "{p}/link.txt", "content": "x"},
        f"{{p}}/link.txt is outside the project directory: {NOT_READ}",
    ),
    "hard-link": (
        CLAUDE,
        "Edit",
        {"file_path": "hard.txt", "old_string": "O", "new_string": "0"},
        "hard.txt has 2 hard links: not read (another may be outside the project), compared with nothing",
    ),
    "folder": (CLAUDE, "Write", {"file_path": "folder", "content": "x"}, f"folder is a directory: {NOT_READ}"),
    "latin1": (
        CLAUDE,
        "Edit",
        {"file_path": "latin1.txt", "old_string": "c", "new_string": "C"},
        "latin1.txt is not UTF-8 text: no diff",
    ),
    "over-2MB": (CLAUDE, "Write", {"file_path": "huge.txt", "content": "y"}, "huge.txt is larger than 2 MB: not read"),
}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX: FIFOs, symlinks, hard links")
@pytest.mark.parametrize("case", list(WRITES))
async def test_a_file_write_is_written_by_the_lean_path_as_the_full_path_writes_it(
    tmp_path: Path, migrated_sqlite: Path, case: str
) -> None:
    """The waiting request of a file write or edit, its diff made by the lean path, against the full path's own
    (``--no-lean``: its request, diff and wait): the same answer, every row the same, the diff's note as expected;
    nothing outside the project read, no hang on the FIFO."""
    host, tool, arguments, note = WRITES[case]
    project = _project(tmp_path)
    filled = json.loads(json.dumps(arguments).replace("{p}", str(project)))
    base = fixture("qwen_pretooluse.json" if host == "qwen" else "pretooluse.json")
    base.pop("transcript_path", None)
    payload = {**base, "cwd": str(project), "tool_name": tool, "tool_input": filled, "tool_use_id": f"toolu_{case}"}
    sides: list[Side] = []
    answer, _, _ = await _both(
        tmp_path,
        migrated_sqlite,
        _deciding(_approval),
        sides=sides,
        payload=payload,
        host=host,
        full_args=("--no-lean",),
    )
    assert answer is not None
    [request] = rows(sides[0].database)["hitl_requests"]
    diff = request["data"]["diff"]
    assert diff["note"] == note.replace("{p}", str(project)), diff["note"]
    assert "OUTSIDE-SECRET" not in json.dumps(request)
    if case == "cut-at-200KB":
        assert diff["diff"].endswith("\n… (diff cut at 200 KB)\n") and len(diff["diff"]) < MAX_DIFF_CHARS + 100


@pytest.mark.parametrize("on_timeout", ["ask", "deny"])
async def test_the_expiry_at_the_budget_is_recorded_as_the_full_path_does(
    tmp_path: Path, migrated_sqlite: Path, on_timeout: str
) -> None:
    async def act(backend: SQLHITLBackend, record: dict[str, Any], _process: subprocess.Popen[bytes]) -> None:
        return None

    answer, _, _ = await _both(
        tmp_path, migrated_sqlite, act, "--timeout", "3", "--on-timeout", on_timeout, at_once=True
    )
    found, reason = _verdict(answer)
    assert found == on_timeout and reason == "Reviewer could not decide: no reviewer decided within 3 s"


async def test_a_signal_withdraws_the_request_as_the_full_path_does(tmp_path: Path, migrated_sqlite: Path) -> None:
    async def act(backend: SQLHITLBackend, record: dict[str, Any], process: subprocess.Popen[bytes]) -> None:
        await _shown(backend, record)
        process.send_signal(signal.SIGTERM)

    answer, lean_err, full_err = await _both(tmp_path, migrated_sqlite, act)
    assert _verdict(answer) == ("ask", "Reviewer could not decide: the hook was stopped (SIGTERM)")
    for err in (lean_err, full_err):
        assert "SIGTERM: the request leaves the inbox (answered elsewhere)" in err


async def test_a_decision_racing_the_expiry_stands(tmp_path: Path, migrated_sqlite: Path) -> None:
    """The reviewer's decision takes the write lock before the hook's 8 s budget ends and commits a second after it:
    the hook's compare-and-set expiry waits for the lock, finds the request decided, and the decision stands."""
    sides: list[Side] = []

    async def act(backend: SQLHITLBackend, record: dict[str, Any], process: subprocess.Popen[bytes]) -> None:
        await _shown(backend, record, settle_s=0.0)
        decision = _approval(record)
        [side] = [side for side in sides if side.process is process]
        commit_at = side.started + 8.0 + 1.0  # within the expiry's 2 s wait for the lock

        def slow_decide(tx: Any) -> None:
            tx.requests.decide(record["hitl_id"], decision.to_user_response(), reviewer="tester")
            time.sleep(max(0.0, commit_at - time.monotonic()))

        await backend.write(slow_decide)

    answer, _, _ = await _both(tmp_path, migrated_sqlite, act, "--timeout", "8", sides=sides, at_once=True)
    # Committed a second past the budget and still the answer: the hook's expiry lost the compare-and-set (had it
    # won, the test's own decision would have raised HITLConflict).
    assert _verdict(answer) == ("allow", "approved in Reviewer")


async def test_a_decision_changed_after_it_was_signed_is_never_an_allow(tmp_path: Path, migrated_sqlite: Path) -> None:
    """An approval whose record is rewritten in the same commit (the edit its audit row does not sign): both
    waiters answer the ``--on-error`` fallback and say why, and record the same error."""
    from sqlalchemy import text

    async def act(backend: SQLHITLBackend, record: dict[str, Any], _process: subprocess.Popen[bytes]) -> None:
        await _shown(backend, record)
        store = Store.open(databases[-1])
        try:
            edit = _approval(record, DecisionKind.EDIT, edited_args={"command": "echo edited"})
            with store.transaction() as tx:
                tx.requests.decide(record["hitl_id"], edit.to_user_response(), reviewer="mallory")
                forged = json.dumps({**edit.to_user_response(), "args": {"command": "rm -rf /"}})
                tx.connection.execute(text("UPDATE hitl_requests SET user_response = :r"), {"r": forged})
        finally:
            store.close()

    databases: list[Path] = []  # the side running now
    lean, full = Side(tmp_path, migrated_sqlite, "lean"), Side(tmp_path, migrated_sqlite, "full")
    results = []
    for side in (lean, full):
        databases.append(side.database)
        results.append(await side.run(act, "--on-error", "deny"))
    (lean_code, lean_answer, lean_err), (full_code, full_answer, full_err) = results
    assert lean_code == full_code == 0
    assert lean_answer == full_answer
    verdict, reason = _verdict(lean_answer)
    assert verdict == "deny" and "DecisionNotOnRecord" in reason and "audit row" in reason
    for err in (lean_err, full_err):
        assert "DecisionNotOnRecord" in err
    assert rows(lean.database) == _without_random_block_ids(rows(full.database), rows(lean.database))


def _without_random_block_ids(full: dict[str, Any], lean: dict[str, Any]) -> dict[str, Any]:
    """The error block's id is random (``blk_`` and 16 hex digits) in both: the lean one's id put in its place."""
    lean_ids = {row["block_id"] for row in lean["block_events"] if row["kind"] == "error"}
    assert len(lean_ids) == 1
    [lean_id] = lean_ids
    for row in full["block_events"]:
        if row["kind"] == "error":
            row["block_id"] = lean_id
    full["block_events"] = sorted(full["block_events"], key=lambda row: json.dumps(row, sort_keys=True, default=str))
    return full


def _probe(
    tmp_path: Path, database: Path, heavy: tuple[str, ...], payload: dict[str, Any] | None = None
) -> subprocess.Popen[bytes]:
    """The hook run in-process by :func:`import_probe` (the lean waiter), fed ``payload`` (by default the captured
    PreToolUse event)."""
    env = hook_env(tmp_path)
    env[WAITER_ENV] = "lean"
    process = subprocess.Popen(
        [sys.executable, "-c", import_probe(heavy), str(database)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(payload if payload is not None else fixture("pretooluse.json")).encode())
    process.stdin.close()
    process.stdin = None
    return process


@pytest.mark.parametrize("tool", ["Bash", "Write"])
async def test_the_lean_waiter_loads_no_sqlalchemy_or_asyncio(
    tmp_path: Path, db_at_schema_head: Path, tool: str
) -> None:
    """The hook waits in-process (its exit turned into SystemExit), a reviewer approves, and its modules are listed:
    the decision came without SQLAlchemy, asyncio or the backend; for a Write too, whose request carries its diff
    (made by the lean path: before, a Write's request was left to the full path)."""
    heavy = (
        "sqlalchemy",
        "asyncio",
        "argparse",
        "reviewer_app.hitl.core",
        "reviewer_app.integrations.claude_code.hook",
    )
    payload = fixture("pretooluse.json")
    if tool == "Write":
        project = tmp_path / "project"
        project.mkdir()
        (project / "notes.txt").write_text("one\n")
        arguments = {"file_path": str(project / "notes.txt"), "content": "two\n"}
        payload.update(cwd=str(project), tool_name="Write", tool_input=arguments)
    process = _probe(tmp_path, db_at_schema_head, heavy, payload)
    async with SQLHITLBackend(db_at_schema_head, reviewer="tester") as backend:
        [record] = await wait_pending(backend)
        if tool == "Write":
            assert record["data"]["diff"]["diff"].endswith("-one\n+two\n")
        await backend.decide(record["hitl_id"], _approval(record))
    out, err = await asyncio.to_thread(process.communicate, timeout=60)
    assert _verdict(json.loads(out))[0] == "allow", err.decode()
    assert "HEAVY []" in err.decode(), err.decode()


_HOST = """
import subprocess, sys, time
hook = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE)  # its stdout is this process's: shared with the test
hook.stdin.write(sys.stdin.buffer.read())
hook.stdin.close()
print(hook.pid, flush=True)
time.sleep(600)
"""


async def test_the_host_dying_withdraws_the_request_in_both(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, waiter: str
) -> None:
    """The host process is killed without a word while the hook waits (its stdout stays open: a sibling holds it):
    the hook notices its parent gone, withdraws the request as answered elsewhere and ends."""
    command = [sys.executable, "-m", "reviewer_app", "hook", "claude-code", "--db", str(db_path)]
    host = _start_host(tmp_path, [*command, "--timeout", "60"])
    assert host.stdout is not None
    hook_pid = int(await asyncio.to_thread(host.stdout.readline))
    try:
        [record] = await wait_pending(backend)
        await _shown(backend, record)
        host.kill()
        await asyncio.to_thread(host.wait)
        deadline = time.monotonic() + 30
        while (found := await backend.get(record["hitl_id"])) is not None and found["status"] == "pending":
            assert time.monotonic() < deadline, "the request was never withdrawn"
            await asyncio.sleep(0.05)
        assert found is not None and found["status"] == "cancelled" and found["user_response"] is None
        events = await backend.events(record["invocation_id"])
        notes = [
            e.data["message"] for e in events if e.block_id == f"hitl_{record['hitl_id']}" and e.op.value == "patch"
        ]
        assert notes == ["answered elsewhere (the host process exited)"]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(hook_pid, signal.SIGKILL)
        if host.poll() is None:
            host.kill()
        host.communicate()


def _start_host(tmp_path: Path, command: list[str]) -> subprocess.Popen[bytes]:
    """A stand-in agent host that starts the hook with the captured event and prints the hook's pid."""
    process = subprocess.Popen(
        [sys.executable, "-c", _HOST, *command],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=hook_env(tmp_path),
    )
    assert process.stdin is not None
    process.stdin.write(json.dumps(fixture("pretooluse.json")).encode())
    process.stdin.close()
    process.stdin = None
    return process
