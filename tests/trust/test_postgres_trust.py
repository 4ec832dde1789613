"""Trust on PostgreSQL: a committed cancel is never undone, and the recorded reviewer is the database login.

Each test was written against the attack first and seen failing (issue 12, items 5 and 6).
"""

from __future__ import annotations

import asyncio
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ProgrammingError

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.runs import RunState, RunStateConflict
from reviewer_app.domain.timeline import BlockKind, BlockOp
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence import migrate
from reviewer_app.persistence.engine import create_engines, database_url
from reviewer_app.persistence.store import Store
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.runtime.runner import Runtime
from tests.pg_server import PgServer
from tests.runtime.test_runner_support import agent, eventually, started_runtime

ROUNDS = 50


def _commit_step(
    store: Store, invocation_id: str, hitl_id: str, read: threading.Event, cancelled: threading.Event
) -> str:
    """What the runtime's step commit does: read the run, then move it to waiting with a new request."""
    with store.transaction() as tx:
        current = tx.runs.state_and_owner(invocation_id)
        assert current is not None
        read.set()
        # Give a concurrent cancel the chance to commit between this read and the write below. With the row
        # lock it cannot (it waits for this transaction), so the wait simply runs out.
        cancelled.wait(0.1)
        if current[0].finished:
            return "stopped"
        tx.runs.set_state(invocation_id, RunState.WAITING, current=current[0])
        tx.requests.create(
            NewRequest(hitl_id=hitl_id, hitl_type="ask_user", session_id="s", invocation_id=invocation_id),
            ensure_parents=False,
        )
    return "committed"


def _cancel(store: Store, invocation_id: str) -> str:
    """What the runtime's cancel does: read the run, cancel its pending requests, mark it cancelled."""
    with store.transaction() as tx:
        current = tx.runs.state_and_owner(invocation_id)
        assert current is not None
        if current[0].finished:
            return "already finished"
        for pending in tx.requests.pending(invocation_id=invocation_id):
            tx.requests.decide(pending["hitl_id"], None, status=HITLStatus.CANCELLED, reviewer="ann", decision="cancel")
        tx.runs.set_state(invocation_id, RunState.CANCELLED, error="cancelled by ann")
    return "cancelled"


@pytest.mark.postgres
def test_a_committed_cancel_is_never_undone_by_a_concurrent_step(pg_url: str) -> None:
    store = Store.open(pg_url)
    try:
        outcomes = []
        for n in range(ROUNDS):
            invocation_id = f"i{n}"
            with store.transaction() as tx:
                tx.runs.ensure_session("s")
                tx.runs.ensure(invocation_id, "s")
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
            run = store.runs.get(invocation_id)
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
            tx.runs.ensure_session("s")
            tx.runs.ensure("i", "s")
            tx.runs.set_state("i", RunState.CANCELLED)
        with pytest.raises(RunStateConflict, match="cancelled"), store.transaction() as tx:
            tx.runs.set_state("i", RunState.WAITING, current=RunState.RUNNING)
        run = store.runs.get("i")
        assert run is not None and run.state == RunState.CANCELLED.value
    finally:
        store.close()


# -- identity: the recorded reviewer is the database login -------------------------------------
def _role(postgres_server: PgServer, name: str) -> None:
    """A login role on the test cluster (roles are cluster-wide: created once, reused by later tests)."""
    postgres_server._admin(f"DO $$ BEGIN CREATE ROLE {name} LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")


def _as(pg_url: str, role: str) -> str:
    """The same database, logged in as ``role`` (the test cluster trusts loopback logins)."""
    url = make_url(pg_url)
    return url.set(username=role).render_as_string(hide_password=False)


def _sql(url: str, statement: str, params: tuple[Any, ...] = ()) -> None:
    with psycopg.connect(url.replace("postgresql+psycopg", "postgresql"), autocommit=True) as connection:
        connection.execute(statement, params)


def _documented_agent_grants() -> str:
    """The GRANT statements docs/teams.md "PostgreSQL for teams" documents for the ``agents`` role (as written)."""
    guide = (Path(__file__).resolve().parents[2] / "docs" / "teams.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sql\n(.*?)```", guide, re.S)
    [documented] = [block for block in blocks if "TO agents" in block]
    # The role itself is created by the test (roles are cluster-wide); the GRANTs are run exactly as written.
    return "\n".join(line for line in documented.splitlines() if line.startswith("GRANT"))


def _reviewer_grants(role: str) -> str:
    return (
        f"GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA public TO {role};"
        f" GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role};"
    )


