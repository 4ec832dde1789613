"""Waiting agents on PostgreSQL are woken by the decision that names their request (issue 29, item 7: 20 reviewers
and 200 agents on one server).

Each decision's ``NOTIFY`` names the decided request, so a process looks up only its waiters that a decision named,
not all of them after every commit anywhere. The name is a hint only: anyone connected may send a notification
with any payload, so the waiter always reads the committed row itself. A notification is lost while the listener
is disconnected; after it listens again every waiter is looked up.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg
import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.records import NewRequest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.engine import CHANGES_CHANNEL
from reviewer_app.persistence.pg_notify import PostgresChangeFeed
from reviewer_app.persistence.store import Store
from tests.pg_server import PgServer

pytestmark = pytest.mark.postgres


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://")


class _AskedIds:
    """The store's audit reads, recording the ids each ``signed_decided_among`` look-up asks for."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.asked: list[list[str]] = []
        self.threads: list[str] = []  # the thread each look-up ran on
        self.fail_on: str | None = None  # a thread whose next look-up fails (as one whose connection dropped)
        self.answered: list[tuple[float, list[str]]] = []  # each look-up read: when it began, the ids it asked

    def forget(self) -> None:
        """Drop what was recorded so far: the assertions that follow see only the look-ups made after this."""
        self.asked.clear()
        self.threads.clear()
        self.answered.clear()

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._inner, name)
        if name != "signed_decided_among":
            return real

        def recorded(hitl_ids: Any) -> Any:
            thread, began = threading.current_thread().name, time.monotonic()
            self.asked.append(sorted(hitl_ids))
            self.threads.append(thread)
            if thread == self.fail_on:
                self.fail_on = None
                raise psycopg.OperationalError("the connection dropped")
            found = real(hitl_ids)
            self.answered.append((began, sorted(hitl_ids)))
            return found

        return recorded


def _record_look_ups(backend: SQLHITLBackend) -> _AskedIds:
    asked = _AskedIds(backend.store.audit)
    backend.store.audit = asked  # type: ignore[assignment]
    return asked


async def _all_waiting_on_the_feed(backend: SQLHITLBackend, asked: _AskedIds, waiters: int) -> None:
    """Until ``backend``'s ``waiters`` wait on the feed alone: each has been looked up once, its listener listens
    and the look-up of every waiter it asks for once it does (commits made before LISTEN took effect were not heard)
    has been read; then ``asked`` forgets the look-ups so far. ``asked`` records from before the waits began. Under
    load that look-up comes well after the listener connects (a fixed half-second was once too short for it)."""
    lookups = backend._decided_lookups

    def settled() -> bool:
        everyone_at = lookups._everyone_at  # when the look-up of every waiter was last due, 0.0 before any
        return (
            getattr(backend.feed, "listener_pid", None) is not None
            and everyone_at > 0
            and any(began >= everyone_at for began, _ids in asked.answered)  # the look-ups are made one at a time
            and len({hitl_id for _began, ids in asked.answered for hitl_id in ids}) == waiters
        )

    await _until(settled)
    asked.forget()


async def _create(backend: SQLHITLBackend, *ids: str) -> None:
    for hitl_id in ids:
        await backend.create(
            hitl_id=hitl_id, hitl_type="tool_approval", session_id="s", invocation_id="i", data={}, tool_name="t"
        )


async def _until(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.01)


def _reject(message: str = "no") -> Decision:
    return Decision(DecisionKind.REJECT, message=message)


def test_a_decision_names_its_request_in_its_notify(pg_url: str) -> None:
    store = Store.open(pg_url)
    try:
        with store.transaction() as tx:
            tx.requests.create(NewRequest(hitl_id="h1", hitl_type="ask_user", session_id="s", invocation_id="i"))
            tx.requests.create(NewRequest(hitl_id="h2", hitl_type="ask_user", session_id="s", invocation_id="i"))
        with psycopg.connect(_libpq(pg_url), autocommit=True) as listener:
            listener.execute(f"LISTEN {CHANGES_CHANNEL}")
            with pytest.raises(RuntimeError), store.transaction() as tx:
                tx.requests.decide("h2", {"decision": "reject"}, reviewer="erin")
                raise RuntimeError("roll the decision back")
            assert list(listener.notifies(timeout=0.3)) == []  # nothing named before the commit, nothing after it
            with store.transaction() as tx:
                tx.requests.decide("h1", {"decision": "reject"}, reviewer="erin")
            payloads = {notice.payload for notice in listener.notifies(timeout=2)}
            assert payloads == {"changed", "decided:h1"}  # a writer that names its decisions, and its decision
    finally:
        store.close()


