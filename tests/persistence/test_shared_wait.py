"""Many agents waiting in one process cost one look-up per change, not one per waiter (issue 29, item 7:
200 agent tasks on one server): ``wait_for_response`` asks for every waiter's request in one query."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.hitl import HITLNotFound
from reviewer_app.hitl import SQLHITLBackend

WAITERS = 40


def _count_request_reads(backend: SQLHITLBackend) -> list[str]:
    """Every read of a request's state the backend makes from now on (the real store methods, counted)."""
    seen: list[str] = []
    backend.store.requests = _CountingReads(backend.store.requests, seen)  # type: ignore[misc]
    return seen


class _CountingReads:
    """The store's requests aggregate, counting the reads of a request's state."""

    def __init__(self, inner: Any, seen: list[str]) -> None:
        self._inner = inner
        self._seen = seen

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name not in ("get", "decided_among"):
            return real

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._seen.append("get_request" if name == "get" else name)
            return real(*args, **kwargs)

        return counted


@pytest.mark.asyncio
async def test_forty_waiters_woken_by_one_decision_share_one_look_up(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    agents = SQLHITLBackend(db, reviewer="agent")
    reviewer = SQLHITLBackend(db, reviewer="erin")
    try:
        ids = [f"h{i}" for i in range(WAITERS)]
        for hitl_id in ids:
            await agents.create(
                hitl_id=hitl_id, hitl_type="tool_approval", session_id="s", invocation_id="i", data={}, tool_name="t"
            )
        waits = [asyncio.ensure_future(agents.wait_for_response(hitl_id, timeout=30)) for hitl_id in ids]
        await asyncio.sleep(0.3)  # every waiter has looked once and waits on the feed
        reads = _count_request_reads(agents)
        await reviewer.decide("h7", Decision(DecisionKind.REJECT, message="no"))
        record = await asyncio.wait_for(waits[7], 10)
        assert record["status"] == "completed" and record["hitl_id"] == "h7"
        await asyncio.sleep(0.2)
        assert not any(w.done() for i, w in enumerate(waits) if i != 7)  # the others still wait
        assert len(reads) <= 6, f"{len(reads)} reads of hitl_requests for one decision and {WAITERS} waiters"
        for hitl_id in ids:
            if hitl_id != "h7":
                await reviewer.decide(hitl_id, Decision(DecisionKind.REJECT, message="no"))
        done = await asyncio.wait_for(asyncio.gather(*waits), 20)
        assert sorted(r["hitl_id"] for r in done) == sorted(ids)
        with pytest.raises(HITLNotFound):
            await agents.wait_for_response("nope", timeout=1)
    finally:
        await agents.aclose()
        await reviewer.aclose()


@pytest.mark.asyncio
async def test_a_waiter_is_refused_a_decision_no_audit_row_signed(tmp_path: Path) -> None:
    """The shared look-up checks what it hands out against the audit chain, as each waiter's own read did."""
    import sqlite3

    from reviewer_app.domain.hitl import DecisionNotOnRecord

    db = tmp_path / "r.db"
    agents = SQLHITLBackend(db, reviewer="agent")
    try:
        await agents.create(
            hitl_id="h1", hitl_type="tool_approval", session_id="s", invocation_id="i", data={}, tool_name="t"
        )
        waiting = asyncio.ensure_future(agents.wait_for_response("h1", timeout=30))
        await asyncio.sleep(0.3)
        with sqlite3.connect(db) as forger:  # "decided" straight in the table: no audit row signs it
            forger.execute(
                "UPDATE hitl_requests SET status = 'completed', decision = 'approve', decided_by = 'mallory',"
                " user_response = '{\"decision\": \"approve\"}' WHERE hitl_id = 'h1'"
            )
        with pytest.raises(DecisionNotOnRecord):
            await asyncio.wait_for(waiting, 10)
    finally:
        await agents.aclose()


@pytest.mark.asyncio
async def test_a_decision_reaches_its_waiter_while_the_process_is_busy_writing(any_db: str) -> None:
    """The look-up that wakes waiting agents runs on its own database thread: 50 agents of one process queued their
    creates ahead of it, and a decision reached its agent seconds after its commit (the team bench's p99)."""
    agents = SQLHITLBackend(any_db, reviewer="agent")
    reviewer = SQLHITLBackend(any_db, reviewer="erin")
    try:
        await agents.create(
            hitl_id="h1", hitl_type="tool_approval", session_id="s", invocation_id="i", data={}, tool_name="t"
        )
        waiting = asyncio.ensure_future(agents.wait_for_response("h1", timeout=30))
        await asyncio.sleep(0.3)  # it has looked once and waits on the feed
        busy = asyncio.ensure_future(agents.run(time.sleep, 3.0))  # the process's writes and reads thread, taken
        await asyncio.sleep(0.1)
        decided = time.monotonic()
        await reviewer.decide("h1", Decision(DecisionKind.REJECT, message="no"))
        record = await asyncio.wait_for(waiting, 10)
        assert record["status"] == "completed" and time.monotonic() - decided < 2.0
        assert not busy.done()  # woken while the other thread was still taken
        await busy
    finally:
        await agents.aclose()
        await reviewer.aclose()


@pytest.mark.asyncio
async def test_an_in_memory_database_keeps_its_look_ups_on_its_one_connection() -> None:
    """An in-memory SQLite database is one connection shared by every thread: its waits are served all the same."""
    backend = SQLHITLBackend("sqlite://", reviewer="erin")
    try:
        await backend.create(
            hitl_id="h1", hitl_type="tool_approval", session_id="s", invocation_id="i", data={}, tool_name="t"
        )
        waiting = asyncio.ensure_future(backend.wait_for_response("h1", timeout=30))
        await asyncio.sleep(0.2)
        await backend.decide("h1", Decision(DecisionKind.REJECT, message="no"))
        assert (await asyncio.wait_for(waiting, 10))["status"] == "completed"
        assert backend._lookup_thread is None
    finally:
        await backend.aclose()


@pytest.mark.asyncio
async def test_decisions_on_an_in_memory_database_are_kept_and_wake_their_waiters() -> None:
    """Its one connection is shared by every thread: a change probe on another thread once rolled back the database
    thread's open transaction, so a decision could vanish and its waiter wait forever (about one round in eight)."""
    for round_ in range(30):
        backend = SQLHITLBackend("sqlite://", reviewer="erin")
        try:
            await backend.create(
                hitl_id="h1", hitl_type="tool_approval", session_id="s", invocation_id="i", data={}, tool_name="t"
            )
            waiting = asyncio.ensure_future(backend.wait_for_response("h1", timeout=30))
            await asyncio.sleep(0.2 if round_ % 2 else 0)
            await backend.decide("h1", Decision(DecisionKind.REJECT, message="no"))
            assert (await asyncio.wait_for(waiting, 10))["status"] == "completed", f"round {round_}"
        finally:
            await backend.aclose()
