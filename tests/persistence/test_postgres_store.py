"""The same models, migrations and store on PostgreSQL as on SQLite, checked end to end.

Tests taking ``any_db`` run on a SQLite file and on a fresh database of the
PostgreSQL server the tests start (``tests/pg_server.py``).
"""

from __future__ import annotations

import getpass
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLConflict, HITLNotFound, SchemaTooNew
from reviewer_app.domain.records import NewRequest, RequestQuery
from reviewer_app.domain.runs import RunState
from reviewer_app.domain.shell_scopes import CommandScope
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp
from reviewer_app.domain.waivers import SessionRule
from reviewer_app.hitl import SQLHITLBackend, default_reviewer
from reviewer_app.persistence import migrate
from reviewer_app.persistence.engine import create_engines
from reviewer_app.persistence.search_index import include_name
from reviewer_app.persistence.store import Store
from reviewer_app.persistence.tables import metadata

BIG = 2**40  # beyond 32-bit integers: the BigInteger columns must hold it


def _create(store: Store, hitl_id: str, *, session: str = "s1", invocation: str = "i1", **extra: Any) -> None:
    with store.transaction() as tx:
        tx.requests.create(
            NewRequest(
                hitl_id=hitl_id,
                hitl_type=extra.pop("hitl_type", "tool_approval"),
                session_id=session,
                invocation_id=invocation,
                data=extra.pop("data", {"arguments": {"command": f"echo {hitl_id}"}}),
                tool_name=extra.pop("tool_name", "run_shell"),
                **extra,
            )
        )


# -- migrations --------------------------------------------------------------------------------
@pytest.mark.postgres
def test_migrations_reach_head_and_match_the_models_on_postgres(empty_pg_url: str) -> None:
    store = Store.open(empty_pg_url)
    try:
        assert store.engines.dialect == "postgresql"
        assert migrate.current_revision(store.engines) == migrate.head_revision()
        with store.engines.reader.connect() as connection:
            assert (
                compare_metadata(MigrationContext.configure(connection, opts={"include_name": include_name}), metadata)
                == []
            )
            types = dict(
                connection.execute(
                    text(
                        "SELECT column_name, data_type FROM information_schema.columns"
                        " WHERE table_name = 'hitl_requests' AND column_name IN ('data', 'expires_at', 'created_at')"
                    )
                ).all()
            )
        assert types == {"data": "json", "expires_at": "bigint", "created_at": "bigint"}
    finally:
        store.close()
    again = Store.open(empty_pg_url)  # reopening an up-to-date database changes nothing
    again.close()


@pytest.mark.postgres
def test_upgrade_from_0001_backfills_decisions_on_postgres(empty_pg_url: str) -> None:
    engines = create_engines(empty_pg_url)
    try:
        assert migrate.upgrade(engines, "0001") is None  # no file to back up on a server
        with engines.write() as connection:
            connection.execute(text("INSERT INTO sessions VALUES ('s1', 'demo', NULL, NULL, false, 1, 1)"))
            connection.execute(
                text(
                    "INSERT INTO invocations (id, session_id, agent, state, external, created_at, updated_at_ms,"
                    " active_ms) VALUES ('i1', 's1', 'demo', 'waiting', false, 1, 1000, 0)"
                )
            )
            for hitl_id, status, response in (
                ("old-pending", "pending", None),
                ("old-done", "completed", '{"decision": "approve", "reviewer": "dana"}'),
            ):
                connection.execute(
                    text(
                        "INSERT INTO hitl_requests (hitl_id, hitl_type, session_id, invocation_id, data, metadata,"
                        " status, resume_mode, user_response, created_at, updated_at, updated_at_ms, summary)"
                        " VALUES (:id, 'tool_approval', 's1', 'i1', '{\"arguments\": {\"path\": \"a\"}}', '{}',"
                        " :status, 'response', CAST(:response AS json), 1, 1, 1000, 'path: a')"
                    ),
                    {"id": hitl_id, "status": status, "response": response},
                )
    finally:
        engines.dispose()
    store = Store.open(empty_pg_url)
    try:
        assert migrate.current_revision(store.engines) == migrate.head_revision()
        done = store.requests.extras("old-done")
        assert done is not None and done["decision"] == "approve" and done["decided_by"] == "dana"
        pending = store.requests.get("old-pending")
        assert pending is not None and pending["status"] == "pending"
    finally:
        store.close()


@pytest.mark.postgres
def test_newer_schema_refuses_to_open_on_postgres(pg_url: str) -> None:
    Store.open(pg_url).close()
    engines = create_engines(pg_url)
    with engines.write() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    engines.dispose()
    with pytest.raises(SchemaTooNew, match="9999_from_the_future"):
        Store.open(pg_url)