@pytest.mark.asyncio
async def test_commits_that_decide_none_of_a_process_waiters_cost_it_no_look_up(pg_url: str) -> None:
    agents = SQLHITLBackend(pg_url, reviewer="agent")
    others = SQLHITLBackend(pg_url, reviewer="erin")
    try:
        ids = [f"h{i}" for i in range(40)]
        await _create(agents, *ids)
        await _create(others, "elsewhere-1", "elsewhere-2")
        agents._decided_lookups.fallback_interval = 0.1  # not even the fallback: these writers name their decisions
        asked = _record_look_ups(agents)
        waits = {h: asyncio.ensure_future(agents.wait_for_response(h, timeout=60)) for h in ids}
        await _all_waiting_on_the_feed(agents, asked, len(ids))  # each looked once, and all again once it listened
        for i in range(10):  # ten commits by another process, longer apart than the fallback interval
            await _create(others, f"new-{i}")
            await asyncio.sleep(0.15)
        await others.decide("elsewhere-1", _reject())  # a decision, of a request nobody here waits for
        await others.decide("h7", _reject())
        record = await asyncio.wait_for(waits["h7"], 10)
        assert record["status"] == "completed" and record["hitl_id"] == "h7"
        await asyncio.sleep(0.3)
        everyone = [look for look in asked.asked if len(look) > 1]
        assert everyone == [], f"{len(everyone)} look-ups of every waiter for commits that named none of them"
        assert ["h7"] in asked.asked
        assert not any(wait.done() for hitl_id, wait in waits.items() if hitl_id != "h7")
        for wait in waits.values():
            wait.cancel()
    finally:
        await agents.aclose()
        await others.aclose()


@pytest.mark.asyncio
async def test_a_forged_notification_resolves_no_waiter_with_what_is_not_committed(pg_url: str) -> None:
    """The payload only says which row to read again: a forged name (of a waiter still pending, of a decision not
    committed) or garbage wakes nobody with anything but the committed row."""
    agents = SQLHITLBackend(pg_url, reviewer="agent")
    reviewer = SQLHITLBackend(pg_url, reviewer="erin")
    try:
        await _create(agents, "h1", "h2")
        asked = _record_look_ups(agents)
        waits = {h: asyncio.ensure_future(agents.wait_for_response(h, timeout=60)) for h in ("h1", "h2")}
        await _all_waiting_on_the_feed(agents, asked, 2)
        forged = ("decided:h1", "decided:h1,h2", "decided:", "decided: h1", "h1", "decided:h1\n", "\\x00", "é" * 2000)
        with (
            psycopg.connect(_libpq(pg_url), autocommit=True) as forger,
            psycopg.connect(_libpq(pg_url)) as uncommitted,  # a decision written but never committed
        ):
            uncommitted.execute(
                "UPDATE hitl_requests SET status = 'completed', decision = 'approve', decided_by = session_user,"
                " user_response = '{\"decision\": \"approve\"}' WHERE hitl_id = 'h1'"
            )
            for payload in forged:
                forger.execute("SELECT pg_notify(%s, %s)", (CHANGES_CHANNEL, payload))
            await _until(lambda: any("h1" in look for look in asked.asked))  # the forged name was read again ...
            await asyncio.sleep(0.5)
            assert not waits["h1"].done() and not waits["h2"].done()  # ... and found pending
            uncommitted.rollback()
        await reviewer.decide("h1", _reject("the real one"))
        record = await asyncio.wait_for(waits["h1"], 10)
        assert record["user_response"]["message"] == "the real one"
        assert not waits["h2"].done()
        waits["h2"].cancel()
    finally:
        await agents.aclose()
        await reviewer.aclose()


