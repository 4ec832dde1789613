"""Rules: the operator's persistent allow/deny/ask patterns: add, revoke, list, count their hits, and settle a
call a rule decided.

A rule that allows or denies a call leaves a request on the record, already decided by ``rule:<id>``, with its
audit row, written in the same transaction as the rule's hit count (:meth:`RuleWrites.settle`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, or_, select, update

from reviewer_app.domain.audit_words import RULE_ADDED, RULE_EDITED, RULE_REVOKED
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rule_outcome import rule_from_row, verdict_decision
from reviewer_app.domain.rules import Rule, Verdict
from reviewer_app.persistence.core_tables import policy_rules_t
from reviewer_app.persistence.store.audit import AuditWrites
from reviewer_app.persistence.store.base import RowSource, Statements
from reviewer_app.persistence.store.requests import RequestWrites
from reviewer_app.persistence.store.rule_audit import RuleEvents, expiries_to_audit

_ACTIVE = policy_rules_t.c.revoked_at.is_(None) & or_(
    policy_rules_t.c.expires_at.is_(None), policy_rules_t.c.expires_at > bindparam("now")
)
_SELECT_ACTIVE = select(policy_rules_t).where(_ACTIVE).order_by(policy_rules_t.c.created_at, policy_rules_t.c.id)
_SELECT_ALL = select(policy_rules_t).order_by(policy_rules_t.c.created_at, policy_rules_t.c.id)
_RECORD_HIT = (
    update(policy_rules_t)
    .where(policy_rules_t.c.id == bindparam("match_id"))
    .values(hit_count=policy_rules_t.c.hit_count + 1, last_hit_at=bindparam("at"))
)
_REVOKE = (
    update(policy_rules_t)
    .where((policy_rules_t.c.id == bindparam("match_id")) & policy_rules_t.c.revoked_at.is_(None))
    .values(revoked_at=bindparam("at"))
)


@dataclass(frozen=True, slots=True)
class StoredRule:
    """A rule with its bookkeeping: who made it, whether it was revoked, how often it decided."""

    rule: Rule
    created_by: str | None = None
    revoked_at: float | None = None
    hit_count: int = 0
    last_hit_at: float | None = None

    def active(self, now: float) -> bool:
        return self.revoked_at is None and not self.rule.expired(now)

    def to_dict(self) -> dict[str, Any]:
        rule = self.rule
        data = rule.to_dict()
        for key, value in (("expires_at", rule.expires_at), ("note", rule.note), ("created_at", rule.created_at)):
            data.setdefault(key, value)  # every key, even when empty: JSON readers need not guess
        data.update(
            created_by=self.created_by,
            revoked_at=self.revoked_at,
            hit_count=self.hit_count,
            last_hit_at=self.last_hit_at,
        )
        return data


def _stored(rows: Iterable[Mapping[str, Any]]) -> list[StoredRule]:
    found: list[StoredRule] = []
    for row in rows:
        rule = rule_from_row(row)
        if rule is not None:
            found.append(
                StoredRule(rule, row["created_by"], row["revoked_at"], int(row["hit_count"] or 0), row["last_hit_at"])
            )
    return found


def _rule_values(rule: Rule, created_by: str | None) -> dict[str, Any]:
    return {
        "id": rule.id,
        "effect": rule.effect,
        "pattern": rule.pattern,
        "scope": rule.scope,
        "expires_at": rule.expires_at,
        "note": rule.note,
        "created_at": rule.created_at if rule.created_at is not None else time.time(),
        "created_by": created_by,
        "revoked_at": None,
        "hit_count": 0,
        "last_hit_at": None,
    }


class RuleLookups:
    """The rules in force, read by both sides: ``store.rules`` and ``tx.rules`` (under the write lock, as the gate
    reads them)."""

    __slots__ = ("_db",)

    def __init__(self, db: RowSource) -> None:
        self._db = db

    def active(self, now: float) -> list[Rule]:
        """The rules in force at ``now`` (not revoked, not expired), oldest first: ``evaluate``'s order."""
        return [entry.rule for entry in _stored(self._db.rows(_SELECT_ACTIVE, {"now": now}))]


class RuleWrites(RuleLookups):
    """``tx.rules``: adding, revoking and counting rules (each change audited), and settling a call a rule
    decided."""

    __slots__ = ("_events", "_requests", "_tx")

    def __init__(self, db: Statements, requests: RequestWrites, audit: AuditWrites) -> None:
        self._db = self._tx = db
        self._requests = requests
        self._events = RuleEvents(db, audit)

    def add(self, rule: Rule, *, created_by: str | None = None, replaces: str | None = None) -> bool:
        """Store a rule (revoking ``replaces``: an edit); False when a rule with its id exists already (then nothing
        changes). Audited as ``rule_added``, or ``rule_edited`` naming the rule it replaced."""
        if self._tx.insert_ignore(policy_rules_t, _rule_values(rule, created_by), ["id"]) == 0:
            return False
        who = created_by or "unknown"
        before = self._events.stored_rule(replaces) if replaces is not None else None
        if before is not None and self._tx.write(_REVOKE, {"match_id": replaces, "at": time.time()}) > 0:
            self._events.record(RULE_EDITED, before=before, after=rule, reviewer=who)
        else:
            self._events.record(RULE_ADDED, before=None, after=rule, reviewer=who)
        return True

    def revoke(self, rule_id: str, *, at: float | None = None, revoked_by: str = "unknown") -> bool:
        """Revoke a rule (it stays on the record, the revocation is audited); False when unknown or already
        revoked."""
        rule = self._events.stored_rule(rule_id)
        if self._tx.write(_REVOKE, {"match_id": rule_id, "at": at if at is not None else time.time()}) == 0:
            return False
        if rule is not None:
            self._events.record(RULE_REVOKED, before=rule, after=None, reviewer=revoked_by)
        return True

    def audit_expired(self, now: float) -> list[str]:
        """Put on the audit log the expiry of every rule past its time not recorded yet; their ids."""
        return self._events.record_expiries(now)

    def record_hit(self, rule_id: str, *, at: float | None = None) -> None:
        self._tx.write(_RECORD_HIT, {"match_id": rule_id, "at": at if at is not None else time.time()})

    def settle(
        self, request: NewRequest, verdict: Verdict, arguments: Any, *, ensure_parents: bool = True
    ) -> HITLRecord:
        """Record a call an allow or deny rule decided: the request, decided by ``rule:<id>`` with its audit row,
        and the rule's hit, all in this transaction. Raises HITLConflict if the request exists already."""
        decision = verdict_decision(verdict, arguments)
        self._requests.create(request, ensure_parents=ensure_parents)
        assert decision.reviewer is not None
        record = self._requests.decide(
            request.hitl_id, decision.to_user_response(), reviewer=decision.reviewer, message=decision.message
        )
        self.record_hit(verdict.rule.id)
        return record


class RuleReads(RuleLookups):
    """``store.rules``: the rules, with their bookkeeping."""

    __slots__ = ()

    def list(self, *, include_inactive: bool = False, now: float | None = None) -> list[StoredRule]:
        """Every rule (``include_inactive``) or those in force at ``now``, oldest first."""
        if include_inactive:
            return _stored(self._db.rows(_SELECT_ALL, {}))
        return _stored(self._db.rows(_SELECT_ACTIVE, {"now": now if now is not None else time.time()}))

    def expiries_to_audit(self, now: float) -> bool:
        """Whether some rule's expiry is not on the audit log yet (read without the write lock)."""
        return expiries_to_audit(self._db, now)
