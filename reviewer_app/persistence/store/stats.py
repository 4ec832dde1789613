"""Decision statistics by SQL (GROUP BY on the database, never a loop over every request in Python).

The same statements run on SQLite and PostgreSQL: integer floor division (``//`` renders as ``/`` on two
integers in both) buckets the time axis, ``CASE`` buckets the time to decision.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, literal, not_, or_, select

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.identity import SYSTEM_PREFIXES
from reviewer_app.domain.stats import TIME_TO_DECISION_BUCKETS, DecisionStats, TimeBucket, bucket_seconds
from reviewer_app.persistence.store.base import Reader
from reviewer_app.persistence.tables import requests_t

TOP_N = 15
"""Rows kept per breakdown (agents, tools, reviewers, rules): the busiest ones."""

_r = requests_t.c
RULE_PREFIXES = ("rule:", "session-rule:")


def _in_period(column: Any, since_s: int | None, until_s: int) -> ColumnElement[bool]:
    upper = column < literal(until_s)
    return upper if since_s is None else and_(column >= literal(since_s), upper)


def _named(prefixes: tuple[str, ...]) -> ColumnElement[bool]:
    """Decided by an automatic decider: ``rule:x`` on SQLite, ``<login>/rule:x`` on PostgreSQL (domain.identity)."""
    return or_(*(_r.decided_by.like(f"{p}%") for p in prefixes), *(_r.decided_by.like(f"%/{p}%") for p in prefixes))


def _by_rule() -> ColumnElement[bool]:
    return _named(RULE_PREFIXES)


def _by_person() -> ColumnElement[bool]:
    return and_(_r.status != HITLStatus.EXPIRED.value, _r.decided_by.is_not(None), not_(_named(SYSTEM_PREFIXES)))


class StatsReads:
    """``store.stats``: the Statistics view's aggregates."""

    def __init__(self, db: Reader) -> None:
        self._db = db

    def decisions(self, *, since_s: int | None, until_s: int | None = None) -> DecisionStats:
        """Aggregates for requests decided (or created, per agent and tool) in ``[since_s, until_s)``."""
        until = int(time.time()) + 1 if until_s is None else int(until_s)
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

        def top(label: Any, where: ColumnElement[bool]) -> Any:
            name = label.label("name")
            return select(name, count.label("n")).where(where).group_by(name).order_by(count.desc(), name).limit(TOP_N)

        with self._db.reading() as connection:
            if self._db.engines.dialect == "postgresql":  # every figure from one snapshot
                connection.execution_options(isolation_level="REPEATABLE READ")

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
            people = and_(decided, _by_person())
            by_index = {
                int(row[0]): int(row[1])
                for row in connection.execute(
                    select(bucket_index.label("b"), count).where(people).group_by(bucket_index)
                )
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
                rule_hits=pairs(top(_r.decided_by, and_(decided, _by_rule()))),
            )
