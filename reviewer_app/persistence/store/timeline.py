"""The block timeline: appending events (each gets a monotonic ``seq``) and reading them back.

A large top-level field of an event (a tool's arguments or result) is stored once as a blob and named in the
row's ``blob_refs``; reads put it back, so callers see the event as it was appended.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, func, insert, select

from reviewer_app.domain.timeline import BlockEvent
from reviewer_app.persistence.blobs import externalize, internalize, ref_digests, small_json
from reviewer_app.persistence.core_tables import (
    events_t,
)
from reviewer_app.persistence.store.base import Reader, Statements
from reviewer_app.persistence.store.blobstore import BlobWrites, read_blobs
from reviewer_app.persistence.store.records import row_to_event

_INSERT_EVENT = insert(events_t)
_INSERT_EVENT_SEQ = _INSERT_EVENT.returning(events_t.c.seq)


class TimelineWrites:
    """``tx.timeline``: appending events inside one transaction."""

    __slots__ = ("_blobs", "_db")

    def __init__(self, db: Statements, blobs: BlobWrites) -> None:
        self._db = db
        self._blobs = blobs

    def append(self, events: Iterable[BlockEvent]) -> list[BlockEvent]:
        """Append events; returns them with the ``seq`` the store assigned."""
        stored = []
        for event in events:
            rows = self._db.rows(_INSERT_EVENT_SEQ, self._row(event))
            stored.append(dataclasses.replace(event, seq=int(rows[0]["seq"])))
        return stored

    def extend(self, events: Sequence[BlockEvent]) -> None:
        """Append events whose ``seq`` the caller does not need (a run's step commits): one statement for all of
        them, nothing read back."""
        self._db.write_many(_INSERT_EVENT, [self._row(event) for event in events])

    def _row(self, event: BlockEvent) -> dict[str, Any]:
        text = small_json(event.data)
        if text is not None:  # the usual event: nothing to store as a blob, and its JSON is made already
            data, refs = self._db.json_value(event.data, text), None
        else:
            data, refs = externalize(event.data, self._blobs.put)
        return {
            "block_id": event.block_id,
            "parent_id": event.parent_id,
            "kind": event.kind.value,
            "op": event.op.value,
            "data": data,
            "ts_ms": event.ts_ms,
            "session_id": event.session_id,
            "invocation_id": event.invocation_id,
            "blob_refs": refs or None,
        }


class TimelineReads:
    """``store.timeline``: one run's events, or every run's after a ``seq``."""

    def __init__(self, db: Reader) -> None:
        self._db = db

    def of_run(self, invocation_id: str, *, after_seq: int = 0) -> list[BlockEvent]:
        query = (
            select(events_t)
            .where(events_t.c.invocation_id == invocation_id, events_t.c.seq > after_seq)
            .order_by(events_t.c.seq)
        )
        with self._db.reading() as connection:
            return _events(connection, query)

    def since(self, after_seq: int, *, limit: int = 10_000) -> list[BlockEvent]:
        """Every invocation's events after ``after_seq``: the live feed's increment."""
        query = select(events_t).where(events_t.c.seq > after_seq).order_by(events_t.c.seq).limit(limit)
        with self._db.reading() as connection:
            return _events(connection, query)

    def last_seq(self) -> int:
        with self._db.reading() as connection:
            return int(connection.execute(select(func.coalesce(func.max(events_t.c.seq), 0))).scalar_one())


def _events(connection: Connection, query: Any) -> list[BlockEvent]:
    rows = connection.execute(query).all()
    digests = [sha for row in rows for sha in ref_digests(row._mapping["blob_refs"])]
    if not digests:
        return [row_to_event(row) for row in rows]
    blobs = read_blobs(connection, digests)
    events = []
    for row in rows:
        event = row_to_event(row)
        refs = row._mapping["blob_refs"]
        if refs:
            event = dataclasses.replace(event, data=internalize(event.data, refs, blobs))
        events.append(event)
    return events
