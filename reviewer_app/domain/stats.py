"""Decision statistics over a period: what the Statistics view plots (computed by SQL in the store).

Plain data: the store fills it with two GROUP BY queries, the window only draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

HOUR_S = 3600
DAY_S = 86_400

# Time-to-decision buckets: (upper bound in seconds, exclusive; label). The last bucket is open-ended.
TIME_TO_DECISION_BUCKETS: tuple[tuple[int | None, str], ...] = (
    (10, "0–10s"),  # not "<10s": QtCharts reads axis labels as rich text
    (60, "10s–1m"),
    (300, "1–5m"),
    (900, "5–15m"),
    (3600, "15m–1h"),
    (4 * 3600, "1–4h"),
    (None, "≥4h"),
)


def named_by(decider: str, prefixes: tuple[str, ...]) -> bool:
    """Whether a recorded decider is an automatic one named with one of ``prefixes``: ``rule:x`` as SQLite records
    it, ``<login>/rule:x`` as PostgreSQL does (domain.identity)."""
    return decider.startswith(prefixes) or any(f"/{prefix}" in decider for prefix in prefixes)


def bucket_seconds(since_s: int | None, until_s: int) -> int:
    """The width of one step of the decisions-over-time chart: an hour up to a week (and a bit: "the last 7 days"
    ends a second after now), a day beyond."""
    if since_s is not None and until_s - since_s < 8 * DAY_S:
        return HOUR_S
    return DAY_S


@dataclass(frozen=True, slots=True)
class TimeBucket:
    """Decisions in one bucket of the period: by people or rules (``decided``) and by the clock (``expired``)."""

    start_s: int
    decided: int
    expired: int


@dataclass(frozen=True, slots=True)
class DecisionStats:
    """Aggregates over requests created (per agent/tool) or decided (the rest) in ``[since_s, until_s)``.

    ``since_s`` None: everything recorded. Reviewers are people: rules (``rule:<id>``) and the system
    (``system:expiry``) are counted under ``rule_hits`` and ``expired`` instead.
    """

    since_s: int | None
    until_s: int
    bucket_s: int
    created: int = 0
    decided: int = 0
    expired: int = 0
    pending: int = 0
    per_bucket: list[TimeBucket] = field(default_factory=list)
    time_to_decision: list[tuple[str, int]] = field(default_factory=list)
    mean_time_to_decision_s: float | None = None
    per_agent: list[tuple[str, int]] = field(default_factory=list)
    per_tool: list[tuple[str, int]] = field(default_factory=list)
    per_reviewer: list[tuple[str, int]] = field(default_factory=list)
    rule_hits: list[tuple[str, int]] = field(default_factory=list)
