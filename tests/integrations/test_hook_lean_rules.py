"""The hook's lean path with persistent rules in force: a call a rule settles for certain is answered with the
standard library alone, with the answer and rows of the fast and backend paths; anything else is theirs."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import hook_env, import_probe, run_hook
from tests.integrations.test_hook_lean import bash_event, decided_rows

PATHS = {"lean": (), "fast": ("--no-lean",), "backend": ("--no-lean", "--no-fast-path")}
RULES = (
    ("allow", "Bash(echo rules)", ""),
    ("allow", "Bash(npm run test:*)", ""),
    ("deny", "Bash(git push:*)", "never from an agent"),
    ("deny", "Bash(rm -rf build)", ""),
    ("ask", "Bash(make deploy:*)", ""),
)


async def _add_rules(db: Path, rules: tuple[tuple[str, str, str], ...] = RULES) -> None:
    async with SQLHITLBackend(db, reviewer="tester") as backend:
        for index, (effect, pattern, note) in enumerate(rules):
            rule = Rule(effect, pattern, note=note, id=f"rule_{index}", created_at=1_000.0 + index)  # type: ignore[arg-type]
            await backend.add_rule(rule.checked())  # the same ids in every database: the rows compare equal


def _event(command: str, call: str, name: str = "pretooluse.json") -> dict[str, Any]:
    return bash_event(name, command, call)


def _settled_rows(db: Path) -> list[Any]:
    """The rule-decided request, its audit row, its run and the rules' hit counts (times and hashes left out)."""
    connection = sqlite3.connect(db)
    try:
        hits = connection.execute("SELECT pattern, hit_count FROM policy_rules ORDER BY pattern").fetchall()
    finally:
        connection.close()
    return [*decided_rows(db, "rule:%"), hits]


@pytest.mark.asyncio
@pytest.mark.parametrize("name", ["pretooluse.json", "permissionrequest.json"])
@pytest.mark.parametrize(
    ("command", "verdict"),
    [("echo rules", "allow"), ("git push origin main", "deny"), ("rm  -rf build", "deny")],
)
async def test_a_rule_settled_call_is_answered_and_recorded_as_the_full_paths(
    tmp_path: Path, fresh_db: Callable[[str], Path], name: str, command: str, verdict: str
) -> None:
    """The same rule-settled call through the three paths: the same answer, the fast path's request, audit row,
    run and rule hit (each database's audit chain verifies)."""
    results = {}
    for label, args in PATHS.items():
        db = fresh_db(f"{label}.db")
        await _add_rules(db)
        code, answer, err = run_hook(tmp_path, db, _event(command, "toolu_rules_1", name), "--no-transcript", *args)
        assert code == 0, err
        results[label] = (answer, _settled_rows(db))
        async with SQLHITLBackend(db) as backend:
            assert (await backend.verify_audit()).ok
    assert results["lean"][1] == results["fast"][1]
    assert results["lean"][0] == results["fast"][0] == results["backend"][0]
    assert verdict in json.dumps(results["lean"][0])
    [audit_row] = results["lean"][1][1]
    assert audit_row["decision"] == ("approve" if verdict == "allow" else "reject")
    assert audit_row["message"].startswith(("allowed" if verdict == "allow" else "denied") + " by rule rule_")


@pytest.mark.asyncio
async def test_an_ask_rule_leaves_the_call_waiting_as_the_full_path_does(
    tmp_path: Path, fresh_db: Callable[[str], Path]
) -> None:
    """An ask rule settles nothing and no waiver overrides it: the call waits for a reviewer on every path."""
    answers = []
    for label, args in PATHS.items():
        db = fresh_db(f"{label}.db")
        await _add_rules(db)
        event = _event("make deploy prod", "toolu_ask")
        code, answer, err = run_hook(tmp_path, db, event, "--no-transcript", "--timeout", "1", *args)
        assert code == 0, err
        answers.append(answer)
        connection = sqlite3.connect(db)
        try:
            rows = connection.execute("SELECT tool_name, decided_by LIKE 'rule:%' FROM hitl_requests").fetchall()
        finally:
            connection.close()
        assert rows == [("Bash", 0)], rows  # one request, which no rule decided
    assert answers[0] == answers[1] == answers[2]
    assert answers[0] is not None and answers[0]["hookSpecificOutput"]["permissionDecision"] == "ask"


