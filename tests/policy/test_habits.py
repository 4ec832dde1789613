"""Rules that learn from history and the operator's own numbers, on a real database through the CLI."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from reviewer_app.cli import main
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rules import Rule
from reviewer_app.persistence.store import Store

DAY = 86_400


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


WAITS: dict[str, int] = {}


def _decided(
    tx: object, hitl_id: str, command: str, decision: str, *, session: str, reviewer: str = "dana", wait: int = 2
) -> None:
    WAITS[hitl_id] = wait
    tx.requests.create(  # type: ignore[attr-defined]
        NewRequest(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id=session,
            invocation_id=f"i-{session}",
            data={"arguments": {"command": command}, "cwd": "/work/project"},
            metadata={"agent": "claude-code"},
            tool_name="Bash",
        )
    )
    tx.requests.decide(hitl_id, {"decision": decision, "reviewer": reviewer}, reviewer=reviewer)  # type: ignore[attr-defined]


def seed(db: Path) -> None:
    store = Store.open(db)
    old = time.time() - 90 * DAY
    try:
        with store.transaction() as tx:
            for n in range(14):  # npm test: approved every time, in three sessions, quickly
                _decided(tx, f"t{n}", "npm test", "approve", session=f"s{n % 3}", wait=1)
            for n in range(6):  # git push: approved, but also rejected once: not a rule
                _decided(tx, f"p{n}", "git push", "approve" if n else "reject", session="s0", wait=30)
            for n in range(6):  # a high-risk command approved often: never suggested
                _decided(tx, f"r{n}", "rm -rf build", "approve", session="s1", wait=4)
            for n in range(3):
                _decided(tx, f"x{n}", "make lint", "approve", session="s2", reviewer="rule:rule_make")
            tx.rules.add(Rule("allow", "Bash(make lint)", id="rule_make", created_at=time.time()))
            tx.rules.add(Rule("allow", "Bash(rm:*)", id="rule_rm", created_at=old))
            tx.rules.add(Rule("allow", "Bash(git push:*)", id="rule_push", created_at=old))
            tx.rules.add(Rule("deny", "Bash(git push)", id="rule_nopush", created_at=old))
            tx.rules.add(Rule("allow", "Bash(cowsay:*)", id="rule_cow", created_at=old))
    finally:
        store.close()
    with sqlite3.connect(db) as raw:  # the time each took to decide (the store stamps both ends with its clock)
        raw.executemany(
            "UPDATE hitl_requests SET created_at = responded_at - ? WHERE hitl_id = ?",
            [(wait, hitl_id) for hitl_id, wait in WAITS.items()],
        )
    raw.close()


def test_suggest_lint_and_stats(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(db_path)
    code, out, _ = run_cli(capsys, "rules", "suggest", "--json", "--db", str(db_path))
    assert code == 0
    suggestions = json.loads(out)
    assert [s["pattern"] for s in suggestions] == ["Bash(npm test)"]
    assert suggestions[0]["approvals"] == 14 and suggestions[0]["sessions"] == 3
    code, out, _ = run_cli(capsys, "rules", "suggest", "--db", str(db_path))
    assert "npm test approved 14 times in 3 session(s): make it a rule?" in out
    assert "rules add allow 'Bash(npm test)'" in out

    code, out, _ = run_cli(capsys, "rules", "lint", "--json", "--db", str(db_path))
    assert code == 0
    findings = {(f["rule_id"], f["problem"].split(":")[0].split(" ")[0]) for f in json.loads(out)}
    assert ("rule_cow", "never") in findings  # made 90 days ago, never matched
    assert ("rule_push", "shadowed") in findings  # every git push in history is taken by the deny rule
    assert ("rule_rm", "matches") in findings  # rm -rf build is high risk: the prefix rule never settles it
    assert not any(rule == "rule_make" for rule, _ in findings)  # new and exact: nothing to say

    code, out, _ = run_cli(capsys, "stats", "--json", "--db", str(db_path))
    assert code == 0
    numbers = json.loads(out)
    assert numbers["decided"] == 29 and numbers["by_people"] == 26 and numbers["by_rules"] == 3
    assert numbers["share_settled_by_rules"] == round(3 / 29, 4)
    tools = {group["name"]: group for group in numbers["per_tool"]}
    assert tools["Bash"]["decided"] == 26 and tools["Bash"]["approved"] == 25
    assert tools["Bash"]["time_to_decide_p50_s"] == 1.0 and tools["Bash"]["time_to_decide_p90_s"] == 30.0
    assert numbers["per_agent"][0]["name"] == "claude-code"
    assert numbers["rubber_stamp_candidates"] == ["Bash"]  # 26 decisions, 96% approved, p50 1 s
    code, out, _ = run_cli(capsys, "stats", "--db", str(db_path))
    assert "10% settled by rules" in out and "rubber-stamp candidate" in out
