"""The decision log as it leaves Reviewer in a file: JSONL or CSV rows, credentials redacted, CSV made inert.

A spreadsheet runs a cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in some, a tab or carriage
return) as a formula: an agent's argument or a reviewer's message could then fetch a URL or run a command on
the machine of whoever opens the export. Such cells get a leading apostrophe (OWASP's "CSV injection" advice).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable
from typing import Any

from reviewer_app.domain.audit_words import audit_decision_words, audit_what
from reviewer_app.domain.records import AuditEntry
from reviewer_app.domain.sanitize import redact_data, redact_secrets

COLUMNS = (
    "id",
    "hitl_id",
    "decision",
    "reviewer",
    "at_ms",
    "shown_args_sha256",
    "edited_args",
    "message",
    "row_hash",
    # the row in words, after the signed columns (readers of the older files keep their column positions)
    "decision_words",
    "tool_name",
    "what",
)
FORMATS = ("jsonl", "csv")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def exported_row(entry: AuditEntry) -> dict[str, Any]:
    """One audit row as exported: the :data:`COLUMNS`, with credentials in the message and edits redacted, and the
    row in words (``decision_words``, ``what``: the tool's command or target, or the rule changed)."""
    return {
        "id": entry.id,
        "hitl_id": entry.hitl_id,
        "decision": entry.decision,
        "reviewer": entry.reviewer,
        "at_ms": entry.at_ms,
        "shown_args_sha256": entry.shown_args_sha256,
        "edited_args": redact_data(entry.edited_args),
        "message": None if entry.message is None else redact_secrets(entry.message),
        "row_hash": entry.row_hash,
        "decision_words": audit_decision_words(entry),
        "tool_name": entry.tool_name,
        "what": redact_secrets(audit_what(entry)),
    }


def csv_cell(value: Any) -> str:
    """A value as an inert CSV cell: JSON for structures, a leading ``'`` before anything a spreadsheet would run."""
    if value is None:
        text = ""
    elif isinstance(value, str):
        text = value
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    else:
        text = str(value)
    return "'" + text if text.startswith(_FORMULA_STARTS) else text


def csv_header() -> str:
    return _csv_line(COLUMNS)


def _csv_line(cells: Iterable[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\r\n").writerow(list(cells))
    return buffer.getvalue()


def format_entries(entries: Iterable[AuditEntry], fmt: str) -> str:
    """The text of these rows in ``fmt`` (``jsonl``: one JSON object per line; ``csv``: rows without header)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (expected one of {', '.join(FORMATS)})")
    parts = []
    for entry in entries:
        row = exported_row(entry)
        if fmt == "jsonl":
            parts.append(json.dumps(row, ensure_ascii=False) + "\n")
        else:
            parts.append(_csv_line(csv_cell(row[column]) for column in COLUMNS))
    return "".join(parts)
