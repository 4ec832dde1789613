"""Rows to the records the rest of Reviewer uses, and the values computed when a row is written."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Row

from reviewer_app.domain.hitl import (
    RECORD_KEYS,
    HITLRecord,
    HITLType,
    summarize_arguments,
)
from reviewer_app.domain.timeline import BlockEvent, BlockKind, BlockOp


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class CreationClock:
    """Creation stamps in milliseconds that never repeat or go back (per store, across its threads).

    The requests of one model turn are created in one transaction within the same millisecond; the inbox
    orders by (created second, creation millisecond, id), so equal stamps would fall back on random ids.
    """

    def __init__(self) -> None:
        self._last = 0
        self._lock = threading.Lock()

    def next_ms(self) -> int:
        with self._lock:
            self._last = max(now_ms(), self._last + 1)
            return self._last


def row_to_record(row: Row[Any] | Mapping[str, Any]) -> HITLRecord:
    """A table row (or its mapping) as the protocol's record dict: exactly :data:`RECORD_KEYS`."""
    # A dict (the fast path's rows) is told in one test: isinstance against Row is a Python call.
    mapping = row if type(row) is dict else row._mapping if isinstance(row, Row) else row
    record = {key: mapping[key] for key in RECORD_KEYS}
    if record["data"] is None:
        record["data"] = {}
    if record["metadata"] is None:
        record["metadata"] = {}
    return record


def summarize_request(hitl_type: str, data: dict[str, Any], tool_name: str | None) -> str:
    if hitl_type == HITLType.ASK_USER.value:
        question = data.get("question") or data.get("prompt") or ""
        return summarize_arguments({"question": question}) if question else ""
    arguments = data.get("arguments", data)
    return summarize_arguments(arguments)


def row_to_event(row: Row[Any]) -> BlockEvent:
    m = row._mapping
    return BlockEvent(
        block_id=m["block_id"],
        kind=BlockKind(m["kind"]),
        op=BlockOp(m["op"]),
        data=m["data"] if m["data"] is not None else {},
        session_id=m["session_id"],
        invocation_id=m["invocation_id"],
        ts_ms=m["ts_ms"],
        parent_id=m["parent_id"],
        seq=m["seq"],
    )
