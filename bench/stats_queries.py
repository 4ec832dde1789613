"""Statistics view: how long ``SQLHITLBackend.decision_stats`` takes on a large SQLite history, per period.

200,000 requests spread over 60 days (nine in ten decided by people, a rule or the clock) are inserted directly,
then each period of the Statistics window is computed three times; the median is reported. The work runs on the
backend's database thread, never on the Qt thread: the goal is that the window's charts follow a period change
within a second on a large history. Prints ``GOAL stats_<period>_ms <measured> <target> PASS|MISS``.
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from common import Goal, machine_info, report

from reviewer_app.hitl import SQLHITLBackend

ROWS = 200_000
TARGET_MS = 1000.0
PERIODS = (("24h", 86_400), ("7d", 7 * 86_400), ("30d", 30 * 86_400), ("all", None))


async def seed(db: Path) -> None:
    async with SQLHITLBackend(db, reviewer="alice") as backend:
        await backend.create(
            hitl_id="seed",
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": {}},
            tool_name="t",
        )
    raw = sqlite3.connect(db)
    columns = [row[1] for row in raw.execute("PRAGMA table_info(hitl_requests)")]
    template = dict(
        zip(columns, raw.execute("SELECT * FROM hitl_requests WHERE hitl_id = 'seed'").fetchone(), strict=True)
    )
    now = int(time.time())
    rng = random.Random(19)
    rows = []
    for index in range(ROWS):
        row = dict(template)
        created = now - rng.randint(0, 60 * 86_400)
        row.update(
            hitl_id=f"h{index}",
            created_at=created,
            updated_at=created,
            updated_at_ms=created * 1000,
            agent=rng.choice("abcdefgh"),
            tool_name=rng.choice(["run_shell", "write_file", "read_file"]),
        )
        if index % 10:
            row.update(
                status="expired" if index % 17 == 0 else "completed",
                responded_at=created + rng.randint(1, 5000),
                decided_by=rng.choice(["alice", "bob", "carol", "rule:r1"]),
                decision="approve",
            )
        rows.append(tuple(row[column] for column in columns))
    with raw:
        raw.executemany(f"INSERT INTO hitl_requests VALUES ({','.join('?' * len(columns))})", rows)
    raw.close()


async def measure(db: Path) -> list[Goal]:
    goals = []
    async with SQLHITLBackend(db, reviewer="alice") as backend:
        for name, span in PERIODS:
            samples = []
            for _ in range(3):
                since = None if span is None else int(time.time()) - span
                started = time.perf_counter()
                stats = await backend.decision_stats(since_s=since)
                samples.append((time.perf_counter() - started) * 1000)
            print(
                f"{name}: {statistics.median(samples):.0f} ms median of 3 ({stats.decided} decided, "
                f"{len(stats.per_bucket)} time buckets)"
            )
            goals.append(Goal(f"stats_{name}_ms", statistics.median(samples), TARGET_MS, "ms", at_least=False))
    return goals


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-stats-") as directory:
        db = Path(directory) / "stats.db"
        asyncio.run(seed(db))
        goals = asyncio.run(measure(db))
    report(goals, {"rows": ROWS, "machine": machine_info()}, bench="stats_queries")


if __name__ == "__main__":
    main()
