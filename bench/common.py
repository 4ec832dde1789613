"""Shared measurement helpers for the benchmarks: percentiles, goals, result files, machine facts.

Every benchmark prints its figures and ends with ``GOAL <name> <measured> <target> PASS|MISS``
lines. When ``BENCH_RESULTS`` names a file, each goal is also appended to it as one JSON line,
so ``bench/run_all.py`` can print the final table after running each script in its own process.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import sqlite3
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
if str(REPO_ROOT) not in sys.path:  # scripts run as ``python bench/x.py`` from the checkout
    sys.path.insert(0, str(REPO_ROOT))


def percentile(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0..100) with linear interpolation between closest ranks."""
    if not values:
        raise ValueError("no samples")
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * p / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def describe_ms(values_s: Sequence[float]) -> dict[str, float]:
    """p50/p90/p99/max/mean of durations given in seconds, as milliseconds."""
    ms = [v * 1000.0 for v in values_s]
    return {
        "n": len(ms),
        "p50_ms": percentile(ms, 50),
        "p90_ms": percentile(ms, 90),
        "p99_ms": percentile(ms, 99),
        "max_ms": max(ms),
        "mean_ms": statistics.fmean(ms),
    }


@dataclass(frozen=True)
class Goal:
    """One target: ``measured`` compared with ``target`` (``at_least`` says which way is good)."""

    name: str
    measured: float
    target: float
    unit: str
    at_least: bool

    @property
    def passed(self) -> bool:
        return self.measured >= self.target if self.at_least else self.measured <= self.target

    def _fmt(self, value: float) -> str:
        if not math.isfinite(value):
            return "none"  # not measured (the script says why)
        if self.unit in ("x", "MB", "ms") and abs(value) < 10:
            text = f"{value:.2f}"
        elif abs(value) < 100:
            text = f"{value:.1f}"
        else:
            text = f"{value:.0f}"
        return f"{text}{self.unit}"

    @property
    def measured_text(self) -> str:
        return self._fmt(self.measured)

    @property
    def target_text(self) -> str:
        return (">=" if self.at_least else "<=") + f"{self.target:g}{self.unit}"

    def line(self) -> str:
        return f"GOAL {self.name} {self.measured_text} {self.target_text} {'PASS' if self.passed else 'MISS'}"


def load_average() -> str:
    """The machine's load average (1, 5, 15 min) as printed next to every figure: a loaded machine explains a
    slow figure, and ~7 engineers share these 2 cores."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:  # not on this platform
        return "load average n/a"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def report(goals: Iterable[Goal], details: dict[str, Any] | None = None, *, bench: str) -> None:
    """Print the goal lines (each after the load average it was measured at) and append them, with the details, to
    ``$BENCH_RESULTS``."""
    goals = list(goals)
    load = load_average()
    print(f"({load})", flush=True)
    for goal in goals:
        print(goal.line(), flush=True)
    details = {**(details or {}), "loadavg_after": os.getloadavg()}
    target = os.environ.get("BENCH_RESULTS")
    if target:
        with open(target, "a", encoding="utf-8") as handle:
            for goal in goals:
                record = {"bench": bench, "goal": asdict(goal), "line": goal.line(), "load": load}
                handle.write(json.dumps(record) + "\n")
            handle.write(json.dumps({"bench": bench, "details": details}, default=str) + "\n")


def machine_info() -> dict[str, str]:
    """What the table ran on: cores, CPU model, Python, SQLite."""
    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "nproc": str(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()),
        "cpu": cpu,
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "os": f"{platform.system()} {platform.release()}",
    }


WRITE_MODES = {"thread": "on the database thread", "loop": "on the loop's thread (writes_on_loop)"}
"""Where our write transactions run (``--mode``): the window's way, or the headless runner's and the CLI's."""


def add_write_mode_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mode",
        choices=WRITE_MODES,
        default="thread",
        help="where our write transactions run: the database thread (the window's way, the default) or the loop's"
        " own thread (writes_on_loop: the headless runner and the CLI)",
    )


def new_database(path: Path) -> Path:
    """A fresh database at ``path`` with the app's schema (through the real migrations)."""
    from reviewer_app.persistence.store import Store

    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    Store.open(path).close()
    return path


def settle() -> None:
    """Collect garbage before a timed section (the GC stays enabled while timing, as in the app)."""
    gc.collect()


class Profile:
    """pyinstrument around a measured process when ``BENCH_PROFILE`` names an output file (else nothing).

    The measured processes end with ``os._exit`` once their figures are out, so the report is
    written explicitly by :meth:`save` rather than at interpreter exit.
    """

    def __init__(self) -> None:
        self.path = os.environ.get("BENCH_PROFILE")
        self.profiler: Any = None
        if self.path:
            from pyinstrument import Profiler

            self.profiler = Profiler(interval=0.0005, async_mode="disabled")
            self.profiler.start()

    def save(self) -> None:
        if self.profiler is not None and self.path:
            self.profiler.stop()
            Path(self.path).write_text(self.profiler.output_text(unicode=True, show_all=False), encoding="utf-8")
            self.profiler = None


def clock() -> float:
    return time.perf_counter()


def load_average_text() -> str:
    """The machine's 1/5/15-minute load averages, printed beside a figure (other work skews timings)."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"