@pytest.mark.asyncio
async def test_a_named_decision_is_looked_up_on_the_listener_thread(pg_url: str) -> None:
    """The thread that received the NOTIFY reads the named request itself and hands the record to the loop: one
    hand-over between threads instead of three (listener -> loop -> look-up thread -> loop), each of which cost tens
    of milliseconds, at worst hundreds, on a loaded machine."""
    agents = SQLHITLBackend(pg_url, reviewer="agent")
    reviewer = SQLHITLBackend(pg_url, reviewer="erin")
    try:
        await _create(agents, "h1", "h2")
        asked = _record_look_ups(agents)
        waits = {h: asyncio.ensure_future(agents.wait_for_response(h, timeout=60)) for h in ("h1", "h2")}
        await _all_waiting_on_the_feed(agents, asked, 2)
        await reviewer.decide("h1", _reject("read by the listener"))
        record = await asyncio.wait_for(waits["h1"], 10)
        assert record["user_response"]["message"] == "read by the listener"
        assert list(zip(asked.threads, asked.asked, strict=True)) == [("reviewer-pg-listen", ["h1"])]
        assert not waits["h2"].done()
        waits["h2"].cancel()
    finally:
        await agents.aclose()
        await reviewer.aclose()


@pytest.mark.asyncio
async def test_a_look_up_that_fails_on_the_listener_thread_is_made_again_by_the_look_up_thread(pg_url: str) -> None:
    """The listener tries once (it must go back to listening); a failed look-up leaves the name to the loop's
    look-up, which retries."""
    agents = SQLHITLBackend(pg_url, reviewer="agent")
    reviewer = SQLHITLBackend(pg_url, reviewer="erin")
    try:
        await _create(agents, "h1")
        asked = _record_look_ups(agents)
        waiting = asyncio.ensure_future(agents.wait_for_response("h1", timeout=60))
        await _all_waiting_on_the_feed(agents, asked, 1)
        asked.fail_on = "reviewer-pg-listen"
        await reviewer.decide("h1", _reject("found all the same"))
        record = await asyncio.wait_for(waiting, 10)
        assert record["user_response"]["message"] == "found all the same"
        assert asked.threads[0] == "reviewer-pg-listen" and asked.fail_on is None  # it was tried there, and failed
        assert "reviewer-db-lookup" in asked.threads
    finally:
        await agents.aclose()
        await reviewer.aclose()


@pytest.mark.asyncio
async def test_a_burst_of_decisions_resolves_every_waiter_once_in_few_look_ups(pg_url: str) -> None:
    agents = SQLHITLBackend(pg_url, reviewer="agent")
    reviewers = [SQLHITLBackend(pg_url, reviewer=f"r{i}") for i in range(4)]
    try:
        ids = [f"b{i:03d}" for i in range(200)]
        await _create(agents, *ids)
        asked = _record_look_ups(agents)
        waits = {h: asyncio.ensure_future(agents.wait_for_response(h, timeout=60)) for h in ids}
        await _all_waiting_on_the_feed(agents, asked, len(ids))
        # 150 decisions from four processes at once, and 50 more committed in one transaction.
        await asyncio.gather(
            *(reviewers[i % 4].decide(h, _reject(f"by r{i % 4}")) for i, h in enumerate(ids[:150])),
            reviewers[0].write(
                lambda tx: [tx.requests.decide(h, {"decision": "reject"}, reviewer="r0") for h in ids[150:]]
            ),
        )
        done = await asyncio.wait_for(asyncio.gather(*waits.values()), 30)
        assert sorted(str(r["hitl_id"]) for r in done) == ids
        for i, (hitl_id, record) in enumerate(zip(waits, done, strict=True)):
            assert record["hitl_id"] == hitl_id and record["status"] == "completed"
            expected = f"by r{i % 4}" if i < 150 else None
            assert (record["user_response"] or {}).get("message") == expected
        looked_up = [h for look in asked.asked for h in look]
        assert set(looked_up) == set(ids) and len(asked.asked) <= len(ids)
        in_one = max(len(set(look) & set(ids[150:])) for look in asked.asked)
        assert in_one >= 10, f"the 50 names of one commit were looked up {in_one} at most at a time: not batched"
    finally:
        await agents.aclose()
        for backend in reviewers:
            await backend.aclose()


