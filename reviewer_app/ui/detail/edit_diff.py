"""The preview of an edit: the arguments as shown against the arguments as edited, field by field (no widgets).

String fields are compared line by line as text (a write_file content reads as the file would),
other fields as pretty JSON; unchanged fields are left out.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

DIFF_LIMIT_CHARS = 1_000_000  # difflib on more would hold the GUI thread for seconds
_ABSENT = object()


def _lines(value: Any) -> list[str]:
    if value is _ABSENT:
        return []
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    return text.splitlines(keepends=True)


def _field_diff(name: str, before: Any, after: Any) -> str:
    if isinstance(before, str) and isinstance(after, str) and max(len(before), len(after)) > DIFF_LIMIT_CHARS:
        sizes = f"{len(before):,} -> {len(after):,} characters"
        return f"--- {name} (as shown)\n+++ {name} (edited)\n@@ too large to compare here: {sizes} @@\n"
    kind = "" if isinstance(before, str) and isinstance(after, str) else " (JSON)"
    if isinstance(before, str) and isinstance(after, str) and not before.endswith("\n") and not after.endswith("\n"):
        before, after = before + "\n", after + "\n"  # one-line values: no "no newline" marker unless it changed
    lines = difflib.unified_diff(
        _lines(before),
        _lines(after),
        fromfile=f"{name}{kind} (as shown)" if before is not _ABSENT else f"{name} (absent)",
        tofile=f"{name}{kind} (edited)" if after is not _ABSENT else f"{name} (removed)",
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of field\n" for line in lines)


def edit_diff(original: Any, edited: Any) -> str:
    """A unified diff per changed argument; empty when nothing changed."""
    if original == edited:
        return ""
    if not isinstance(original, dict) or not isinstance(edited, dict):
        return _field_diff("arguments", original, edited)
    parts = []
    for key in [*original, *(k for k in edited if k not in original)]:
        before, after = original.get(key, _ABSENT), edited.get(key, _ABSENT)
        if before == after:
            continue
        parts.append(_field_diff(str(key), before, after))
    return "".join(parts)