async def _pending(backend: SQLHITLBackend, hitl_id: str) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s",
        invocation_id="i",
        data={"arguments": {"path": hitl_id}},
        tool_name="write_file",
    )


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_reviewer_name_asserted_by_another_login_is_recorded_under_that_login(
    pg_url: str, postgres_server: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("REVIEWER_NAME", raising=False)
    Store.open(pg_url).close()
    _role(postgres_server, "bob")
    _sql(pg_url, _reviewer_grants("bob"))
    bob = SQLHITLBackend(_as(pg_url, "bob"), reviewer="alice")  # bob claims to be alice
    plain = SQLHITLBackend(_as(pg_url, "bob"))
    try:
        assert bob.reviewer == "bob (alice)" and plain.reviewer == "bob"
        for hitl_id in ("h1", "h2", "h3"):
            await _pending(bob, hitl_id)
        await bob.decide("h1", Decision(DecisionKind.APPROVE, args_sha256=args_digest({"path": "h1"})))
        await bob.respond("h2", {"decision": "reject", "reviewer": "alice"})
        await plain.cancel("h3", by="alice")
        decided = {}
        for hitl_id in ("h1", "h2", "h3"):
            extras = await bob.run(bob.store.requests.extras, hitl_id)
            assert extras is not None
            decided[hitl_id] = extras["decided_by"]
        assert decided == {"h1": "bob (alice)", "h2": "bob (alice)", "h3": "bob (alice)"}
        assert {e.hitl_id: e.reviewer for e in await bob.audit()} == decided
        assert (await bob.verify_audit()).ok
    finally:
        await bob.aclose()
        await plain.aclose()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_system_decisions_are_recorded_under_the_login_that_made_them(
    pg_url: str, postgres_server: PgServer
) -> None:
    Store.open(pg_url).close()
    _role(postgres_server, "bob")
    _sql(pg_url, _reviewer_grants("bob"))
    backend = SQLHITLBackend(_as(pg_url, "bob"), reviewer="Bob B")
    try:
        await backend.create(hitl_id="late", hitl_type="ask_user", session_id="s", invocation_id="i", expires_at=1)
        await _pending(backend, "gone")
        [expired] = await backend.expire_due()
        await backend.cancel("gone", by="system:ci-bot")
        assert expired["hitl_id"] == "late"
        decided = {e.hitl_id: e.reviewer for e in await backend.audit()}
        assert decided == {"late": "bob/system:expiry", "gone": "bob/system:ci-bot"}
        assert (await backend.verify_audit()).ok
    finally:
        await backend.aclose()


@pytest.mark.postgres
def test_the_database_refuses_a_decision_or_audit_row_under_another_login(
    pg_url: str, postgres_server: PgServer
) -> None:
    store = Store.open(pg_url)
    try:
        with store.transaction() as tx:
            tx.requests.create(NewRequest(hitl_id="h1", hitl_type="ask_user", session_id="s", invocation_id="i"))
    finally:
        store.close()
    _role(postgres_server, "bob")
    _sql(pg_url, _reviewer_grants("bob"))
    bob = _as(pg_url, "bob")
    # Straight SQL, past every check in Reviewer's code: the trigger is what stops it.
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="login"):
        _sql(
            bob,
            "UPDATE hitl_requests SET status = 'completed', decision = 'approve', decided_by = 'alice'"
            " WHERE hitl_id = 'h1'",
        )
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="login"):
        _sql(bob, "UPDATE hitl_requests SET decided_by = 'bobby' WHERE hitl_id = 'h1'")  # a prefix is not a login
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="login"):
        _sql(
            bob,
            "INSERT INTO audit_log (hitl_id, decision, reviewer, at_ms, prev_hash, row_hash)"
            " VALUES ('h1', 'approve', 'alice', 1, 'x', 'y')",
        )
    _sql(bob, "UPDATE hitl_requests SET decided_by = 'bob (as alice)', decision = 'respond' WHERE hitl_id = 'h1'")
    # Another login cannot change bob's decision afterwards, not even by keeping his name on it.
    _role(postgres_server, "carol")
    _sql(pg_url, _reviewer_grants("carol"))
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="login"):
        _sql(_as(pg_url, "carol"), "UPDATE hitl_requests SET decision = 'approve' WHERE hitl_id = 'h1'")


