"""What the detail pane shows about one request, computed off the GUI thread (no widgets here).

The hash of the arguments as shown (what a decision names, so nothing else can be approved),
their pretty text, a write_file call's diff against the workspace, an ask_user question.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer_app.domain.decisions import canonical_json
from reviewer_app.domain.hitl import HITLRecord, HITLType
from reviewer_app.domain.risk import Risk, assess
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.hitl import shown_arguments
from reviewer_app.ui.detail.json_view import FormattedJson, format_json

DIFF_LIMIT_BYTES = 2_000_000
DIFF_SHOWN_CHARS = 200_000  # like the arguments view: more would make the text layout crawl
WRITE_TOOLS = frozenset({"write_file"})


@dataclass
class PreparedRequest:
    """Everything the pane shows about one request, computed off the GUI thread."""

    record: HITLRecord
    shown: Any
    digest: str
    formatted: FormattedJson
    total_chars: int
    diff: str | None = None
    diff_note: str = ""
    question: str | None = None
    options: list[str] = field(default_factory=list)
    risk: Risk | None = None  # None for a question (not a tool call)


def write_file_diff(workspace: Path | None, args: Any) -> tuple[str | None, str]:
    """A unified diff of a write_file call against the file as it is now, and a note about it."""
    if not isinstance(args, dict) or not isinstance(args.get("path"), str):
        return None, "no path in the arguments"
    content = args.get("content")
    if not isinstance(content, str):
        return None, "no text content in the arguments"
    relative = args["path"]
    old = ""
    note = ""
    existed = False
    if workspace is None:
        note = "workspace unknown: compared with an empty file"
    else:
        # The runtime's tools (and jsonschema with them) load after the first screen, not before it.
        from reviewer_app.runtime.tools import WorkspaceEscape, resolve_in_workspace

        try:
            target = resolve_in_workspace(workspace, relative)
        except WorkspaceEscape as exc:
            return None, f"refused: {exc}"
        if target.is_file():
            if target.stat().st_size > DIFF_LIMIT_BYTES:
                return None, f"{relative} is larger than {DIFF_LIMIT_BYTES // 1_000_000} MB: no diff"
            try:
                old = target.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                return None, f"{relative} is not UTF-8 text: no diff"
            except OSError as exc:
                return None, f"cannot read {relative}: {exc}"
            note = f"changes to {relative}"
            existed = True
        elif target.exists():
            return None, f"{relative} exists and is not a file"
        else:
            note = f"new file {relative}"
    if len(content) > DIFF_LIMIT_BYTES:
        return None, f"the new content is larger than {DIFF_LIMIT_BYTES // 1_000_000} MB: no diff"
    lines = list(
        difflib.unified_diff(
            old.splitlines(keepends=True),
            content.splitlines(keepends=True),
            fromfile=f"a/{relative}" if existed else "/dev/null",
            tofile=f"b/{relative}",
        )
    )
    text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
    if not text:
        note = f"{relative}: the content is unchanged"
    elif len(text) > DIFF_SHOWN_CHARS:
        cut = text.rfind("\n", 0, DIFF_SHOWN_CHARS) + 1
        hidden = text.count("\n", cut)
        text = text[:cut] + f"… {hidden:,} more diff lines not shown (see the Arguments tab for everything)\n"
        note += " (first 200 KB of the diff)"
    return text, note


def prepare_request(record: HITLRecord, workspace: Path | None) -> PreparedRequest:
    """Hash, pretty text and diff of a request (runs on a worker thread)."""
    shown = shown_arguments(record)
    compact = canonical_json(shown)
    digest = hashlib.sha256(compact.encode()).hexdigest()  # args_digest(shown), without a second 1 MB dumps
    formatted = format_json(shown, total_chars=len(compact))
    prepared = PreparedRequest(record, shown, digest, formatted, len(compact))
    data = record.get("data") or {}
    call = call_of_record(record)
    prepared.risk = assess(call) if call is not None else None
    if record.get("hitl_type") == HITLType.ASK_USER.value:
        args = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        question = data.get("question") or (args or {}).get("question") or data.get("prompt")
        options = data.get("options") or (args or {}).get("options") or []
        prepared.question = str(question) if question else ""
        prepared.options = [str(o) for o in options] if isinstance(options, list) else []
    elif record.get("tool_name") in WRITE_TOOLS:
        prepared.diff, prepared.diff_note = write_file_diff(workspace, shown)
    return prepared
