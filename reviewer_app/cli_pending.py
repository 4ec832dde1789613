"""``reviewer-app pending``: the queue as a table or JSON, in memory bounded by the largest single request.

The table shows each request's stored one-line summary, so it never loads the arguments at all. The JSON
listing fetches and writes one record at a time, in slices, rather than building the whole list and then a
second copy of it as text (100 MB of arguments used to take ~740 MB).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

_SLICE = 1 << 20  # write long pieces of JSON in 1 MiB slices: no second full-size copy as bytes


async def print_pending(backend: Any, as_json: bool, out: TextIO) -> int:
    """Write the pending requests to ``out``; returns the exit code."""
    from reviewer_app.persistence.store import RequestQuery

    summaries = await backend.list_summaries(RequestQuery())
    if not as_json:
        if not summaries:
            out.write("no pending requests\n")
        for s in summaries:
            out.write(f"{s.hitl_id}  {s.hitl_type:<13} {s.tool_name or '-':<12} {s.agent or '-':<10} {s.summary}\n")
        return 0
    if not summaries:
        out.write("[]\n")
        return 0
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
    first = True
    out.write("[")
    for summary in summaries:
        record = await backend.get(summary.hitl_id)
        if record is None or record["status"] != "pending":  # decided or gone since the listing
            continue
        out.write("\n  " if first else ",\n  ")
        first = False
        for chunk in encoder.iterencode(record):
            text = chunk.replace("\n", "\n  ")  # nested one level, as in a list
            for start in range(0, len(text), _SLICE):
                out.write(text[start : start + _SLICE])
        del record
    out.write("\n]\n" if not first else "]\n")
    return 0
