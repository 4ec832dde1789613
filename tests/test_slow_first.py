"""The parallel run's order: each worker's first block starts with its share of the slow tests, nothing is lost."""

from __future__ import annotations

from typing import Any, cast

from tests.slow_first import slow_first_order, worker_blocks


def test_blocks_match_worksteals_first_split() -> None:
    assert worker_blocks(10, 4) == [2, 2, 3, 3]
    assert worker_blocks(2376, 4) == [594, 594, 594, 594]
    assert sum(worker_blocks(7, 3)) == 7


def test_each_block_begins_with_slow_tests_and_keeps_every_test() -> None:
    items = [f"t{index}" for index in range(12)]
    slow = {"t3", "t7", "t8", "t11"}
    ordered = slow_first_order(cast(Any, items), [item in slow for item in items], 4)
    assert sorted(ordered) == sorted(items)
    blocks = [ordered[0:3], ordered[3:6], ordered[6:9], ordered[9:12]]
    assert [block[0] for block in blocks] == ["t3", "t7", "t8", "t11"]  # one slow test each, in file order
    assert [item for item in ordered if item not in slow] == [item for item in items if item not in slow]


def test_more_slow_tests_than_a_block_holds_still_keeps_every_test() -> None:
    items = [f"t{index}" for index in range(6)]
    ordered = slow_first_order(cast(Any, items), [index < 5 for index in range(6)], 2)
    assert ordered == ["t0", "t1", "t5", "t2", "t3", "t4"]  # each block's slow ones first, in file order
