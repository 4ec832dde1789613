"""The store is one object per aggregate, read on the store and written in a transaction (issue 28).

A transaction's aggregates share its connection: what one writes, the others (and its own lookups) read before
the commit, while the store's readers see it only after.
"""

from __future__ import annotations

from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.waivers import SessionRule
from reviewer_app.persistence.store import Store, StoreTx

READ_SIDE = ("requests", "runs", "checkpoints", "timeline", "audit", "rules", "waivers", "history", "stats")
WRITE_SIDE = ("requests", "runs", "checkpoints", "timeline", "audit", "rules", "waivers", "blobs")


def _request(hitl_id: str, session_id: str = "s") -> NewRequest:
    return NewRequest(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id=session_id,
        invocation_id=f"run-{session_id}",
        tool_name="Read",
        data={"arguments": {"path": "x"}},
    )


def test_store_and_transaction_are_put_together_from_aggregates_not_mixins(store: Store) -> None:
    assert Store.__mro__ == (Store, object)
    assert StoreTx.__mro__ == (StoreTx, object)
    assert len({id(getattr(store, name)) for name in READ_SIDE}) == len(READ_SIDE)
    with store.transaction() as tx:
        aggregates = [getattr(tx, name) for name in WRITE_SIDE]
        assert len({id(a) for a in aggregates}) == len(WRITE_SIDE)
        assert all(getattr(tx, name) is a for name, a in zip(WRITE_SIDE, aggregates, strict=True))  # one each


def test_a_transactions_lookups_see_its_own_writes_and_the_store_only_after_commit(store: Store) -> None:
    rule = SessionRule("Read")
    with store.transaction() as tx:
        tx.requests.create(_request("h1", "s1"))
        tx.requests.create(_request("h2", "s2"))
        assert tx.waivers.add("s1", rule, created_by="ann", hitl_id="h1")
        assert [r["hitl_id"] for r in tx.requests.pending(session_id="s1")] == ["h1"]
        assert tx.requests.get("h2") is not None
        assert tx.waivers.of_session("s1") == [rule]
        assert store.requests.get("h1") is None  # not committed yet
        assert store.waivers.of_session("s1") == []
    assert [r["hitl_id"] for r in store.requests.pending(session_id="s1")] == ["h1"]
    assert store.waivers.of_session("s1") == [rule]


def test_a_decision_written_through_requests_is_on_the_audit_chain(store: Store) -> None:
    with store.transaction() as tx:
        tx.requests.create(_request("h1"))
        decided = tx.requests.decide("h1", {"decision": "reject"}, reviewer="ann")
    assert decided["status"] == "completed"
    assert [e.hitl_id for e in store.audit.entries()] == ["h1"]
    assert store.audit.count() == 1
    assert store.audit.verify().ok
