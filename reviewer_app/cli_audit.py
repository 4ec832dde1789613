"""``reviewer-app audit``: the decision log as a table or JSON, streamed page by page with flat memory.

The listing used to read every audit row (with its shown arguments) into one list and then a second copy as
text: at 100,000 decisions 455 MB. It now reads keyset pages of the log (``audit_page``) and writes each row as
it comes, so memory is one page whatever the log's length. Credentials in reasons and edits are redacted as the
exports redact them (:func:`reviewer_app.domain.audit_export.exported_row`): a terminal is an output too.
"""

from __future__ import annotations

import json
import time
from typing import Any, TextIO

PAGE = 1_000
_REDACTED_OR_WORDS = ("edited_args", "message", "decision_words", "what")


async def print_audit(backend: Any, as_json: bool, out: TextIO) -> int:
    """Write the whole decision log to ``out`` (oldest first), as a JSON list or one line per row."""
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
                out.write(("[\n  " if first else ",\n  ") + json_terminal_safe(text.replace("\n", "\n  ")))
            else:
                message = f"  ({redacted['message']})" if redacted["message"] else ""
                when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.at_ms / 1000))
                line = f"{entry.id:>6}  {when}  {redacted['decision_words']:<32} {redacted['what']}"
                out.write(terminal_safe(f"{line}  by {entry.reviewer}  [{entry.hitl_id}]{message}") + "\n")
            first = False
        after = page[-1].id
        del page
    if as_json:
        out.write("[]\n" if first else "\n]\n")
    elif first:
        out.write("no decisions yet\n")
    return 0
