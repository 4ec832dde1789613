"""No module binds a top-level name twice: the second binding silently replaces the first for every caller (two
branches merged into one module once each brought a ``_COMMAND_KEYS``, and the risk check read the summary's)."""

from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

import reviewer_app

PACKAGE = Path(reviewer_app.__file__).parent


def _bound_twice(source: str) -> list[str]:
    bound: Counter[str] = Counter()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            bound.update(target.id for target in node.targets if isinstance(target, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            bound[node.target.id] += 1
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound[node.name] += 1
    return sorted(name for name, count in bound.items() if count > 1)


def test_the_check_sees_a_name_bound_twice() -> None:
    assert _bound_twice("KEYS = ('a',)\ndef f(): ...\nKEYS = ('b',)\n") == ["KEYS"]
    assert _bound_twice("x: int = 1\nclass C: ...\nclass C: ...\n") == ["C"]


def test_no_module_binds_a_top_level_name_twice() -> None:
    twice = {
        str(path.relative_to(PACKAGE)): names
        for path in sorted(PACKAGE.rglob("*.py"))
        if (names := _bound_twice(path.read_text(encoding="utf-8")))
    }
    assert twice == {}
