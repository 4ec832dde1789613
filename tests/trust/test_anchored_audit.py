"""The decision log cannot be quietly changed: keyed chain, an anchor outside the database, and a cross-check.

Reproduced on main, each of these passed ``audit verify``: deleting every row and the head; truncating and
fixing the head; editing a row and recomputing the chain; flipping a request from reject to approve in
``hitl_requests``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest, canonical_json
from reviewer_app.hitl import SQLHITLBackend

ARGS = {"path": "a.txt", "content": "x"}


async def decided_db(db_path: Path, count: int = 4) -> None:
    backend = SQLHITLBackend(db_path, reviewer="ann")
    try:
        for n in range(count):
            await backend.create(
                hitl_id=f"h{n}",
                hitl_type="tool_approval",
                session_id="s",
                invocation_id="i",
                data={"arguments": ARGS},
                tool_name="write_file",
            )
            kind = DecisionKind.APPROVE if n % 2 == 0 else DecisionKind.REJECT
            digest = args_digest(ARGS) if kind is DecisionKind.APPROVE else None
            await backend.decide(f"h{n}", Decision(kind, args_sha256=digest, message=None))
        assert (await backend.verify_audit()).ok
    finally:
        await backend.aclose()


async def verify(db_path: Path):
    backend = SQLHITLBackend(db_path, reviewer="auditor")
    try:
        return await backend.verify_audit()
    finally:
        await backend.aclose()


def recompute_unkeyed(db: sqlite3.Connection) -> None:
    """What an attacker with write access to the file can do: rewrite every row's hash and the head."""
    prev = "0" * 64
    rows = db.execute(
        "SELECT id, hitl_id, decision, reviewer, at_ms, shown_args_sha256, edited_args, message FROM audit_log "
        "ORDER BY id"
    ).fetchall()
    for row_id, hitl_id, decision, reviewer, at_ms, sha, edited, message in rows:
        fields = {
            "hitl_id": hitl_id,
            "decision": decision,
            "reviewer": reviewer,
            "at_ms": at_ms,
            "shown_args_sha256": sha,
            "edited_args": json.loads(edited) if edited else None,
            "message": message,
        }
        row_hash = hashlib.sha256((prev + canonical_json(fields)).encode()).hexdigest()
        db.execute("UPDATE audit_log SET prev_hash = ?, row_hash = ? WHERE id = ?", (prev, row_hash, row_id))
        prev = row_hash
    db.execute("UPDATE reviewer_meta SET value = ? WHERE key = 'audit_head'", (f"{len(rows)}:{prev}",))


@pytest.mark.asyncio
async def test_deleting_every_row_and_the_head_is_detected(db_path: Path) -> None:
    await decided_db(db_path)
    with sqlite3.connect(db_path) as db:
        db.execute("DELETE FROM audit_log")
        db.execute("DELETE FROM reviewer_meta WHERE key = 'audit_head'")
    report = await verify(db_path)
    assert not report.ok
    assert "removed" in report.problem or "anchor" in report.problem


@pytest.mark.asyncio
async def test_truncating_and_fixing_the_head_is_detected(db_path: Path) -> None:
    await decided_db(db_path)
    with sqlite3.connect(db_path) as db:
        (head,) = db.execute("SELECT row_hash FROM audit_log WHERE id = 2").fetchone()
        db.execute("DELETE FROM audit_log WHERE id > 2")
        db.execute("UPDATE reviewer_meta SET value = ? WHERE key = 'audit_head'", (f"2:{head}",))
    report = await verify(db_path)
    assert not report.ok and "anchor" in report.problem


@pytest.mark.asyncio
async def test_editing_and_recomputing_the_chain_is_detected(db_path: Path) -> None:
    await decided_db(db_path)
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE audit_log SET decision = 'approve', reviewer = 'mallory' WHERE id = 2")
        db.execute("UPDATE hitl_requests SET decision = 'approve', decided_by = 'mallory' WHERE hitl_id = 'h1'")
        recompute_unkeyed(db)
    report = await verify(db_path)
    assert not report.ok


