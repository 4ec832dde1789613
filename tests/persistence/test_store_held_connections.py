"""The store's held SQLite connections keep the pooled path's transaction semantics (see store._HeldConnection)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.shell_scopes import CommandScope
from reviewer_app.domain.waivers import SessionRule
from reviewer_app.persistence.store import Store


def _request(tx, hitl_id: str) -> None:
    tx.requests.create(
        NewRequest(
            hitl_id=hitl_id, hitl_type="tool_approval", session_id="s1", invocation_id="i1", data={"arguments": {}}
        )
    )


def test_a_failed_transaction_rolls_back_everything_and_the_next_one_commits(store: Store) -> None:
    with pytest.raises(RuntimeError, match="boom"), store.transaction() as tx:
        _request(tx, "h1")
        raise RuntimeError("boom")
    assert store.requests.get("h1") is None
    with store.transaction() as tx:
        _request(tx, "h2")
    assert store.requests.get("h2") is not None


def test_a_held_connection_that_was_invalidated_is_replaced_driver_and_all(store: Store) -> None:
    """A connection that could not even roll back is invalidated (its driver connection closed); the next
    transaction opens a new one, and its BEGIN and COMMIT run on the new driver connection, not the closed one."""
    with store.transaction() as tx:
        _request(tx, "h1")
    held = store._held_writer
    assert held is not None
    connection = held.acquire()
    assert connection is not None
    old_driver = held.driver
    connection.invalidate()
    held.release()
    with store.transaction() as tx:
        _request(tx, "h2")
    assert held.driver is not old_driver
    assert store.requests.get("h2") is not None


def test_sqlalchemy_statements_join_the_transaction_and_share_its_fate(store: Store) -> None:
    rule = SessionRule("run_shell", CommandScope.exact("git status"))
    with store.transaction() as tx:
        _request(tx, "h1")  # creates session s1
    with pytest.raises(RuntimeError, match="undo both"), store.transaction() as tx:
        assert tx.waivers.add("s1", rule, created_by="t", hitl_id="h1")  # goes through SQLAlchemy
        _request(tx, "h9")  # a prepared statement after it, on the same connection
        raise RuntimeError("undo both")
    assert store.waivers.of_session("s1") == []
    assert store.requests.get("h9") is None
    with store.transaction() as tx:
        assert tx.waivers.add("s1", rule, created_by="t", hitl_id="h1")
        assert tx.waivers.of_session("s1") == [rule]
    assert store.waivers.of_session("s1") == [rule]
    with store.transaction() as tx:  # and the connection is usable again afterwards
        _request(tx, "h2")
    assert store.requests.get("h2") is not None


def test_reads_inside_a_transaction_see_only_committed_rows(store: Store) -> None:
    with store.transaction() as tx:
        _request(tx, "h1")
        assert store.requests.get("h1") is None  # another connection, as before: uncommitted rows are not visible
        assert tx.requests.get("h1") is not None
    assert store.requests.get("h1") is not None


def test_a_writer_on_another_thread_waits_for_the_commit(store: Store) -> None:
    order: list[str] = []
    started = threading.Event()

    def other() -> None:
        started.set()
        with store.transaction() as tx:  # BEGIN IMMEDIATE: waits until the first transaction commits
            order.append("other begins")
            assert tx.requests.get("h1") is not None
            _request(tx, "h2")

    thread = threading.Thread(target=other)
    with store.transaction() as tx:
        _request(tx, "h1")
        thread.start()
        started.wait(5)
        time.sleep(0.2)
        order.append("first commits")
    thread.join(10)
    assert order == ["first commits", "other begins"]
    assert store.requests.get("h2") is not None


def test_close_releases_the_held_connections(db_path: Path) -> None:
    opened = Store.open(db_path)
    with opened.transaction() as tx:
        _request(tx, "h1")
    assert opened.requests.get("h1") is not None
    opened.close()
    reopened = Store.open(db_path)
    try:
        assert reopened.requests.get("h1") is not None
        with reopened.transaction() as tx:  # nothing from the closed store holds a lock
            _request(tx, "h2")
    finally:
        reopened.close()


def test_the_expiry_sweeps_check_compiles_its_statement_once(store: Store) -> None:
    """The sweep asks every few seconds: each ask once built a new statement, compiled it (milliseconds of the
    database thread) and kept it in the compiled-statement cache for good, which grew for as long as the app ran."""
    store.rules.expiries_to_audit(time.time())
    cached = len(store._prepared)
    for _ in range(20):
        assert not store.rules.expiries_to_audit(time.time())
    assert len(store._prepared) == cached


def test_rows_read_on_the_fast_path_equal_sqlalchemy_rows(store: Store) -> None:
    """The prepared read (driver values zipped with the columns, only JSON and boolean columns processed, JSON null
    read without the decoder) gives exactly the record SQLAlchemy's own read gives."""
    from sqlalchemy import select

    from reviewer_app.persistence.store.records import row_to_record
    from reviewer_app.persistence.tables import requests_t

    with store.transaction() as tx:
        tx.requests.create(
            NewRequest(
                hitl_id="pending",
                hitl_type="tool_approval",
                session_id="s1",
                invocation_id="i1",
                data={"arguments": {"text": "null", "n": None, "ok": True}},
                metadata={"external": True, "agent": "a"},
                tool_state={"step": [1, 2.5, None]},
                tool_name="write_file",
                external=True,
            )
        )
        _request(tx, "decided")
        tx.requests.decide("decided", {"decision": "approve", "note": "null"}, reviewer="r")
    for hitl_id in ("pending", "decided"):
        with store.transaction() as tx:
            fast = tx.requests.get(hitl_id)
        with store.engines.read() as connection:
            row = connection.execute(select(requests_t).where(requests_t.c.hitl_id == hitl_id)).one()
        assert fast == row_to_record(row)
        assert list(fast or {}) == list(row_to_record(row))  # the record's keys in the protocol's order too
    decided = store.requests.get("decided")
    assert decided is not None and decided["tool_state"] is None and decided["user_response"]["note"] == "null"


