"""Persistent policy rules: add, revoke, list, count their hits, and settle a call a rule decided.

A rule that allows or denies a call leaves a request on the record, already decided by ``rule:<id>``, with its
audit row, written in the same transaction as the rule's hit count (:meth:`PolicyWrites.settle_by_rule`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import bindparam, or_, select, update

from reviewer_app.domain.audit_words import RULE_ADDED, RULE_EDITED, RULE_REVOKED
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.policy import SessionRule
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rule_outcome import rule_from_row, verdict_decision, waiver_decision
from reviewer_app.domain.rules import Rule, Verdict
from reviewer_app.persistence.store.base import ReadsBase
from reviewer_app.persistence.store.requests import RequestWrites
from reviewer_app.persistence.store.rule_audit import RuleEventWrites
from reviewer_app.persistence.tables import policy_rules_t

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


class PolicyWrites(RequestWrites, RuleEventWrites):
    """Policy-rule writes (and the reads the gate makes under the same write lock); each change is audited."""

    def add_policy_rule(self, rule: Rule, *, created_by: str | None = None, replaces: str | None = None) -> bool:
        """Store a rule (revoking ``replaces``: an edit); False when a rule with its id exists already (then nothing
        changes). Audited as ``rule_added``, or ``rule_edited`` naming the rule it replaced."""
        if self._insert_ignore(policy_rules_t, _rule_values(rule, created_by), ["id"]) == 0:
            return False
        who = created_by or "unknown"
        before = self.stored_rule(replaces) if replaces is not None else None
        if before is not None and self._write(_REVOKE, {"match_id": replaces, "at": time.time()}) > 0:
            self.audit_rule_event(RULE_EDITED, before=before, after=rule, reviewer=who)
        else:
            self.audit_rule_event(RULE_ADDED, before=None, after=rule, reviewer=who)
        return True

    def revoke_policy_rule(self, rule_id: str, *, at: float | None = None, revoked_by: str = "unknown") -> bool:
        """Revoke a rule (it stays on the record, the revocation is audited); False when unknown or already revoked."""
        rule = self.stored_rule(rule_id)
        if self._write(_REVOKE, {"match_id": rule_id, "at": at if at is not None else time.time()}) == 0:
            return False
        if rule is not None:
            self.audit_rule_event(RULE_REVOKED, before=rule, after=None, reviewer=revoked_by)
        return True

    def record_rule_hit(self, rule_id: str, *, at: float | None = None) -> None:
        self._write(_RECORD_HIT, {"match_id": rule_id, "at": at if at is not None else time.time()})

    def active_policy_rules(self, now: float) -> list[Rule]:
        """The rules in force at ``now`` (not revoked, not expired), oldest first: ``evaluate``'s order."""
        return [entry.rule for entry in _stored(self._rows(_SELECT_ACTIVE, {"now": now}))]

    def settle_by_rule(
        self, request: NewRequest, verdict: Verdict, arguments: Any, *, ensure_parents: bool = True
    ) -> HITLRecord:
        """Record a call an allow or deny rule decided: the request, decided by ``rule:<id>`` with its audit row,
        and the rule's hit, all in this transaction. Raises HITLConflict if the request exists already."""
        decision = verdict_decision(verdict, arguments)
        self.create_request(request, ensure_parents=ensure_parents)
        assert decision.reviewer is not None
        record = self.settle(
            request.hitl_id, decision.to_user_response(), reviewer=decision.reviewer, message=decision.message
        )
        self.record_rule_hit(verdict.rule.id)
        return record

    def settle_by_waiver(
        self, request: NewRequest, rule_id: int, rule: SessionRule, arguments: Any, *, ensure_parents: bool = True
    ) -> HITLRecord:
        """Record a call a session's waiver let through: the request, approved by ``session-rule:<id>`` with its
        audit row, in this transaction. Raises HITLConflict if the request exists already."""
        decision = waiver_decision(rule_id, rule, arguments)
        assert decision.reviewer is not None
        self.create_request(request, ensure_parents=ensure_parents)
        return self.settle(
            request.hitl_id, decision.to_user_response(), reviewer=decision.reviewer, message=decision.message
        )


class PolicyReads(ReadsBase):
    """Policy-rule reads."""

    def policy_rules(self, *, include_inactive: bool = False, now: float | None = None) -> list[StoredRule]:
        """Every rule (``include_inactive``) or those in force at ``now``, oldest first."""
        if include_inactive:
            return _stored(self._read(_SELECT_ALL, {}))
        return _stored(self._read(_SELECT_ACTIVE, {"now": now if now is not None else time.time()}))

    def active_policy_rules(self, now: float) -> list[Rule]:
        return [entry.rule for entry in self.policy_rules(now=now)]
