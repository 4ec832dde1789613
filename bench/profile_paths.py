"""Where the time of the store, suspend and resume paths goes (a diagnostic, not part of ``make bench``).

- ``store``: pyinstrument on the backend's database thread (started there through ``backend.run``) while
  ``store_throughput.py``'s create + respond pairs go through the public async API; and on the event loop's thread.
- ``resume``: ``round_trip.py``'s runs, each resume split into stamps from the decision's COMMIT: ``decide()``
  back on the loop, the run's ``running`` commit entered, its transaction body begun and ended on the database
  thread, back on the loop, the tool started (medians in µs).
- ``round_trip``: pyinstrument on the database thread, then on the loop's, over whole ``round_trip.py`` runs (the
  gate's transaction, the decision's, the call's ``running`` and ``done`` commits, the run's end).

``python bench/profile_paths.py --out bench/profiles`` writes ``store.txt``, ``resume.txt`` and ``round_trip.txt``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import load_average, new_database
from pyinstrument import Profiler

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.turns import RunDriver


async def _profiled_on_db_thread(
    backend: SQLHITLBackend, body: Callable[[], Any], *, loop_too: bool
) -> tuple[str, str]:
    """Run ``body`` with a profiler on the database thread, and (``loop_too``, in a second pass) on this one.

    One profiler at a time: two sampling at once fight over the GIL and inflate the hand-offs between the threads.
    """
    on_db = Profiler(interval=0.0002, async_mode="disabled")
    await backend.run(on_db.start)
    try:
        await body()
    finally:
        await backend.run(on_db.stop)
    loop_text = ""
    if loop_too:
        on_loop = Profiler(interval=0.0002, async_mode="disabled")
        on_loop.start()
        try:
            await body()
        finally:
            on_loop.stop()
        loop_text = on_loop.output_text(unicode=True, show_all=False)
    return on_db.output_text(unicode=True, show_all=False), loop_text


async def store(directory: Path, pairs: int) -> str:
    import store_throughput as st

    backend = SQLHITLBackend(new_database(directory / "store.db"), reviewer="bench")
    try:
        await st._ours(backend, st.workload(200, "w"))
        batches = iter([st.workload(pairs, "x"), st.workload(pairs, "y")])
        began = time.perf_counter()
        on_db, on_loop = await _profiled_on_db_thread(backend, lambda: st._ours(backend, next(batches)), loop_too=True)
        per_pair = (time.perf_counter() - began) / (2 * pairs) * 1e6
    finally:
        await backend.aclose()
    return (
        f"store path: {pairs} create+respond pairs through SQLHITLBackend per profile, {per_pair:.0f} us per pair "
        f"while profiled, {load_average()}\n\n== database thread ==\n{on_db}\n== event loop thread ==\n{on_loop}"
    )


class _Stamps:
    """Stamps of the resume in flight, set by wrappers around ``RunDriver.commit`` and ``SQLHITLBackend.write``."""

    def __init__(self) -> None:
        self.marks: dict[str, float] = {}
        self.armed = False


def _instrument_resume(stamps: _Stamps) -> None:
    clock = time.perf_counter
    original_commit = RunDriver.commit
    original_write = SQLHITLBackend.write

    async def commit(self: RunDriver, run: Any, state: Any, **kwargs: Any) -> None:
        entered = stamps.armed and "running commit entered" not in stamps.marks
        if entered:
            stamps.marks["running commit entered"] = clock()
        await original_commit(self, run, state, **kwargs)
        if entered:
            stamps.marks["running commit back on the loop"] = clock()

    async def write(self: SQLHITLBackend, fn: Callable[[Any], Any], **kwargs: Any) -> Any:
        def body(tx: Any) -> Any:
            entered = stamps.armed and "running commit entered" in stamps.marks
            if entered:
                stamps.marks.setdefault("its transaction body begins (DB thread)", clock())
            result = fn(tx)
            if entered:
                stamps.marks.setdefault("its transaction body ends (DB thread)", clock())
            return result

        return await original_write(self, body, **kwargs)

    RunDriver.commit = commit  # type: ignore[method-assign]
    SQLHITLBackend.write = write  # type: ignore[method-assign]


async def round_trips(directory: Path, runs: int) -> tuple[str, str]:
    import round_trip as rt

    stamps = _Stamps()
    _instrument_resume(stamps)
    ours = rt.ReviewerSide(directory)
    await ours.start()
    splits: dict[str, list[float]] = {}
    try:
        for i in range(20):
            await ours.one_run(i, record=False)

        first = iter([20, 20 + runs])

        async def suspend_runs() -> None:
            start = next(first)
            for i in range(start, start + runs):
                await ours.one_run(i, record=False)

        suspend_db, suspend_loop = await _profiled_on_db_thread(ours.backend, suspend_runs, loop_too=True)
        for i in range(20 + 2 * runs, 20 + 3 * runs):
            ours.marks[0] = rt.Marks()
            ours.request_ready = asyncio.Event()
            ours.tool_started = asyncio.Event()
            arguments = rt.tool_arguments(i)
            script = [{"tool_calls": [{"name": "bench_write", "args": arguments}]}]
            invocation = await ours.runtime.start_run("bench", f"write note {i}", script=script)
            await ours.request_ready.wait()
            while not ours.runtime.driver.waits_for(ours.hitl_id):  # noqa: ASYNC110 - as in round_trip.py
                await asyncio.sleep(0)
            stamps.marks = {}
            stamps.armed = True
            decision = Decision(DecisionKind.APPROVE, args_sha256=args_digest(arguments))
            await ours.runtime.decide_and_resume(ours.hitl_id, decision)
            stamps.marks.setdefault("decide() back on the loop", time.perf_counter())
            await ours.tool_started.wait()
            stamps.armed = False
            committed = ours.marks[0]["decision_committed"]
            stamps.marks["tool started"] = ours.marks[0]["tool_start"]
            for name, at in stamps.marks.items():
                if at <= stamps.marks["tool started"]:  # a decision handed to its run has no running commit of its own
                    splits.setdefault(name, []).append((at - committed) * 1e6)
            await ours.runtime.wait_for_run(invocation, timeout=30)
    finally:
        await ours.stop()
    order = [
        "decide() back on the loop",
        "running commit entered",
        "its transaction body begins (DB thread)",
        "its transaction body ends (DB thread)",
        "running commit back on the loop",
        "tool started",
    ]
    lines = [f"resume path, {runs} runs: median µs after the decision's COMMIT ({load_average()})"]
    lines += [f"  {name:42s} {statistics.median(splits[name]):8.1f}" for name in order if name in splits]
    suspend = (
        f"round trips: {runs} runs per profile (start, gate, decide, running, tool, done), {load_average()}\n\n"
        f"== database thread ==\n{suspend_db}\n== event loop thread ==\n{suspend_loop}"
    )
    return "\n".join(lines) + "\n", suspend


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None, help="write store.txt, resume.txt, round_trip.txt here")
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="reviewer-profile-") as tmp:
        store_text = asyncio.run(store(Path(tmp), args.pairs))
        resume_text, suspend_text = asyncio.run(round_trips(Path(tmp), args.runs))
    print(resume_text)
    if args.out is None:
        print(store_text)
        print(suspend_text)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in (("store.txt", store_text), ("resume.txt", resume_text), ("round_trip.txt", suspend_text)):
        (args.out / name).write_text(text, encoding="utf-8")
    print(f"profiles written to {args.out}")


if __name__ == "__main__":
    main()
