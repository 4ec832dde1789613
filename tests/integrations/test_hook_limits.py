"""One door for every request: the hook's fast path refuses exactly what the library refuses."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.limits import MAX_DEPTH, MAX_INT_DIGITS, MAX_JSON_BYTES, RequestRejected, check_json_value
from reviewer_app.domain.settlement import Settlement
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.claude_code import request
from reviewer_app.integrations.claude_code.events import Host, parse_event
from reviewer_app.integrations.claude_code.fast import FastStore
from reviewer_app.integrations.core import ReviewClient
from tests.integrations.hook_helpers import fixture, run_hook

pytestmark = pytest.mark.asyncio


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


POISON = {
    "nesting 150": ({"command": "true", "deep": _nested(150)}, "nesting depth"),
    "nesting 300": ({"command": "true", "deep": _nested(300)}, "nesting depth"),
    "17 MiB": ({"command": "true", "blob": "x" * (MAX_JSON_BYTES + 1024 * 1024)}, "size"),
    "1,001 digits": ({"command": "true", "n": 10**MAX_INT_DIGITS}, "integer size"),
    "-1,001 digits": ({"command": "true", "n": -(10**MAX_INT_DIGITS)}, "integer size"),
}


def _fields(arguments: dict[str, Any], suffix: str) -> request.RequestFields:
    payload = {**fixture("pretooluse.json"), "tool_input": arguments, "tool_use_id": f"toolu-{suffix}"}
    event = parse_event(json.dumps(payload).encode(), Host.CLAUDE_CODE)
    return request.request_fields(event, hitl_id=f"hitl-{suffix}")


def _count(db: Path) -> int:
    connection = sqlite3.connect(db)
    try:
        return int(connection.execute("SELECT count(*) FROM hitl_requests").fetchone()[0])
    finally:
        connection.close()


@pytest.mark.parametrize("case", list(POISON))
async def test_the_fast_path_refuses_what_the_library_refuses(
    db_path: Path, backend: SQLHITLBackend, case: str
) -> None:
    arguments, limit = POISON[case]
    fields = _fields(arguments, "x")
    with pytest.raises(RequestRejected) as by_library:
        await ReviewClient(backend, agent="claude-code").submit(fields.external_call())
    store = FastStore.open(str(db_path))
    assert store is not None
    try:
        with pytest.raises(RequestRejected) as by_fast_path:
            store.create_pending(fields, workspace=None)
        verdict = Settlement.by_allow_tools("Bash")
        with pytest.raises(RequestRejected) as by_rule_path:
            store.settle(fields, verdict.decision(fields.arguments), workspace=None)
    finally:
        store.close()
    assert by_library.value.limit == by_fast_path.value.limit == by_rule_path.value.limit == limit
    assert _count(db_path) == 0


async def test_the_limits_themselves_pass_the_fast_path(db_path: Path, backend: SQLHITLBackend) -> None:
    arguments = {"command": "true", "deep": _nested(MAX_DEPTH - 4), "n": -(10**MAX_INT_DIGITS - 1)}
    store = FastStore.open(str(db_path))
    assert store is not None
    try:
        assert store.create_pending(_fields(arguments, "ok"), workspace=None)
    finally:
        store.close()
    assert _count(db_path) == 1


@pytest.mark.parametrize("case", ["nesting 150", "17 MiB", "1,001 digits"])
async def test_the_hook_never_allows_or_stores_a_refused_call(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, case: str
) -> None:
    arguments, _ = POISON[case]
    payload = {**fixture("pretooluse.json"), "tool_input": arguments}
    # Bash allowed by a rule: before the fix the fast path stored and allowed it without a look at its size.
    code, answer, err = run_hook(tmp_path, db_path, payload, "--allow-tools", "Bash")
    assert code == 0
    assert answer is not None
    assert answer["hookSpecificOutput"]["permissionDecision"] == "ask"
    assert "RequestRejected" in err
    assert _count(db_path) == 0


async def test_a_write_whose_diff_takes_it_past_the_size_limit_is_refused_on_both_paths(
    tmp_path: Path, fresh_db: Callable[[str], Path]
) -> None:
    """A Write whose content alone fits the request's 16 MiB but not with its diff (cut at 200 KB): the lean path,
    which now makes the diff, checks the whole request as the full path does and stores nothing; the answer is the
    full path's fallback on both."""
    line = "x" * 999 + "\n"  # 1,001 bytes of JSON a line
    content = line * ((MAX_JSON_BYTES - 100_000) // 1001)
    project = tmp_path / "project"
    project.mkdir()
    payload = {
        **fixture("pretooluse.json"),
        "cwd": str(project),
        "tool_name": "Write",
        "tool_input": {"file_path": "big.txt", "content": content},
        "tool_use_id": "toolu_big_write",
    }
    check_json_value(payload["tool_input"], "the arguments alone")  # fit: the diff is what takes the data past
    results = []
    for label, args in {"lean": (), "full": ("--no-lean",)}.items():
        db = fresh_db(f"{label}.db")
        code, answer, err = run_hook(tmp_path, db, payload, "--timeout", "60", *args)
        assert code == 0 and "RequestRejected: data: more than the limit of 16.0 MiB" in err, err
        assert _count(db) == 0
        results.append(answer)
    assert results[0] == results[1]
    assert results[0] is not None and results[0]["hookSpecificOutput"]["permissionDecision"] == "ask"
