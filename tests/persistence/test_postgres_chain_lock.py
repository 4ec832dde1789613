"""PostgreSQL: reviewers deciding at once never deadlock on the audit chain's meta rows.

Each decision locks the chain's meta rows (``SELECT … FOR UPDATE``). Locked in the order a scan meets them, two
transactions could take them in different orders once the head row had moved (every decision rewrites it), and
the server killed one as a deadlock: 20 reviewer processes met it within a thousand decisions
(``bench/postgres_scale.py``). Locked in key order, every transaction queues on the same first row.
"""

from __future__ import annotations

import random
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from reviewer_app.domain.hitl import HITLConflict
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.store import Store

REQUESTS = 240
REVIEWERS = 12


@pytest.mark.slow
@pytest.mark.postgres
def test_many_reviewers_deciding_in_random_order_never_deadlock(pg_url: str) -> None:
    store = Store.open(pg_url)
    try:
        with store.transaction() as tx:
            for n in range(REQUESTS):
                tx.requests.create(
                    NewRequest(f"r{n}", "tool_approval", "s", "i", data={"arguments": {"n": n}}, tool_name="t")
                )
        start = threading.Barrier(REVIEWERS)
        login = store.database_login() or "postgres"

        def reviewer(index: int) -> int:
            order = list(range(REQUESTS))
            random.Random(index).shuffle(order)
            start.wait()
            won = 0
            for n in order:
                try:
                    with store.transaction() as tx:
                        tx.requests.decide(f"r{n}", {"decision": "approve"}, reviewer=f"{login} (t{index})")
                    won += 1
                except HITLConflict:
                    pass
            return won

        with ThreadPoolExecutor(REVIEWERS) as pool:
            won = list(pool.map(reviewer, range(REVIEWERS)))  # a deadlock raises here (OperationalError)
        assert sum(won) == REQUESTS
        assert store.audit.verify().ok
    finally:
        store.close()
