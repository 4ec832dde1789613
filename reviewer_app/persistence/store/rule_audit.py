"""Changes to the persistent rules as audit rows in the decision log's hash chain: added, edited, revoked, expired.

A rule decides calls on the operator's behalf, so who made, changed or dropped one, and when, belongs on the same
record as the decisions (and under the same verification) as ``audit verify`` walks it. The row's ``hitl_id`` is
``rule:<id>``, its decision the event (:mod:`reviewer_app.domain.audit_words`), its shown arguments the rule as it
was and its edited arguments the rule as it became. An expiry has no moment anyone acts: the expiry sweep that
expires requests records it once, the first time it finds a rule past its time.
"""

from __future__ import annotations

from sqlalchemy import and_, bindparam, exists, literal, select

from reviewer_app.domain.audit_words import EXPIRY_REVIEWER, RULE_EXPIRED, rule_subject
from reviewer_app.domain.rule_outcome import rule_from_row
from reviewer_app.domain.rules import Rule
from reviewer_app.persistence.core_tables import audit_t, policy_rules_t
from reviewer_app.persistence.store.audit import AuditWrites
from reviewer_app.persistence.store.base import RowSource, Statements
from reviewer_app.persistence.store.records import now_ms

_SELECT_RULE = select(policy_rules_t).where(policy_rules_t.c.id == bindparam("match_id"))
_EXPIRED_UNAUDITED = (
    select(policy_rules_t)
    .where(
        policy_rules_t.c.revoked_at.is_(None),
        policy_rules_t.c.expires_at.is_not(None),
        policy_rules_t.c.expires_at <= bindparam("now"),
        ~exists().where(
            and_(
                audit_t.c.hitl_id == literal("rule:") + policy_rules_t.c.id,
                audit_t.c.decision == literal(RULE_EXPIRED),
            )
        ),
    )
    .order_by(policy_rules_t.c.expires_at, policy_rules_t.c.id)
)
# Built once: the compiled-statement cache is keyed by the statement object (a new one per call compiled it again).
_ANY_EXPIRED_UNAUDITED = _EXPIRED_UNAUDITED.limit(1)


class RuleEvents:
    """Rule events appended to the audit chain inside the transaction that changes the rule (``tx.rules`` uses it)."""

    __slots__ = ("_audit", "_db")

    def __init__(self, db: Statements, audit: AuditWrites) -> None:
        self._db = db
        self._audit = audit

    def stored_rule(self, rule_id: str) -> Rule | None:
        rows = self._db.rows(_SELECT_RULE, {"match_id": rule_id})
        return rule_from_row(rows[0]) if rows else None

    def record(self, event: str, *, before: Rule | None, after: Rule | None, reviewer: str) -> str:
        """Append one rule event (``before``: the rule as it was, ``after``: as it is now); returns the row hash."""
        rule = after if after is not None else before
        assert rule is not None, "a rule event is about a rule"
        return self._audit.append(
            hitl_id=rule_subject(rule.id),
            decision=event,
            reviewer=reviewer,
            at_ms=now_ms(),
            shown_args=None if before is None else before.to_dict(),
            edited_args=None if after is None else after.to_dict(),
            message=rule.note or None,
        )

    def record_expiries(self, now: float) -> list[str]:
        """Record the expiry of every rule past its time whose expiry is not on the log yet; their ids."""
        expired = [rule for row in self._db.rows(_EXPIRED_UNAUDITED, {"now": now}) if (rule := rule_from_row(row))]
        for rule in expired:
            self.record(RULE_EXPIRED, before=rule, after=None, reviewer=EXPIRY_REVIEWER)
        return [rule.id for rule in expired]


def expiries_to_audit(db: RowSource, now: float) -> bool:
    """Whether the expiry sweep has rule expiries to record (read without taking the write lock)."""
    return bool(db.rows(_ANY_EXPIRED_UNAUDITED, {"now": now}))
