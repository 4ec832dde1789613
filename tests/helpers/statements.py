"""The statements of a parsed module, for the tests that look for imports in the source tree."""

from __future__ import annotations

import ast
from collections.abc import Iterator

STATEMENT_NODES = (ast.stmt, ast.excepthandler, ast.match_case)
"""What a statement list may hold: statements, and the ``except`` clauses and ``case`` blocks that hold more."""


def statements(tree: ast.AST) -> Iterator[ast.AST]:
    """Every statement in ``tree`` (an ``import`` is one), nested ones too, without the expressions ``ast.walk``
    would visit as well (most of a module's nodes: walking them was most of these tests' CPU)."""
    pending = [tree]
    while pending:
        node = pending.pop()
        yield node
        for value in vars(node).values():
            if isinstance(value, list):
                pending.extend(item for item in value if isinstance(item, STATEMENT_NODES))
