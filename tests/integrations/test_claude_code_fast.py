"""The rule-settled path writes what the backend writes, with sqlite3 alone, and keeps the ORM out of the hook."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.settlement import Settlement
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations import core
from reviewer_app.integrations.claude_code import fast, request
from reviewer_app.integrations.claude_code.events import Host, parse_event
from reviewer_app.integrations.claude_code.fast import FastStore
from reviewer_app.integrations.claude_code.hook import settle_by_rule_tx
from reviewer_app.persistence import migrate
from tests.integrations.hook_helpers import REPO_ROOT, fixture, hook_env

TIME_COLUMNS = {"created_at", "updated_at", "updated_at_ms", "responded_at", "started_at", "at_ms"}


def _rows(db: Path, table: str, key: str, value: str) -> list[dict]:
    connection = sqlite3.connect(db)
    connection.row_factory = sqlite3.Row
    try:
        # typeof() of every column too: the same values stored as the same SQLite types
        columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
        types = ", ".join(f"typeof({c}) AS type_of_{c}" for c in columns)
        rows = connection.execute(f"SELECT *, {types} FROM {table} WHERE {key} = ?", (value,)).fetchall()
        return [dict(row) for row in rows]
    finally:
        connection.close()


def _comparable(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in TIME_COLUMNS and k not in ("id", "prev_hash", "row_hash")}


def _fields(name: str, suffix: str, *, title: str | None = "append a marker please"):
    payload = dict(fixture(name))
    payload["session_id"] = f"session-{suffix}"
    payload["prompt_id"] = f"prompt-{suffix}"
    if "tool_use_id" in payload:
        payload["tool_use_id"] = f"toolu-{suffix}"
    event = parse_event(json.dumps(payload).encode(), Host.CLAUDE_CODE)
    return request.request_fields(event, hitl_id=f"hitl-{suffix}", title=title), event


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["pretooluse.json", "permissionrequest.json"])
async def test_fast_path_rows_equal_the_backend_rows(db_path: Path, backend: SQLHITLBackend, name: str) -> None:
    verdict = Settlement.by_allow_tools("Bash")
    slow_fields, event = _fields(name, "slow")
    decided = await backend.write(lambda tx: settle_by_rule_tx(tx, slow_fields, ("Bash",), event.cwd))
    assert decided is not None and decided["status"] == "completed"

    fast_fields, _ = _fields(name, "fast")
    store = FastStore.open(str(db_path))
    assert store is not None, "a database at the bundled head must take the fast path"
    try:
        assert store.settle(fast_fields, verdict.decision(fast_fields.arguments), workspace=event.cwd)
        assert not store.settle(
            fast_fields, verdict.decision(fast_fields.arguments), workspace=event.cwd
        )  # same id again
    finally:
        store.close()

    def normalised(suffix: str) -> dict:
        out = {}
        for table, key, value in (
            ("sessions", "id", f"session-{suffix}"),
            ("invocations", "id", f"prompt-{suffix}"),
            ("hitl_requests", "hitl_id", f"hitl-{suffix}"),
            ("audit_log", "hitl_id", f"hitl-{suffix}"),
        ):
            [row] = _rows(db_path, table, key, value)
            text = json.dumps(_comparable(row), sort_keys=True, default=str).replace(suffix, "X")
            out[table] = json.loads(text)
        return out

    assert normalised("fast") == normalised("slow")
    report = await backend.verify_audit()
    assert report.ok and report.rows_checked == 2
    record = await backend.get("hitl-fast")
    assert record is not None and record["user_response"]["decision"] == DecisionKind.APPROVE.value


def test_schema_revision_is_the_bundled_head() -> None:
    assert migrate.head_revision() == fast.SCHEMA_REVISION, (
        "update fast.py (and check its statements) for the new migration"
    )


@pytest.mark.asyncio
async def test_an_older_or_foreign_database_takes_the_full_path(
    tmp_path: Path, backend: SQLHITLBackend, db_path: Path
) -> None:
    assert FastStore.open(str(tmp_path / "missing.db")) is None
    assert FastStore.open("postgresql://localhost/reviewer") is None
    connection = sqlite3.connect(db_path)
    connection.execute("UPDATE alembic_version SET version_num = '9999'")
    connection.commit()
    connection.close()
    assert FastStore.open(str(db_path)) is None


def test_request_data_matches_the_adapter_core() -> None:
    fields, _ = _fields("pretooluse.json", "x")
    call = fields.external_call()  # what the waiting path submits through the adapter core
    assert json.dumps(call.request_data()) == json.dumps(fields.request_data())
    assert call.request_metadata() == fields.request_metadata()
    assert request.stable_id("a", "b") == core.stable_id("a", "b")


def _console_script() -> str:
    """How the ``reviewer-app`` console script (and the frozen launcher) start: the entry pyproject.toml names."""
    entry = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]["reviewer-app"]
    module, _, function = entry.partition(":")
    return f"    getattr(importlib.import_module({module!r}), {function!r})()\n"


@pytest.mark.parametrize("start", ["python -m", "console script"])
def test_the_rule_settled_hook_imports_no_orm(tmp_path: Path, db_path: Path, start: str) -> None:
    """Neither ``python -m reviewer_app hook …`` (what install writes) nor the console script loads the ORM or
    the CLI to answer a rule-settled call."""
    starting = (
        "    runpy.run_module('reviewer_app', run_name='__main__')\n" if start == "python -m" else _console_script()
    )
    SQLHITLBackend(db_path).close()  # a migrated database
    payload = {**fixture("pretooluse.json"), "tool_name": "Read", "tool_input": {"file_path": "/etc/hostname"}}
    probe = (
        "import importlib, os, runpy, sys\n"
        "def _exit(code):\n"
        "    raise SystemExit(code)\n"
        "os._exit = _exit  # the hook ends with os._exit: keep this process alive to look at its modules\n"
        "sys.argv = ['reviewer_app', 'hook', 'claude-code', '--db', sys.argv[1], '--allow-tools', 'Read']\n"
        "try:\n" + starting + "except SystemExit:\n"
        "    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'sqlmodel', 'alembic', 'asyncio')"
        " or m in ('reviewer_app.hitl', 'reviewer_app.cli')"
        # the audit key and anchors (persistence.audit_seal, standard library only) are allowed; the store is not
        " or m.startswith(('reviewer_app.persistence.store', 'reviewer_app.persistence.engine',"
        " 'reviewer_app.persistence.tables')))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(db_path)],
        input=json.dumps(payload).encode(),
        capture_output=True,
        check=False,
        env=hook_env(tmp_path),
        timeout=60,
    )
    answer = json.loads(result.stdout)
    assert answer["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert "HEAVY []" in result.stderr.decode(), result.stderr.decode()
