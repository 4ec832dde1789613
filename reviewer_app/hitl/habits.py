"""The operator's habits: their own numbers, the rules their history argues for, and what is wrong with the rules.

The decided history is read a page at a time on the database thread and judged off the loop
(:mod:`reviewer_app.domain.habits`): reading is most of the cost, so one read serves both advice lists.
"""

from __future__ import annotations

import asyncio
import time

from reviewer_app.domain.habits import (
    LintFinding,
    OperatorNumbers,
    Suggestion,
    lint_rules,
    operator_numbers,
    suggest_rules,
)
from reviewer_app.domain.hitl import HITLRecord, HITLStatus
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl.reads import StoreReads

HISTORY_PAGE = 500  # records read per query when the whole history is judged


class HabitMethods(StoreReads):
    """The decided history and what is judged from it."""

    async def decided_history(self, *, days: int | None = None, limit: int = 100_000) -> list[HITLRecord]:
        """Decided and expired requests, newest first (the last ``days`` days, at most ``limit``), a page at a time."""
        since = time.time() - days * 86_400 if days is not None else None
        decided = (HITLStatus.COMPLETED.value, HITLStatus.EXPIRED.value)
        found: list[HITLRecord] = []
        offset = 0
        while len(found) < limit:
            query = RequestQuery(statuses=decided, limit=HISTORY_PAGE, offset=offset, newest_first=True)
            page = await self.list_records(query)
            for record in page:
                if since is not None and float(record.get("created_at") or 0) < since:
                    return found
                found.append(record)
            if len(page) < HISTORY_PAGE:
                break
            offset += HISTORY_PAGE
        return found[:limit]

    async def operator_numbers(self, *, days: int | None = None, limit: int = 100_000) -> OperatorNumbers:
        """The operator's own numbers over the history (``domain.habits.operator_numbers``), off the loop."""
        records = await self.decided_history(days=days, limit=limit)
        return await asyncio.to_thread(operator_numbers, records)

    async def rule_advice(
        self, *, minimum: int = 5, days: int = 30, limit: int = 100_000
    ) -> tuple[list[Suggestion], list[LintFinding]]:
        """Rules the history argues for (``domain.habits.suggest_rules``: narrowest pattern, most approved first)
        and what is wrong with the rules in force (``lint_rules``: unused, shadowed, too wide), from one read of
        the history (reading is most of the cost), judged off the loop."""
        records = await self.decided_history(limit=limit)
        stored = await self.list_rules()
        entries = [(entry.rule, entry.hit_count, entry.last_hit_at) for entry in stored]
        now = time.time()

        def judge() -> tuple[list[Suggestion], list[LintFinding]]:
            active = [rule for rule, _hits, _last in entries]
            return suggest_rules(records, active, now, minimum=minimum), lint_rules(entries, records, now, days=days)

        return await asyncio.to_thread(judge)
