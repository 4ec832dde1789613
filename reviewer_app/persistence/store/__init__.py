"""The store, one module per aggregate: requests, runs (and checkpoints), timeline, audit, rules.

:class:`Store` reads, :class:`StoreTx` writes inside one transaction; both are assembled from the aggregates'
classes in :mod:`.database`. The SQLite fast path (prepared statements, held connections) is :mod:`.fastpath`.
"""

from reviewer_app.persistence.store.database import Store, StoreTx
from reviewer_app.persistence.store.records import now_ms, row_to_event, row_to_record, summarize_request
from reviewer_app.persistence.store.requests import SUMMARY_COLUMNS
from reviewer_app.persistence.store.runs import _runs_query

__all__ = [
    "SUMMARY_COLUMNS",
    "Store",
    "StoreTx",
    "_runs_query",
    "now_ms",
    "row_to_event",
    "row_to_record",
    "summarize_request",
]