# -- the store, on both databases ---------------------------------------------------------------
def test_store_round_trip(any_db: str) -> None:
    store = Store.open(any_db)
    try:
        data = {"arguments": {"command": "ls -la ~/Müll", "nested": {"list": [1, 2.5, None, True], "big": BIG}}}
        _create(store, "h1", data=data, expires_at=BIG, metadata={"agent": "coder", "ünï": "cödé"})
        record = store.requests.get("h1")
        assert record is not None
        assert record["data"] == data and record["expires_at"] == BIG
        assert record["metadata"] == {"agent": "coder", "ünï": "cödé"}
        # ON CONFLICT DO NOTHING: a reused id is refused and overwrites nothing.
        with pytest.raises(HITLConflict, match="already exists"):
            _create(store, "h1", data={"arguments": {"command": "rm -rf /"}})
        assert store.requests.get("h1") == record
        # Compare-and-set with RETURNING, then the loser learns who won.
        with store.transaction() as tx:
            decided = tx.requests.decide("h1", {"decision": "approve", "reviewer": "ann"}, reviewer="ann")
        assert decided["status"] == "completed" and decided["data"] == data
        with pytest.raises(HITLConflict, match="ann") as lost, store.transaction() as tx:
            tx.requests.decide("h1", {"decision": "reject"}, reviewer="bob")
        assert lost.value.record is not None and lost.value.record["status"] == "completed"
        with pytest.raises(HITLNotFound), store.transaction() as tx:
            tx.requests.decide("nope", {"decision": "reject"}, reviewer="bob")
        extras = store.requests.extras("h1")
        # On PostgreSQL the name a client gives is only a label after its database login (issue 12).
        ann = "ann" if store.database_login() is None else f"{store.database_login()} (ann)"
        assert extras is not None and (extras["decision"], extras["decided_by"]) == ("approve", ann)
        [entry] = store.audit.entries()
        assert (entry.hitl_id, entry.reviewer, entry.shown_args) == ("h1", ann, data["arguments"])
        assert entry.shown_args_sha256 == args_digest(data["arguments"])
        assert store.audit.verify().ok
        # Autoincrement seq and RETURNING on the timeline.
        events = [
            BlockEvent(
                block_id=f"b{n}",
                kind=BlockKind.TEXT,
                op=BlockOp.APPLY,
                data={"text": f"part {n}"},
                session_id="s1",
                invocation_id="i1",
                ts_ms=BIG + n,
            )
            for n in range(3)
        ]
        with store.transaction() as tx:
            stored = tx.timeline.append(events)
        seqs = [event.seq for event in stored]
        assert seqs == sorted(seqs) and len(set(seqs)) == 3
        assert [e.data for e in store.timeline.of_run("i1")] == [{"text": f"part {n}"} for n in range(3)]
        assert [e.seq for e in store.timeline.since(seqs[0])] == seqs[1:]
        assert store.timeline.last_seq() == seqs[-1]
        # Checkpoints, rules (deduplicated), runs.
        with store.transaction() as tx:
            tx.checkpoints.save_whole("c1", "i1", "s1", {"messages": [{"role": "user", "content": "hi"}]})
            assert tx.waivers.add(
                "s1", SessionRule("run_shell", CommandScope.exact("ls")), created_by="ann", hitl_id="h1"
            )
            assert not tx.waivers.add(
                "s1", SessionRule("run_shell", CommandScope.exact("ls")), created_by="ann", hitl_id="h1"
            )
            assert tx.runs.set_state("i1", RunState.WAITING) is RunState.RUNNING
        assert store.checkpoints.latest("i1") == ("c1", {"messages": [{"role": "user", "content": "hi"}]})
        assert store.waivers.of_session("s1") == [SessionRule("run_shell", CommandScope.exact("ls"))]
        _create(store, "h2", data={"arguments": {"path": "/etc/Hosts"}}, tool_name="read_file")
        run = store.runs.get("i1")
        assert run is not None and run.state == "waiting" and run.pending == 1 and run.agent == "coder"
        assert [s.hitl_id for s in store.requests.summaries(RequestQuery(text="hosts"))] == ["h2"]
        assert store.requests.summaries(RequestQuery(statuses=(), newest_first=True))[0].hitl_id == "h2"
        assert store.requests.count_pending() == 1
    finally:
        store.close()


def test_concurrent_decisions_on_one_store_keep_the_audit_chain(any_db: str) -> None:
    """Threads with their own connections race on the same requests: one win each, one unbroken chain."""
    store = Store.open(any_db)
    try:
        with store.transaction() as tx:
            for n in range(60):
                tx.requests.create(
                    NewRequest(
                        hitl_id=f"r{n}",
                        hitl_type="tool_approval",
                        session_id="s",
                        invocation_id="i",
                        data={"arguments": {"n": n}},
                    )
                )
        start = threading.Barrier(4)

        def reviewer(name: str) -> tuple[list[str], int]:
            start.wait()
            won, lost = [], 0
            for n in range(60):
                try:
                    with store.transaction() as tx:
                        tx.requests.decide(f"r{n}", {"decision": "approve", "reviewer": name}, reviewer=name)
                    won.append(f"r{n}")
                except HITLConflict:
                    lost += 1
            return won, lost

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(reviewer, ["t0", "t1", "t2", "t3"]))
        won = [hitl_id for ids, _ in results for hitl_id in ids]
        assert sorted(won) == sorted(f"r{n}" for n in range(60))
        assert sum(lost for _, lost in results) == 3 * 60
        entries = store.audit.entries()
        assert len(entries) == 60 and len({e.hitl_id for e in entries}) == 60
        assert store.audit.verify().ok
    finally:
        store.close()


