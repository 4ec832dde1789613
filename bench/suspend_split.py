"""Where a suspend's time goes: SQLite's share of our gate transaction against our own Python (a diagnostic, not
part of ``make bench``).

Runs ``round_trip.py``'s Reviewer side (no LangGraph) and, inside the window it times (the model hands over its call
-> the transaction holding the request commits), sums the time each statement spends in the driver's ``execute``
and the CPU time the window's threads spend (the loop's and, ``--mode thread``, the database thread's, each read
from its own CPU clock: other load does not count). Printed at p50 per suspend, next to the raw ``sqlite3`` replay
of the same transaction (``round_trip.py``'s reference).

``python bench/suspend_split.py --runs 300 --mode loop``
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import round_trip as rt
from common import add_write_mode_option, load_average


class _Window:
    """The suspend in flight: its start and what its statements spent, then every finished one's figures."""

    def __init__(self) -> None:
        self.open = False
        self.clocks: dict[str, int] = {}  # thread -> its CPU clock (set once the backend has started)
        self.began_cpu: dict[str, float] = {}
        self.spent: Counter[str] = Counter()
        self.finished: defaultdict[str, list[float]] = defaultdict(list)

    def begin(self) -> None:
        """Open the window (on the loop's thread, as the model hands over its call)."""
        self.open, self.spent = True, Counter()
        self.began_cpu = {name: time.clock_gettime(clock) for name, clock in self.clocks.items()}

    def close(self) -> None:
        # Each thread's own CPU clock, read from whichever thread commits (the window opens on the loop's thread and
        # closes on the database thread in --mode thread: one thread's thread_time() against the other's is nonsense).
        for name, clock in self.clocks.items():
            self.spent[f"our CPU time, {name}"] = time.clock_gettime(clock) - self.began_cpu[name]
        self.spent["our CPU time, both threads"] = sum(
            seconds for name, seconds in self.spent.items() if name.startswith("our CPU time, ")
        )
        self.spent["SQLite, all statements"] = sum(
            seconds for name, seconds in self.spent.items() if name.startswith("  ")
        )
        for name, seconds in self.spent.items():
            self.finished[name].append(seconds)
        self.open = False


def _instrument(window: _Window) -> None:
    """Time the recorded driver calls while a suspend is open; open it when the model hands over its call."""

    def timed(original: Any) -> Any:
        def call(self: Any, sql: str, params: Any = (), /) -> Any:
            if not window.open:
                return original(self, sql, params)
            began = time.perf_counter()
            try:
                return original(self, sql, params)
            finally:
                window.spent["  " + " ".join(sql.split()[:4])[:48]] += time.perf_counter() - began

        return call

    rt._NotingWrites.execute = timed(rt._NotingWrites.execute)  # type: ignore[method-assign]
    rt._NotingWrites.executemany = timed(rt._NotingWrites.executemany)  # type: ignore[method-assign]
    complete = rt._TimedModel.complete

    async def stamped(self: Any, messages: Any, tools: Any, *, on_delta: Any = None) -> Any:
        turn = await complete(self, messages, tools, on_delta=on_delta)
        if turn.tool_calls:
            window.begin()
        return turn

    rt._TimedModel.complete = stamped  # type: ignore[method-assign]


def _close_on_request_commit(side: rt.ReviewerSide, window: _Window) -> None:
    """End the window when the transaction that created the request has committed (as round_trip.py stamps it)."""
    store = side.backend.store

    def closing(original: Any) -> Any:
        @contextlib.contextmanager
        def transaction() -> Iterator[Any]:
            with original() as tx:
                yield tx
            if window.open and "request_committed" in side.marks[0]:
                window.close()

        return transaction

    store.transaction = closing(store.transaction)  # type: ignore[method-assign]
    store.loop_transaction = closing(store.loop_transaction)  # type: ignore[method-assign]


def _database_thread(side: rt.ReviewerSide) -> threading.Thread:
    """The backend's database thread (where ``--mode thread`` runs the transaction)."""
    return side.backend._db_thread._thread


async def measure(directory: Path, runs: int, warmup: int, mode: str) -> tuple[_Window, rt.ReviewerSide]:
    window = _Window()
    _instrument(window)
    side = rt.ReviewerSide(directory, writes_on_loop=mode == "loop")
    await side.start()
    window.clocks = {
        "loop thread": time.pthread_getcpuclockid(threading.get_ident()),
        "database thread": time.pthread_getcpuclockid(_database_thread(side).ident or 0),
    }
    _close_on_request_commit(side, window)
    try:
        for i in range(warmup + runs):
            await side.one_run(i, record=i >= warmup)
    finally:
        await side.stop()
    for figures in window.finished.values():
        del figures[:warmup]
    return window, side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    add_write_mode_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-") as tmp:
        window, side = asyncio.run(measure(Path(tmp), args.runs, args.warmup, args.mode))
    p50 = {name: statistics.median(values) * 1e6 for name, values in window.finished.items() if values}
    print(f"suspend split, {args.runs} runs, mode {args.mode}, {load_average()} (µs at p50 per suspend):")
    for label, sample in (("suspend (wall, as round_trip.py times it)", "suspend"), ("raw sqlite3 replay", "raw_gate")):
        print(f"  {label:50s} {statistics.median(side.samples[sample]) * 1e6:8.1f}")
    for name in sorted(p50, key=lambda name: (name.startswith("  "), -p50[name])):
        print(f"  {name:50s} {p50[name]:8.1f}")


if __name__ == "__main__":
    main()
