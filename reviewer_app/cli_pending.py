"""``reviewer-app pending``: the queue as a table or JSON, in memory bounded by the largest single request.

The table shows each request's stored one-line summary, so it never loads the arguments at all. The JSON
listing fetches and writes one record at a time, in slices, rather than building the whole list and then a
second copy of it as text (100 MB of arguments used to take ~740 MB).
"""

from __future__ import annotations

import json
from typing import Any, TextIO

_SLICE = 1 << 20  # write long pieces of JSON in 1 MiB slices: no second full-size copy as bytes


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


async def print_pending(backend: Any, as_json: bool, out: TextIO) -> int:
    """Write the pending requests to ``out``; returns the exit code.

    Each line (and each JSON record, as ``args_sha256``) carries the SHA-256 of the arguments shown: what
    ``decide --sha256`` names to bind a decision to what the operator read. Records are fetched one at a time.
    """
    from reviewer_app.domain.decisions import args_digest
    from reviewer_app.domain.hitl import shown_arguments
    from reviewer_app.domain.records import RequestQuery
    from reviewer_app.domain.sanitize import json_terminal_safe, terminal_safe

    summaries = await backend.list_summaries(RequestQuery())
    if not summaries:
        out.write("[]\n" if as_json else "no pending requests\n")
        return 0
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, default=str)
    first = True
    if as_json:
        out.write("[")
    for s in summaries:
        record = await backend.get(s.hitl_id)
        if record is None or record["status"] != "pending":  # decided or gone since the listing
            continue
        digest = args_digest(shown_arguments(record))
        if not as_json:
            tool, agent = s.tool_name or "-", s.agent or "-"
            what = question_line(record) or s.summary
            line = f"{s.hitl_id}  {s.hitl_type:<13} {tool:<12} {agent:<10} {digest[:12]}  {what}"
            out.write(terminal_safe(line) + "\n")
            continue
        out.write("\n  " if first else ",\n  ")
        first = False
        for chunk in encoder.iterencode({**record, "args_sha256": digest}):
            text = json_terminal_safe(chunk.replace("\n", "\n  "))  # nested one level, as in a list
            for start in range(0, len(text), _SLICE):
                out.write(text[start : start + _SLICE])
        del record
    if as_json:
        out.write("\n]\n" if not first else "]\n")
    return 0
