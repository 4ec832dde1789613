"""The block timeline: appending events (each gets a monotonic ``seq``) and reading them back."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, insert, select

from reviewer_app.domain.timeline import BlockEvent
from reviewer_app.persistence.store.base import ReadsBase, TxBase
from reviewer_app.persistence.store.records import row_to_event
from reviewer_app.persistence.tables import (
    events_t,
)

_INSERT_EVENT = insert(events_t).returning(events_t.c.seq)


class TimelineWrites(TxBase):
    """Timeline writes inside one transaction."""

    def append_events(self, events: Iterable[BlockEvent]) -> list[BlockEvent]:
        """Append events; returns them with the ``seq`` the store assigned."""
        stored = []
        for event in events:
            rows = self._rows(
                _INSERT_EVENT,
                {
                    "block_id": event.block_id,
                    "parent_id": event.parent_id,
                    "kind": event.kind.value,
                    "op": event.op.value,
                    "data": event.data,
                    "ts_ms": event.ts_ms,
                    "session_id": event.session_id,
                    "invocation_id": event.invocation_id,
                },
            )
            seq = int(rows[0]["seq"])
            stored.append(
                BlockEvent(
                    block_id=event.block_id,
                    kind=event.kind,
                    op=event.op,
                    data=event.data,
                    session_id=event.session_id,
                    invocation_id=event.invocation_id,
                    ts_ms=event.ts_ms,
                    parent_id=event.parent_id,
                    seq=seq,
                )
            )
        return stored


class TimelineReads(ReadsBase):
    """Timeline reads (one run, or every run after a ``seq``)."""

    def events(self, invocation_id: str, *, after_seq: int = 0) -> list[BlockEvent]:
        query = (
            select(events_t)
            .where(events_t.c.invocation_id == invocation_id, events_t.c.seq > after_seq)
            .order_by(events_t.c.seq)
        )
        with self._reading() as connection:
            return [row_to_event(row) for row in connection.execute(query)]

    def events_since(self, after_seq: int, *, limit: int = 10_000) -> list[BlockEvent]:
        """Every invocation's events after ``after_seq``: the live feed's increment."""
        query = select(events_t).where(events_t.c.seq > after_seq).order_by(events_t.c.seq).limit(limit)
        with self._reading() as connection:
            return [row_to_event(row) for row in connection.execute(query)]

    def last_event_seq(self) -> int:
        with self._reading() as connection:
            return int(connection.execute(select(func.coalesce(func.max(events_t.c.seq), 0))).scalar_one())
