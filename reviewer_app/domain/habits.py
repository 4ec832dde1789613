"""What the history says about the operator and the rules: their own numbers, rules worth making, rules to fix.

Why: operators approve most of what they are asked, which is how rubber-stamping starts. Their own figures (time
to decide, approve rate per tool) show where attention has gone; calls approved again and again are better
settled by a narrow rule; rules that never match, are shadowed by a deny, or match high-risk calls they can never
settle are noise. Plain functions over decided request records (``HITLRecord`` dicts) and rules.

Public API:

- ``operator_numbers(records) -> OperatorNumbers`` (``to_dict()``): time to decide p50/p90 per tool and agent,
  approve rate per tool with rubber-stamp candidates, the share settled by rules
- ``suggest_rules(records, rules, now, *, minimum=5) -> list[Suggestion]``: "`npm test` approved 14 times in 3
  sessions: make it a rule?" with the narrowest pattern
- ``lint_rules(entries, records, now, *, days=30) -> list[LintFinding]``: never matched in N days, shadowed by a
  deny or ask rule, matching high-risk requests in history
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from reviewer_app.domain.hitl import HITLRecord, HITLStatus
from reviewer_app.domain.identity import SYSTEM_PREFIXES
from reviewer_app.domain.risk import assess
from reviewer_app.domain.rule_choices import narrowest_pattern_for
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.domain.rules import Rule, evaluate

RULE_PREFIXES = ("rule:", "session-rule:")
RUBBER_STAMP_RATE = 0.95
RUBBER_STAMP_MIN = 20
RUBBER_STAMP_FAST_S = 5.0
DAY_S = 86_400


def _decider(record: HITLRecord) -> str:
    response = record.get("user_response") if isinstance(record.get("user_response"), dict) else {}
    assert isinstance(response, dict)
    return str(response.get("reviewer") or "")


def _automatic(decider: str, prefixes: tuple[str, ...]) -> bool:
    name = decider.rsplit("/", 1)[-1]  # PostgreSQL records ``<login>/rule:x``
    return name.startswith(prefixes)


def _decision(record: HITLRecord) -> str:
    response = record.get("user_response") if isinstance(record.get("user_response"), dict) else {}
    assert isinstance(response, dict)
    return str(response.get("decision") or "")


def _by_person(record: HITLRecord) -> bool:
    return record.get("status") == HITLStatus.COMPLETED.value and not _automatic(_decider(record), SYSTEM_PREFIXES)


def _p50_p90(values: Sequence[float]) -> tuple[float, float]:
    """Median and 90th percentile, interpolated between closest ranks."""
    if len(values) == 1:
        return float(values[0]), float(values[0])
    return float(statistics.median(values)), float(statistics.quantiles(values, n=10, method="inclusive")[8])


@dataclass(frozen=True, slots=True)
class Group:
    """One tool's or agent's figures over decisions made by people."""

    name: str
    decided: int
    approved: int
    p50_s: float
    p90_s: float

    @property
    def approve_rate(self) -> float:
        return self.approved / self.decided if self.decided else 0.0

    @property
    def rubber_stamp(self) -> bool:
        """Nearly always approved, quickly, many times: the decision may no longer be a look."""
        return (
            self.decided >= RUBBER_STAMP_MIN
            and self.approve_rate >= RUBBER_STAMP_RATE
            and self.p50_s <= RUBBER_STAMP_FAST_S
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "decided": self.decided,
            "approved": self.approved,
            "approve_rate": round(self.approve_rate, 4),
            "time_to_decide_p50_s": self.p50_s,
            "time_to_decide_p90_s": self.p90_s,
            "rubber_stamp_candidate": self.rubber_stamp,
        }


@dataclass(frozen=True, slots=True)
class OperatorNumbers:
    decided: int
    by_people: int
    by_rules: int
    expired: int
    per_tool: tuple[Group, ...]
    per_agent: tuple[Group, ...]

    @property
    def rule_share(self) -> float:
        settled = self.by_people + self.by_rules
        return self.by_rules / settled if settled else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "decided": self.decided,
            "by_people": self.by_people,
            "by_rules": self.by_rules,
            "expired": self.expired,
            "share_settled_by_rules": round(self.rule_share, 4),
            "per_tool": [group.to_dict() for group in self.per_tool],
            "per_agent": [group.to_dict() for group in self.per_agent],
            "rubber_stamp_candidates": [group.name for group in self.per_tool if group.rubber_stamp],
        }


def _groups(samples: dict[str, list[tuple[float, bool]]]) -> tuple[Group, ...]:
    groups = []
    for name, values in samples.items():
        p50, p90 = _p50_p90([wait for wait, _ in values])
        groups.append(Group(name, len(values), sum(ok for _, ok in values), p50, p90))
    return tuple(sorted(groups, key=lambda g: (-g.decided, g.name)))


def operator_numbers(records: Iterable[HITLRecord]) -> OperatorNumbers:
    """The figures over ``records`` (decided or expired requests; pending ones are skipped)."""
    per_tool: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    per_agent: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    decided = by_people = by_rules = expired = 0
    for record in records:
        status = record.get("status")
        if status == HITLStatus.EXPIRED.value:
            expired += 1
            continue
        if status != HITLStatus.COMPLETED.value:
            continue
        decided += 1
        decider = _decider(record)
        if _automatic(decider, RULE_PREFIXES):
            by_rules += 1
            continue
        if _automatic(decider, SYSTEM_PREFIXES):
            continue
        by_people += 1
        wait = max(0.0, float((record.get("responded_at") or 0) - (record.get("created_at") or 0)))
        approved = _decision(record) in ("approve", "approve_for_session", "edit")
        metadata = record.get("metadata") if isinstance(record.get("metadata"), dict) else {}
        data = record.get("data") if isinstance(record.get("data"), dict) else {}
        assert isinstance(metadata, dict) and isinstance(data, dict)
        per_tool[str(record.get("tool_name") or record.get("hitl_type"))].append((wait, approved))
        per_agent[str(metadata.get("agent") or data.get("agent") or "?")].append((wait, approved))
    return OperatorNumbers(decided, by_people, by_rules, expired, _groups(per_tool), _groups(per_agent))


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A rule the history argues for: the narrowest pattern covering calls a person approved every time."""

    pattern: str
    approvals: int
    sessions: int
    example: str

    def describe(self) -> str:
        return (
            f"{self.example} approved {self.approvals} times in {self.sessions} session(s): "
            f"make it a rule? reviewer-app rules add allow '{self.pattern}'"
        )

    def to_dict(self) -> dict[str, Any]:
        return {"pattern": self.pattern, "approvals": self.approvals, "sessions": self.sessions,
                "example": self.example, "text": self.describe()}  # fmt: skip


