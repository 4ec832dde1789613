"""``reviewer-app rules``: add, list, preview, revoke, export and import, on a real database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewer_app.cli import main
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rules_file import rules_from_toml
from reviewer_app.persistence.store import Store


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _request(hitl_id: str, tool: str, arguments: dict, session: str = "s1") -> NewRequest:
    return NewRequest(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id=session,
        invocation_id=f"i-{session}",
        data={"arguments": arguments, "cwd": "/work/project"},
        metadata={"agent": "claude-code"},
        tool_name=tool,
    )


def seed(db_path: Path, count: int = 0) -> None:
    store = Store.open(db_path)
    try:
        with store.transaction() as tx:
            tx.requests.create(_request("h-status", "Bash", {"command": "git status"}))
            tx.requests.create(_request("h-push", "Bash", {"command": "git push --force origin main"}))
            tx.requests.create(_request("h-write", "Write", {"file_path": "/work/project/src/app.py"}))
            tx.requests.create(_request("h-log", "Bash", {"command": "git log --oneline"}))
            tx.requests.decide("h-log", {"decision": "approve", "reviewer": "dana"}, reviewer="dana")
            for index in range(count):  # filler to make the preview page through the history
                tx.requests.create(_request(f"h-filler-{index}", "Read", {"file_path": f"/work/project/f{index}"}))
    finally:
        store.close()


def test_add_list_revoke_and_expiry(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        capsys, "rules", "add", "allow", "Bash(git status)", "--note", "harmless", "--json", "--db", str(db_path)
    )
    assert code == 0
    added = json.loads(out)
    assert added["effect"] == "allow" and added["pattern"] == "Bash(git status)" and added["note"] == "harmless"
    assert added["id"].startswith("rule_") and added["hit_count"] == 0
    code, out, _ = run_cli(
        capsys,
        "rules",
        "add",
        "deny",
        "Write(.env)",
        "--scope",
        "agent:claude-code",
        "--expires",
        "1h",
        "--db",
        str(db_path),
    )
    assert code == 0 and out.startswith("added rule_") and "scope=agent:claude-code" in out and "expires=" in out

    code, out, _ = run_cli(capsys, "rules", "list", "--json", "--db", str(db_path))
    listed = json.loads(out)
    assert [r["pattern"] for r in listed] == ["Bash(git status)", "Write(.env)"]
    assert listed[1]["expires_at"] - listed[1]["created_at"] == pytest.approx(3600)

    assert run_cli(capsys, "rules", "revoke", added["id"], "--db", str(db_path))[0] == 0
    code, _, err = run_cli(capsys, "rules", "revoke", added["id"], "--db", str(db_path))
    assert code == 4 and "no rule in force" in err
    code, out, _ = run_cli(capsys, "rules", "list", "--db", str(db_path))
    assert "Bash(git status)" not in out and "Write(.env)" in out
    code, out, _ = run_cli(capsys, "rules", "list", "--all", "--json", "--db", str(db_path))
    assert [r["revoked_at"] is not None for r in json.loads(out)] == [True, False]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("add", "allow", "Bash(git $(rm x))"), "can never be matched"),
        (("add", "allow", "Bash(git status)", "--expires", "soon"), "duration"),
        (("add", "allow", "Bash", "--scope", "team:x"), "scope"),
        (("add", "allow", "Write(!src/**)"), "negated"),
    ],
)
def test_bad_rules_are_refused_with_a_clear_error(
    db_path: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, _, err = run_cli(capsys, "rules", *args, "--db", str(db_path))
    assert code == 2 and message in err
    code, out, _ = run_cli(capsys, "rules", "list", "--json", "--db", str(db_path))
    assert json.loads(out) == []


def test_preview_lists_matching_past_and_pending_requests(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(db_path, count=1200)  # more than two pages of history
    code, out, _ = run_cli(capsys, "rules", "preview", "Bash(git:*)", "--json", "--db", str(db_path))
    assert code == 0
    matches = {item["hitl_id"]: item for item in json.loads(out)}
    # git push --force is high risk: a prefix allow would not settle it, so the preview does not list it
    assert set(matches) == {"h-status", "h-log"}
    assert matches["h-status"]["status"] == "pending"
    assert matches["h-log"]["status"] == "completed" and matches["h-log"]["decided_by"] == "dana"
    code, out, _ = run_cli(
        capsys, "rules", "preview", "Bash(git:*)", "--effect", "deny", "--json", "--db", str(db_path)
    )
    assert {item["hitl_id"] for item in json.loads(out)} == {"h-status", "h-log", "h-push"}
    code, out, _ = run_cli(capsys, "rules", "preview", "Write(src/**)", "--db", str(db_path))
    assert code == 0 and "h-write" in out and "h-status" not in out
    code, out, _ = run_cli(capsys, "rules", "preview", "Read", "--limit", "5", "--json", "--db", str(db_path))
    assert len(json.loads(out)) == 5
    code, out, _ = run_cli(capsys, "rules", "preview", "mcp__x__y", "--db", str(db_path))
    assert code == 0 and "no past or pending request matches" in out


def test_export_import_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    for args in (
        ("allow", "Bash(npm run test:*)", "--note", 'quotes " and \\ and ünïcode'),
        ("deny", "Write(//etc/**)", "--scope", "workspace:/work/project"),
        ("ask", "mcp__github__*", "--expires", "2d"),
    ):
        assert run_cli(capsys, "rules", "add", *args, "--db", str(first))[0] == 0
    policy = tmp_path / "policy.toml"
    code, out, _ = run_cli(capsys, "rules", "export", str(policy), "--db", str(first))
    assert code == 0 and "exported 3 rule(s)" in out
    code, _, err = run_cli(capsys, "rules", "export", str(policy), "--db", str(first))
    assert code == 2 and "--force" in err  # an existing file is not overwritten by accident
    assert run_cli(capsys, "rules", "import", str(policy), "--db", str(second))[0] == 0
    original = json.loads(run_cli(capsys, "rules", "list", "--json", "--db", str(first))[1])
    copied = json.loads(run_cli(capsys, "rules", "list", "--json", "--db", str(second))[1])
    keys = ("id", "effect", "pattern", "scope", "expires_at", "note", "created_at")
    assert [{k: r[k] for k in keys} for r in copied] == [{k: r[k] for k in keys} for r in original]
    assert len(rules_from_toml(policy.read_text())) == 3
    code, out, _ = run_cli(capsys, "rules", "import", str(policy), "--db", str(second))
    assert code == 0 and "imported 0 rule(s); already present" in out  # importing twice adds nothing


def test_a_bad_policy_file_imports_nothing(tmp_path: Path, db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    policy = tmp_path / "bad.toml"
    policy.write_text('[[rules]]\neffect = "allow"\npattern = "Bash"\n\n[[rules]]\neffect = "maybe"\npattern = "x"\n')
    code, _, err = run_cli(capsys, "rules", "import", str(policy), "--db", str(db_path))
    assert code == 2 and "rule 2" in err
    assert json.loads(run_cli(capsys, "rules", "list", "--json", "--db", str(db_path))[1]) == []
    code, _, err = run_cli(capsys, "rules", "import", str(tmp_path / "missing.toml"), "--db", str(db_path))
    assert code == 2 and "cannot read" in err


def test_add_with_settle_pending_decides_the_matching_pending_requests(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seed(db_path)
    code, out, _ = run_cli(
        capsys, "rules", "add", "deny", "Bash(git:*)", "--settle-pending", "--json", "--db", str(db_path)
    )
    assert code == 0
    # the pending git commands (the force push too: deny applies whatever the risk); h-log was decided already
    assert sorted(json.loads(out)["settled"]) == ["h-push", "h-status"]
    code, out, _ = run_cli(capsys, "pending", "--json", "--db", str(db_path))
    assert [r["hitl_id"] for r in json.loads(out)] == ["h-write"]