@pytest.mark.asyncio
async def test_a_decision_made_while_the_server_restarted_reaches_its_waiter(
    pg_url: str, postgres_server: PgServer
) -> None:
    """A notification sent while the listener is disconnected is lost: after it listens again, every waiter is
    read again. The listener's back-off makes it listen again after the decision commits."""
    agents = SQLHITLBackend(pg_url, reviewer="agent")
    try:
        await _create(agents, "h1", "h2")
        feed = agents.feed
        assert isinstance(feed, PostgresChangeFeed)
        feed.max_retry_delay = 3.0
        agents._decided_lookups.fallback_interval = 3600  # only listening again can bring the decision
        waits = {h: asyncio.ensure_future(agents.wait_for_response(h, timeout=90)) for h in ("h1", "h2")}
        await _until(lambda: feed.listener_pid is not None)
        await asyncio.sleep(0.3)
        connects = feed.connects
        postgres_server.pause()
        await asyncio.sleep(2.0)  # the listener backs off while the server is down
        await asyncio.to_thread(postgres_server.resume)
        with psycopg.connect(_libpq(pg_url), autocommit=True) as raw:  # the decision, straight after the restart
            decider = Store.open(pg_url)
            try:
                await asyncio.to_thread(_decide_in_store, decider, "h1")
            finally:
                decider.close()
            listening = raw.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'LISTEN%%' AND datname = current_database()"
            ).fetchone()
        assert listening is not None and listening[0] == 0, "the listener was back before the decision: no test"
        record = await asyncio.wait_for(waits["h1"], 30)
        assert record["status"] == "completed" and feed.connects > connects
        assert not waits["h2"].done()
        waits["h2"].cancel()
    finally:
        await agents.aclose()


def _decide_in_store(store: Store, hitl_id: str) -> None:
    with store.transaction() as tx:
        tx.requests.decide(hitl_id, {"decision": "reject", "message": "while you were away"}, reviewer="erin")


def _count_round_trips(engine: Any) -> tuple[list[int], list[str], Any]:
    """Checkouts from the pool and statements sent, recorded on ``engine`` until the returned function is called."""
    from sqlalchemy import event

    checkouts: list[int] = []
    statements: list[str] = []
    on_checkout = lambda *_: checkouts.append(1)  # noqa: E731
    on_execute = lambda _conn, _cursor, statement, *_: statements.append(statement)  # noqa: E731
    event.listen(engine, "checkout", on_checkout)
    event.listen(engine, "before_cursor_execute", on_execute)

    def stop() -> None:
        event.remove(engine, "checkout", on_checkout)
        event.remove(engine, "before_cursor_execute", on_execute)

    return checkouts, statements, stop


@pytest.mark.asyncio
async def test_a_look_up_is_one_statement_on_a_kept_connection(pg_url: str) -> None:
    """A look-up used to cost four round trips (the pool's liveness ping, the requests, the chain's meta rows, the
    audit rows), each tens of milliseconds on a loaded server: now one statement reads the decided requests with
    their audit rows and the chain's meta, on a connection kept for look-ups (no checkout, so no ping)."""
    agents = SQLHITLBackend(pg_url, reviewer="agent")
    try:
        await _create(agents, "h1", "h2", "h3")
        await agents.decide("h1", _reject())
        await agents.decide("h3", Decision(DecisionKind.STEER, message="try again"))
        await agents.signed_decided_among(["h2"])  # the kept connection is opened
        checkouts, statements, stop = _count_round_trips(agents.store.engines.reader)
        try:
            records, problems = await agents.signed_decided_among(["h1", "h2", "h3", "nobody"])
        finally:
            stop()
        assert sorted(r["hitl_id"] for r in records) == ["h1", "h3"] and problems == {}
        assert {r["hitl_id"]: r["user_response"]["decision"] for r in records} == {"h1": "reject", "h3": "steer"}
        assert checkouts == [] and len(statements) == 1, statements
    finally:
        await agents.aclose()


@pytest.mark.asyncio
async def test_a_look_up_survives_the_server_dropping_its_kept_connection(pg_url: str) -> None:
    agents = SQLHITLBackend(pg_url, reviewer="agent")
    try:
        await _create(agents, "h1")
        await agents.signed_decided_among(["h1"])
        await agents.decide("h1", _reject("after the drop"))
        with psycopg.connect(_libpq(pg_url), autocommit=True) as admin:  # every other connection of the database
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        records, problems = await agents.signed_decided_among(["h1"])
        assert [r["user_response"]["message"] for r in records] == ["after the drop"] and problems == {}
    finally:
        await agents.aclose()


