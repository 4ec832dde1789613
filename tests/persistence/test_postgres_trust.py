"""Trust on PostgreSQL: a committed cancel is never undone, and the recorded reviewer is the database login.

Each test was written against the attack first and seen failing (issue 12, items 5 and 6).
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.runs import RunState, RunStateConflict
from reviewer_app.persistence.store import Store

ROUNDS = 50


def _commit_step(
    store: Store, invocation_id: str, hitl_id: str, read: threading.Event, cancelled: threading.Event
) -> str:
    """What the runtime's step commit does: read the run, then move it to waiting with a new request."""
    with store.transaction() as tx:
        current = tx.run_state_and_owner(invocation_id)
        assert current is not None
        read.set()
        # Give a concurrent cancel the chance to commit between this read and the write below. With the row
        # lock it cannot (it waits for this transaction), so the wait simply runs out.
        cancelled.wait(0.1)
        if current[0].finished:
            return "stopped"
        tx.set_run_state(invocation_id, RunState.WAITING, current=current[0])
        tx.create_request(
            NewRequest(hitl_id=hitl_id, hitl_type="ask_user", session_id="s", invocation_id=invocation_id),
            ensure_parents=False,
        )
    return "committed"


def _cancel(store: Store, invocation_id: str) -> str:
    """What the runtime's cancel does: read the run, cancel its pending requests, mark it cancelled."""
    with store.transaction() as tx:
        current = tx.run_state_and_owner(invocation_id)
        assert current is not None
        if current[0].finished:
            return "already finished"
        for pending in tx.pending_records(invocation_id=invocation_id):
            tx.settle(pending["hitl_id"], None, status=HITLStatus.CANCELLED, reviewer="ann", decision="cancel")
        tx.set_run_state(invocation_id, RunState.CANCELLED, error="cancelled by ann")
    return "cancelled"


@pytest.mark.postgres
def test_a_committed_cancel_is_never_undone_by_a_concurrent_step(pg_url: str) -> None:
    store = Store.open(pg_url)
    try:
        outcomes = []
        for n in range(ROUNDS):
            invocation_id = f"i{n}"
            with store.transaction() as tx:
                tx.ensure_session("s")
                tx.ensure_invocation(invocation_id, "s")
            read, cancelled = threading.Event(), threading.Event()

            def cancel_after_read(
                inv: str = invocation_id, read: threading.Event = read, cancelled: threading.Event = cancelled
            ) -> str:
                read.wait()
                try:
                    return _cancel(store, inv)
                finally:
                    cancelled.set()

            with ThreadPoolExecutor(2) as pool:
                step = pool.submit(_commit_step, store, invocation_id, f"h{n}", read, cancelled)
                cancel = pool.submit(cancel_after_read)
                outcomes.append((step.result(), cancel.result()))  # neither raises
            run = store.get_run(invocation_id)
            assert run is not None
            assert run.state == RunState.CANCELLED.value, f"round {n}: the cancel was undone ({run.state})"
            assert run.pending == 0, f"round {n}: a request was left pending on a cancelled run"
        assert all(cancel == "cancelled" for _, cancel in outcomes)
    finally:
        store.close()


def test_a_run_update_is_conditional_on_the_state_read(any_db: str) -> None:
    """A writer whose read is stale gets a clear conflict, never a silent overwrite of the newer state."""
    store = Store.open(any_db)
    try:
        with store.transaction() as tx:
            tx.ensure_session("s")
            tx.ensure_invocation("i", "s")
            tx.set_run_state("i", RunState.CANCELLED)
        with pytest.raises(RunStateConflict, match="cancelled"), store.transaction() as tx:
            tx.set_run_state("i", RunState.WAITING, current=RunState.RUNNING)
        run = store.get_run("i")
        assert run is not None and run.state == RunState.CANCELLED.value
    finally:
        store.close()
