"""The statistics' per-hour counts (migration 0012) stay equal to the requests they count (issue 29, item 7).

The Statistics view reads whole hours from ``stats_created_per_hour`` / ``stats_decided_per_hour`` and only the
partial hours at a period's edges from ``hitl_requests``. The counts are kept by triggers in each write's own
transaction, so here they are compared with a ``GROUP BY`` over the requests, and the view's figures with the ten
statements of the earlier definition, after random creates, decisions, expiries, withdrawals, rule settlements,
rows moved in time and deleted by another client, concurrent writers, and on a database migrated from 0011.
"""

from __future__ import annotations

import asyncio
import importlib.util
import random
import time
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.stats import DAY_S, HOUR_S, TIME_TO_DECISION_BUCKETS
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence import migrate
from reviewer_app.persistence.bundled_head import migrations_dir
from reviewer_app.persistence.engine import create_engines, database_url
from tests.persistence.test_decision_stats import as_schema_owner, execute, sql_url
from tests.persistence.test_decision_stats_passes import DECIDERS, assert_same, seed_history, ten_statements

pytestmark = pytest.mark.asyncio

_WAIT_BOUNDS = [bound for bound, _ in TIME_TO_DECISION_BUCKETS if bound is not None]


def rows_of(target: str, statement: str) -> list[tuple[Any, ...]]:
    engine = create_engine(sql_url(target))
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(text(statement))]
    finally:
        engine.dispose()


def expected_counts(target: str) -> tuple[dict[tuple[Any, ...], int], dict[tuple[Any, ...], tuple[int, int]]]:
    """The per-hour counts recomputed from ``hitl_requests`` in Python."""
    created: dict[tuple[Any, ...], int] = {}
    decided: dict[tuple[Any, ...], tuple[int, int]] = {}
    for created_at, responded_at, agent, tool, kind, status, decided_by in rows_of(
        target,
        "SELECT created_at, responded_at, agent, tool_name, hitl_type, status, decided_by FROM hitl_requests",
    ):
        key = (created_at - created_at % HOUR_S, agent or "(unknown)", tool or kind)
        created[key] = created.get(key, 0) + 1
        if status == HITLStatus.PENDING.value or responded_at is None:
            continue
        waited = responded_at - created_at
        index = next((i for i, bound in enumerate(_WAIT_BOUNDS) if waited < bound), len(_WAIT_BOUNDS))
        key = (responded_at - responded_at % HOUR_S, decided_by or "", int(decided_by is not None), status, index)
        n, total = decided.get(key, (0, 0))
        decided[key] = (n + 1, total + waited)
    return created, decided


def stored_counts(target: str) -> tuple[dict[tuple[Any, ...], int], dict[tuple[Any, ...], tuple[int, int]]]:
    created = {
        (int(hour), agent, tool): int(n)
        for hour, agent, tool, n in rows_of(target, "SELECT hour_s, agent, tool, n FROM stats_created_per_hour")
        if n
    }
    decided = {
        (int(hour), who, int(known), status, int(index)): (int(n), int(waited))
        for hour, who, known, status, index, n, waited in rows_of(
            target,
            "SELECT hour_s, decided_by, has_decider, status, waited_index, n, waited_s FROM stats_decided_per_hour",
        )
        if n
    }
    return created, decided


def assert_counts_match(target: str) -> None:
    assert stored_counts(target) == expected_counts(target)


async def assert_figures_match(backend: SQLHITLBackend) -> None:
    """The view's figures equal the ten statements' for hour-aligned and unaligned periods, short and long."""
    now = int(time.time())
    periods = [
        (None, None),
        (now - DAY_S, None),
        (now - 7 * DAY_S, None),
        (now - 30 * DAY_S, None),
        (None, now - DAY_S),
        (now - 60 * DAY_S, now - 10 * DAY_S),
        (now - now % HOUR_S - 2 * HOUR_S, now - now % HOUR_S + HOUR_S),  # whole hours only
        (now - 1800, now + 1),  # inside one or two hours: no whole hour at all
        (now - 5 * HOUR_S - 17, now - 3 * HOUR_S + 5),
    ]
    for since, until in periods:
        found = await backend.decision_stats(since_s=since, until_s=until)
        expected = await backend.run(ten_statements, backend, since, found.until_s)
        if expected.mean_time_to_decision_s is None:
            assert found == expected, (since, until)
        else:
            assert_same(found, expected)