def test_a_rule_settled_call_loads_no_rules_engine_parser_or_dataclasses(
    tmp_path: Path, fresh_db: Callable[[str], Path]
) -> None:
    """The point of the lean rules: an exact rule settles a plain command without the rules engine, the risk
    module, the shell parser (bashlex), dataclasses, typing or argparse, in a real process."""
    db_path = fresh_db("reviews.db")
    asyncio.run(_add_rules(db_path))
    heavy = ("argparse", "dataclasses", "typing", "bashlex", "asyncio", "reviewer_app.domain.rules")
    heavy += ("reviewer_app.domain.risk", "reviewer_app.domain.shell", "reviewer_app.domain.settlement")
    probe = import_probe((*heavy, "reviewer_app.integrations.claude_code.hook"))
    for index, command in enumerate(("echo rules", "git push origin main")):
        result = subprocess.run(
            [sys.executable, "-c", probe, str(db_path)],
            input=json.dumps(_event(command, f"toolu_imports_{index}")).encode(),
            capture_output=True,
            check=False,
            env=hook_env(tmp_path),
            timeout=60,
        )
        answer = json.loads(result.stdout)["hookSpecificOutput"]
        assert answer["permissionDecision"] == ("allow" if index == 0 else "deny")
        assert "HEAVY []" in result.stderr.decode(), result.stderr.decode()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("command", "verdict"),
    [
        ("echo $(git push origin)", "deny"),  # a substitution: the parser finds the push inside
        ("sudo rm -rf build", "deny"),  # behind a wrapper (RULES deny `rm -rf build` exactly)
        ("git -C . push origin", "deny"),  # a global option the engine drops
        ("ｅcho rules", "ask"),  # a look-alike of the allowed command: nobody decides it (waits, times out)
        ("echo rules\nrm -rf x", "ask"),  # a second line
    ],
)
async def test_hostile_commands_are_decided_by_the_full_path(
    tmp_path: Path, fresh_db: Callable[[str], Path], command: str, verdict: str
) -> None:
    """What the lean rules hand off reaches the engine, which sees through it; nothing is allowed by the lean path."""
    db = fresh_db("hostile.db")
    await _add_rules(db)
    code, answer, err = run_hook(tmp_path, db, _event(command, "toolu_hostile"), "--no-transcript", "--timeout", "1")
    assert code == 0, err
    assert answer is not None and answer["hookSpecificOutput"]["permissionDecision"] == verdict, answer


@pytest.mark.asyncio
@pytest.mark.parametrize(("command", "verdict"), [("echo rules", "allow"), ("git push origin", "deny")])
async def test_codex_calls_settled_by_agent_scoped_rules_match_the_full_paths(
    tmp_path: Path, fresh_db: Callable[[str], Path], command: str, verdict: str
) -> None:
    """Codex's PermissionRequest on the lean path, with rules scoped to its agent (and to another one)."""
    from tests.integrations.test_codex_hook import CODEX_EVENT

    rules = (("deny", "Bash(echo rules)", ""), *RULES)
    event = {**CODEX_EVENT, "tool_input": {"command": command, "description": "lean rules"}}
    results = {}
    for label, args in PATHS.items():
        db = fresh_db(f"{label}.db")
        async with SQLHITLBackend(db, reviewer="tester") as backend:
            for index, (effect, pattern, _) in enumerate(rules):
                scope = "agent:claude-code" if index == 0 else "agent:codex"
                rule = Rule(effect, pattern, scope, id=f"rule_{index}", created_at=1_000.0 + index)  # type: ignore[arg-type]
                await backend.add_rule(rule.checked())
        code, answer, err = run_hook(tmp_path, db, event, "--no-transcript", *args, host="codex")
        assert code == 0, err
        results[label] = (answer, _settled_rows(db))
    assert results["lean"] == results["fast"]
    assert results["lean"][0] == results["backend"][0]
    assert (
        results["lean"][0] is not None and results["lean"][0]["hookSpecificOutput"]["decision"]["behavior"] == verdict
    )
