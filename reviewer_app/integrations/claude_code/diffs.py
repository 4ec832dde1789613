"""File writes and edits of every host (Claude's Write, Edit, MultiEdit and the other agents' likes) as a unified
diff against the file as it is now, for the reviewer to read.

Only regular files inside the session's working directory are read, and through
:func:`reviewer_app.domain.safe_fs.read_inside` (component by component, no symlink followed at open time, a FIFO
or device never opened, a hard-linked file refused): the path is the model's choice, and whatever stands there the
agent may have made. Others are compared with nothing and the note says why.

Standard library only, no ``typing`` at run time: the hook's lean path (:mod:`.lean`) makes the diff too.
"""

from __future__ import annotations

import difflib

from reviewer_app.domain import safe_fs

TYPE_CHECKING = False  # no ``typing`` at run time (see the module docstring)
if TYPE_CHECKING:
    from typing import Any

MAX_FILE_BYTES = 2_000_000
MAX_DIFF_CHARS = 200_000
_NOT_READ = "not read, compared with nothing"


def _current(path: str, cwd: str | None) -> tuple[str | None, str]:
    """The file's text now (None when it cannot be shown) and a note about it."""
    if not cwd:
        return None, f"{path} is outside the project directory: {_NOT_READ}"
    try:
        data = safe_fs.read_inside(cwd, path, MAX_FILE_BYTES)
    except FileNotFoundError:
        return "", f"{path} does not exist yet"
    except safe_fs.LeadsOutside:
        return None, f"{path} is outside the project directory: {_NOT_READ}"
    except IsADirectoryError:
        return None, f"{path} is a directory: {_NOT_READ}"
    except safe_fs.NotRegularFile as exc:
        return None, f"{path} is {exc.kind}: {_NOT_READ}"
    except safe_fs.HardLinked as exc:
        return (
            None,
            f"{path} has {exc.links} hard links: not read (another may be outside the project), compared with nothing",
        )
    except safe_fs.FileTooLarge:
        return None, f"{path} is larger than {MAX_FILE_BYTES // 1_000_000} MB: not read"
    except safe_fs.WorkspaceEscape as exc:
        return None, f"{path} cannot be read safely ({exc}): {_NOT_READ}"
    except OSError as exc:
        return None, f"{path} cannot be read: {exc.strerror or exc}"
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None, f"{path} is not UTF-8 text: no diff"
    # As ``open(path, encoding="utf-8").read()`` reads it (universal newlines): the diff the reviewer always saw.
    return text.replace("\r\n", "\n").replace("\r", "\n"), ""


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
