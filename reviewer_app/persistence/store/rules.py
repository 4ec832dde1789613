"""Approve-for-session rules: the waivers a reviewer granted for the rest of a session."""

from __future__ import annotations

import time

from sqlalchemy import bindparam, insert, select

from reviewer_app.domain.policy import SessionRule
from reviewer_app.persistence.store.base import ReadsBase, TxBase
from reviewer_app.persistence.tables import (
    rules_t,
)

_SELECT_SESSION_RULES = select(rules_t.c.tool_name, rules_t.c.command_prefix).where(
    rules_t.c.session_id == bindparam("match_id")
)


class RuleWrites(TxBase):
    """Session-rule writes inside one transaction."""

    def add_session_rule(
        self, session_id: str, rule: SessionRule, *, created_by: str | None, hitl_id: str | None
    ) -> bool:
        """Add an approve-for-session waiver; False if the same rule already existed."""
        existing = self.connection.execute(
            select(rules_t.c.id).where(
                rules_t.c.session_id == session_id,
                rules_t.c.tool_name == rule.tool_name,
                rules_t.c.command_prefix.is_(None)
                if rule.command_prefix is None
                else rules_t.c.command_prefix == rule.command_prefix,
            )
        ).first()
        if existing is not None:
            return False
        self.connection.execute(
            insert(rules_t).values(
                session_id=session_id,
                tool_name=rule.tool_name,
                command_prefix=rule.command_prefix,
                created_at=int(time.time()),
                created_by=created_by,
                hitl_id=hitl_id,
            )
        )
        return True

    def session_rules(self, session_id: str) -> list[SessionRule]:
        """The session's approve-for-session rules, read inside this transaction."""
        rows = self._rows(_SELECT_SESSION_RULES, {"match_id": session_id})
        return [SessionRule(row["tool_name"], row["command_prefix"]) for row in rows]


class RuleReads(ReadsBase):
    """Session-rule reads."""

    def session_rules(self, session_id: str) -> list[SessionRule]:
        rows = self._read(_SELECT_SESSION_RULES, {"match_id": session_id})
        return [SessionRule(row["tool_name"], row["command_prefix"]) for row in rows]
