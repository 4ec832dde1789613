"""The store, one module per aggregate: requests, runs, checkpoints, timeline, audit, rules, waivers, history,
stats (and blobs).

:class:`Store` holds the read side of each aggregate (``store.requests``, ``store.runs``…) and
:meth:`Store.transaction` yields a :class:`StoreTx` holding their write side (``tx.requests``…); both are put
together in :mod:`.database`. The SQLite fast path (prepared statements, held connections) is :mod:`.fastpath`.
"""

from reviewer_app.persistence.store.database import Store, StoreTx
from reviewer_app.persistence.store.fastpath import WriterBusy
from reviewer_app.persistence.store.records import now_ms, row_to_event, row_to_record, summarize_request
from reviewer_app.persistence.store.requests import SUMMARY_COLUMNS
from reviewer_app.persistence.store.runs import _runs_query

__all__ = [
    "SUMMARY_COLUMNS",
    "Store",
    "StoreTx",
    "WriterBusy",
    "_runs_query",
    "now_ms",
    "row_to_event",
    "row_to_record",
    "summarize_request",
]
