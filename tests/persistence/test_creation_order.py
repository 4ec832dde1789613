"""Requests created together (one model turn: one transaction, one millisecond) list in the order they were made."""

from __future__ import annotations

import threading
from pathlib import Path

from reviewer_app.domain.records import NewRequest, RequestQuery
from reviewer_app.persistence.store import Store
from reviewer_app.persistence.store.records import CreationClock


def request(n: int, hitl_id: str) -> NewRequest:
    return NewRequest(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s1",
        invocation_id="i1",
        data={"arguments": {"command": f"echo {n}"}},
        metadata={},
        tool_name="run_shell",
    )


def test_one_transactions_requests_list_in_creation_order_whatever_their_ids(db_path: Path) -> None:
    store = Store.open(db_path)
    try:
        # Ids chosen to sort against creation order: a tie on the stamp would show them reversed.
        ids = [f"hitl_{chr(ord('z') - n)}" for n in range(20)]
        with store.transaction() as tx:
            for n, hitl_id in enumerate(ids):
                tx.requests.create(request(n, hitl_id))
        listed = store.requests.summaries(RequestQuery())
        assert [s.hitl_id for s in listed] == ids
        stamps = [s.updated_at_ms for s in listed]
        assert stamps == sorted(set(stamps))  # distinct and increasing
        assert all(s.created_at == s.updated_at_ms // 1000 for s in listed)
    finally:
        store.close()


def test_the_creation_clock_never_repeats_across_threads() -> None:
    clock = CreationClock()
    seen: list[int] = []
    lock = threading.Lock()

    def take() -> None:
        stamps = [clock.next_ms() for _ in range(2000)]
        with lock:
            seen.extend(stamps)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seen)) == len(seen) == 8000