@pytest.mark.asyncio
async def test_editing_and_recomputing_without_the_meta_keys_is_detected(db_path: Path) -> None:
    await decided_db(db_path)
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE audit_log SET decision = 'approve' WHERE id = 2")
        db.execute("DELETE FROM reviewer_meta WHERE key != 'audit_head' AND key != 'schema_writer'")
        recompute_unkeyed(db)
    assert not (await verify(db_path)).ok


@pytest.mark.asyncio
async def test_flipping_a_decision_in_the_requests_table_is_detected(db_path: Path) -> None:
    await decided_db(db_path)
    with sqlite3.connect(db_path) as db:
        db.execute(
            "UPDATE hitl_requests SET decision = 'approve', user_response = ? WHERE hitl_id = 'h1'",
            (json.dumps({"decision": "approve", "args_sha256": args_digest(ARGS), "reviewer": "ann"}),),
        )
    report = await verify(db_path)
    assert not report.ok and "h1" in report.problem


@pytest.mark.asyncio
async def test_flipping_only_the_stored_response_is_detected(db_path: Path) -> None:
    await decided_db(db_path)
    with sqlite3.connect(db_path) as db:
        db.execute(
            "UPDATE hitl_requests SET user_response = ? WHERE hitl_id = 'h1'",
            (json.dumps({"decision": "approve", "args_sha256": args_digest(ARGS), "reviewer": "ann"}),),
        )
    report = await verify(db_path)
    assert not report.ok and "h1" in report.problem


@pytest.mark.asyncio
async def test_an_untouched_log_verifies_and_is_anchored(db_path: Path) -> None:
    await decided_db(db_path)
    report = await verify(db_path)
    assert report.ok and report.rows_checked == 4 and report.anchors_checked >= 1


@pytest.mark.asyncio
async def test_the_key_lives_outside_the_database_with_private_permissions(db_path: Path) -> None:
    await decided_db(db_path, count=1)
    from reviewer_app.persistence.audit_seal import AuditSeal

    seal = AuditSeal.default()
    assert seal.key_path.exists() and (seal.key_path.stat().st_mode & 0o077) == 0
    with sqlite3.connect(db_path) as db:
        values = [v for (v,) in db.execute("SELECT value FROM reviewer_meta")]
    assert not any(seal.key.hex() in str(v) for v in values)


def test_cli_export_and_verify(db_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from reviewer_app.cli import main
    from reviewer_app.cli.errors import EXIT_FAILED

    asyncio.run(decided_db(db_path, count=3))
    out_file = tmp_path / "audit.jsonl"
    assert main(["audit", "export", "--format", "jsonl", "-o", str(out_file), "--db", str(db_path)]) == 0
    lines = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [row["hitl_id"] for row in lines[:-1]] == ["h0", "h1", "h2"]
    assert lines[-1]["verification"]["ok"] is True
    csv_file = tmp_path / "audit.csv"
    assert main(["audit", "export", "--format", "csv", "-o", str(csv_file), "--db", str(db_path)]) == 0
    assert csv_file.read_text().splitlines()[0].startswith("id,hitl_id,decision,reviewer")
    capsys.readouterr()
    with sqlite3.connect(db_path) as db:
        db.execute("UPDATE hitl_requests SET decision = 'approve' WHERE hitl_id = 'h1'")
    assert main(["audit", "verify", "--db", str(db_path)]) == EXIT_FAILED
    assert "BROKEN" in capsys.readouterr().out


def test_cli_decide_refuses_a_hash_of_other_arguments(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio

    from reviewer_app.cli import main
    from reviewer_app.cli.errors import EXIT_CHANGED

    async def seed() -> None:
        backend = SQLHITLBackend(db_path, reviewer="ann")
        await backend.create(
            hitl_id="w1",
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": ARGS},
            tool_name="write_file",
        )
        await backend.aclose()

    asyncio.run(seed())
    assert main(["pending", "--json", "--db", str(db_path)]) == 0
    (listed,) = json.loads(capsys.readouterr().out)
    assert listed["args_sha256"] == args_digest(ARGS)
    seen = args_digest({"path": "a.txt", "content": "what I read"})
    assert main(["decide", "w1", "approve", "--sha256", seen, "--db", str(db_path)]) == EXIT_CHANGED
    assert "changed since you reviewed it" in capsys.readouterr().err
    assert main(["decide", "w1", "approve", "--sha256", args_digest(ARGS), "--db", str(db_path)]) == 0