async def raise_request(
    backend: SQLHITLBackend, hitl_id: str, agent: str | None, tool: str | None, expires_at: int | None = None
) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s",
        invocation_id="i",
        data={"arguments": {"n": hitl_id}},
        metadata={} if agent is None else {"agent": agent},
        tool_name=tool,
        expires_at=expires_at,
    )


async def test_counts_follow_every_kind_of_write(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="alice")
    try:
        await seed_history(backend, any_db)  # decisions, edits, expiries, withdrawals, rules, rows moved in time
        assert_counts_match(any_db)
        await assert_figures_match(backend)
        rng = random.Random(12)
        now = int(time.time())
        for i in range(40):
            hitl_id = f"r{i:03d}"
            await raise_request(
                backend,
                hitl_id,
                rng.choice(["a1", "a2", "a3"]) if i % 7 else None,
                rng.choice(["run_shell", "write_file", None]),
                expires_at=now - 1 if i % 5 == 0 else None,
            )
            drawn = rng.choice(DECIDERS)
            if drawn is not None and i % 5:
                decider, status, decision = drawn
                response = (
                    {"decision": decision, "args_sha256": args_digest({"n": hitl_id})}
                    if status is HITLStatus.COMPLETED
                    else None
                )
                await backend.write(
                    lambda tx, h=hitl_id, r=response, s=status, who=decider, d=decision: tx.requests.decide(
                        h, r, status=s, reviewer=who, decision=d
                    )
                )
        await backend.expire_due()
        assert_counts_match(any_db)
        # Another client moves decided rows in time, renames an agent and deletes requests: the counts follow.
        moved = f"UPDATE hitl_requests SET responded_at = responded_at - {3 * HOUR_S + 7}"
        execute(any_db, as_schema_owner(any_db, f"{moved} WHERE hitl_id IN ('r001', 'r002', 'r003')"))
        execute(any_db, f"UPDATE hitl_requests SET created_at = created_at - {DAY_S} WHERE status = 'pending'")
        execute(any_db, "UPDATE hitl_requests SET agent = 'renamed' WHERE agent = 'a1' AND status = 'pending'")
        execute(any_db, "DELETE FROM audit_log WHERE hitl_id IN ('r004', 'r006')")
        execute(any_db, "DELETE FROM hitl_requests WHERE hitl_id IN ('r004', 'r006')")
        assert_counts_match(any_db)
        await assert_figures_match(backend)
    finally:
        await backend.aclose()


async def test_concurrent_writers_keep_the_counts(any_db: str) -> None:
    """Four backends (four database threads, four connections) create and decide at once."""
    backends = [SQLHITLBackend(any_db, reviewer=name) for name in ("alice", "bob", "carol", "dave")]
    try:
        await raise_request(backends[0], "warm", None, "t")

        async def writer(index: int, backend: SQLHITLBackend) -> None:
            for n in range(15):
                hitl_id = f"c{index}-{n}"
                await raise_request(backend, hitl_id, f"agent{n % 2}", "run_shell")
                if n % 3:
                    await backend.respond(hitl_id, {"decision": "reject", "message": "no"})

        await asyncio.gather(*(writer(i, b) for i, b in enumerate(backends)))
        assert_counts_match(any_db)
        await assert_figures_match(backends[0])
        figures = await backends[0].decision_stats(since_s=None)
        assert figures.created == 61 and figures.decided == 40 and figures.pending == 21
    finally:
        for backend in backends:
            await backend.aclose()


