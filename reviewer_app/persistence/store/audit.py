"""The decision log: appending hash-chained rows and verifying the chain."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, update

from reviewer_app.domain.audit import AUDIT_HEAD_KEY, GENESIS_HASH, audit_fields, audit_row_hash
from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.records import AuditEntry, AuditReport
from reviewer_app.persistence.store.base import ReadsBase, TxBase
from reviewer_app.persistence.tables import (
    audit_t,
    meta_t,
)

_SELECT_AUDIT_HEAD = select(meta_t.c.value).where(meta_t.c.key == AUDIT_HEAD_KEY)

_SELECT_AUDIT_HEAD_FOR_UPDATE = _SELECT_AUDIT_HEAD.with_for_update()

_UPDATE_AUDIT_HEAD = update(meta_t).where(meta_t.c.key == AUDIT_HEAD_KEY)

_INSERT_AUDIT = insert(audit_t)


class AuditWrites(TxBase):
    """Audit writes inside one transaction (the head is serialised by the write lock)."""

    def _audit_head(self) -> tuple[int, str]:
        # SQLite is already serialised by BEGIN IMMEDIATE; PostgreSQL locks the head row.
        query = _SELECT_AUDIT_HEAD_FOR_UPDATE if self.dialect == "postgresql" else _SELECT_AUDIT_HEAD
        rows = self._rows(query, {})
        if not rows:  # the first decision of this database starts the chain
            self._insert_ignore(meta_t, {"key": AUDIT_HEAD_KEY, "value": f"0:{GENESIS_HASH}"}, ["key"])
            rows = self._rows(query, {})
        value = rows[0]["value"]
        count, _, head = str(value).partition(":")
        return int(count), head

    def append_audit(
        self,
        *,
        hitl_id: str,
        decision: str,
        reviewer: str,
        at_ms: int,
        shown_args: Any,
        edited_args: Any,
        message: str | None,
    ) -> str:
        count, prev_hash = self._audit_head()
        shown_sha = args_digest(shown_args) if shown_args is not None else None
        fields = audit_fields(hitl_id, decision, reviewer, at_ms, shown_sha, edited_args, message)
        row_hash = audit_row_hash(prev_hash, fields)
        self._write(_INSERT_AUDIT, {"shown_args": shown_args, "prev_hash": prev_hash, "row_hash": row_hash, **fields})
        self._write(_UPDATE_AUDIT_HEAD, {"value": f"{count + 1}:{row_hash}"})
        return row_hash


class AuditReads(ReadsBase):
    """Audit reads and chain verification."""

    def audit_entries(self, *, hitl_id: str | None = None, limit: int | None = None) -> list[AuditEntry]:
        query = select(audit_t).order_by(audit_t.c.id)
        if hitl_id is not None:
            query = query.where(audit_t.c.hitl_id == hitl_id)
        if limit is not None:
            query = query.limit(limit)
        with self._reading() as connection:
            return [AuditEntry(**dict(row._mapping)) for row in connection.execute(query)]

    def verify_audit(self) -> AuditReport:
        """Walk the chain; report the first row that was edited, inserted or removed."""
        with self._reading() as connection:
            if self.engines.dialect == "postgresql":  # head and rows from one snapshot, as SQLite reads anyway
                connection.execution_options(isolation_level="REPEATABLE READ")
            head_value = connection.execute(select(meta_t.c.value).where(meta_t.c.key == AUDIT_HEAD_KEY)).scalar()
            rows = connection.execute(select(audit_t).order_by(audit_t.c.id))
            prev_hash = GENESIS_HASH
            checked = 0
            for row in rows:
                entry = AuditEntry(**dict(row._mapping))
                checked += 1
                if entry.prev_hash != prev_hash:
                    return AuditReport(
                        False, checked, entry.id, "its predecessor is missing or was changed (chain broken before it)"
                    )
                shown_sha = args_digest(entry.shown_args) if entry.shown_args is not None else None
                if shown_sha != entry.shown_args_sha256:
                    return AuditReport(False, checked, entry.id, "the shown arguments do not match their hash")
                fields = audit_fields(
                    entry.hitl_id,
                    entry.decision,
                    entry.reviewer,
                    entry.at_ms,
                    entry.shown_args_sha256,
                    entry.edited_args,
                    entry.message,
                )
                if audit_row_hash(prev_hash, fields) != entry.row_hash:
                    return AuditReport(False, checked, entry.id, "the row was edited after it was written")
                prev_hash = entry.row_hash
            expected_count, expected_head = (0, GENESIS_HASH)
            if head_value is not None:
                count_text, _, expected_head = str(head_value).partition(":")
                expected_count = int(count_text)
            if checked != expected_count or prev_hash != expected_head:
                return AuditReport(
                    False, checked, None, f"rows at the end of the log were removed ({expected_count} expected)"
                )
            return AuditReport(True, checked)
