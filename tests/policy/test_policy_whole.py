"""A new rule is previewed and settles pending requests with every rule in force: deny > ask > allow, never the new
rule alone. A pending request another deny or ask rule covers is not settled by a new allow rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.persistence.store import Store
from tests.policy.test_rules_cli import _request, run_cli


def _seed(db_path: Path) -> None:
    store = Store.open(db_path)
    try:
        with store.transaction() as tx:
            tx.requests.create(_request("h-status", "Bash", {"command": "git status"}))
            tx.requests.create(_request("h-diff", "Bash", {"command": "git diff"}))
            tx.requests.create(_request("h-branch", "Bash", {"command": "git branch"}))
    finally:
        store.close()


@pytest.fixture
def policy_db(db_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Three pending git calls, then a deny rule for one and an ask rule for another (added after they arrived)."""
    _seed(db_path)
    for effect, pattern in (("deny", "Bash(git diff)"), ("ask", "Bash(git branch)")):
        assert run_cli(capsys, "rules", "add", effect, pattern, "--db", str(db_path))[0] == 0
    return db_path


def test_preview_says_which_matches_a_rule_in_force_keeps(policy_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "rules", "preview", "Bash(git:*)", "--json", "--db", str(policy_db))
    assert code == 0
    items = {item["hitl_id"]: item for item in json.loads(out)}
    assert set(items) == {"h-status", "h-diff", "h-branch"}
    assert items["h-status"]["held_by"] is None
    assert items["h-diff"]["held_by"]["effect"] == "deny" and items["h-diff"]["held_by"]["pattern"] == "Bash(git diff)"
    assert items["h-branch"]["held_by"]["effect"] == "ask"
    code, out, _ = run_cli(capsys, "rules", "preview", "Bash(git:*)", "--db", str(policy_db))
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert "deny rule" in lines["h-diff"] and "Bash(git diff)" in lines["h-diff"]
    assert "ask rule" in lines["h-branch"] and "rule" not in lines["h-status"].split("  ")[-1]


def test_settle_pending_settles_only_what_the_whole_policy_allows(
    policy_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli(
        capsys, "rules", "add", "allow", "Bash(git:*)", "--settle-pending", "--json", "--db", str(policy_db)
    )
    assert code == 0 and json.loads(out)["settled"] == ["h-status"]
    store = Store.open(policy_db)
    try:
        statuses = {h: (store.requests.get(h) or {}).get("status") for h in ("h-status", "h-diff", "h-branch")}
    finally:
        store.close()
    assert statuses == {
        "h-status": HITLStatus.COMPLETED.value,
        "h-diff": HITLStatus.PENDING.value,  # a deny rule covers it: not approved by the new allow rule
        "h-branch": HITLStatus.PENDING.value,  # an ask rule covers it: a human decides
    }
