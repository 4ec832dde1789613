"""How the database grows with a run's work: scripted runs of many turns, large tool results, one huge write.

Each workload runs on a fresh SQLite database through the real runtime (the scripted model the tests use):

* 100 and 300 turns, each with 1 KB of model text and a small ungated ``read_file``;
* 100 turns each reading a 61 KB file;
* one 10 MB ``write_file`` (gated, approved) followed by ten small turns.

Sizes are the database file after a WAL checkpoint (TRUNCATE). Bytes per turn come from the pages in use
(``page_count - freelist_count``, read through the WAL) sampled as each turn starts. Every figure is printed
with the machine's load average at that moment.

    python bench/storage_growth.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import Goal, machine_info, report

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.hitl import SQLHITLBackend, shown_arguments
from reviewer_app.runtime.agents import AgentCatalog, AgentSpec
from reviewer_app.runtime.llm_clients import ModelClient
from reviewer_app.runtime.runner import Runtime

MB = 1024 * 1024
TEXT_1KB = ("The model explains what it does next, at some length. " * 20)[:1024]
AGENT = "bench-storage"


def prose(size: int, seed: int) -> str:
    """Text about as compressible as source code or logs (seeded, so every run writes the same bytes)."""
    rng = random.Random(seed)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz_") for _ in range(rng.randint(2, 10))) for _ in range(2000)]
    lines, total = [], 0
    while total < size:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(4, 14))) + "\n"
        lines.append(line)
        total += len(line)
    return "".join(lines)[:size]


def load() -> str:
    return f"(load {os.getloadavg()[0]:.2f})"


def used_bytes(db_path: Path) -> int:
    """Bytes of pages in use, read through the WAL (no checkpoint needed)."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as raw:
        page_size = raw.execute("PRAGMA page_size").fetchone()[0]
        pages = raw.execute("PRAGMA page_count").fetchone()[0]
        free = raw.execute("PRAGMA freelist_count").fetchone()[0]
    raw.close()
    return int((pages - free) * page_size)


def file_bytes_after_checkpoint(db_path: Path) -> int:
    with sqlite3.connect(db_path) as raw:
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    wal = Path(f"{db_path}-wal")
    return db_path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)


class _SampledModel:
    """The scripted model, sampling the database's size as each turn starts (the turn index = the call count)."""

    def __init__(self, inner: ModelClient, db_path: Path, samples: dict[int, int]) -> None:
        self.inner = inner
        self.db_path = db_path
        self.samples = samples

    async def complete(self, messages: list[dict[str, Any]], tools: Any, **kwargs: Any) -> Any:
        turn = sum(1 for m in messages if m.get("role") == "assistant")
        self.samples[turn] = used_bytes(self.db_path)
        return await self.inner.complete(messages, tools, **kwargs)


class _SamplingCatalog(AgentCatalog):
    def __init__(self, specs: list[AgentSpec], db_path: Path, samples: dict[int, int]) -> None:
        super().__init__(specs)
        self._db_path = db_path
        self._samples = samples

    def build_model(self, name: str, script: Any = None) -> ModelClient:
        return _SampledModel(super().build_model(name, script), self._db_path, self._samples)  # type: ignore[return-value]


def agent() -> AgentSpec:
    return AgentSpec(
        name=AGENT,
        system_prompt="You are a benchmark agent.",
        model={"type": "scripted", "script": []},
        tools=["read_file", "write_file"],
        policy=ApprovalPolicy(gated=frozenset({"write_file"})),
        max_turns=10_000,
    )


