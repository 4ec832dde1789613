"""Statistics aggregates (issue 19): computed by SQL, the same figures on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from reviewer_app.domain.rules import Rule
from reviewer_app.domain.stats import DAY_S, HOUR_S, TIME_TO_DECISION_BUCKETS
from reviewer_app.hitl import SQLHITLBackend

pytestmark = pytest.mark.asyncio


def sql_url(target: str) -> str:
    return target if "://" in target else f"sqlite:///{Path(target)}"


def execute(target: str, statement: str) -> None:
    engine = create_engine(sql_url(target))
    try:
        with engine.begin() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


def as_schema_owner(target: str, statement: str) -> str:
    """``statement`` on decided rows as the schema owner runs it on PostgreSQL, where a decided row is final
    (migration 0011): that one trigger set aside, the statistics' triggers left on (their deferred counts are
    written before the trigger is enabled again, as ALTER TABLE requires)."""
    if "://" not in target:
        return statement
    return (
        f"ALTER TABLE hitl_requests DISABLE TRIGGER hitl_requests_decided_is_final; {statement}; "
        "SET CONSTRAINTS ALL IMMEDIATE; ALTER TABLE hitl_requests ENABLE TRIGGER hitl_requests_decided_is_final"
    )


async def make(backend: SQLHITLBackend, hitl_id: str, agent: str, tool: str, **extra: object) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id=f"s-{agent}",
        invocation_id=f"i-{agent}",
        data={"arguments": {"n": hitl_id}},
        metadata={"agent": agent},
        tool_name=tool,
        **extra,  # type: ignore[arg-type]
    )


async def seeded(target: str) -> tuple[SQLHITLBackend, SQLHITLBackend]:
    """alice approves h1 (after 2 min) and h2 (after 20 min), bob rejects h3 at once, a deny rule settles h4,
    h5 expires, h6 stays pending."""
    alice = SQLHITLBackend(target, reviewer="alice")
    bob = SQLHITLBackend(target, reviewer="bob")
    await make(alice, "h1", "alpha", "write_file")
    await make(alice, "h2", "alpha", "run_shell")
    await make(alice, "h3", "beta", "run_shell")
    await make(alice, "h4", "beta", "delete_everything")
    await make(alice, "h5", "beta", "run_shell", expires_at=int(time.time()) - 1)
    await make(alice, "h6", "beta", "run_shell")
    await alice.respond("h1", {"decision": "reject", "message": "no"})
    await alice.respond("h2", {"decision": "reject", "message": "no"})
    await bob.respond("h3", {"decision": "reject", "message": "no"})
    rule = await alice.add_rule(Rule.create("deny", "delete_everything", now=time.time()))
    assert [r["hitl_id"] for r in await alice.settle_pending_by_rule(rule.rule.id)] == ["h4"]
    assert [r["hitl_id"] for r in await alice.expire_due()] == ["h5"]
    execute(target, "UPDATE hitl_requests SET created_at = responded_at - 120 WHERE hitl_id = 'h1'")
    execute(target, "UPDATE hitl_requests SET created_at = responded_at - 1200 WHERE hitl_id = 'h2'")
    return alice, bob


async def test_aggregates_over_the_last_day(any_db: str) -> None:
    alice, bob = await seeded(any_db)
    try:
        now = int(time.time())
        stats = await alice.decision_stats(since_s=now - DAY_S)
        assert stats.bucket_s == HOUR_S
        assert (stats.created, stats.decided, stats.expired, stats.pending) == (6, 4, 1, 1)
        assert sum(b.decided for b in stats.per_bucket) == 4 and sum(b.expired for b in stats.per_bucket) == 1
        assert all(b.start_s % HOUR_S == 0 for b in stats.per_bucket)
        buckets = dict(stats.time_to_decision)
        assert [label for label, _ in stats.time_to_decision] == [label for _, label in TIME_TO_DECISION_BUCKETS]
        # People only: the rule's and the clock's decisions are not a reviewer's reaction time.
        assert buckets["0–10s"] == 1 and buckets["1–5m"] == 1 and buckets["15m–1h"] == 1
        assert sum(buckets.values()) == 3
        assert stats.mean_time_to_decision_s is not None and 440 <= stats.mean_time_to_decision_s <= 445
        assert dict(stats.per_agent) == {"alpha": 2, "beta": 4}
        assert dict(stats.per_tool) == {"run_shell": 4, "write_file": 1, "delete_everything": 1}
        assert dict(stats.per_reviewer) == {alice.reviewer: 2, bob.reviewer: 1}
        assert len(stats.rule_hits) == 1 and "rule:" in stats.rule_hits[0][0]
        assert sum(n for _, n in stats.rule_hits) == 1
        assert stats.per_agent[0] == ("beta", 4)  # busiest first
    finally:
        await alice.aclose()
        await bob.aclose()


async def test_period_excludes_older_decisions(any_db: str) -> None:
    alice, bob = await seeded(any_db)
    try:
        old = int(time.time()) - 40 * DAY_S
        backdate = f"UPDATE hitl_requests SET created_at = {old - 5}, responded_at = {old} WHERE hitl_id = 'h3'"
        execute(any_db, as_schema_owner(any_db, backdate))
        week = await alice.decision_stats(since_s=int(time.time()) - 7 * DAY_S)
        assert week.bucket_s == HOUR_S
        month = await alice.decision_stats(since_s=int(time.time()) - 30 * DAY_S)
        assert month.bucket_s == DAY_S and month.decided == 3
        assert week.decided == 3 and week.created == 5
        assert bob.reviewer not in dict(week.per_reviewer)
        everything = await alice.decision_stats(since_s=None)
        assert everything.bucket_s == DAY_S and everything.decided == 4 and everything.created == 6
        assert dict(everything.per_reviewer)[bob.reviewer] == 1
        assert await alice.audit_count() == 6  # five decisions and the deny rule's addition (rule events are audited)
    finally:
        await alice.aclose()
        await bob.aclose()


async def test_empty_database(tmp_path: Path) -> None:
    backend = SQLHITLBackend(tmp_path / "empty.db")
    try:
        stats = await backend.decision_stats(since_s=None)
        assert (stats.created, stats.decided, stats.expired, stats.pending) == (0, 0, 0, 0)
        assert stats.per_bucket == [] and stats.mean_time_to_decision_s is None
        assert all(n == 0 for _, n in stats.time_to_decision)
        assert await backend.audit_count() == 0
    finally:
        await backend.aclose()
