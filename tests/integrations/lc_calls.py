"""The calls the LangChain agent's scripted model asks for (``lc_agent``) and what its tools really did: plain data,
so a test module can name them without importing LangChain at collection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CALLS = [
    {"name": "write_file", "args": {"path": "notes.txt", "content": "hello"}, "id": "call_write"},
    {"name": "delete_file", "args": {"path": "old.txt"}, "id": "call_delete"},
]


def runs(log: Path) -> list[dict[str, Any]]:
    """What the tools really did, in order."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