async def run_workload(
    db_path: Path, workspaces: Path, script: list[dict[str, Any]], files: dict[str, str]
) -> tuple[dict[int, int], float]:
    """Run ``script`` to the end (approving every gated call); returns the size samples and the wall time."""
    samples: dict[int, int] = {}
    backend = SQLHITLBackend(db_path, reviewer="bench")
    runtime = Runtime(backend, _SamplingCatalog([agent()], db_path, samples), workspaces_dir=workspaces)
    await runtime.start(recover=False)
    session = "ses_bench"
    (workspaces / session).mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (workspaces / session / name).write_text(text, encoding="utf-8")
    started = time.perf_counter()
    try:
        inv = await runtime.start_run(AGENT, "work through the script", script=script, session_id=session)
        while True:
            record = await backend.get_run(inv)
            assert record is not None
            if record.state in ("done", "failed", "cancelled"):
                if record.state != "done":
                    raise RuntimeError(f"the run ended {record.state}: {record.error}")
                break
            for request in await backend.get_pending_by_invocation(inv):
                decision = Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(request)))
                await runtime.decide_and_resume(request["hitl_id"], decision)
            token = backend.feed.token()
            await backend.feed.wait(token, 0.2)
    finally:
        await runtime.stop()
        await backend.aclose()
    return samples, time.perf_counter() - started


def small_turns(count: int, *, path: str = "small.txt") -> list[dict[str, Any]]:
    return [{"text": TEXT_1KB, "tool_calls": [{"name": "read_file", "args": {"path": path}}]} for _ in range(count)]


def measure(name: str, script: list[dict[str, Any]], files: dict[str, str], root: Path) -> tuple[int, dict[int, int]]:
    db_path = root / f"{name}.db"
    samples, elapsed = asyncio.run(run_workload(db_path, root / f"{name}-ws", script, files))
    size = file_bytes_after_checkpoint(db_path)
    print(
        f"{name}: {size / MB:.2f} MB after a WAL checkpoint, {len(script)} turns in {elapsed:.1f} s {load()}",
        flush=True,
    )
    return size, samples


def per_turn(samples: dict[int, int], first: int, last: int) -> float:
    return (samples[last] - samples[first]) / (last - first)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller workloads (a smoke run, goals not meaningful)")
    args = parser.parse_args()
    scale = 10 if args.quick else 1
    info = machine_info()
    print(f"machine: {info['nproc']} cores, {info['cpu']}, Python {info['python']}, SQLite {info['sqlite']} {load()}")
    small = {"small.txt": "small file\n"}
    file_61k = {"big.txt": prose(61 * 1024, seed=61)}
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-storage-") as tmp:
        root = Path(tmp)
        size_100, _ = measure("turns_100", small_turns(100 // scale), small, root)
        size_300, samples = measure("turns_300", small_turns(300 // scale), small, root)
        size_61k, _ = measure("read_61kb_x100", small_turns(100 // scale, path="big.txt"), file_61k, root)
        huge = prose(10 * MB, seed=10)
        write_script = [
            {
                "text": "Writing it all.",
                "tool_calls": [{"name": "write_file", "args": {"path": "huge.txt", "content": huge}}],
            }
        ]
        size_huge, _ = measure("write_10mb_then_10", write_script + small_turns(10), small, root)

    first_lo, first_hi, last_lo, last_hi = (10, 60, 250, 300) if scale == 1 else (1, 6, 25, 30)
    early = per_turn(samples, first_lo, first_hi)
    late = per_turn(samples, last_lo, last_hi)
    print(f"bytes/turn: turns {first_lo}-{first_hi} {early:.0f}, turns {last_lo}-{last_hi} {late:.0f} {load()}")
    print(f"300-turn database / 100-turn database: {size_300 / size_100:.2f}x {load()}")
    print(f"61 KB reads x100: {size_61k / MB:.2f} MB; 10 MB write + 10 turns: {size_huge / MB:.2f} MB {load()}")
    goals = [
        Goal("storage_300_turns_mb", size_300 / MB, 10, "MB", at_least=False),
        Goal("storage_300_vs_100_turns", size_300 / size_100, 3.6, "x", at_least=False),
        Goal(
            "storage_bytes_per_turn_late_vs_early",
            late / early if early > 0 else float("inf"),
            1.25,
            "x",
            at_least=False,
        ),
    ]
    report(
        goals,
        {
            "turns_100_bytes": size_100,
            "turns_300_bytes": size_300,
            "read_61kb_x100_bytes": size_61k,
            "write_10mb_then_10_bytes": size_huge,
            "bytes_per_turn_early": early,
            "bytes_per_turn_late": late,
        },
        bench="storage_growth",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
