"""Cross-process wake-up: a decision committed in one process -> ``wait_for_response`` returning in another.

Three waiting processes, each an ``SQLHITLBackend`` awaiting one request at a time, and one deciding process (this
one) that creates a request, tells the waiter its id, lets it settle into its wait, then decides it:

- ``sqlite channel``: SQLite, woken by the wake-up channel (:mod:`reviewer_app.persistence.wakeup`);
- ``sqlite polling``: SQLite with ``REVIEWER_WAKE_CHANNEL=0``, the ``PRAGMA data_version`` poll alone (every 50 ms:
  what every SQLite waiter did before the channel, and what Windows still does);
- ``postgresql``: a real PostgreSQL server (``tests/pg_server.py``: ``fsync`` off) and its ``LISTEN/NOTIFY`` feed.

The latency runs from just before ``decide()`` is called (so it includes the decision's own transaction) to the
waiter's ``wait_for_response`` returning, on the system-wide monotonic clock both processes read. The sides take
turns request by request so all three meet the same machine load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from common import BENCH_DIR, REPO_ROOT, Goal, describe_ms, load_average, new_database, report, settle

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend

ARGS = {"command": "echo wake"}
SETTLE_S = 0.02
"""How long a waiter is left in its wait before the decision: past its first read, as a waiting agent would be."""


async def waiter(target: str) -> None:
    """The waiting process: reads request ids on stdin, prints when it waits and when it was woken."""
    loop = asyncio.get_running_loop()
    async with SQLHITLBackend(target) as backend:
        while line := await loop.run_in_executor(None, sys.stdin.readline):
            hitl_id = line.strip()
            waiting = asyncio.create_task(backend.wait_for_response(hitl_id))
            await asyncio.sleep(SETTLE_S)
            print("waiting", flush=True)
            record = await waiting
            woke = time.monotonic_ns()
            print(json.dumps({"woke_ns": woke, "status": record["status"]}), flush=True)


class Side:
    """One waiting process and the deciding backend on the same database."""

    def __init__(self, label: str, target: str, env: dict[str, str]) -> None:
        self.label = label
        self.target = target
        self.env = env
        self.samples: list[float] = []
        self.backend: SQLHITLBackend | None = None
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        self.backend = SQLHITLBackend(self.target)
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(BENCH_DIR / "wakeup.py"),
            "--waiter",
            self.target,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=self.env,
        )

    async def one(self, index: int, *, record: bool) -> None:
        assert self.backend is not None and self.process is not None
        assert self.process.stdin is not None and self.process.stdout is not None
        hitl_id = f"{self.label.replace(' ', '-')}-{index}"
        await self.backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="bench",
            invocation_id="bench-run",
            data={"arguments": ARGS},
            tool_name="run_shell",
        )
        self.process.stdin.write(f"{hitl_id}\n".encode())
        await self.process.stdin.drain()
        line = await self.process.stdout.readline()
        if line.strip() != b"waiting":
            raise SystemExit(f"{self.label} waiter: {line!r}")
        settle()
        decided = time.monotonic_ns()
        await self.backend.decide(hitl_id, Decision(DecisionKind.APPROVE, args_sha256=args_digest(ARGS)))
        answer = json.loads(await self.process.stdout.readline())
        if answer["status"] != "completed":
            raise SystemExit(f"{self.label} waiter saw {answer}")
        if record:
            self.samples.append((answer["woke_ns"] - decided) / 1e9)

    async def stop(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
            await self.process.wait()
        if self.backend is not None:
            await self.backend.aclose()


def start_postgres(stack: Any) -> str | None:
    """A database on a fresh PostgreSQL server, or None (with the reason printed) where none can run."""
    try:
        sys.path.insert(0, str(REPO_ROOT))
        import psycopg  # noqa: F401

        from tests.pg_server import PgServer, find_bindir
    except ImportError as exc:
        print(f"postgresql: not measured ({exc})")
        return None
    bindir = find_bindir()
    if bindir is None:
        print("postgresql: not measured (no initdb/pg_ctl; apt-get install postgresql)")
        return None
    server = PgServer(bindir)
    try:
        server.start()
    except Exception as exc:
        server.stop()
        print(f"postgresql: not measured ({exc})")
        return None
    stack.callback(server.stop)
    return server.url(server.create_database())


async def measure(directory: Path, runs: int, warmup: int, postgres: bool) -> list[Side]:
    base_env = dict(os.environ)
    base_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), base_env.get("PYTHONPATH")]))
    base_env.pop("REVIEWER_WAKE_CHANNEL", None)
    channel_db = str(new_database(directory / "channel.db"))
    polling_db = str(new_database(directory / "polling.db"))
    sides = [
        Side("sqlite channel", channel_db, base_env),
        Side("sqlite polling", polling_db, {**base_env, "REVIEWER_WAKE_CHANNEL": "0"}),
    ]
    async with AsyncExitStack() as stack:
        if postgres:
            url = start_postgres(stack)
            if url is not None:
                sides.append(Side("postgresql", url, base_env))
        for side in sides:
            await side.start()
            stack.push_async_callback(side.stop)
        for index in range(warmup + runs):
            order = sides[index % len(sides) :] + sides[: index % len(sides)]  # who goes first rotates too
            for side in order:
                await side.one(index, record=index >= warmup)
    return sides


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="timed wake-ups per side")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--waiter", metavar="DB", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.waiter:
        asyncio.run(waiter(args.waiter))
        return

    with tempfile.TemporaryDirectory(prefix="reviewer-bench-") as tmp:
        sides = asyncio.run(measure(Path(tmp), args.runs, args.warmup, not args.no_postgres))

    figures: dict[str, Any] = {"runs": args.runs}
    print(f"cross-process wake-up, decide() called -> waiter returns, {args.runs} per side (ms), {load_average()}:")
    print(f"  {'':16s} {'p50':>8s} {'p90':>8s} {'p99':>8s} {'max':>8s}")
    by_label: dict[str, dict[str, float]] = {}
    for side in sides:
        stats = describe_ms(side.samples)
        by_label[side.label] = stats
        figures[side.label] = stats
        print(
            f"  {side.label:16s} {stats['p50_ms']:8.3f} {stats['p90_ms']:8.3f} {stats['p99_ms']:8.3f} "
            f"{stats['max_ms']:8.3f}"
        )
    goals = []
    for label, name in (("sqlite channel", "wakeup_sqlite"), ("postgresql", "wakeup_postgres")):
        stats = by_label.get(label, {})
        goals.append(Goal(f"{name}_p50", stats.get("p50_ms", math.nan), 5.0, "ms", at_least=False))
        goals.append(Goal(f"{name}_p99", stats.get("p99_ms", math.nan), 20.0, "ms", at_least=False))
    report(goals, figures, bench="wakeup")


if __name__ == "__main__":
    main()
