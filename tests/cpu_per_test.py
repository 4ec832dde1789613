"""An opt-in profile of the suite's CPU, test by test: ``-p tests.cpu_per_test`` (see docs/performance.md).

The suite is bound by CPU, and most of it is spent in the processes the tests start, which ``--durations`` (wall
time, stretched by the load of whatever else runs) cannot show. For each test this writes one line to
``$REVIEWER_CPU_PROFILE_DIR/cpu-<worker>.tsv`` (default: the current folder): the node id, the CPU seconds of the
test's own process (all its threads), those of the child processes it started and reaped, the wall seconds, and
the start time. Sum and sort them with ``awk`` or a few lines of Python.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

_files: dict[str, TextIO] = {}


def _cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _profile_file() -> TextIO:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    if worker not in _files:
        folder = Path(os.environ.get("REVIEWER_CPU_PROFILE_DIR", "."))
        folder.mkdir(parents=True, exist_ok=True)
        _files[worker] = (folder / f"cpu-{worker}.tsv").open("a", encoding="utf-8", buffering=1)
    return _files[worker]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    own, children = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN)
    started, wall = time.time(), time.monotonic()
    yield
    own, children = _cpu(resource.RUSAGE_SELF) - own, _cpu(resource.RUSAGE_CHILDREN) - children
    line = f"{item.nodeid}\t{own:.3f}\t{children:.3f}\t{time.monotonic() - wall:.3f}\t{started:.1f}\n"
    _profile_file().write(line)