def _shown(call: Any) -> str:
    return str(call.command or call.path or call.tool_name)


def suggest_rules(
    records: Iterable[HITLRecord], rules: Sequence[Rule], now: float, *, minimum: int = 5
) -> list[Suggestion]:
    """Patterns a person approved at least ``minimum`` times and never rejected, that no rule settles yet and
    that are not high risk, narrowest pattern first by count."""
    approvals: dict[str, int] = defaultdict(int)
    sessions: dict[str, set[str]] = defaultdict(set)
    refused: set[str] = set()
    examples: dict[str, str] = {}
    for record in records:
        if not _by_person(record):
            continue
        call = call_of_record(record)
        if call is None:
            continue
        pattern = narrowest_pattern_for(call)
        if pattern is None:
            continue
        if _decision(record) in ("approve", "approve_for_session"):
            if pattern not in examples:
                if assess(call, scan_secrets=False).high or evaluate(rules, call, now) is not None:
                    refused.add(pattern)
                examples[pattern] = _shown(call)
            approvals[pattern] += 1
            sessions[pattern].add(str(record.get("session_id")))
        else:
            refused.add(pattern)
    found = [
        Suggestion(pattern, count, len(sessions[pattern]), examples[pattern])
        for pattern, count in approvals.items()
        if count >= minimum and pattern not in refused
    ]
    return sorted(found, key=lambda s: (-s.approvals, s.pattern))


@dataclass(frozen=True, slots=True)
class LintFinding:
    rule_id: str
    pattern: str
    problem: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule_id": self.rule_id, "pattern": self.pattern, "problem": self.problem}


@dataclass
class _History:
    matched: int = 0
    shadowed_by: dict[str, str] = field(default_factory=dict)
    high_risk: int = 0
    unshadowed: int = 0


def lint_rules(
    entries: Iterable[tuple[Rule, int, float | None]],
    records: Iterable[HITLRecord],
    now: float,
    *,
    days: int = 30,
) -> list[LintFinding]:
    """Findings for the rules in force, given as ``(rule, hit_count, last_hit_at)``: never matched in ``days``
    days (and older than that), allow rules whose every past match a deny/ask rule takes, wildcard allow rules
    that match high-risk requests in history (which they never settle)."""
    entries = list(entries)
    rules = [rule for rule, _hits, _last in entries]
    restrictive = [rule for rule in rules if rule.effect in ("deny", "ask")]
    history: dict[str, _History] = {rule.id: _History() for rule in rules if rule.effect == "allow"}
    for record in records:
        call = call_of_record(record)
        if call is None:
            continue
        high: bool | None = None
        for rule in rules:
            if rule.effect != "allow" or not rule.applies_to(call, now):
                continue
            seen = history[rule.id]
            seen.matched += 1
            taker = next((other for other in restrictive if other.applies_to(call, now)), None)
            if taker is not None:
                seen.shadowed_by[taker.id] = taker.pattern
            else:
                seen.unshadowed += 1
            if not rule.parsed.exact:
                high = assess(call, scan_secrets=False).high if high is None else high
                seen.high_risk += int(high)
    findings: list[LintFinding] = []
    for rule, hits, last_hit in entries:
        old_enough = rule.created_at is None or now - rule.created_at >= days * DAY_S
        if old_enough and (hits == 0 or last_hit is None or now - last_hit >= days * DAY_S):
            findings.append(LintFinding(rule.id, rule.pattern, f"never matched (no hit) in the last {days} days"))
        record_of = history.get(rule.id)
        if record_of is None:
            continue
        seen = record_of
        if seen.matched and not seen.unshadowed:
            takers = ", ".join(f"{rid} ({pattern})" for rid, pattern in sorted(seen.shadowed_by.items()))
            findings.append(LintFinding(rule.id, rule.pattern, f"shadowed: every past match is taken by {takers}"))
        if seen.high_risk:
            findings.append(
                LintFinding(
                    rule.id,
                    rule.pattern,
                    f"matches {seen.high_risk} high-risk request(s) in history, which it never settles "
                    "(only an exact rule settles a high-risk call)",
                )
            )
    return findings