def test_booleans_bound_on_the_fast_path_are_stored_as_sqlalchemy_stores_them(store: Store) -> None:
    """The fast path binds True and False without the column's processor (worked out from it once): the stored
    values, and their SQLite types, are those SQLAlchemy's own insert stores; a value that is no boolean is still
    refused by the column's processor, and nothing of it is written."""
    import sqlite3

    from sqlalchemy import insert

    from reviewer_app.persistence.tables import sessions_t

    with store.transaction() as tx:
        tx.runs.ensure_session("fast-yes", external=True)
        tx.runs.ensure_session("fast-no", external=False)
    with store.engines.write() as connection:
        for name, external in (("orm-yes", True), ("orm-no", False)):
            connection.execute(
                insert(sessions_t).values(id=name, external=external, created_at=0, updated_at=0, agent=None)
            )
    with pytest.raises(TypeError, match="Not a boolean value"), store.transaction() as tx:
        tx.runs.ensure_session("refused", external="yes")  # type: ignore[arg-type]
    raw = sqlite3.connect(store.url.removeprefix("sqlite:///"))
    try:
        stored = dict(raw.execute("SELECT id, quote(external) FROM sessions").fetchall())
    finally:
        raw.close()
    assert stored == {"fast-yes": "1", "fast-no": "0", "orm-yes": "1", "orm-no": "0"}


def test_a_creation_makes_no_audit_writer_and_a_decision_no_run_writer(store: Store) -> None:
    """A request's writes take the runs and the audit log from their transaction when they use them: a creation
    (which writes no audit row) and a decision (which writes no run) each make only what they write through."""
    with store.transaction() as tx:
        _request(tx, "h1")
        made = {name: getattr(tx, f"_{name}") is not None for name in ("runs", "audit", "blobs")}
    assert made == {"runs": True, "audit": False, "blobs": False}
    with store.transaction() as tx:
        tx.requests.decide("h1", {"decision": "approve"}, reviewer="r")
        made = {name: getattr(tx, f"_{name}") is not None for name in ("runs", "audit", "blobs")}
    assert made == {"runs": False, "audit": True, "blobs": True}
    assert store.audit.verify().ok