# -- identity and external requests ------------------------------------------------------------
@pytest.mark.asyncio
async def test_decisions_record_the_reviewer(any_db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REVIEWER_NAME", raising=False)
    named = SQLHITLBackend(any_db, reviewer="alice")
    default = SQLHITLBackend(any_db)
    try:
        # SQLite trusts the name (anyone who can write the file is trusted); PostgreSQL records the login, with
        # the name only as a label after it, so a client cannot decide as someone else (issue 12).
        login = named.store.database_login()
        alice = "alice" if login is None else f"{login} (alice)"
        anonymous = getpass.getuser() if login is None else login
        assert default.reviewer == anonymous and default_reviewer() == getpass.getuser()
        for n in range(3):
            await named.create(
                hitl_id=f"h{n}",
                hitl_type="tool_approval",
                session_id="s",
                invocation_id="i",
                data={"arguments": {"n": n}},
                tool_name="write_file",
            )
        await named.decide("h0", Decision(DecisionKind.APPROVE, args_sha256=args_digest({"n": 0})))
        await default.decide("h1", Decision(DecisionKind.REJECT, message="no"))
        await default.respond("h2", {"decision": "reject", "reviewer": "carol"})  # a name asserted, not recorded
        expected = {"h0": alice, "h1": anonymous, "h2": anonymous}
        for hitl_id, who in expected.items():
            extras = await named.run(named.store.requests.extras, hitl_id)
            assert extras is not None and extras["decided_by"] == who
        assert {e.hitl_id: e.reviewer for e in await named.audit()} == expected
        with pytest.raises(HITLConflict) as lost:
            await default.decide("h0", Decision(DecisionKind.REJECT))
        assert "alice" in str(lost.value)
        monkeypatch.setenv("REVIEWER_NAME", "dana")
        assert default_reviewer() == "dana"
    finally:
        await named.aclose()
        await default.aclose()


@pytest.mark.asyncio
async def test_requests_from_external_agents_are_marked_external(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="tester")
    try:
        await backend.create(
            hitl_id="ext",
            hitl_type="ask_user",
            session_id="s-ext",
            invocation_id="i-ext",
            data={"question": "deploy?"},
            metadata={"external": True, "agent": "ci-bot"},
        )
        await backend.create(hitl_id="own", hitl_type="ask_user", session_id="s-own", invocation_id="i-own")
        ext_run, own_run = (
            await backend.run(backend.store.runs.get, "i-ext"),
            await backend.run(backend.store.runs.get, "i-own"),
        )
        assert ext_run is not None and ext_run.external and ext_run.agent == "ci-bot"
        assert own_run is not None and not own_run.external
        session = await backend.run(backend.store.runs.session_info, "s-ext")
        assert session is not None and session["external"] is True
        record = await backend.get("ext")
        assert record is not None and record["metadata"]["external"] is True
    finally:
        await backend.aclose()


@pytest.mark.postgres
def test_postgres_is_really_used(pg_url: str) -> None:
    """Guard against a fixture that silently falls back to SQLite."""
    store = Store.open(pg_url)
    try:
        with store.engines.reader.connect() as connection:
            assert "PostgreSQL" in connection.execute(text("SELECT version()")).scalar_one()
    finally:
        store.close()
    with psycopg.connect(pg_url.replace("postgresql+psycopg", "postgresql")) as raw:
        assert raw.execute("SELECT count(*) FROM hitl_requests").fetchone() == (0,)


def test_verify_audit_reads_one_snapshot_while_decisions_land(any_db: str) -> None:
    """The chain head and the rows must come from the same moment, or a busy log looks truncated."""
    store = Store.open(any_db)
    try:
        with store.transaction() as tx:
            for n in range(150):
                tx.requests.create(NewRequest(hitl_id=f"v{n}", hitl_type="ask_user", session_id="s", invocation_id="i"))
        done = threading.Event()

        def decide_all() -> None:
            try:
                for n in range(150):
                    with store.transaction() as tx:
                        tx.requests.decide(f"v{n}", {"decision": "respond", "message": "ok"}, reviewer="w")
            finally:
                done.set()

        writer = threading.Thread(target=decide_all)
        writer.start()
        reports = []
        while not done.is_set():
            reports.append(store.audit.verify())
        writer.join()
        bad = [report for report in reports if not report.ok]
        assert bad == [] and len(reports) > 1
        assert store.audit.verify().rows_checked == 150
    finally:
        store.close()
