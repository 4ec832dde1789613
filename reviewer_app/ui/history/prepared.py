"""What the History detail shows about one decision, computed off the GUI thread (no widgets here).

The diff is between the arguments as the reviewer was shown them and as they were approved after editing,
both taken from the decision's audit row: never against the files on disk today (which the edit itself may
have written since, turning the diff around). A string argument that holds several lines (a file's content,
a script) is compared line by line, so an edited ``write_file`` reads as the edit of its content.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any

from reviewer_app.domain.history import HistoryEntry

DIFF_SHOWN_CHARS = 200_000
ARGS_SHOWN_CHARS = 200_000


@dataclass(frozen=True)
class PreparedDecision:
    entry: HistoryEntry
    shown_text: str
    edited_text: str | None
    diff: str | None
    """A unified diff from the arguments as shown (``-``) to as edited (``+``); None when nothing was edited."""


def _pretty(value: Any) -> str:
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return text if len(text) <= ARGS_SHOWN_CHARS else text[:ARGS_SHOWN_CHARS] + "\n… (cut here)"


def _lines(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines() or [""]
    return json.dumps(value, indent=2, ensure_ascii=False, default=str).splitlines()


def arguments_diff(shown: Any, edited: Any) -> str:
    """Unified diff of ``shown`` -> ``edited``: per top-level argument for objects, multi-line strings by line."""
    out: list[str] = []
    if isinstance(shown, dict) and isinstance(edited, dict):
        for name in list(dict.fromkeys([*shown, *edited])):
            before, after = shown.get(name), edited.get(name)
            if name in shown and name in edited and before == after:
                continue
            old = _lines(before) if name in shown else []
            new = _lines(after) if name in edited else []
            out += difflib.unified_diff(old, new, f"{name} (as shown)", f"{name} (as edited)", lineterm="")
    else:
        out += difflib.unified_diff(_lines(shown), _lines(edited), "as shown", "as edited", lineterm="")
    text = "\n".join(out) or "(the edited arguments are the same as those shown)"
    return text if len(text) <= DIFF_SHOWN_CHARS else text[:DIFF_SHOWN_CHARS] + "\n… (cut here)"


def prepare_decision(entry: HistoryEntry) -> PreparedDecision:
    """Texts for one decision: the arguments as shown, as edited, and the diff between them."""
    edited = entry.edited_args if entry.edited_args is not None else None
    return PreparedDecision(
        entry=entry,
        shown_text=_pretty(entry.shown_args),
        edited_text=None if edited is None else _pretty(edited),
        diff=None if edited is None else arguments_diff(entry.shown_args, edited),
    )
