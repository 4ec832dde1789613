"""The window talks to the backend's service methods only: no reach into its store (import-linter covers imports)."""

from __future__ import annotations

import ast
from pathlib import Path

import reviewer_app.ui

UI_DIR = Path(reviewer_app.ui.__file__).parent


def store_reaches(source: str) -> list[int]:
    """Lines of ``<anything>.store`` attribute reads: the store is the backend's, not the window's."""
    return [
        node.lineno for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Attribute) and node.attr == "store"
    ]


def test_the_detector_sees_a_reach_into_the_store() -> None:
    assert store_reaches("rows = self.backend.store.requests.summaries(q)\n") == [1]
    assert store_reaches("rows = await self.backend.list_summaries(q)\n") == []


def test_no_ui_module_reaches_into_the_store() -> None:
    modules = sorted(UI_DIR.rglob("*.py"))
    assert len(modules) > 20  # every package of the window, not an empty directory
    found = {str(path.relative_to(UI_DIR)): lines for path in modules if (lines := store_reaches(path.read_text()))}
    assert found == {}
