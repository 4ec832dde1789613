"""``reviewer-app audit``: the decision log as a table or JSON, streamed page by page with flat memory.

The listing used to read every audit row (with its shown arguments) into one list and then a second copy as
text: at 100,000 decisions 455 MB. It now reads keyset pages of the log (``audit_page``) and writes each row as
it comes, so memory is one page whatever the log's length. Credentials in reasons and edits are redacted as the
exports redact them (:func:`reviewer_app.domain.audit_export.exported_row`): a terminal is an output too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any, TextIO

from reviewer_app.cli.context import open_backend
from reviewer_app.cli.errors import EXIT_FAILED
from reviewer_app.cli.output import dump, err, out
from reviewer_app.config import AppContext

PAGE = 1_000
_REDACTED_OR_WORDS = ("edited_args", "message", "decision_words", "what")


async def print_audit(backend: Any, as_json: bool, stream: TextIO) -> int:
    """Write the whole decision log to ``stream`` (oldest first), as a JSON list or one line per row."""
    from reviewer_app.domain.audit_export import exported_row
    from reviewer_app.domain.sanitize import json_terminal_safe, terminal_safe

    after = 0
    first = True
    while True:
        page = await backend.audit_page(after_id=after, limit=PAGE)
        if not page:
            break
        for entry in page:
            redacted = exported_row(entry)
            if as_json:
                row = {**entry.to_dict(), **{key: redacted[key] for key in _REDACTED_OR_WORDS}}
                text = json.dumps(row, indent=2, ensure_ascii=False, default=str)
                stream.write(("[\n  " if first else ",\n  ") + json_terminal_safe(text.replace("\n", "\n  ")))
            else:
                message = f"  ({redacted['message']})" if redacted["message"] else ""
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.at_ms / 1000))
                line = f"{entry.id:>6}  {when}  {redacted['decision_words']:<32} {redacted['what']}"
                stream.write(terminal_safe(f"{line}  by {entry.reviewer}  [{entry.hitl_id}]{message}") + "\n")
            first = False
        after = page[-1].id
        del page
    if as_json:
        stream.write("[]\n" if first else "\n]\n")
    elif first:
        stream.write("no decisions yet\n")
    return 0


async def cmd_audit(ctx: AppContext, args: argparse.Namespace) -> int:
    backend = open_backend(ctx)
    try:
        if args.action == "export":
            return await _export_audit(backend, args.format, args.output)
        if args.action == "verify":
            report = await backend.verify_audit()
        else:
            return await print_audit(backend, args.json, sys.stdout)  # streamed: flat memory at any length
    finally:
        await backend.aclose()
    if args.action == "verify":
        if args.json:
            dump(
                {
                    "ok": report.ok,
                    "rows_checked": report.rows_checked,
                    "first_bad_id": report.first_bad_id,
                    "problem": report.problem,
                    "anchors_checked": report.anchors_checked,
                    "warning": report.warning,
                }
            )
        elif report.ok:
            anchored = f", checked against {report.anchors_checked} anchors" if report.anchors_checked else ""
            out(f"audit chain ok: {report.rows_checked} rows{anchored}")
            if report.warning:
                err(f"warning: {report.warning}")
        else:
            where = f" at row {report.first_bad_id}" if report.first_bad_id is not None else ""
            out(f"audit chain BROKEN{where}: {report.problem}")
        return 0 if report.ok else EXIT_FAILED
    return 0


async def _export_audit(backend: Any, fmt: str, output: str | None) -> int:
    """The decision log as JSONL or CSV, page by page, ending with the chain's verification result.


    JSONL ends with one ``{"verification": ...}`` line; CSV gets the result on stderr (a CSV has no place for it).
    """
    from reviewer_app.domain.audit_export import csv_header, format_entries  # redacted, CSV formulas made inert

    handle: Any = open(output, "w", encoding="utf-8", newline="") if output else sys.stdout  # noqa: SIM115, ASYNC230
    try:
        if fmt == "csv":
            handle.write(csv_header())
        after = 0
        while page := await backend.audit_page(after_id=after):
            handle.write(format_entries(page, fmt))
            after = page[-1].id
        report = await backend.verify_audit()
        verification = {
            "ok": report.ok,
            "rows_checked": report.rows_checked,
            "problem": report.problem,
            "anchors_checked": report.anchors_checked,
            "warning": report.warning,
        }
        if fmt != "csv":
            handle.write(json.dumps({"verification": verification}) + "\n")
        else:
            err(f"verification: {json.dumps(verification)}")
    finally:
        if output:
            handle.close()
    return 0 if report.ok else EXIT_FAILED
