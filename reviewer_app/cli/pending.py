"""``reviewer-app pending``: the queue as a table or JSON, in memory bounded by the largest single request.

The queue is read in keyset pages of summaries (``summary_page``), never all at once. The table shows each
request's stored one-line summary and the SHA-256 of its arguments; a request whose stored data passes
:data:`TABLE_READ_LIMIT` is not read at all (its size is asked first): its digest column says so and
``pending --json`` gives it, so the table stays at the interpreter's own memory. The JSON
listing fetches and writes one record at a time, in slices, rather than building the whole list and then a
second copy of it as text (100 MB of arguments used to take ~740 MB).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import AsyncIterator
from typing import Any, TextIO

from reviewer_app.cli.context import open_backend
from reviewer_app.config import AppContext

_PAGE = 1_000  # summaries per keyset page
_SLICE = 1 << 20  # write long pieces of JSON in 1 MiB slices: no second full-size copy as bytes
TABLE_READ_LIMIT = 4 << 20  # the table reads (and hashes) a request's data up to this many bytes


def question_line(record: dict[str, Any]) -> str | None:
    """An ask_user request as one line: its question and its options, never its whole data dict."""
    if record.get("hitl_type") != "ask_user":
        return None
    data = record.get("data") or {}
    if not isinstance(data, dict):
        return None
    question = data.get("question") or data.get("prompt")
    options = data.get("options")
    questions = data.get("questions")  # hosts that ask several at once (Claude Code's AskUserQuestion)
    if not question and isinstance(questions, list) and questions and isinstance(questions[0], dict):
        question = questions[0].get("question")
        options = options or [o.get("label", o) if isinstance(o, dict) else o for o in questions[0].get("options", [])]
    if not isinstance(question, str) or not question.strip():
        return None
    line = " ".join(question.split())
    if isinstance(options, list) and options:
        line += "  [" + " / ".join(" ".join(str(o).split()) for o in options) + "]"
    return line


async def print_pending(backend: Any, as_json: bool, stream: TextIO) -> int:
    """Write the pending requests to ``stream``; returns the exit code.

    Each line (and each JSON record, as ``args_sha256``) carries the SHA-256 of the arguments shown: what
    ``decide --sha256`` names to bind a decision to what the operator read. Records are fetched one at a time.
    """
    from reviewer_app.domain.decisions import args_digest
    from reviewer_app.domain.hitl import shown_arguments
    from reviewer_app.domain.sanitize import json_terminal_safe, terminal_safe

    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
    first = True
    listed = False
    async for s in _pending_summaries(backend):
        if not listed and as_json:
            stream.write("[")
        listed = True
        if not as_json:
            size = await backend.data_size(s.hitl_id)
            if size is None:
                continue  # gone since the listing
            if size > TABLE_READ_LIMIT:
                stream.write(terminal_safe(_unread_line(s, size)) + "\n")
                continue
        record = await backend.get(s.hitl_id)
        if record is None or record["status"] != "pending":  # decided or gone since the listing
            continue
        digest = args_digest(shown_arguments(record))
        if not as_json:
            what = question_line(record) or s.summary
            line = _table_line(s, digest[:12], what)
            stream.write(terminal_safe(line) + "\n")
            continue
        stream.write("\n  " if first else ",\n  ")
        first = False
        for chunk in encoder.iterencode({**record, "args_sha256": digest}):
            text = json_terminal_safe(chunk.replace("\n", "\n  "))  # nested one level, as in a list
            for start in range(0, len(text), _SLICE):
                stream.write(text[start : start + _SLICE])
        del record
    if not listed:
        stream.write("[]\n" if as_json else "no pending requests\n")
    elif as_json:
        stream.write("\n]\n" if not first else "]\n")
    return 0


def _table_line(s: Any, digest: str, what: str) -> str:
    return f"{s.hitl_id}  {s.hitl_type:<13} {s.tool_name or '-':<12} {s.agent or '-':<10} {digest:<12}  {what}"


def _unread_line(s: Any, size: int) -> str:
    """A request too large for the table to read: its summary, its size, and where its SHA-256 is."""
    return _table_line(s, "(not read)", f"{s.summary}  [data {size / 2**20:.1f} MiB: pending --json shows its SHA-256]")


async def _pending_summaries(backend: Any) -> AsyncIterator[Any]:
    """The queue oldest first, one keyset page at a time (a queue of any length costs one page of memory)."""
    from reviewer_app.domain.hitl import HITLStatus

    after: tuple[int, int, str] | None = None
    while True:
        page = await backend.summary_page((HITLStatus.PENDING.value,), after=after, limit=_PAGE)
        for summary in page:
            yield summary
        if len(page) < _PAGE:
            return
        last = page[-1]
        after = (last.created_at, last.updated_at_ms, last.hitl_id)


async def _settle_abandoned_hooks(backend: Any) -> None:
    """Requests whose hook already answered and is gone leave the queue before it is shown (never fatal here)."""
    try:
        await backend.settle_abandoned_hooks()
    except Exception as exc:  # the listing still works on a database that cannot be written now
        print(f"warning: could not settle the requests of hooks that are gone: {exc}", file=sys.stderr)


async def cmd_pending(ctx: AppContext, args: argparse.Namespace) -> int:
    backend = open_backend(ctx)
    try:
        await _settle_abandoned_hooks(backend)
        return await print_pending(backend, args.json, sys.stdout)
    finally:
        await backend.aclose()
