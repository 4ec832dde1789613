"""The watchdog loads everything a withdrawal needs while the hook still lives, so the withdrawal is one write.

Under load, importing the store after the hook died made "answered elsewhere" land seconds late (the package's
lazy exports meant the old ``import reviewer_app.hitl`` preloaded nothing).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import ExternalCall, ReviewClient

PROBE = """
import asyncio, json, sys
from reviewer_app.integrations.claude_code import watchdog
watchdog.load_withdrawal_code()
before = set(sys.modules)
withdrawn = asyncio.run(watchdog.withdraw(sys.argv[1], "h1", "claude-code", "the hook ended"))
heavy = {"reviewer_app", "sqlalchemy", "sqlmodel", "alembic"}
loaded = sorted(name for name in set(sys.modules) - before if name.split(".")[0] in heavy)
print(json.dumps({"withdrawn": withdrawn, "loaded": loaded}))
"""


@pytest.mark.asyncio
async def test_a_withdrawal_imports_nothing_once_the_watchdog_is_ready(tmp_path: Path) -> None:
    database = str(tmp_path / "reviewer.db")
    backend = SQLHITLBackend(database)
    try:
        call = ExternalCall(
            hitl_id="h1", agent="claude-code", session_id="s", invocation_id="i", tool_name="Bash", arguments={}
        )
        await ReviewClient(backend, agent="claude-code").submit(call)
    finally:
        await backend.aclose()

    probe = await asyncio.create_subprocess_exec(
        sys.executable, "-c", PROBE, database, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(probe.communicate(), 120)
    assert probe.returncode == 0, err.decode()
    result = json.loads(out.decode().strip().splitlines()[-1])
    assert result["withdrawn"] is True
    assert result["loaded"] == []

    backend = SQLHITLBackend(database)
    try:
        record = await backend.get("h1")
        assert record is not None and record["status"] == "cancelled"
    finally:
        await backend.aclose()


def test_what_the_hook_said_lands_on_the_timeline_as_oneprintable_line() -> None:
    from reviewer_app.integrations.claude_code.watchdog import printable_line

    assert printable_line(b"the host stopped reading the answer\n") == "the host stopped reading the answer"
    assert printable_line(b"\x1b[31mred\x07 text\r\nsecond line") == "[31mred text"
    assert printable_line(b"\xff\xfe bytes") == "\ufffd\ufffd bytes"
    assert printable_line(b"") == ""


def _rows(database: Path, table: str, where: str, value: str, skip: set[str]) -> list[dict]:
    connection = sqlite3.connect(database)
    connection.row_factory = sqlite3.Row
    try:
        rows = connection.execute(f"SELECT * FROM {table} WHERE {where} = ?", (value,)).fetchall()
    finally:
        connection.close()
    return [{key: row[key] for key in row.keys() if key not in skip} for row in rows]  # noqa: SIM118 (Row iterates values)


TIMES = {"created_at", "updated_at", "updated_at_ms", "responded_at", "at_ms", "prev_hash", "row_hash", "seq", "ts_ms"}


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("hitl_type", "arguments"),
    [
        ("tool_approval", {"command": "rm -rf build", "description": "clean"}),
        ("ask_user", {"question": "Which branch?", "options": ["main", "dev"]}),
        ("tool_approval", {"file_path": "/tmp/x", "content": "x" * 200_000}),  # the audit row names a blob
    ],
)
async def test_the_lean_withdrawal_writes_what_the_store_writes(
    tmp_path: Path, hitl_type: str, arguments: dict
) -> None:
    """Withdrawn with sqlite3 alone or through the store: the same request row, audit row and timeline note."""
    from reviewer_app.integrations.claude_code.watchdog import withdraw, withdraw_lean

    databases = {side: tmp_path / f"{side}.db" for side in ("store", "lean")}
    for database in databases.values():
        backend = SQLHITLBackend(database)
        try:
            call = ExternalCall(
                hitl_id="h1",
                agent="claude-code",
                session_id="s",
                invocation_id="i",
                tool_name="Bash" if hitl_type == "tool_approval" else None,
                arguments=arguments,
                hitl_type=hitl_type,
            )
            await ReviewClient(backend, agent="claude-code").submit(call)
        finally:
            await backend.aclose()

    assert await withdraw(str(databases["store"]), "h1", "claude-code", "the hook ended") is True
    assert withdraw_lean(str(databases["lean"]), "h1", "claude-code", "the hook ended") is True
    assert withdraw_lean(str(databases["lean"]), "h1", "claude-code", "again") is False  # decided: it stands
    assert withdraw_lean(str(databases["lean"]), "missing", "claude-code", "gone") is None

    for table, where, value in (
        ("hitl_requests", "hitl_id", "h1"),
        ("audit_log", "hitl_id", "h1"),
        ("block_events", "block_id", "hitl_h1"),
    ):
        store_rows, lean_rows = (_rows(databases[side], table, where, value, TIMES) for side in ("store", "lean"))
        if table == "block_events":
            for row in (*store_rows, *lean_rows):
                row["data"] = {k: v for k, v in json.loads(row["data"]).items() if k != "resolved_ms"}
        assert lean_rows == store_rows, table
        assert len(lean_rows) == 1
    backend = SQLHITLBackend(databases["lean"])
    try:
        assert (await backend.verify_audit()).ok
        record = await backend.get("h1")
        assert record is not None and record["status"] == "cancelled" and record["user_response"] is None
    finally:
        await backend.aclose()


def test_what_the_lean_withdrawal_cannot_do_is_left_to_the_store(tmp_path: Path) -> None:
    from reviewer_app.integrations.claude_code.watchdog import withdraw_lean

    assert withdraw_lean(str(tmp_path / "absent.db"), "h1", "claude-code", "gone") is None  # no such file
    assert withdraw_lean("postgresql://reviewer@127.0.0.1/reviewer", "h1", "claude-code", "gone") is None


WATCH_ARGVS = [
    ["--db", "/tmp/r.db", "--hitl-id", "h1", "--pid", "42", "--until", "1700000000", "--agent", "codex"],
    ["--db", "r.db", "--hitl-id", "h1", "--pid", "42", "--until", "17.5", "--agent", "gemini", "--start-ticks", "9"],
    ["--until=3", "--pid=7", "--hitl-id=h=2", "--db=postgresql://u@h/db", "--start-ticks=0"],
    ["--db", "a.db", "--db", "b.db", "--hitl-id", "", "--pid", " 8 ", "--until", "inf"],
    ["--db=", "--hitl-id", "h", "--pid", "1", "--until", "1e9"],
]
NOT_THE_WATCHDOGS = [
    [],
    ["--db", "r.db", "--hitl-id", "h", "--pid", "1"],  # no --until: the parser reports it
    ["--db", "r.db", "--hitl-id", "h", "--pid", "x", "--until", "1"],  # not a number
    ["--db", "r.db", "--hitl-id", "h", "--pid", "1", "--until", "1", "--start-ticks", "1.5"],
    ["--db", "r.db", "--hitl", "h", "--pid", "1", "--until", "1"],  # an abbreviation: argparse's to read
    ["--db", "r.db", "--hitl-id", "h", "--pid", "-1", "--until", "1"],
    ["--db", "r.db", "--hitl-id", "h", "--pid", "1", "--until", "1", "extra"],
    ["--db", "r.db", "--hitl-id", "h", "--pid", "1", "--until", "1", "--agent"],
    ["--db", "r.db", "--hitl-id", "h", "--pid", "1", "--until", "1", "-h"],
]


@pytest.mark.parametrize("argv", WATCH_ARGVS)
def test_the_watchdogs_own_reading_of_its_command_line_is_the_hook_parsers(argv: list[str]) -> None:
    from reviewer_app.integrations.claude_code.command import build_parser
    from reviewer_app.integrations.claude_code.watchdog import watch_arguments

    parsed = build_parser().parse_args(["_watch", *argv])
    expected = (parsed.db, parsed.hitl_id, parsed.pid, parsed.start_ticks, parsed.until, parsed.agent)
    assert watch_arguments(argv) == expected


@pytest.mark.parametrize("argv", NOT_THE_WATCHDOGS)
def test_anything_else_is_left_to_the_hook_parser(argv: list[str]) -> None:
    from reviewer_app.integrations.claude_code.watchdog import watch_arguments

    assert watch_arguments(argv) is None


def test_a_watchdog_process_starts_without_the_hook_command_or_argparse(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """Every waiting hook starts one: it reads its own command line, not the hook command's parser."""
    import subprocess

    from reviewer_app.integrations.claude_code.lean import reviewer_command, watchdog_command

    command = watchdog_command(reviewer_command(), str(tmp_path / "r.db"), "h1", "claude-code", 0)  # deadline passed
    command.insert(1, "-X")
    command.insert(2, "importtime")
    done = subprocess.run(
        command, env=subprocess_env, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    imported = {line.rpartition("|")[2].strip() for line in done.stderr.splitlines() if line.startswith("import time")}
    assert "reviewer_app.integrations.claude_code.watchdog" in imported
    hook_command = "reviewer_app.integrations.claude_code.command"
    assert not imported & {"argparse", hook_command, "logging", "subprocess", "typing"}