async def test_a_migrated_database_is_counted(empty_any_db: str) -> None:
    """A database at 0011 with decided and pending requests: the upgrade fills the per-hour counts."""
    engines = create_engines(database_url(empty_any_db))
    migrate.upgrade(engines, "0011")
    engines.dispose()
    login = "postgres/" if "://" in empty_any_db else ""  # PostgreSQL records deciders under the login (migration 0006)
    now = int(time.time())
    rows = []
    for i in range(30):
        status = ("pending", "completed", "expired", "cancelled")[i % 4]
        created = now - i * 3000 - 17
        decider = None if status == "pending" or i % 7 == 0 else (login + "alice", "system:expiry", "rule:r1")[i % 3]
        rows.append(
            {
                "id": f"m{i}",
                "status": status,
                "tool": None if i % 5 == 0 else "run_shell",
                "responded": None if status == "pending" else created + (i * 97) % 20_000,
                "created": created,
                "created_ms": created * 1000,
                "agent": None if i % 6 == 0 else f"agent{i % 3}",
                "decision": None if status == "pending" else "reject",
                "decider": decider if decider is None or decider.startswith(login) else login + decider,
            }
        )
    engine = create_engine(sql_url(empty_any_db))
    try:
        with engine.begin() as connection:
            connection.execute(text("INSERT INTO sessions VALUES ('s1', 'demo', NULL, NULL, false, 1, 1)"))
            connection.execute(
                text(
                    "INSERT INTO invocations (id, session_id, agent, state, external, created_at, updated_at_ms,"
                    " active_ms) VALUES ('i1', 's1', 'demo', 'waiting', false, 1, 1000, 0)"
                )
            )
            connection.execute(
                text(
                    "INSERT INTO hitl_requests (hitl_id, hitl_type, session_id, invocation_id, data, metadata, status,"
                    " resume_mode, tool_name, responded_at, created_at, updated_at, updated_at_ms, summary, agent,"
                    " decision, decided_by, external) VALUES (:id, 'tool_approval', 's1', 'i1', '{}', '{}', :status,"
                    " 'response', :tool, :responded, :created, :created, :created_ms, '', :agent, :decision, :decider,"
                    " false)"
                ),
                rows,
            )
    finally:
        engine.dispose()
    backend = SQLHITLBackend(empty_any_db, reviewer="alice")  # opening migrates to head
    try:
        assert stored_counts(empty_any_db)[0], "the upgrade filled the counts"
        assert_counts_match(empty_any_db)
        await assert_figures_match(backend)
    finally:
        await backend.aclose()


async def test_the_migration_buckets_waits_as_the_view_does() -> None:
    """The triggers' time-to-decision buckets are frozen in migration 0012: the view's must be the same."""
    path = migrations_dir() / "versions" / "0012_stats_per_hour.py"
    spec = importlib.util.spec_from_file_location("migration_0012", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert list(module.WAIT_BOUNDS_S) == _WAIT_BOUNDS


@pytest.mark.postgres
async def test_the_counts_refuse_writes_of_their_own(pg_url: str) -> None:
    """On PostgreSQL only the requests' trigger writes the counts: a login that may write tables cannot forge them
    without forging requests (and, for decisions, the audit chain) too."""
    backend = SQLHITLBackend(pg_url, reviewer="alice")
    try:
        await backend.create(
            hitl_id="h1", hitl_type="tool_approval", session_id="s", invocation_id="i", data={}, tool_name="t"
        )
    finally:
        await backend.aclose()
    for statement in (
        "UPDATE stats_created_per_hour SET n = n + 100",
        "INSERT INTO stats_decided_per_hour VALUES (0, 'bob', 1, 'completed', 0, 1000, 0)",
        "DELETE FROM stats_created_per_hour",
    ):
        with pytest.raises(Exception, match="kept by the requests' trigger"):
            execute(pg_url, statement)
    assert_counts_match(pg_url)
