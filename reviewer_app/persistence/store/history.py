"""History reads: decided requests page by page (keyset, newest first), searched through the full-text index.

One decision is one audit row, and the index (migration 0010) has one document per audit row, so a page is
read from the index (when there is search text) or from ``audit_log`` backwards by id, joined with the request
it decided, and stops after ``limit`` rows: a search over a million decisions costs what one page costs, not
what the matches cost. Audit ids are the chain's order, the order decisions committed in.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from sqlalchemy import select, text

from reviewer_app.domain.audit_words import RULE_EVENTS
from reviewer_app.domain.history import (
    HistoryCursor,
    HistoryEntry,
    HistoryPage,
    HistoryQuery,
    rule_id_of,
    search_terms,
)
from reviewer_app.persistence.core_tables import audit_t, policy_rules_t, requests_t
from reviewer_app.persistence.store.base import Reader

MAX_PAGE = 1_000

_COLUMNS = (
    "a.id, a.at_ms, a.hitl_id, a.decision, a.reviewer, a.message, {edited} AS edited,"
    " r.tool_name, r.summary, r.agent, r.hitl_type, r.session_id, r.invocation_id, r.created_at"
)
_EDITED = {
    "sqlite": "coalesce(a.edited_args, 'null') != 'null'",
    "postgresql": "coalesce(a.edited_args::text, 'null') <> 'null'",
}


_NOT_RULE_EVENT = "a.decision NOT IN (" + ", ".join(f"'{event}'" for event in RULE_EVENTS) + ")"


def fts5_match(terms: tuple[str, ...]) -> str:
    """An FTS5 query in which every term is a quoted prefix (``"word"*``): literal, whatever it holds."""
    return " ".join('"' + term.replace('"', '""') + '"*' for term in terms)


def tsquery_text(terms: tuple[str, ...]) -> str:
    """A ``to_tsquery`` text in which every term is a quoted prefix lexeme (``'word':*``), all required."""
    return " & ".join("'" + term.replace("'", "''").replace("\\", "\\\\") + "':*" for term in terms)


def page_sql(dialect: str, query: HistoryQuery, terms: tuple[str, ...], after: bool) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {}
    where: list[str] = []
    if terms and dialect == "sqlite":
        source = "history_fts JOIN audit_log AS a ON a.id = history_fts.rowid"
        id_column = "history_fts.rowid"  # lets FTS5 walk its doclists backwards and stop at the LIMIT
        where.append("history_fts MATCH :match")
        params["match"] = fts5_match(terms)
    elif terms:
        source = "history_search AS s JOIN audit_log AS a ON a.id = s.audit_id"
        id_column = "a.id"
        where.append("s.document @@ to_tsquery('simple', :match)")
        params["match"] = tsquery_text(terms)
    else:
        source = "audit_log AS a"
        id_column = "a.id"
    if after:
        where.append(f"{id_column} < :after_id")
    where.append(_NOT_RULE_EVENT)  # the log also records rule changes; History lists decisions only
    for column, value in (
        ("r.tool_name", query.tool_name),
        ("r.agent", query.agent),
        ("a.reviewer", query.reviewer),
        ("r.hitl_type", query.hitl_type),
        ("a.hitl_id", query.hitl_id),
    ):
        if value is not None:
            name = column.replace(".", "_")
            where.append(f"{column} = :{name}")
            params[name] = value
    if query.decisions:
        names = [f"decision_{i}" for i in range(len(query.decisions))]
        where.append(f"a.decision IN ({', '.join(':' + n for n in names)})")
        params.update(zip(names, query.decisions, strict=True))
    sql = (
        f"SELECT {_COLUMNS.format(edited=_EDITED.get(dialect, _EDITED['postgresql']))}"
        f" FROM {source} LEFT JOIN hitl_requests AS r ON r.hitl_id = a.hitl_id"
    )
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + f" ORDER BY {id_column} DESC LIMIT :limit", params


def _entry(row: Any) -> HistoryEntry:
    (audit_id, at_ms, hitl_id, decision, reviewer, message, edited, tool_name, summary, agent) = row[:10]
    hitl_type, session_id, invocation_id, created_at = row[10:14]
    return HistoryEntry(
        audit_id=int(audit_id),
        decided_at_ms=int(at_ms),
        hitl_id=hitl_id,
        decision=decision,
        reviewer=reviewer,
        reason=message,
        edited=bool(edited),
        tool_name=tool_name,
        summary=summary or "",
        agent=agent,
        hitl_type=hitl_type,
        session_id=session_id,
        invocation_id=invocation_id,
        created_at=created_at,
    )


class HistoryReads:
    """``store.history``: decided requests for the History view, ``reviewer-app audit`` and exports."""

    def __init__(self, db: Reader) -> None:
        self._db = db

    def page(self, query: HistoryQuery, *, after: HistoryCursor | None = None, limit: int = 100) -> HistoryPage:
        """The newest decisions matching ``query`` older than ``after``, at most ``limit`` (≤ 1,000) of them.

        The search text is reduced to words (:func:`search_terms`) and each must prefix-match a word of the
        tool name, summary, arguments (as shown or edited), agent, reviewer or reason.
        """
        limit = max(1, min(int(limit), MAX_PAGE))
        terms = search_terms(query.text)
        if query.text and not terms:  # only punctuation: nothing can match it (and nothing is scanned)
            return HistoryPage()
        sql, params = page_sql(self._db.engines.dialect, query, terms, after is not None)
        if after is not None:
            params["after_id"] = after.audit_id
        params["limit"] = limit + 1
        with self._db.reading() as connection:
            rows = list(connection.execute(text(sql), params))
            entries = [_entry(row) for row in rows[:limit]]
            entries = self._with_rule_patterns(connection, entries)
        next_cursor = entries[-1].cursor if len(rows) > limit else None
        return HistoryPage(entries, next_cursor)

    def entries(self, query: HistoryQuery, *, page_size: int = 500) -> Iterator[HistoryEntry]:
        """Every matching decision, newest first, one page in memory at a time."""
        after: HistoryCursor | None = None
        while True:
            page = self.page(query, after=after, limit=page_size)
            yield from page.entries
            if page.next_cursor is None:
                return
            after = page.next_cursor

    def entry(self, audit_id: int) -> HistoryEntry | None:
        """One decision with the arguments as shown and as edited at decision time."""
        with self._db.reading() as connection:
            audit = connection.execute(select(audit_t).where(audit_t.c.id == audit_id)).first()
            if audit is None:
                return None
            request = connection.execute(
                select(
                    requests_t.c.tool_name,
                    requests_t.c.summary,
                    requests_t.c.agent,
                    requests_t.c.hitl_type,
                    requests_t.c.session_id,
                    requests_t.c.invocation_id,
                    requests_t.c.created_at,
                ).where(requests_t.c.hitl_id == audit.hitl_id)
            ).first()
            entry = HistoryEntry(
                audit_id=int(audit.id),
                decided_at_ms=int(audit.at_ms),
                hitl_id=audit.hitl_id,
                decision=audit.decision,
                reviewer=audit.reviewer,
                reason=audit.message,
                edited=audit.edited_args is not None,
                tool_name=request.tool_name if request else None,
                summary=(request.summary if request else "") or "",
                agent=request.agent if request else None,
                hitl_type=request.hitl_type if request else None,
                session_id=request.session_id if request else None,
                invocation_id=request.invocation_id if request else None,
                created_at=request.created_at if request else None,
                shown_args=audit.shown_args,
                edited_args=audit.edited_args,
            )
            return self._with_rule_patterns(connection, [entry])[0]

    @staticmethod
    def _with_rule_patterns(connection: Any, entries: list[HistoryEntry]) -> list[HistoryEntry]:
        """Entries decided by ``rule:<id>`` with that rule's pattern and effect (revoked rules keep their row)."""
        rule_ids = sorted({rule_id for entry in entries if (rule_id := rule_id_of(entry.reviewer))})
        if not rule_ids:
            return entries
        rows = connection.execute(
            select(policy_rules_t.c.id, policy_rules_t.c.pattern, policy_rules_t.c.effect).where(
                policy_rules_t.c.id.in_(rule_ids)
            )
        )
        rules = {row.id: (row.pattern, row.effect) for row in rows}
        result = []
        for entry in entries:
            found = rules.get(rule_id_of(entry.reviewer) or "")
            result.append(replace(entry, rule_pattern=found[0], rule_effect=found[1]) if found else entry)
        return result
