"""Decision statistics by SQL: two passes over the requests, whatever the period, on SQLite and PostgreSQL.

Ten aggregate statements, each a whole scan, took 4 s over a million decisions on PostgreSQL. Now one ``GROUP BY``
(time bucket, decider) counts everything that is per bucket or per decider with ``FILTER`` clauses (SQLite has
them since 3.30), and one ``GROUP BY`` (agent, tool) counts the requests created; the totals, the people's
figures and the top-N lists are summed from those groups in Python (a few per day and decider, never a row per
request). Who is a person or a rule is read off each decider's name once per group instead of by ``LIKE`` on
every row. Integer floor division (``//`` renders as ``/`` on two integers in both) buckets the time axis,
``CASE`` buckets the time to decision.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, and_, case, func, literal, select

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.identity import SYSTEM_PREFIXES
from reviewer_app.domain.stats import (
    TIME_TO_DECISION_BUCKETS,
    DecisionStats,
    TimeBucket,
    bucket_seconds,
    named_by,
)
from reviewer_app.persistence.store.base import Reader
from reviewer_app.persistence.tables import requests_t

TOP_N = 15
"""Rows kept per breakdown (agents, tools, reviewers, rules): the busiest ones."""

_r = requests_t.c
RULE_PREFIXES = ("rule:", "session-rule:")


def _in_period(column: Any, since_s: int | None, until_s: int) -> ColumnElement[bool]:
    upper = column < literal(until_s)
    return upper if since_s is None else and_(column >= literal(since_s), upper)


def _top(counts: Counter[str]) -> list[tuple[str, int]]:
    """The busiest ``TOP_N`` names, ties by name."""
    ranked = sorted(((name, n) for name, n in counts.items() if n), key=lambda item: (-item[1], item[0]))
    return ranked[:TOP_N]


def _by_decider_and_bucket(since_s: int | None, until: int, bucket: int) -> Any:
    """Per (time bucket, decider) of the requests decided in the period: decided, expired, decided by the clock
    or not, and the time to decision (a count per bucket, and the sum) of those not expired. The requests created
    in the period and the pending ones fall in the (NULL, NULL) group when not decided in it."""
    decided = and_(_r.status != HITLStatus.PENDING.value, _in_period(_r.responded_at, since_s, until))
    created = _in_period(_r.created_at, since_s, until)
    pending = _r.status == HITLStatus.PENDING.value
    answered = and_(decided, _r.status != HITLStatus.EXPIRED.value)
    waited = _r.responded_at - _r.created_at
    bucket_index = case(
        *((waited < literal(bound), index) for index, (bound, _) in enumerate(TIME_TO_DECISION_BUCKETS) if bound),
        else_=len(TIME_TO_DECISION_BUCKETS) - 1,
    )
    start = case((decided, (_r.responded_at // literal(bucket)) * literal(bucket)))
    decider = case((decided, _r.decided_by))
    count = func.count()
    return (
        select(
            start.label("start"),
            decider.label("decider"),
            count.filter(decided),
            count.filter(and_(decided, _r.status == HITLStatus.EXPIRED.value)),
            count.filter(created),
            count.filter(pending),
            func.sum(waited).filter(answered),
            *(count.filter(and_(answered, bucket_index == i)) for i in range(len(TIME_TO_DECISION_BUCKETS))),
        )
        .where(decided | created | pending)
        .group_by(start, decider)
    )


def _created_by_agent_and_tool(since_s: int | None, until: int) -> Any:
    agent, tool = func.coalesce(_r.agent, "(unknown)"), func.coalesce(_r.tool_name, _r.hitl_type)
    return (
        select(agent.label("agent"), tool.label("tool"), func.count())
        .where(_in_period(_r.created_at, since_s, until))
        .group_by(agent, tool)
    )


class StatsReads:
    """``store.stats``: the Statistics view's aggregates."""

    def __init__(self, db: Reader) -> None:
        self._db = db

    def decisions(self, *, since_s: int | None, until_s: int | None = None) -> DecisionStats:
        """Aggregates for requests decided (or created, per agent and tool) in ``[since_s, until_s)``."""
        until = int(time.time()) + 1 if until_s is None else int(until_s)
        bucket = bucket_seconds(since_s, until)
        with self._db.reading() as connection:
            if self._db.engines.dialect == "postgresql":  # both passes from one snapshot
                connection.execution_options(isolation_level="REPEATABLE READ")
            groups = connection.execute(_by_decider_and_bucket(since_s, until, bucket)).all()
            created = connection.execute(_created_by_agent_and_tool(since_s, until)).all()
        return _stats_of(since_s, until, bucket, groups, created)


def _stats_of(
    since_s: int | None, until: int, bucket: int, groups: Iterable[Any], created: Iterable[Any]
) -> DecisionStats:
    """The view's figures summed from the two passes' groups."""
    decided = expired = created_n = pending = answered_n = 0
    waited_s = 0
    per_bucket: dict[int, list[int]] = {}
    by_index = [0] * len(TIME_TO_DECISION_BUCKETS)
    people: Counter[str] = Counter()
    rules: Counter[str] = Counter()
    for start, decider, n_decided, n_expired, n_created, n_pending, waited, *indexed in groups:
        decided, expired = decided + int(n_decided), expired + int(n_expired)
        created_n, pending = created_n + int(n_created), pending + int(n_pending)
        if start is not None:
            step = per_bucket.setdefault(int(start), [0, 0])
            step[0] += int(n_decided) - int(n_expired)
            step[1] += int(n_expired)
        if decider is None:
            continue
        if named_by(str(decider), RULE_PREFIXES):
            rules[str(decider)] += int(n_decided)
        if named_by(str(decider), SYSTEM_PREFIXES):
            continue
        person_n = sum(int(n) for n in indexed)
        people[str(decider)] += person_n
        answered_n += person_n
        waited_s += int(waited or 0)
        by_index = [total + int(n) for total, n in zip(by_index, indexed, strict=True)]
    agents: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    for agent, tool, n in created:
        agents[str(agent)] += int(n)
        tools[str(tool)] += int(n)
    return DecisionStats(
        since_s=since_s,
        until_s=until,
        bucket_s=bucket,
        created=created_n,
        decided=decided - expired,
        expired=expired,
        pending=pending,
        per_bucket=[TimeBucket(start, d, e) for start, (d, e) in sorted(per_bucket.items())],
        time_to_decision=[(label, by_index[i]) for i, (_, label) in enumerate(TIME_TO_DECISION_BUCKETS)],
        mean_time_to_decision_s=waited_s / answered_n if answered_n else None,
        per_agent=_top(agents),
        per_tool=_top(tools),
        per_reviewer=_top(people),
        rule_hits=_top(rules),
    )
