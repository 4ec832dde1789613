"""100 scripted runs all waiting on a reviewer at once, decided in one burst: all finish, no errors."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from tests.runtime.test_runner_support import approval, eventually, started_runtime

RUNS = 100


@pytest.mark.slow
@pytest.mark.asyncio
async def test_hundred_waiting_runs_decided_in_one_burst(backend: SQLHITLBackend, tmp_path: Path) -> None:
    async with started_runtime(backend, tmp_path, max_concurrent_runs=16) as runtime:
        began = time.perf_counter()
        invs = [
            await runtime.start_run(
                "tester",
                f"job {i}",
                script=[
                    {"tool_calls": [{"name": "write_file", "args": {"path": "out.txt", "content": f"{i}\n"}}]},
                    {"text": f"job {i} done"},
                ],
            )
            for i in range(RUNS)
        ]

        async def all_waiting() -> list | None:
            records = await backend.list_records()
            return records if len(records) == RUNS else None

        records = await eventually(all_waiting, backend, timeout=60)
        gated = time.perf_counter() - began
        runs = await backend.list_runs(limit=None)
        assert sorted(r.state for r in runs) == ["waiting"] * RUNS
        assert len(runtime.active_runs()) == RUNS  # all suspended, none holding a slot or a thread

        queries_before = runtime.driver.watcher.queries if runtime.driver.watcher else 0
        burst = time.perf_counter()
        await asyncio.gather(*(runtime.decide_and_resume(r["hitl_id"], approval(r)) for r in records))
        decided = time.perf_counter() - burst
        finished = await asyncio.gather(*(runtime.wait_for_run(inv, timeout=120) for inv in invs))
        total = time.perf_counter() - burst
        queries = (runtime.driver.watcher.queries if runtime.driver.watcher else 0) - queries_before
    assert [r.state for r in finished] == ["done"] * RUNS
    assert all(r.error is None for r in finished)
    for i, run in enumerate(finished):
        assert (Path(run.workspace) / "out.txt").read_text() == f"{i}\n"
    assert await backend.list_records(RequestQuery(statuses=("pending",))) == []
    assert (await backend.verify_audit()).rows_checked == RUNS
    # Resume latency per run: its decision's commit -> its tool's result committed (database clock, ms).
    latencies = []
    for record in records:
        decided_ms = backend.store.requests.extras(record["hitl_id"])["updated_at_ms"]
        events = await backend.events(record["invocation_id"])
        done_ms = next(e.ts_ms for e in events if e.data.get("status") == "success" and e.data.get("decision"))
        latencies.append(done_ms - decided_ms)
    latencies.sort()
    print(
        f"\n{RUNS} runs: start -> all waiting {gated:.2f} s; burst of {RUNS} decisions committed in {decided:.2f} s; "
        f"all runs done {total:.2f} s after the burst began; decision watcher made {queries} look-ups; "
        f"decision -> tool done: median {latencies[RUNS // 2]} ms, max {latencies[-1]} ms"
    )
