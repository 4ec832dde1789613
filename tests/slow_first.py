"""Every parallel worker starts with its share of the slow tests, so none of them is left for the end of the run.

pytest-xdist's ``worksteal`` scheduler hands worker *k* the *k*-th contiguous block of the collection, and an idle
worker steals the second half of the longest queue. Left in file order, the slow tests (``@pytest.mark.slow``: real
agent CLIs, several processes, fault injection) cluster in a few files: one worker meets them in a row near the end
while the others have finished. Here the collection is rearranged so that each block begins with its N-th of the slow
tests (a contiguous run, in file order) followed by a contiguous run of the rest: the long tests run first and in
parallel, and what is stolen at the end are short tests. Only the order changes; every worker computes the same one
(xdist requires identical collections), and a run without workers (``-n 0``) keeps the file order.

Registered as a plugin by ``tests/conftest.py``.
"""

from __future__ import annotations

import os

import pytest


def worker_blocks(total: int, workers: int) -> list[int]:
    """The sizes of the contiguous blocks worksteal's first distribution gives each of ``workers`` idle workers."""
    sizes = []
    remaining = total
    for index in range(workers):
        size = remaining // (workers - index)
        sizes.append(size)
        remaining -= size
    return sizes


def slow_first_order(items: list[pytest.Item], is_slow: list[bool], workers: int) -> list[pytest.Item]:
    """``items`` rearranged so each worker's block starts with its dealt share of the slow ones."""
    slow = [item for item, flag in zip(items, is_slow, strict=True) if flag]
    rest = [item for item, flag in zip(items, is_slow, strict=True) if not flag]
    ordered: list[pytest.Item] = []
    taken = 0
    shares = worker_blocks(len(slow), workers)
    for index, size in enumerate(worker_blocks(len(items), workers)):
        # A contiguous run of the slow tests: one file's cases (the same agent CLI) run one after another on one
        # worker, not all at once on every worker, where they would compete for the CPU at the same moment.
        start = sum(shares[:index])
        share = slow[start : start + shares[index]]
        fill = max(0, size - len(share))
        ordered += share + rest[taken : taken + fill]
        taken += fill
    ordered += rest[taken:]  # only when slow tests outnumber a block's size
    return ordered


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    if workers < 2:
        return
    items[:] = slow_first_order(items, [item.get_closest_marker("slow") is not None for item in items], workers)
