"""What the detail pane shows about one request, computed off the GUI thread (no widgets here).

In two steps, so that a request with megabytes of arguments is on screen at once. First (``prepare_request``):
the hash of the arguments as shown (what a decision names, so nothing else can be approved), their pretty text,
the risk without the secret scan (everything that makes a call high risk), an ask_user question. Then, while
the arguments are already on screen (``check_request``): the secret scan and a write_file call's diff against
the workspace.
"""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reviewer_app.domain.audit import canonical_json_bytes
from reviewer_app.domain.hitl import HITLRecord, HITLType
from reviewer_app.domain.risk import Risk, assess, secret_kinds, with_secrets
from reviewer_app.domain.rule_outcome import call_of_record
from reviewer_app.hitl import shown_arguments
from reviewer_app.ui.detail.json_view import FormattedJson, format_json

DIFF_LIMIT_BYTES = 2_000_000
DIFF_SHOWN_CHARS = 200_000  # more would make the text layout crawl
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
    risk: Risk | None = None  # None for a question (not a tool call); without the secret scan until it ends
    secrets: tuple[str, ...] | None = None  # the secret scan's kinds found; None while it runs
    diff_ready: bool = False  # a write's diff (and its note) is here

    @property
    def checked(self) -> bool:
        """The risk is whole: the secret scan has ended (a question has nothing to scan)."""
        return self.secrets is not None

    def set_secrets(self, kinds: tuple[str, ...]) -> None:
        """The scan has ended: the risk counts the secrets found (a secret makes a call medium risk at most)."""
        self.secrets = kinds
        if self.risk is not None:
            self.risk = with_secrets(self.risk, kinds)

    def set_checks(self, checks: RequestChecks) -> None:
        if not self.checked:
            self.set_secrets(checks.secret_kinds)
        if checks.diff_ready:
            self.diff, self.diff_note, self.diff_ready = checks.diff, checks.diff_note, True


@dataclass(frozen=True)
class RequestChecks:
    """What a worker works out once the arguments are on screen: the secret scan, and a write_file call's diff."""

    secret_kinds: tuple[str, ...] = ()
    diff: str | None = None
    diff_note: str = ""
    diff_ready: bool = False


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


def prepare_request(record: HITLRecord) -> PreparedRequest:
    """Hash, pretty text and risk without the secret scan of a request (runs on a worker thread, in a few ms
    for megabytes of arguments: the pretty text stops at its budget)."""
    shown = shown_arguments(record)
    compact = canonical_json_bytes(shown)  # by orjson where it prints the same: json.dumps holds the GIL ~5 ms a MB
    digest = hashlib.sha256(compact).hexdigest()  # args_digest(shown), without a second 1 MB dumps
    total_chars = len(compact.decode("utf-8"))
    formatted = format_json(shown, total_chars=total_chars)
    prepared = PreparedRequest(record, shown, digest, formatted, total_chars)
    data = record.get("data") or {}
    call = call_of_record(record)
    prepared.risk = assess(call, scan_secrets=False) if call is not None else None
    if record.get("hitl_type") == HITLType.ASK_USER.value:
        args = data.get("arguments") if isinstance(data.get("arguments"), dict) else {}
        question = data.get("question") or (args or {}).get("question") or data.get("prompt")
        options = data.get("options") or (args or {}).get("options") or []
        prepared.question = str(question) if question else ""
        prepared.options = [str(o) for o in options] if isinstance(options, list) else []
        prepared.secrets = ()  # a question is not a call: nothing to scan or diff
    return prepared


def needs_diff(prepared: PreparedRequest) -> bool:
    return prepared.question is None and prepared.record.get("tool_name") in WRITE_TOOLS and not prepared.diff_ready


def check_request(
    prepared: PreparedRequest, workspace: Path | None, *, secrets: tuple[str, ...] | None = None
) -> RequestChecks:
    """The secret scan (unless ``secrets`` is its known result) and a write's diff (runs on a worker thread)."""
    if secrets is None:
        call = call_of_record(prepared.record)
        secrets = secret_kinds(call.arguments) if call is not None else ()
    if not needs_diff(prepared):
        return RequestChecks(secrets)
    diff, note = write_file_diff(workspace, prepared.shown)
    return RequestChecks(secrets, diff, note, diff_ready=True)
