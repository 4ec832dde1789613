"""``audit verify`` split over worker processes on PostgreSQL gives the verdict one walk gives (issue 29, item 7).

Each worker reads its range of the chain in the verifying transaction's exported snapshot and checks it; the
parent joins the ranges in chain order. Every kind of tampering, placed at a range's first row, inside a range and
at the end, must be reported with the same row, position and message as the walk in one process; a worker that
cannot start leaves its range to the parent; and a caller's script with no main guard runs once (workers are not
``multiprocessing`` children, which would run it again).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.audit_seal import AuditSeal
from reviewer_app.persistence.store import Store
from tests.persistence.test_decision_stats import execute

pytestmark = pytest.mark.postgres

ROWS = 30
WORKERS = 3  # ranges start at positions 1, 11 and 21


def decided_log(url: str, seal: AuditSeal, rows: int = ROWS) -> None:
    store = Store.open(url, seal=seal)
    login = store.database_login() or "postgres"
    try:
        for i in range(1, rows + 1):
            shown = {"command": f"echo {i}", "big": "x" * (5000 if i == 15 else 1)}  # row 15's arguments: a blob
            with store.transaction() as tx:
                tx.requests.create(NewRequest(f"h{i}", "tool_approval", "s", "i", data={"arguments": shown}))
                decision = {"decision": "approve", "args_sha256": args_digest(shown)}
                tx.requests.decide(
                    f"h{i}", decision if i % 4 else {"decision": "reject", "message": f"no {i}"}, reviewer=login
                )
    finally:
        store.close()


def verify(url: str, seal: AuditSeal, workers: int, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("REVIEWER_AUDIT_WORKERS", str(workers))
    store = Store.open(url, seal=seal)
    try:
        return store.audit.verify()
    finally:
        store.close()


@pytest.fixture
def seal(tmp_path: Path) -> AuditSeal:
    return AuditSeal(tmp_path / "audit.key", tmp_path / "anchors")


TAMPERING = {
    "untouched": [],
    "edited at a range's first row": ["UPDATE audit_log SET decision = 'reject' WHERE id = 11"],
    "edited inside a range": ["UPDATE audit_log SET message = 'yes' WHERE id = 24"],
    "edited last row": ["UPDATE audit_log SET reviewer = 'mallory' WHERE id = 30"],
    "deleted before a range": ["DELETE FROM audit_log WHERE id = 10"],
    "deleted a range's first row": ["DELETE FROM audit_log WHERE id = 21"],
    "deleted the last rows": ["DELETE FROM audit_log WHERE id > 28"],
    "shown arguments changed": ['UPDATE audit_log SET shown_args = \'{"command": "rm -rf /"}\' WHERE id = 12'],
    "blob damaged": ["UPDATE blobs SET data = decode('00', 'hex')"],
    "rows reordered": [
        "UPDATE audit_log SET id = -20 WHERE id = 20",
        "UPDATE audit_log SET id = 20 WHERE id = 21",
        "UPDATE audit_log SET id = 21 WHERE id = -20",
    ],
    "first row's predecessor changed": ["UPDATE audit_log SET prev_hash = repeat('1', 64) WHERE id = 1"],
    "a message made NULL inside a range": ["UPDATE audit_log SET message = NULL WHERE id = 16"],
    "a message made empty inside a range": ["UPDATE audit_log SET message = '' WHERE id = 16"],
    "a message given to an approval": ["UPDATE audit_log SET message = '' WHERE id = 17"],
    "a unicode message inside a range": ["UPDATE audit_log SET message = 'nö 🚀 日本' WHERE id = 20"],
    "an edit slipped into an approval": ['UPDATE audit_log SET edited_args = \'{"command": "rm"}\' WHERE id = 13'],
    "the shown digest made NULL": ["UPDATE audit_log SET shown_args_sha256 = NULL WHERE id = 18"],
    "the row hash in upper case": ["UPDATE audit_log SET row_hash = upper(row_hash) WHERE id = 19"],
}


@pytest.mark.parametrize("case", sorted(TAMPERING))
def test_workers_give_the_verdict_of_one_walk(
    case: str, pg_url: str, seal: AuditSeal, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided_log(pg_url, seal)
    for statement in TAMPERING[case]:
        execute(pg_url, statement)
    alone = verify(pg_url, seal, 0, monkeypatch)
    parallel = verify(pg_url, seal, WORKERS, monkeypatch)
    assert parallel == alone
    assert alone.ok == (case == "untouched"), alone


def test_a_missing_anchor_and_another_key_are_reported_alike(
    pg_url: str, tmp_path: Path, seal: AuditSeal, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided_log(pg_url, seal)
    anchors = sorted((tmp_path / "anchors").iterdir())
    assert anchors
    lines = anchors[0].read_text().splitlines()
    rewritten = {**json.loads(lines[15]), "head": "0" * 64}  # the anchor of row 16, in the second range
    anchors[0].write_text("\n".join([*lines[:15], json.dumps(rewritten), *lines[16:]]) + "\n")
    alone, parallel = verify(pg_url, seal, 0, monkeypatch), verify(pg_url, seal, WORKERS, monkeypatch)
    assert parallel == alone and not alone.ok and "anchor" in (alone.problem or "")
    other = AuditSeal(tmp_path / "other.key", tmp_path / "anchors")
    alone, parallel = verify(pg_url, other, 0, monkeypatch), verify(pg_url, other, WORKERS, monkeypatch)
    assert parallel == alone and not alone.ok and "key id" in (alone.problem or "")


def test_a_worker_that_cannot_start_leaves_its_range_to_the_parent(
    pg_url: str, seal: AuditSeal, monkeypatch: pytest.MonkeyPatch
) -> None:
    decided_log(pg_url, seal)
    execute(pg_url, "UPDATE audit_log SET message = 'yes' WHERE id = 24")
    expected = verify(pg_url, seal, 0, monkeypatch)
    monkeypatch.setattr(sys, "executable", "/bin/false")  # every worker exits at once without an answer
    assert verify(pg_url, seal, WORKERS, monkeypatch) == expected
    assert not expected.ok and expected.first_bad_id == 24


def test_a_script_without_a_main_guard_runs_once(pg_url: str, seal: AuditSeal, tmp_path: Path) -> None:
    decided_log(pg_url, seal)
    runs = tmp_path / "runs.txt"
    script = tmp_path / "no_guard.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from pathlib import Path
            from reviewer_app.persistence.audit_seal import AuditSeal
            from reviewer_app.persistence.store import Store
            with open({str(runs)!r}, "a") as out:
                out.write("run\\n")
            store = Store.open({pg_url!r}, seal=AuditSeal(Path({str(seal.key_path)!r}), Path({str(seal.anchor_dir)!r})))
            print(store.audit.verify().ok)
            store.close()
            """
        )
    )
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(script)],
        env={"PYTHONPATH": str(repo), "REVIEWER_AUDIT_WORKERS": str(WORKERS), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.stdout.strip() == "True", done.stderr
    assert runs.read_text() == "run\n"
