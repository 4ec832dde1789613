"""``pending`` and ``audit`` read keyset pages, never everything at once, and print exactly what they printed
when they did: every row once, in order, across page boundaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewer_app.cli import audit as cli_audit
from reviewer_app.cli import main
from reviewer_app.cli import pending as cli_pending
from reviewer_app.domain.audit_words import audit_decision_words, audit_what
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.store import Store

COUNT = 2_345  # more than two pages of both listings


def _fill(store: Store, *, decided: bool) -> None:
    with store.transaction() as tx:
        for i in range(COUNT):
            tx.requests.create(
                NewRequest(
                    hitl_id=f"h{i:05d}",
                    hitl_type="tool_approval",
                    session_id="s1",
                    invocation_id="i1",
                    data={"arguments": {"command": f"echo {i}"}},
                    tool_name="run_shell",
                )
            )
            if decided:
                tx.requests.decide(f"h{i:05d}", {"decision": "reject", "message": f"no {i}"}, reviewer="erin")


def test_pending_pages_through_a_long_queue(store: Store, db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fill(store, decided=False)
    assert cli_pending._PAGE < COUNT
    assert main(["pending", "--db", str(db_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [f"h{i:05d}" for i in range(COUNT)]

    assert main(["pending", "--json", "--db", str(db_path)]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [record["hitl_id"] for record in records] == [f"h{i:05d}" for i in range(COUNT)]
    assert records[7]["data"] == {"arguments": {"command": "echo 7"}} and len(records[7]["args_sha256"]) == 64


def test_audit_listing_streams_every_row_in_order(
    store: Store, db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _fill(store, decided=True)
    assert cli_audit.PAGE < COUNT
    assert main(["audit", "--json", "--db", str(db_path)]) == 0
    out = capsys.readouterr().out
    entries = json.loads(out)
    assert [entry["hitl_id"] for entry in entries] == [f"h{i:05d}" for i in range(COUNT)]
    whole = [  # the rows of the old listing, and each in words (as the exports give them)
        {**entry.to_dict(), "decision_words": audit_decision_words(entry), "what": audit_what(entry)}
        for entry in store.audit.entries()
    ]
    assert entries == whole
    expected = json.dumps(whole, indent=2, ensure_ascii=False)
    assert out == expected + "\n"  # byte for byte what printing the whole list gave

    assert main(["audit", "--db", str(db_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == COUNT and "Rejected" in lines[0] and "[h00000]" in lines[0]
    assert lines[-1].endswith("by erin  [h02344]  (no 2344)")


def test_empty_listings(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["audit", "--json", "--db", str(db_path)]) == 0
    assert capsys.readouterr().out == "[]\n"
    assert main(["audit", "--db", str(db_path)]) == 0
    assert capsys.readouterr().out == "no decisions yet\n"
    assert main(["pending", "--json", "--db", str(db_path)]) == 0
    assert capsys.readouterr().out == "[]\n"
    assert main(["pending", "--db", str(db_path)]) == 0
    assert capsys.readouterr().out == "no pending requests\n"


def test_pending_table_never_reads_a_request_larger_than_its_limit(
    store: Store, db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table asks each request's size first: 20 MB of arguments are listed by their summary, unread."""
    import tracemalloc

    with store.transaction() as tx:
        for hitl_id, content in (("h-small", "hello"), ("h-big", "z" * (20 * 2**20))):
            tx.requests.create(
                NewRequest(
                    hitl_id=hitl_id,
                    hitl_type="tool_approval",
                    session_id="s1",
                    invocation_id="i1",
                    data={"arguments": {"path": f"{hitl_id}.txt", "content": content}},
                    tool_name="write_file",
                )
            )
    tracemalloc.start()
    try:
        assert main(["pending", "--db", str(db_path)]) == 0
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    small, big = capsys.readouterr().out.splitlines()
    assert peak < 8 * 2**20, f"the table read the big request ({peak / 2**20:.0f} MiB allocated)"
    assert big.startswith("h-big") and "(not read)" in big and " h-big.txt" in big and "20.0 MiB" in big
    assert len(big) < 300
    assert small.startswith("h-small") and "(not read)" not in small  # small requests keep their digest
    from reviewer_app.domain.decisions import args_digest

    assert args_digest({"path": "h-small.txt", "content": "hello"})[:12] in small
