"""The one side effect the framework examples perform: a note written inside the agent's folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

NOTE_PLAN: list[dict[str, Any]] = [
    {"path": "a.txt", "text": "one"},
    {"path": "b.txt", "text": "two"},
    {"path": "c.txt", "text": "three"},
    {"path": "d.txt", "text": "four"},
    {"path": "s.txt", "text": "same"},
    {"path": "s.txt", "text": "same"},
]
"""The notes the scripted models ask to write, one per turn (the last one twice: approve-for-session's case)."""
ONE_NOTE: list[dict[str, Any]] = [{"path": "notes.txt", "text": "Buy milk.\n"}]


def write_note_into(folder: Path, path: str, text: str) -> str:
    """Write ``text`` to ``folder/path`` (refused outside ``folder``); returns what the model reads."""
    target = (folder / path).resolve()
    if not target.is_relative_to(folder.resolve()):
        return f"refused: {path} is outside the folder"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return f"wrote {path}"


def example_parser(doc: str, state_help: str) -> argparse.ArgumentParser:
    """The options every framework example takes: Reviewer's database, the framework's own state, the folder."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--db", default=None, help="Reviewer's database (default: $REVIEWER_DB or the user's)")
    parser.add_argument("--state", type=Path, required=True, help=state_help)
    parser.add_argument("--workdir", type=Path, default=Path.cwd() / "agent-scratch")
    return parser


class NotesFolder:
    """The agent's folder and every note written into it (the side effects a test counts)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.written: list[tuple[str, str]] = []

    def write(self, path: str, text: str) -> str:
        result = write_note_into(self.folder, path, text)
        if result.startswith("wrote"):
            self.written.append((path, text))
        return result
