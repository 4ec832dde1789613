"""The checkpoint a run resumes from is its latest by sequence, never by the wall clock.

A clock stepped back (NTP, a VM restored) made the store pick an older checkpoint, whose pending call was
still ``approved``: the tool would have run a second time.
"""

from __future__ import annotations

import pytest

from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.store import Store
from reviewer_app.persistence.store import checkpoints as checkpoints_module


def test_latest_checkpoint_ignores_a_clock_step_back(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    with store.transaction() as tx:
        tx.requests.create(NewRequest(hitl_id="h", hitl_type="tool_approval", session_id="s", invocation_id="i"))
    clock = iter([2_000_000_000_000, 1_000_000_000_000, 999_999_999_999])
    monkeypatch.setattr(checkpoints_module, "now_ms", lambda: next(clock))
    for seq, state in ((9, {"call": "approved"}), (10, {"call": "done"}), (11, {"call": "done", "turn": 2})):
        with store.transaction() as tx:
            tx.checkpoints.save_whole(f"i:ckpt:{seq:06d}", "i", "s", state)
    latest = store.checkpoints.latest("i")
    assert latest == ("i:ckpt:000011", {"call": "done", "turn": 2})


def test_latest_checkpoint_orders_numerically_past_the_padding(store: Store) -> None:
    with store.transaction() as tx:
        tx.requests.create(NewRequest(hitl_id="h", hitl_type="tool_approval", session_id="s", invocation_id="i"))
        tx.checkpoints.save_whole("i:ckpt:999999", "i", "s", {"n": 999_999})
        tx.checkpoints.save_whole("i:ckpt:1000000", "i", "s", {"n": 1_000_000})
    assert store.checkpoints.latest("i") == ("i:ckpt:1000000", {"n": 1_000_000})
