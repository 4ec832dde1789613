"""File writes and edits of every host (Claude's Write, Edit, MultiEdit and the other agents' likes) as a unified
diff against the file as it is now, for the reviewer to read.

Only files inside the session's working directory are read (the path is the model's choice: never follow it
out of the project); others are compared with nothing and say so.
"""

from __future__ import annotations

import difflib
import os
from typing import Any

MAX_FILE_BYTES = 2_000_000
MAX_DIFF_CHARS = 200_000


def _inside(path: str, cwd: str | None) -> str | None:
    """The real path of ``path`` when it lies inside ``cwd`` (after resolving links); else None."""
    if not cwd:
        return None
    root = os.path.realpath(cwd)
    target = os.path.realpath(path if os.path.isabs(path) else os.path.join(root, path))
    return target if os.path.commonpath([root, target]) == root else None


def _current(path: str, cwd: str | None) -> tuple[str | None, str]:
    """The file's text now (None when it cannot be shown) and a note about it."""
    real = _inside(path, cwd)
    if real is None:
        return None, f"{path} is outside the project directory: not read, compared with nothing"
    try:
        if os.path.getsize(real) > MAX_FILE_BYTES:
            return None, f"{path} is larger than {MAX_FILE_BYTES // 1_000_000} MB: not read"
        with open(real, encoding="utf-8") as handle:
            return handle.read(), ""
    except FileNotFoundError:
        return "", f"{path} does not exist yet"
    except UnicodeDecodeError:
        return None, f"{path} is not UTF-8 text: no diff"
    except OSError as exc:
        return None, f"{path} cannot be read: {exc.strerror}"


def _apply_edit(text: str, old: str, new: str, replace_all: bool) -> str | None:
    if not old or old not in text:
        return None
    return text.replace(old, new) if replace_all else text.replace(old, new, 1)


WRITE_TOOLS = frozenset({"Write", "write_file", "create", "Create", "write"})
"""Whole-file writers of every host: Claude, Gemini/Qwen, Copilot, Factory, OpenCode."""
EDIT_TOOLS = frozenset({"Edit", "MultiEdit", "replace", "edit"})
_PATH_KEYS = ("file_path", "path", "filePath")
_CONTENT_KEYS = ("content", "file_text")
_OLD_KEYS = ("old_string", "old_str", "oldString")
_NEW_KEYS = ("new_string", "new_str", "newString")


def _first(values: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The one of ``keys`` present; None when none is, or when two disagree (which one the host reads is not
    ours to guess)."""
    present = [values[key] for key in keys if values.get(key) is not None]
    return present[0] if len(present) == 1 or (present and all(v == present[0] for v in present)) else None


def diff_for(tool_name: str, tool_input: dict[str, Any], cwd: str | None) -> dict[str, str] | None:
    """``{"path", "diff", "note"}`` for file-writing tools; None for others."""
    path = _first(tool_input, _PATH_KEYS)
    if tool_name not in WRITE_TOOLS | EDIT_TOOLS or not isinstance(path, str) or not path:
        return None
    before, note = _current(path, cwd)
    if tool_name in WRITE_TOOLS:
        content = _first(tool_input, _CONTENT_KEYS)
        if not isinstance(content, str):
            return None
        after: str | None = content
        base = before or ""
    else:
        base = before or ""
        edits = tool_input.get("edits") if tool_name == "MultiEdit" else [tool_input]
        after = base if before is not None else None
        for edit in edits if isinstance(edits, list) else []:
            if after is None or not isinstance(edit, dict):
                break
            old, new = _first(edit, _OLD_KEYS), _first(edit, _NEW_KEYS)
            if not isinstance(old, str) or not isinstance(new, str):
                after = None
                break
            after = _apply_edit(after, old, new, bool(edit.get("replace_all") or edit.get("replaceAll")))
            if after is None:
                note = note or "old_string is not in the file as it is now: the agent will refuse this edit"
        if after is None:
            return {"path": path, "diff": "", "note": note or "no diff"}
    if after is None:
        return None
    diff = "".join(
        difflib.unified_diff(
            base.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}", n=3
        )
    )
    if len(diff) > MAX_DIFF_CHARS:
        diff = diff[:MAX_DIFF_CHARS] + "\n… (diff cut at 200 KB)\n"
        note = (note + "; " if note else "") + "first 200 KB of the diff"
    return {"path": path, "diff": diff, "note": note}
