"""Waivers: the approve-for-session grants a reviewer made for the rest of a session, each with its scope.

They are stored as session rules (``session_rules``); a call one of them lets through is recorded as a request
settled by ``session-rule:<id>`` with its audit row (:meth:`WaiverWrites.settle`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import bindparam, select

from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.records import NewRequest
from reviewer_app.domain.rule_outcome import waiver_decision
from reviewer_app.domain.waivers import SessionRule
from reviewer_app.persistence.core_tables import rules_t
from reviewer_app.persistence.store.base import RowSource, Statements
from reviewer_app.persistence.store.requests import RequestWrites

_SELECT_SESSION_RULES = select(rules_t.c.id, rules_t.c.tool_name, rules_t.c.scope).where(
    rules_t.c.session_id == bindparam("match_id")
)


def _session_rules(rows: Iterable[Mapping[str, Any]]) -> list[tuple[int, SessionRule]]:
    """Rows as ``(id, rule)``; a row this version cannot read waives nothing and is left out."""
    rules = ((int(row["id"]), SessionRule.from_stored(row["tool_name"], row["scope"])) for row in rows)
    return [(rule_id, rule) for rule_id, rule in rules if rule is not None]


class WaiverLookups:
    """A session's waivers, read by both sides: ``store.waivers`` and ``tx.waivers`` (under the write lock)."""

    __slots__ = ("_db",)

    def __init__(self, db: RowSource) -> None:
        self._db = db

    def of_session(self, session_id: str) -> list[SessionRule]:
        """The session's waivers."""
        return [rule for _, rule in self.entries(session_id)]

    def entries(self, session_id: str) -> list[tuple[int, SessionRule]]:
        """The session's waivers with their ids (an automatic waiver is recorded as ``session-rule:<id>``)."""
        return _session_rules(self._db.rows(_SELECT_SESSION_RULES, {"match_id": session_id}))


class WaiverWrites(WaiverLookups):
    """``tx.waivers``: granting a waiver, and settling a call one lets through, inside one transaction."""

    __slots__ = ("_requests", "_tx")

    def __init__(self, db: Statements, requests: RequestWrites) -> None:
        self._db = self._tx = db
        self._requests = requests

    def add(self, session_id: str, rule: SessionRule, *, created_by: str | None, hitl_id: str | None) -> bool:
        """Add an approve-for-session waiver (an upsert: two at once insert one row); False if it existed."""
        values = {
            "session_id": session_id,
            "tool_name": rule.tool_name,
            "scope": rule.stored_scope(),
            "created_at": int(time.time()),
            "created_by": self._tx.recorded(created_by) if created_by is not None else None,
            "hitl_id": hitl_id,
        }
        return self._tx.insert_ignore(rules_t, values, ["session_id", "tool_name", "scope"]) > 0

    def settle(
        self, request: NewRequest, rule_id: int, rule: SessionRule, arguments: Any, *, ensure_parents: bool = True
    ) -> HITLRecord:
        """Record a call a session's waiver let through: the request, approved by ``session-rule:<id>`` with its
        audit row, in this transaction. Raises HITLConflict if the request exists already."""
        decision = waiver_decision(rule_id, rule, arguments)
        assert decision.reviewer is not None
        self._requests.create(request, ensure_parents=ensure_parents)
        return self._requests.decide(
            request.hitl_id, decision.to_user_response(), reviewer=decision.reviewer, message=decision.message
        )


class WaiverReads(WaiverLookups):
    """``store.waivers``: a session's waivers."""

    __slots__ = ()
