"""Counts per create + respond pair that machine load does not move (a diagnostic, not part of ``make bench``).

``store_throughput.py``'s pairs, each database job run inline on the loop's thread (so one thread holds all of it):

- ``python bench/store_counts.py calls`` — function calls a pair (cProfile), ours and the raw loop;
- ``valgrind --tool=callgrind --callgrind-out-file=/dev/null python bench/store_counts.py run --pairs N [--raw]``
  for two values of N — callgrind's ``Collected`` totals, differenced and divided by the pairs between them, are
  the instructions a pair without the set-up (the migrations, the warm-up).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import store_throughput as st
from common import new_database

from reviewer_app.hitl import SQLHITLBackend

T = TypeVar("T")


def _inline(fn: Callable[[], T]) -> asyncio.Future[T]:
    """``DatabaseThread.submit`` without the thread: the job runs now, its future is already done."""
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    try:
        future.set_result(fn())
    except BaseException as exc:  # handed to the awaiting caller, as the thread would
        future.set_exception(exc)
    return future


async def _measure(mode: str, pairs: int, raw_side: bool) -> None:
    directory = Path(tempfile.mkdtemp(prefix="reviewer-counts-"))
    os.environ.setdefault("REVIEWER_AUDIT_KEY_FILE", str(directory / "audit.key"))
    os.environ.setdefault("REVIEWER_AUDIT_ANCHOR_DIR", str(directory / "anchors"))
    backend = SQLHITLBackend(new_database(directory / "ours.db"), reviewer="bench")
    backend._db_thread.submit = _inline  # type: ignore[method-assign]
    raw_path = new_database(directory / "raw.db")
    raw, chain = st.raw_connect(raw_path), st.RawChain(raw_path)
    try:
        await st._ours(backend, st.workload(100, "w"))
        st._raw(raw, chain, st.workload(100, "w"))
        items = st.workload(pairs, "x")
        if mode == "run":
            began = time.process_time()
            await _side(backend, raw, chain, items, raw_side)
            print(
                f"{'raw' if raw_side else 'ours'}: {pairs} pairs, {(time.process_time() - began) / pairs * 1e6:.0f} us"
            )
            return
        for raw_only in (False, True):
            part = st.workload(pairs, f"p{int(raw_only)}")  # made before the profile starts
            profile = cProfile.Profile()
            profile.enable()
            await _side(backend, raw, chain, part, raw_only)
            profile.disable()
            calls = sum(entry[1] for entry in pstats.Stats(profile).stats.values())  # type: ignore[attr-defined]
            print(f"{'raw' if raw_only else 'ours'}: {calls / pairs:.1f} function calls a pair")
    finally:
        raw.close()
        await backend.aclose()


async def _side(
    backend: SQLHITLBackend, raw: sqlite3.Connection, chain: Any, items: list[dict[str, Any]], raw_side: bool
) -> None:
    if raw_side:
        st._raw(raw, chain, items)
    else:
        await st._ours(backend, items)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("calls", "run"))
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--raw", action="store_true", help="run: the raw loop instead of ours")
    args = parser.parse_args()
    asyncio.run(_measure(args.mode, args.pairs, args.raw))


if __name__ == "__main__":
    main()
