"""The reads the window's start depends on: summary pages, the runs board's query plan, no Alembic import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import NewRequest, RequestQuery
from reviewer_app.persistence.store import Store, _runs_query

REPO_ROOT = Path(__file__).resolve().parents[2]
PENDING = (HITLStatus.PENDING.value,)


def _seed(store: Store, count: int) -> None:
    with store.transaction() as tx:
        for index in range(count):
            tx.requests.create(
                NewRequest(
                    hitl_id=f"r{index:03d}",
                    hitl_type="ask_user" if index % 5 == 0 else "tool_approval",
                    session_id=f"s{index % 3}",
                    invocation_id=f"i{index % 7}",
                    data={"arguments": {"command": f"echo {index}"}},
                    metadata={"agent": "bot", "external": index % 2 == 0},
                    tool_name=None if index % 5 == 0 else "run_shell",
                    external=index % 2 == 0,
                )
            )


def test_summary_pages_follow_arrival_order_without_gaps_or_repeats(any_db: str) -> None:
    store = Store.open(any_db)
    try:
        _seed(store, 50)
        with store.transaction() as tx:
            tx.requests.decide("r010", {"decision": "reject"}, reviewer="x")
        everything = store.requests.summaries(RequestQuery())
        assert store.requests.summary_page(PENDING) == everything
        pages, after = [], None
        while True:
            page = store.requests.summary_page(PENDING, after=after, limit=8)
            pages.extend(page)
            if len(page) < 8:
                break
            after = (page[-1].created_at, page[-1].updated_at_ms, page[-1].hitl_id)
            # A decision between two pages: the rows still to come never include it, and none is skipped.
            if len(pages) == 16:
                with store.transaction() as tx:
                    tx.requests.decide("r040", {"decision": "reject"}, reviewer="x")
        assert [s.hitl_id for s in pages] == [s.hitl_id for s in everything if s.hitl_id != "r040"]
        assert pages == [s for s in everything if s.hitl_id != "r040"]  # every field, external included
        assert {s.external for s in pages} == {True, False}
        # Values that many rows repeat are one shared string, not a copy per row.
        assert len({id(s.session_id) for s in pages}) == 3
        assert len({id(s.status) for s in pages}) == 1
    finally:
        store.close()


def test_the_runs_query_counts_pending_requests_through_the_run_index(db_path: Path) -> None:
    """Without statistics SQLite may count through ix_hitl_status_*: every pending row, once per run."""
    store = Store.open(db_path)
    try:
        _seed(store, 30)
        runs = {run.id: run.pending for run in store.runs.list()}
        assert runs == {f"i{n}": sum(1 for i in range(30) if i % 7 == n) for n in range(7)}
        assert store.runs.get("i3") is not None and store.runs.get("i3").pending == 4
        from sqlalchemy.dialects import sqlite

        sql = str(_runs_query(None, 10).compile(dialect=sqlite.dialect(), compile_kwargs={"literal_binds": True}))
        with store.engines.read() as connection:
            plan = [row[-1] for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + sql)]
        counting = [step for step in plan if "hitl_requests" in step]
        assert counting and all("ix_hitl_invocation_status" in step for step in counting), plan
    finally:
        store.close()


def test_opening_a_database_at_the_bundled_head_does_not_import_alembic(
    db_path: Path, subprocess_env: dict[str, str]
) -> None:
    Store.open(db_path).close()  # created and migrated (Alembic runs here)
    script = (
        "import sys; from reviewer_app.persistence.store import Store; "
        f"Store.open({str(db_path)!r}).close(); print('alembic' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=subprocess_env, cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", done.stderr
