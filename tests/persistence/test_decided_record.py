"""A decision gate reads the pending request, then decides it without reading the row back: the record it returns
is exactly what the store now holds, on SQLite and PostgreSQL, and a stale read still loses the compare-and-set."""

from __future__ import annotations

from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLConflict, HITLStatus
from reviewer_app.domain.records import NewRequest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import Store

ARGS = {"path": "notes/é.txt", "content": "x\n" * 30, "n": [1, 2.5, None]}


def _request(hitl_id: str) -> NewRequest:
    return NewRequest(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s1",
        invocation_id="i1",
        data={"arguments": ARGS, "schema": {"type": "object"}},
        metadata={"agent": "a"},
        tool_name="write_file",
        tool_call_id="c1",
    )


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "decision",
    [
        Decision(DecisionKind.APPROVE, args_sha256=args_digest(ARGS)),
        Decision(DecisionKind.REJECT, message="not that file"),
    ],
)
async def test_the_decided_record_is_what_the_store_holds(any_db: str, decision: Decision) -> None:
    async with SQLHITLBackend(any_db, reviewer="alice") as backend:
        await backend.write(lambda tx: tx.requests.create(_request("h1")))
        decided = await backend.decide("h1", decision)
        stored = await backend.run(backend.store.requests.get, "h1")
        assert decided == stored
        assert decided["status"] == HITLStatus.COMPLETED.value
        assert decided["user_response"]["decision"] == decision.kind.value
        assert (await backend.verify_audit()).ok


@pytest.mark.asyncio
async def test_a_bare_protocol_answer_comes_back_as_stored(any_db: str) -> None:
    async with SQLHITLBackend(any_db, reviewer="alice") as backend:
        await backend.write(lambda tx: tx.requests.create(_request("h2")))
        await backend.respond("h2", {"answer": ("tuples", "become", "lists"), "n": 1})
        stored = await backend.run(backend.store.requests.get, "h2")
        assert stored is not None and stored["user_response"] == {"answer": ["tuples", "become", "lists"], "n": 1}


def test_a_stale_pending_record_still_loses_the_compare_and_set(any_db: str) -> None:
    store = Store.open(any_db)
    try:
        with store.transaction() as tx:
            tx.requests.create(_request("h3"))
        stale: Any = store.requests.get("h3")
        with store.transaction() as tx:
            tx.requests.decide("h3", {"decision": "reject"}, reviewer="bob")
        with pytest.raises(HITLConflict, match="already"), store.transaction() as tx:
            tx.requests.decide("h3", {"decision": "approve"}, reviewer="alice", current=stale)
        decided = store.requests.get("h3")
        assert decided is not None and decided["user_response"] == {"decision": "reject"}
    finally:
        store.close()
