"""``audit verify``'s cross-check of decided requests, on SQLite and PostgreSQL (issue 29, item 7).

PostgreSQL matches the responses that name neither ``args`` nor ``message`` by a plain join and compares only the
rest as JSON, and runs the cross-check on a second connection in the chain walk's snapshot: every way of changing
what an agent would act on is still reported, whichever path the response takes.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend

pytestmark = pytest.mark.asyncio

ARGS = {"command": "make test"}


async def _decided(target: str) -> SQLHITLBackend:
    """r1 rejected with a message, e1 edited, a1 approved plainly: the chain verifies."""
    backend = SQLHITLBackend(target, reviewer="auditor")
    for hitl_id in ("r1", "e1", "a1"):
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": ARGS},
            tool_name="run_shell",
        )
    await backend.decide("r1", Decision(DecisionKind.REJECT, message="no"))
    edit = Decision(DecisionKind.EDIT, edited_args={"command": "make test -k fast"}, args_sha256=args_digest(ARGS))
    await backend.decide("e1", edit)
    await backend.decide("a1", Decision(DecisionKind.APPROVE, args_sha256=args_digest(ARGS)))
    assert (await backend.verify_audit()).ok
    return backend


def _store_response(target: str, hitl_id: str, response: str) -> None:
    """Rewrite a decided request's stored response behind the app's back (as the database's owner could)."""
    _rewrite(target, hitl_id, "user_response", response)


def _rewrite(target: str, hitl_id: str, column: str, value: str) -> None:
    if "://" not in target:
        with sqlite3.connect(target) as connection:
            connection.execute(f"UPDATE hitl_requests SET {column} = ? WHERE hitl_id = ?", (value, hitl_id))
        return
    import psycopg

    with psycopg.connect(target.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as raw:
        raw.execute("SET session_replication_role = replica")  # past migration 0011's trigger
        raw.execute(f"UPDATE hitl_requests SET {column} = %s WHERE hitl_id = %s", (value, hitl_id))


@pytest.fixture
def target(any_db: str) -> str:
    return any_db if "://" in any_db else str(Path(any_db))


@pytest.mark.parametrize(
    ("hitl_id", "changed"),
    [
        ("r1", '{"decision": "reject"}'),  # the message dropped: names neither args nor message
        ("r1", '  {"decision": "reject"}'),  # the same after white space
        ("e1", '{"decision": "edit"}'),  # the edit dropped: the original arguments would run
        ("a1", '{"decision": "approve", "args": {"command": "rm -rf /"}}'),  # an edit slipped in
        ("a1", '{"decision": "approve", "\\u0061rgs": {"command": "rm -rf /"}}'),  # spelled with an escape
        ("a1", '{"decision": "approve", "message": "and delete the backups"}'),  # a message slipped in
        ("e1", '{"decision": "edit", "args": {"command": "rm -rf /"}}'),  # another edit
    ],
)
async def test_a_changed_edit_or_message_is_reported(target: str, hitl_id: str, changed: str) -> None:
    backend = await _decided(target)
    try:
        _store_response(target, hitl_id, changed)
        report = await backend.verify_audit()
        assert not report.ok
        assert report.problem == (
            f"request {hitl_id}'s edited arguments or message differ from what its audit row signed "
            "(changed in hitl_requests after the decision)"
        )
    finally:
        await backend.aclose()


@pytest.mark.parametrize(
    ("hitl_id", "same"),
    [
        ("a1", '{"decision": "approve"}'),  # what it approved, without the digest
        ("a1", '{"decision": "approve", "args": null}'),  # no edit, spelled out
        ("r1", '{"message": "no", "decision": "reject", "note": "args"}'),  # keys in another order
        ("e1", '{"args": {"command": "make test -k fast"}, "decision": "edit"}'),
    ],
)
async def test_responses_that_carry_what_was_signed_pass(target: str, hitl_id: str, same: str) -> None:
    backend = await _decided(target)
    try:
        _store_response(target, hitl_id, same)
        report = await backend.verify_audit()
        assert report.ok, report.problem
        assert report.rows_checked == 3
    finally:
        await backend.aclose()


async def test_a_broken_chain_is_reported_before_the_cross_check(target: str) -> None:
    """The chain walk's finding wins, as before the cross-check ran alongside it."""
    backend = await _decided(target)
    try:
        _store_response(target, "r1", '{"decision": "reject"}')
        if "://" in target:
            import psycopg

            with psycopg.connect(target.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as raw:
                raw.execute("SET session_replication_role = replica")
                raw.execute("UPDATE audit_log SET message = 'yes' WHERE hitl_id = 'r1'")
        else:
            with sqlite3.connect(target) as connection:
                connection.execute("DROP TRIGGER IF EXISTS audit_log_no_update")
                connection.execute("UPDATE audit_log SET message = 'yes' WHERE hitl_id = 'r1'")
        report = await backend.verify_audit()
        assert not report.ok and report.problem == "the row was edited after it was written"
    finally:
        await backend.aclose()


def _set_decider(target: str, hitl_id: str, decided_by: str) -> None:
    """Rewrite who decided a request behind the app's back: no audit row records that decision."""
    _rewrite(target, hitl_id, "decided_by", decided_by)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (  # an unaudited decision before a dropped message (PostgreSQL finds both in one join)
            [("decider", "e1", "mallory"), ("response", "r1", '{"decision": "reject"}')],
            "request e1 says edit by mallory, which no audit row records (changed in hitl_requests)",
        ),
        (  # a response stating another decision before a dropped message
            [("response", "a1", '{"decision": "reject"}'), ("response", "r1", '{"decision": "reject"}')],
            "request a1's stored response says reject, its audited decision is approve",
        ),
        (  # a dropped message before a changed edit
            [("response", "e1", '{"decision": "edit", "args": {"command": "rm -rf /"}}'),
             ("response", "r1", '{"decision": "reject"}')],
            "request r1's edited arguments or message differ from what its audit row signed "
            "(changed in hitl_requests after the decision)",
        ),
    ],
)  # fmt: skip
async def test_the_cross_checks_findings_keep_their_order(
    target: str, changes: list[tuple[str, str, str]], expected: str
) -> None:
    backend = await _decided(target)
    try:
        for kind, hitl_id, value in changes:
            (_set_decider if kind == "decider" else _store_response)(target, hitl_id, value)
        report = await backend.verify_audit()
        assert not report.ok and report.problem == expected
    finally:
        await backend.aclose()
