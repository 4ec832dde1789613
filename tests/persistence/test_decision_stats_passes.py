"""The Statistics view's two-pass aggregates equal the ten statements they replaced (issue 29, item 7).

The reference below is the earlier definition, one aggregate statement per figure, kept verbatim as the
specification; both run on one seeded history with the awkward rows: no agent, no tool name, edits, expiries,
cancellations, rules and waivers (recorded as ``<login>/rule:x`` on PostgreSQL), display names, more agents than
the top list keeps, ties, a decision before the period and one after it.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from sqlalchemy import ColumnElement, and_, case, func, literal, not_, or_, select

from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.identity import SYSTEM_PREFIXES
from reviewer_app.domain.stats import DAY_S, TIME_TO_DECISION_BUCKETS, DecisionStats, TimeBucket, bucket_seconds
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store.stats import RULE_PREFIXES, TOP_N
from reviewer_app.persistence.tables import requests_t
from tests.persistence.test_decision_stats import as_schema_owner, execute

pytestmark = pytest.mark.asyncio

_r = requests_t.c


def _in_period(column: Any, since_s: int | None, until_s: int) -> ColumnElement[bool]:
    upper = column < literal(until_s)
    return upper if since_s is None else and_(column >= literal(since_s), upper)


def _named(prefixes: tuple[str, ...]) -> ColumnElement[bool]:
    return or_(*(_r.decided_by.like(f"{p}%") for p in prefixes), *(_r.decided_by.like(f"%/{p}%") for p in prefixes))


def ten_statements(backend: SQLHITLBackend, since_s: int | None, until: int) -> DecisionStats:
    """The earlier ``StatsReads.decisions``: one statement per figure."""
    bucket = bucket_seconds(since_s, until)
    decided = and_(_r.status != HITLStatus.PENDING.value, _in_period(_r.responded_at, since_s, until))
    created = _in_period(_r.created_at, since_s, until)
    is_expired = case((_r.status == HITLStatus.EXPIRED.value, 1), else_=0)
    waited = _r.responded_at - _r.created_at
    bucket_index = case(
        *((waited < literal(bound), index) for index, (bound, _) in enumerate(TIME_TO_DECISION_BUCKETS) if bound),
        else_=len(TIME_TO_DECISION_BUCKETS) - 1,
    )
    start = (_r.responded_at // literal(bucket)) * literal(bucket)
    count = func.count()
    by_person = and_(_r.status != HITLStatus.EXPIRED.value, _r.decided_by.is_not(None), not_(_named(SYSTEM_PREFIXES)))

    def top(label: Any, where: ColumnElement[bool]) -> Any:
        name = label.label("name")
        return select(name, count.label("n")).where(where).group_by(name).order_by(count.desc(), name).limit(TOP_N)

    with backend.store.stats._db.reading() as connection:

        def pairs(query: Any) -> list[tuple[str, int]]:
            return [(str(row[0]), int(row[1])) for row in connection.execute(query)]

        totals = connection.execute(select(count, func.coalesce(func.sum(is_expired), 0)).where(decided)).one()
        created_n = connection.execute(select(count).where(created)).scalar_one()
        pending_n = connection.execute(select(count).where(_r.status == HITLStatus.PENDING.value)).scalar_one()
        per_bucket = [
            TimeBucket(int(row[0]), int(row[1]) - int(row[2]), int(row[2]))
            for row in connection.execute(
                select(start.label("start"), count, func.coalesce(func.sum(is_expired), 0))
                .where(decided)
                .group_by(start)
                .order_by(start)
            )
        ]
        people = and_(decided, by_person)
        by_index = {
            int(row[0]): int(row[1])
            for row in connection.execute(select(bucket_index.label("b"), count).where(people).group_by(bucket_index))
        }
        mean = connection.execute(select(func.avg(waited)).where(people)).scalar()
        return DecisionStats(
            since_s=since_s,
            until_s=until,
            bucket_s=bucket,
            created=int(created_n),
            decided=int(totals[0]) - int(totals[1]),
            expired=int(totals[1]),
            pending=int(pending_n),
            per_bucket=per_bucket,
            time_to_decision=[(label, by_index.get(i, 0)) for i, (_, label) in enumerate(TIME_TO_DECISION_BUCKETS)],
            mean_time_to_decision_s=None if mean is None else float(mean),
            per_agent=pairs(top(func.coalesce(_r.agent, "(unknown)"), created)),
            per_tool=pairs(top(func.coalesce(_r.tool_name, _r.hitl_type), created)),
            per_reviewer=pairs(top(_r.decided_by, people)),
            rule_hits=pairs(top(_r.decided_by, and_(decided, _named(RULE_PREFIXES)))),
        )


# (decider, status, decision) for request i % len(DECIDERS); None: left pending.
DECIDERS: tuple[tuple[str, HITLStatus, str] | None, ...] = (
    ("alice", HITLStatus.COMPLETED, "approve"),
    ("bob (Bob Stone)", HITLStatus.COMPLETED, "reject"),
    ("alice", HITLStatus.COMPLETED, "edit"),
    ("rule:r1", HITLStatus.COMPLETED, "approve"),
    ("session-rule:w7", HITLStatus.COMPLETED, "approve"),
    ("system:expiry", HITLStatus.EXPIRED, "expire"),
    ("carol", HITLStatus.CANCELLED, "cancel"),
    ("system:abandoned", HITLStatus.CANCELLED, "cancel"),
    ("rule:r2", HITLStatus.EXPIRED, "expire"),
    None,
)
# Seconds between creation and decision, cycling: every time-to-decision bucket, and its bounds.
WAITS = (0, 9, 10, 59, 60, 299, 300, 899, 900, 3599, 3600, 4 * 3600 - 1, 4 * 3600, 3 * DAY_S)


async def seed_history(backend: SQLHITLBackend, target: str, count: int = 70) -> None:
    for i in range(count):
        hitl_id = f"q{i:03d}"
        agent = None if i % 11 == 0 else f"agent{i % 19:02d}"  # 18 named agents: more than the top list keeps
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="question" if i % 13 == 0 else "tool_approval",
            session_id=f"s{i % 4}",
            invocation_id=f"i{i % 4}",
            data={"arguments": {"n": i}},
            metadata={} if agent is None else {"agent": agent},
            tool_name=None if i % 13 == 0 else ("run_shell", "write_file", "read_file")[i % 3],
        )
        drawn = DECIDERS[i % len(DECIDERS)]
        if drawn is None:
            continue
        decider, status, decision = drawn
        response: dict[str, Any] | None = {"decision": decision, "args_sha256": args_digest({"n": i})}
        if decision == "edit":
            response = {"decision": "edit", "args": {"n": -i}}
        if status is not HITLStatus.COMPLETED:
            response = None
        await backend.write(
            lambda tx, h=hitl_id, r=response, s=status, who=decider, d=decision: tx.requests.decide(
                h, r, status=s, reviewer=who, decision=d
            )
        )
        wait = WAITS[i % len(WAITS)]
        execute(target, f"UPDATE hitl_requests SET created_at = responded_at - {wait} WHERE hitl_id = '{hitl_id}'")
    # One decision 40 days ago and one an hour ahead: outside the shorter periods and outside every period.
    moved = "UPDATE hitl_requests SET created_at = {at} - 30, responded_at = {at} WHERE hitl_id = '{hitl_id}'"
    now = int(time.time())
    for at, hitl_id in ((now - 40 * DAY_S, "q001"), (now + 3600, "q002")):
        execute(target, as_schema_owner(target, moved.format(at=at, hitl_id=hitl_id)))


def assert_same(found: DecisionStats, expected: DecisionStats) -> None:
    assert found.mean_time_to_decision_s is not None and expected.mean_time_to_decision_s is not None
    assert math.isclose(found.mean_time_to_decision_s, expected.mean_time_to_decision_s, rel_tol=1e-12)
    assert {**vars_of(found), "mean_time_to_decision_s": None} == {**vars_of(expected), "mean_time_to_decision_s": None}


def vars_of(stats: DecisionStats) -> dict[str, Any]:
    return {name: getattr(stats, name) for name in DecisionStats.__dataclass_fields__}


async def test_two_passes_equal_the_ten_statements(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="alice")
    try:
        await seed_history(backend, any_db)
        now = int(time.time())
        for since, until in ((None, None), (now - DAY_S, None), (now - 7 * DAY_S, None), (now - 30 * DAY_S, None),
                             (None, now - DAY_S), (now - 60 * DAY_S, now - 10 * DAY_S)):  # fmt: skip
            found = await backend.decision_stats(since_s=since, until_s=until)
            expected = await backend.run(ten_statements, backend, since, found.until_s)
            assert_same(found, expected)
        everything = await backend.decision_stats(since_s=None)
        assert len(everything.per_agent) == TOP_N and everything.per_agent[0][1] >= everything.per_agent[-1][1]
        assert ("(unknown)", 7) in everything.per_agent  # every 11th request names no agent
        assert dict(everything.per_tool)["question"] == 6  # no tool name: counted under its type
        assert {name.rsplit("/", 1)[-1] for name, _ in everything.rule_hits} == {
            "rule:r1",
            "session-rule:w7",
            "rule:r2",
        }
        assert not any("system:" in name or "rule:" in name for name, _ in everything.per_reviewer)
        assert everything.expired == 14 and everything.pending == 7
    finally:
        await backend.aclose()


async def test_a_period_with_no_decisions(any_db: str) -> None:
    backend = SQLHITLBackend(any_db, reviewer="alice")
    try:
        await seed_history(backend, any_db, count=12)
        long_ago = int(time.time()) - 400 * DAY_S
        found = await backend.decision_stats(since_s=long_ago - DAY_S, until_s=long_ago)
        expected = await backend.run(ten_statements, backend, long_ago - DAY_S, long_ago)
        assert found == expected
        assert found.pending == 1 and found.decided == found.created == 0 and found.mean_time_to_decision_s is None
    finally:
        await backend.aclose()
