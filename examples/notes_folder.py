"""The one side effect the framework examples perform: a note written inside the agent's folder."""

from __future__ import annotations

from pathlib import Path


def write_note_into(folder: Path, path: str, text: str) -> str:
    """Write ``text`` to ``folder/path`` (refused outside ``folder``); returns what the model reads."""
    target = (folder / path).resolve()
    if not target.is_relative_to(folder.resolve()):
        return f"refused: {path} is outside the folder"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return f"wrote {path}"
