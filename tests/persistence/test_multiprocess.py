"""Several OS processes on one database, on SQLite and on PostgreSQL: the database is the bus.

- two reviewer processes decide the same 1,000 requests: each applied exactly once, every loser told;
- an external agent process waiting on its requests wakes when another process decides them
  (decision-to-wake-up latency is printed: run with ``-s`` to see it);
- processes opening a fresh PostgreSQL database together all get the migrated schema.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.records import NewRequest, RequestQuery
from reviewer_app.hitl import SQLHITLBackend, shown_arguments
from reviewer_app.persistence import migrate
from reviewer_app.persistence.store import Store

REPO_ROOT = Path(__file__).resolve().parents[2]
COUNT = 1_000
ROUNDS = 50


def _seed(store: Store, count: int) -> None:
    with store.transaction() as tx:
        for index in range(count):
            tx.requests.create(
                NewRequest(
                    hitl_id=f"m{index:04d}",
                    hitl_type="tool_approval",
                    session_id=f"s{index % 7}",
                    invocation_id=f"i{index % 31}",
                    data={"arguments": {"command": f"echo {index}"}, "schema": {"type": "object"}},
                    tool_name="run_shell",
                )
            )


def _wait_for_files(paths: list[Path], procs: list[subprocess.Popen[str]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not all(path.exists() for path in paths):
        for proc in procs:
            if proc.poll() is not None:
                raise AssertionError(f"a reviewer process exited early: {proc.communicate()}")
        assert time.monotonic() < deadline, "the reviewer processes did not get ready in time"
        time.sleep(0.02)


@pytest.mark.slow
def test_two_reviewer_processes_decide_1000_requests_exactly_once(
    any_db: str, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    store = Store.open(any_db)
    try:
        _seed(store, COUNT)
        names = ("alice", "bob")
        ready = [tmp_path / f"ready-{name}" for name in names]
        go = tmp_path / "go"
        procs = [
            subprocess.Popen(
                [sys.executable, "-m", "tests.helpers.reviewer_process", any_db, name, str(flag), str(go), str(seed)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=subprocess_env,
                cwd=REPO_ROOT,
            )
            for seed, (name, flag) in enumerate(zip(names, ready, strict=True), start=1)
        ]
        _wait_for_files(ready, procs, timeout=120)  # both have loaded the queue: start them together
        began = time.perf_counter()
        go.touch()
        outputs = [proc.communicate(timeout=300) for proc in procs]
        elapsed = time.perf_counter() - began
        for proc, (_, err) in zip(procs, outputs, strict=True):
            assert proc.returncode == 0, err
            assert "database is locked" not in err
        results = [json.loads(out.strip().splitlines()[-1]) for out, _ in outputs]
        won: dict[str, str] = {}
        recorded = [result["reviewer"] for result in results]  # on PostgreSQL: "<login> (alice)" (issue 12)
        for result, other in zip(results, reversed(recorded), strict=True):
            assert result["errors"] == []
            assert result["loaded"] == COUNT
            assert len(result["won"]) + result["lost"] == COUNT  # every attempt either won or was told it lost
            assert result["winners_named"] == ({other: result["lost"]} if result["lost"] else {})
            for hitl_id in result["won"]:
                assert hitl_id not in won, f"{hitl_id} applied twice"
                won[hitl_id] = result["reviewer"]
        assert len(won) == COUNT
        assert sum(len(r["won"]) + r["lost"] for r in results) == 2 * COUNT
        # The database agrees: every request decided once, by the process that was told it won.
        assert store.requests.count_pending() == 0
        summaries = store.requests.summaries(RequestQuery(statuses=()))
        assert {s.hitl_id: s.decided_by for s in summaries} == won
        assert {s.decision for s in summaries} == {"approve"}
        entries = store.audit.entries()
        assert len(entries) == COUNT
        assert {e.hitl_id: e.reviewer for e in entries} == won
        report = store.audit.verify()
        assert report.ok and report.rows_checked == COUNT
    finally:
        store.close()
    print(
        f"\n[{store.engines.dialect}] 2 reviewer processes x {COUNT} requests: {elapsed:.2f} s, "
        f"{2 * COUNT / elapsed:.0f} attempts/s, wins {[len(r['won']) for r in results]}"
    )


def _percentile(values: list[float], pct: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[pct - 1]


@pytest.mark.slow
@pytest.mark.asyncio
async def test_external_agent_wakes_on_decisions_made_in_another_process(
    any_db: str, subprocess_env: dict[str, str]
) -> None:
    reviewer = SQLHITLBackend(any_db, reviewer="latency-reviewer")
    agent = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.helpers.waiting_agent",
        any_db,
        str(ROUNDS),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=subprocess_env,
        cwd=REPO_ROOT,
    )
    assert agent.stdout is not None
    rng = random.Random(7)
    latencies: list[float] = []
    decide_times: list[float] = []
    try:
        for index in range(ROUNDS):
            hitl_id = f"wait-{index}"
            line = await asyncio.wait_for(agent.stdout.readline(), 60)
            assert json.loads(line) == {"created": hitl_id}, line
            record = await reviewer.get(hitl_id)
            assert record is not None and record["status"] == "pending"
            digest = args_digest(shown_arguments(record))
            await asyncio.sleep(rng.uniform(0.02, 0.08))  # the agent is now parked in wait_for_response
            began = time.time()
            await reviewer.decide(hitl_id, Decision(DecisionKind.APPROVE, args_sha256=digest))
            decide_times.append(time.time() - began)
            woke = json.loads(await asyncio.wait_for(agent.stdout.readline(), 60))
            assert woke["woke"] == hitl_id and woke["status"] == "completed"
            assert woke["decision"]["decision"] == "approve" and woke["decision"]["reviewer"] == reviewer.reviewer
            latencies.append(woke["at"] - began)
        _, err = await asyncio.wait_for(agent.communicate(), 60)
        assert agent.returncode == 0, err.decode()
        runs = await reviewer.list_runs()
        assert [(r.id, r.external) for r in runs] == [("external-run", True)]
    finally:
        if agent.returncode is None:
            agent.kill()
            await agent.wait()
        await reviewer.aclose()
    dialect = reviewer.store.engines.dialect
    ms = [1000 * value for value in latencies]
    print(
        f"\n[{dialect}] decision-to-wake-up of an external agent over {ROUNDS} decisions: "
        f"p50 {_percentile(ms, 50):.1f} ms, p99 {_percentile(ms, 99):.1f} ms, max {max(ms):.1f} ms "
        f"(from the decide() call; decide() itself p50 {1000 * statistics.median(decide_times):.1f} ms)"
    )


@pytest.mark.postgres
def test_processes_opening_a_fresh_postgres_database_together_all_succeed(
    empty_pg_url: str, subprocess_env: dict[str, str]
) -> None:
    """Several team members start Reviewer at once on a new server database: one migrates, all open it."""
    script = "import sys; from reviewer_app.persistence.store import Store; Store.open(sys.argv[1]).close()"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, empty_pg_url],
            stderr=subprocess.PIPE,
            text=True,
            env=subprocess_env,
            cwd=REPO_ROOT,
        )
        for _ in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    store = Store.open(empty_pg_url)
    try:
        assert migrate.current_revision(store.engines) == migrate.head_revision()
    finally:
        store.close()
