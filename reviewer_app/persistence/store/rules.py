"""Approve-for-session rules: the waivers a reviewer granted for the rest of a session, each with its scope."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import bindparam, select

from reviewer_app.domain.policy import SessionRule
from reviewer_app.persistence.store.base import ReadsBase, TxBase
from reviewer_app.persistence.tables import rules_t

_SELECT_SESSION_RULES = select(rules_t.c.id, rules_t.c.tool_name, rules_t.c.scope).where(
    rules_t.c.session_id == bindparam("match_id")
)


def _session_rules(rows: Iterable[Mapping[str, Any]]) -> list[tuple[int, SessionRule]]:
    """Rows as ``(id, rule)``; a row this version cannot read waives nothing and is left out."""
    rules = ((int(row["id"]), SessionRule.from_stored(row["tool_name"], row["scope"])) for row in rows)
    return [(rule_id, rule) for rule_id, rule in rules if rule is not None]


class RuleWrites(TxBase):
    """Session-rule writes inside one transaction."""

    def add_session_rule(
        self, session_id: str, rule: SessionRule, *, created_by: str | None, hitl_id: str | None
    ) -> bool:
        """Add an approve-for-session waiver (an upsert: two at once insert one row); False if it existed."""
        values = {
            "session_id": session_id,
            "tool_name": rule.tool_name,
            "scope": rule.stored_scope(),
            "created_at": int(time.time()),
            "created_by": self.recorded(created_by) if created_by is not None else None,
            "hitl_id": hitl_id,
        }
        return self._insert_ignore(rules_t, values, ["session_id", "tool_name", "scope"]) > 0

    def session_rules(self, session_id: str) -> list[SessionRule]:
        """The session's approve-for-session rules, read inside this transaction."""
        return [rule for _, rule in self.session_rule_entries(session_id)]

    def session_rule_entries(self, session_id: str) -> list[tuple[int, SessionRule]]:
        """The session's rules with their ids (an automatic waiver is recorded as ``session-rule:<id>``)."""
        return _session_rules(self._rows(_SELECT_SESSION_RULES, {"match_id": session_id}))


class RuleReads(ReadsBase):
    """Session-rule reads."""

    def session_rules(self, session_id: str) -> list[SessionRule]:
        return [rule for _, rule in self.session_rule_entries(session_id)]

    def session_rule_entries(self, session_id: str) -> list[tuple[int, SessionRule]]:
        return _session_rules(self._read(_SELECT_SESSION_RULES, {"match_id": session_id}))
