"""bashlex, loaded with its parse tables read from a file instead of rebuilt on every import.

Why: bashlex's vendored PLY computes the LALR tables of the bash grammar each time ``bashlex.parser`` is
imported (~0.1 s of CPU, 0.3 s on a busy machine); its shipped ``parsetab.py`` is never read. A permission hook
runs in a fresh process for every tool call, so every call whose rules need the shell parser paid it.
``shell_grammar.json`` (next to this module, written by :func:`write_tables`) holds the tables the grammar
yields; they are used only when bashlex's grammar, production by production, is the one they were built from
(else bashlex builds its own as before, a little slower and just as right). A test rebuilds the tables with
bashlex itself and compares.

Public API: ``load_bashlex() -> module`` (what ``import bashlex`` returns), ``write_tables(path)``.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

TABLES = Path(__file__).with_name("shell_grammar.json")
_LOADING = threading.Lock()


def _productions(grammar: Any) -> list[str]:
    return [str(production) for production in grammar.Productions]


def _read_tables() -> dict[str, Any] | None:
    try:
        raw = json.loads(TABLES.read_text(encoding="utf-8"))
        return {
            "productions": list(raw["productions"]),
            "action": {int(state): dict(row) for state, row in raw["action"].items()},
            "goto": {int(state): dict(row) for state, row in raw["goto"].items()},
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def load_bashlex() -> ModuleType:
    """``bashlex``, imported once per process; with the stored tables when they fit its grammar."""
    with _LOADING:  # one thread sets the package up; the others find it done
        loaded = sys.modules.get("bashlex")
        if loaded is not None and hasattr(loaded, "parse"):
            return loaded
        return _load()


def _load() -> ModuleType:
    found = _read_tables()
    if found is None:
        import bashlex

        module: ModuleType = bashlex
        return module
    tables: dict[str, Any] = found

    def stored(built: Any, yacc: ModuleType) -> Any:
        class StoredTable(built):  # type: ignore[misc]
            """The tables from the file when the grammar is the same, production by production."""

            def __init__(self, grammar: Any, log: Any = None) -> None:
                if _productions(grammar) != tables["productions"]:
                    super().__init__(grammar, log)
                    return
                self.grammar = grammar
                self.log = log or yacc.NullLogger()
                self.lr_action = tables["action"]
                self.lr_goto = tables["goto"]
                self.lr_productions = grammar.Productions
                self.lr_goto_cache: dict[Any, Any] = {}
                self.lr0_cidhash: dict[Any, Any] = {}
                self._add_count = 0
                self.sr_conflict = self.rr_conflict = 0
                self.conflicts: list[Any] = []
                self.sr_conflicts: list[Any] = []
                self.rr_conflicts: list[Any] = []

        return StoredTable

    return _import_with_table(stored)


def _import_with_table(table_class: Any) -> ModuleType:
    """Import bashlex with ``table_class(LRTable, yacc)`` standing in for PLY's table builder while its parser is
    built (bashlex's ``__init__`` imports the parser, so the package is set up by hand around it)."""
    spec = importlib.util.find_spec("bashlex")
    if spec is None or spec.loader is None:
        raise ImportError("bashlex is not installed")
    package = importlib.util.module_from_spec(spec)
    sys.modules["bashlex"] = package
    try:
        from bashlex import yacc

        built = yacc.LRTable
        yacc.LRTable = table_class(built, yacc)
        try:
            spec.loader.exec_module(package)
        finally:
            yacc.LRTable = built
    except BaseException:
        for name in [name for name in sys.modules if name == "bashlex" or name.startswith("bashlex.")]:
            del sys.modules[name]
        raise
    return package


def write_tables(path: Path = TABLES) -> None:
    """Store the tables bashlex builds itself, before its parser module adjusts them (run after upgrading bashlex;
    a test says when it is due). In a process that has not imported bashlex yet."""
    built_tables: list[Any] = []

    def recording(built: Any, yacc: ModuleType) -> Any:
        class RecordedTable(built):  # type: ignore[misc]
            def __init__(self, grammar: Any, log: Any = None) -> None:
                super().__init__(grammar, log)
                built_tables.append(json.loads(json.dumps([_productions(grammar), self.lr_action, self.lr_goto])))

        return RecordedTable

    if "bashlex" in sys.modules:
        raise RuntimeError("bashlex is imported already: write the tables from a fresh process")
    _import_with_table(recording)
    productions, action, goto = built_tables[0]
    data = {"productions": productions, "action": action, "goto": goto}
    path.write_text(json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write_tables()
