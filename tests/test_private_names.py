"""A module's underscore names are its own: no module imports another module's private names.

import-linter's contracts see which modules import which, not the names imported, so this check reads the
imports with ``ast``. ``KNOWN`` lists the imports that broke the rule when it was introduced (each to be made
public or moved); nothing may be added to it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.helpers.statements import statements

REPO = Path(__file__).resolve().parent.parent
ROOTS = ("reviewer_app", "tests", "bench", "examples", "packaging")

KNOWN = {
    ("reviewer_app/runtime/core.py", "reviewer_app.runtime.run_state", "_Run"),
    ("reviewer_app/runtime/runner.py", "reviewer_app.runtime.run_state", "_Run"),
    ("reviewer_app/runtime/runner.py", "reviewer_app.runtime.run_state", "_Step"),
    ("reviewer_app/runtime/runner.py", "reviewer_app.runtime.supervision", "_beat"),
    ("reviewer_app/runtime/runner.py", "reviewer_app.runtime.turns", "_record_waiver"),
    ("reviewer_app/runtime/runner.py", "reviewer_app.runtime.turns", "_with_run_unique_call_ids"),
    ("reviewer_app/runtime/turns.py", "reviewer_app.runtime.run_state", "_Run"),
    ("reviewer_app/runtime/turns.py", "reviewer_app.runtime.run_state", "_Step"),
    ("reviewer_app/runtime/supervision.py", "reviewer_app.runtime.run_state", "_Run"),
    ("reviewer_app/persistence/store/base.py", "reviewer_app.persistence.store.fastpath", "_HeldConnection"),
    ("reviewer_app/persistence/store/base.py", "reviewer_app.persistence.store.fastpath", "_insert_ignore_statement"),
    ("reviewer_app/persistence/store/base.py", "reviewer_app.persistence.store.fastpath", "_Prepared"),
    ("reviewer_app/persistence/store/__init__.py", "reviewer_app.persistence.store.runs", "_runs_query"),
    ("reviewer_app/persistence/store/database.py", "reviewer_app.persistence.store.fastpath", "_HeldConnection"),
    ("reviewer_app/persistence/store/database.py", "reviewer_app.persistence.store.fastpath", "_Prepared"),
    ("reviewer_app/persistence/store/database.py", "reviewer_app.persistence.store.fastpath", "_Write"),
    ("tests/helpers/blocking_tool_run.py", "reviewer_app.cli", "_drive_until_finished"),
    ("tests/persistence/test_window_reads.py", "reviewer_app.persistence.store", "_runs_query"),
    ("tests/policy/test_policy_whole.py", "tests.policy.test_rules_cli", "_request"),
    ("tests/integrations/test_claude_code_e2e_targets.py", "tests.integrations.test_claude_code_e2e", "_env"),
    ("tests/integrations/test_claude_code_e2e_targets.py", "tests.integrations.test_claude_code_e2e", "_reviewer"),
    ("tests/integrations/test_mcp_proxy_claude_e2e.py", "tests.integrations.test_claude_code_e2e", "_env"),
    ("tests/integrations/test_claude_code_fast_blobs.py", "tests.integrations.test_claude_code_fast", "_comparable"),
    ("tests/integrations/test_claude_code_fast_blobs.py", "tests.integrations.test_claude_code_fast", "_rows"),
    ("tests/trust/test_signed_decisions.py", "tests.trust.test_postgres_trust", "_as"),
    ("tests/trust/test_signed_decisions.py", "tests.trust.test_postgres_trust", "_reviewer_grants"),
    ("tests/trust/test_signed_decisions.py", "tests.trust.test_postgres_trust", "_role"),
    ("tests/trust/test_signed_decisions.py", "tests.trust.test_postgres_trust", "_sql"),
    ("tests/trust/test_sensitive_targets.py", "reviewer_app.domain.sensitive", "_matcher"),
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_of(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_module(path: Path, node: ast.ImportFrom, root: Path) -> str:
    """The absolute name of the module ``node`` imports from (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    package = module_of(path, root).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def private_imports(path: Path, root: Path = REPO) -> Iterator[tuple[str, str, str]]:
    """``(file, module, name)`` for each private name ``path`` imports from another of the project's modules."""
    own = module_of(path, root)
    for node in statements(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            source = imported_module(path, node, root)
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.Import):  # ``import reviewer_app.x._private``
            source, names = "", [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            module, _, leaf = f"{source}.{name}".strip(".").rpartition(".")
            if module.split(".")[0] in ROOTS and module != own and is_private(leaf):
                yield path.relative_to(root).as_posix(), module, leaf


def test_no_module_imports_another_modules_private_names() -> None:
    found = {
        hit
        for root in ROOTS
        if (REPO / root).is_dir()
        for path in sorted((REPO / root).rglob("*.py"))
        for hit in private_imports(path)
    }
    new = sorted(found - KNOWN)
    assert not new, (
        "private names imported from another module (make them public or keep them in their module):\n"
        + "\n".join(f"  {file}: from {module} import {name}" for file, module, name in new)
    )


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    """The check itself works: relative and absolute imports of another module's private names are found."""
    package = tmp_path / "reviewer_app" / "hitl"
    package.mkdir(parents=True)
    probe = package / "probe.py"
    probe.write_text(
        "from .core import _hidden, shown\n"
        "from reviewer_app.cli import _drive\n"
        "import reviewer_app.x._private_module\n"
        "from _socket import _socket\n"  # the standard library's own business
        "from reviewer_app.hitl.probe import _mine\n",  # its own name
        encoding="utf-8",
    )
    assert set(private_imports(probe, tmp_path)) == {
        ("reviewer_app/hitl/probe.py", "reviewer_app.hitl.core", "_hidden"),
        ("reviewer_app/hitl/probe.py", "reviewer_app.cli", "_drive"),
        ("reviewer_app/hitl/probe.py", "reviewer_app.x", "_private_module"),
    }