@pytest.mark.asyncio
async def test_a_decision_rewritten_with_its_audit_row_is_refused_by_a_waiter_with_the_key(pg_url: str) -> None:
    """The one-statement look-up reads the chain's key id with the rows: a process holding the audit key checks each
    audit row's keyed hash, so a request and its audit row rewritten alike (without the key) are refused."""
    from reviewer_app.domain.hitl import DecisionNotOnRecord

    agents = SQLHITLBackend(pg_url, reviewer="agent")
    try:
        await _create(agents, "h1", "h2")
        await agents.decide("h1", _reject("no"))
        await agents.decide("h2", _reject("no"))
        with psycopg.connect(_libpq(pg_url), autocommit=True) as writer:
            writer.execute("SET session_replication_role = replica")  # past the log's append-only triggers
            writer.execute(
                "UPDATE hitl_requests SET user_response = jsonb_set(user_response::jsonb, '{message}', '\"yes\"')"
                "::json WHERE hitl_id = 'h1'"
            )
            writer.execute("UPDATE audit_log SET message = 'yes' WHERE hitl_id = 'h1'")
        records, problems = await agents.signed_decided_among(["h1", "h2"])
        assert sorted(r["hitl_id"] for r in records) == ["h1", "h2"]
        assert list(problems) == ["h1"], problems
        with pytest.raises(DecisionNotOnRecord):
            await agents.wait_for_response("h1", timeout=10)
        assert (await agents.wait_for_response("h2", timeout=10))["user_response"]["message"] == "no"
    finally:
        await agents.aclose()


@pytest.mark.asyncio
async def test_a_decision_that_names_nothing_is_found_by_the_fallback(pg_url: str) -> None:
    """A writer that names no decision (an older version, a hand-made UPDATE): its commit's plain notification
    has every waiter looked up within the fallback interval. This one is refused: no audit row signs it."""
    from reviewer_app.domain.hitl import DecisionNotOnRecord

    agents = SQLHITLBackend(pg_url, reviewer="agent")
    try:
        await _create(agents, "h1")
        agents._decided_lookups.fallback_interval = 0.5
        waiting = asyncio.ensure_future(agents.wait_for_response("h1", timeout=60))
        await asyncio.sleep(0.5)
        with psycopg.connect(_libpq(pg_url)) as writer:
            writer.execute(
                "UPDATE hitl_requests SET status = 'completed', decision = 'approve', decided_by = session_user,"
                " user_response = '{\"decision\": \"approve\"}' WHERE hitl_id = 'h1'"
            )
            writer.execute(f"NOTIFY {CHANGES_CHANNEL}")
        with pytest.raises(DecisionNotOnRecord):
            await asyncio.wait_for(waiting, 10)
    finally:
        await agents.aclose()


def test_a_look_up_opens_no_transaction_on_the_server(pg_url: str) -> None:
    """Reads that share a connection autocommit on PostgreSQL: no BEGIN before them and no ROLLBACK after them, two
    round trips fewer for a waiting agent (each read still sees what was committed when it ran)."""
    from psycopg.pq import TransactionStatus

    store = Store.open(pg_url)
    try:
        with store.transaction() as tx:
            tx.requests.create(NewRequest(hitl_id="h1", hitl_type="ask_user", session_id="s", invocation_id="i"))
            tx.requests.decide("h1", {"decision": "reject"}, reviewer="erin")
        seen: list[Any] = []
        with store.sharing_one_connection():
            records, problems = store.audit.signed_decided_among(["h1"])
            with store._reader.reading() as connection:
                driver = connection.connection.driver_connection
                seen.append(driver.info.transaction_status)
        assert [r["hitl_id"] for r in records] == ["h1"] and problems == {}
        assert seen == [TransactionStatus.IDLE]
        with store._reader.reading() as connection:  # every other read: a pooled connection, in a transaction
            other = connection.connection.driver_connection
            assert other is not driver and other.autocommit is False
    finally:
        store.close()