@pytest.mark.postgres
def test_a_login_cannot_shadow_the_check_with_a_function_of_its_own(pg_url: str, postgres_server: PgServer) -> None:
    """The default search_path starts with "$user": a role with its own schema must not replace the check."""
    store = Store.open(pg_url)
    try:
        with store.transaction() as tx:
            tx.requests.create(NewRequest(hitl_id="h1", hitl_type="ask_user", session_id="s", invocation_id="i"))
    finally:
        store.close()
    _role(postgres_server, "mallory")
    _sql(pg_url, _reviewer_grants("mallory") + " CREATE SCHEMA mallory AUTHORIZATION mallory;")
    mallory = _as(pg_url, "mallory")
    _sql(
        mallory,
        "CREATE FUNCTION mallory.reviewer_is_login(recorded text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$",
    )
    with pytest.raises(psycopg.errors.InsufficientPrivilege, match="login"):
        _sql(mallory, "UPDATE hitl_requests SET status = 'completed', decided_by = 'alice' WHERE hitl_id = 'h1'")


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_the_agents_role_creates_requests_and_reads_decisions_but_cannot_decide(
    pg_url: str, postgres_server: PgServer
) -> None:
    Store.open(pg_url).close()
    _role(postgres_server, "agents")
    _sql(pg_url, _documented_agent_grants())
    agents_url = _as(pg_url, "agents")
    agent = SQLHITLBackend(agents_url, reviewer="agent")
    reviewer = SQLHITLBackend(pg_url, reviewer="ann")
    try:
        await _pending(agent, "h1")
        await _pending(agent, "h2")
        await agent.emit_block(session_id="s", invocation_id="i", block_id="b1", kind="text", data={"text": "hi"})
        await reviewer.decide("h1", Decision(DecisionKind.REJECT, message="no"))
        record = await agent.wait_for_response("h1")
        assert record["status"] == "completed" and record["user_response"]["decision"] == "reject"
        with pytest.raises(ProgrammingError, match="permission denied"):
            await agent.decide("h2", Decision(DecisionKind.APPROVE, args_sha256=args_digest({"path": "h2"})))
        with pytest.raises(ProgrammingError, match="permission denied"):
            await agent.respond("h2", {"decision": "approve", "args_sha256": args_digest({"path": "h2"})})
        for statement in (
            "UPDATE hitl_requests SET status = 'completed' WHERE hitl_id = 'h2'",
            "UPDATE hitl_requests SET decision = 'approve' WHERE hitl_id = 'h2'",
            "INSERT INTO audit_log (hitl_id, decision, reviewer, at_ms, prev_hash, row_hash)"
            " VALUES ('h2', 'approve', 'agents', 1, 'x', 'y')",
            "UPDATE reviewer_meta SET value = 'x'",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="permission denied"):
                _sql(agents_url, statement)
        pending = await reviewer.get("h2")
        assert pending is not None and pending["status"] == "pending"
        assert (await reviewer.verify_audit()).ok
    finally:
        await agent.aclose()
        await reviewer.aclose()


def test_the_login_triggers_exist_on_postgresql_only(empty_any_db: str) -> None:
    engines = create_engines(database_url(empty_any_db))
    try:
        migrate.upgrade(engines, "0005")
        migrate.upgrade(engines)  # 0006 on a database that already has rows and a schema
        with engines.read() as connection:
            if engines.dialect == "postgresql":
                names = connection.execute(text("SELECT tgname FROM pg_trigger WHERE NOT tgisinternal")).scalars()
                assert set(names) == {
                    "hitl_requests_decided_by_login",
                    "audit_log_reviewer_login",
                    "audit_log_history_index",  # 0010's search index, not a login check
                    "hitl_requests_decided_is_final",  # 0011: a decided request's decision cannot change
                    "hitl_requests_stats_per_hour",  # 0012: the statistics' counts per hour, not login checks
                    "stats_created_per_hour_by_trigger_only",
                    "stats_decided_per_hour_by_trigger_only",
                }
            else:  # 0010's search index trigger and 0012's counts per hour: no login checks
                triggers = connection.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'")).scalars()
                assert set(triggers) == {
                    "history_fts_after_audit",
                    "stats_after_request_insert",
                    "stats_after_request_update",
                    "stats_after_request_delete",
                }
    finally:
        engines.dispose()


@pytest.mark.postgres
@pytest.mark.asyncio
async def test_a_cancel_from_another_process_stops_a_busy_run_for_good(pg_url: str, tmp_path: Path) -> None:
    """The runtime end to end: one backend drives a run that commits a step per turn, another cancels it."""
    busy = [{"tool_calls": [{"name": "list_dir", "args": {"path": "."}}]} for _ in range(400)]
    driver = SQLHITLBackend(pg_url, reviewer="driver")
    canceller = SQLHITLBackend(pg_url, reviewer="ann")
    try:
        async with started_runtime(driver, tmp_path) as runtime:
            other = Runtime(canceller, AgentCatalog((agent(),)), workspaces_dir=tmp_path / "other")
            for n in range(25):
                inv = await runtime.start_run("tester", f"busy {n}", script=busy)
                await eventually(lambda inv=inv, k=3 + n % 4: _has_tool_results(driver, inv, k), driver)
                await other.cancel_run(inv)  # never raises: the run is mid-way, not finished
                finished = await runtime.wait_for_run(inv, timeout=30)
                assert finished.state == RunState.CANCELLED.value, f"round {n}: the cancel was undone"
                await asyncio.sleep(0.05)  # the driver's last commit attempt has happened by now
                again = await driver.get_run(inv)
                assert again is not None and again.state == RunState.CANCELLED.value
    finally:
        await driver.aclose()
        await canceller.aclose()


async def _has_tool_results(backend: SQLHITLBackend, invocation_id: str, count: int) -> bool:
    events = await backend.events(invocation_id)
    return sum(1 for event in events if event.kind is BlockKind.TOOL_USE and event.op is BlockOp.APPLY) >= count
