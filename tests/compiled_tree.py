"""Compile this tree's Python files once before the run, so the processes the tests start do not each compile them.

The suite starts hundreds of Python processes (``python -m reviewer_app`` hooks and commands, the examples,
helper scripts, the parallel workers). Each one reads ``__pycache__``, but with ``PYTHONDONTWRITEBYTECODE`` set (as
some shells and CI images do) nothing ever writes it, and every process compiles the package from source again:
~0.2 s of CPU each on 2 cores. ``compileall`` writes the bytecode explicitly (that variable only stops the implicit
writes at import), once, in the controlling process; files whose bytecode is current are left alone (a stat each).
Bytecode is checked against its source's size and mtime at every import, so a stale file is never used.

The test modules themselves are imported by pytest, which rewrites their ``assert`` statements and caches the result
in ``__pycache__`` under its own name, and under that variable never writes that cache either: every parallel worker
parsed, rewrote and compiled all ~200 test modules again (~9 s of CPU each, half of what collecting costs).
The controlling process writes that cache too, with pytest's own functions, before the workers start; pytest checks
each entry against its source's hash when it reads it. pytest also rewrites every module of an installed package that
ships a pytest plugin (Hypothesis, pytest-qt, xdist, AnyIO, platformdirs…), and its cache of those, in the package's
own ``__pycache__``, was never written either: each worker rewrote ~130 of them (~1.3 s of CPU). The controlling
process writes that cache as well, for the ones it has imported and the ones the workers import while collecting.

Registered as a plugin by ``tests/conftest.py``.
"""

from __future__ import annotations

import compileall
import contextlib
import importlib
import os
import sys
import types
import warnings
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("reviewer_app", "resources", "tests", "examples")
PLUGINS = ("pg_server.py", "slow_first.py", "compiled_tree.py", "frozen_heap.py")
"""The plugin modules ``tests/conftest.py`` names: pytest rewrites their asserts as it does the test modules'."""


def compile_tree(root: Path = REPO_ROOT) -> bool:
    """Write current bytecode for every Python file of the packages the tests' child processes import."""
    return all(compileall.compile_dir(root / name, quiet=2, workers=1) for name in PACKAGES if (root / name).is_dir())


def rewritten_modules(tests: Path) -> list[Path]:
    """The files under ``tests`` whose asserts pytest rewrites: test modules, conftest files, the plugins."""
    found = [*tests.rglob("test_*.py"), *tests.rglob("conftest.py"), *(tests / name for name in PLUGINS)]
    return sorted(path for path in found if path.is_file())


WORKER_IMPORTS = ("hypothesis.strategies", "anyio")
"""Installed packages pytest rewrites (they ship a pytest plugin) that the workers import while collecting: the
property tests draw with Hypothesis, the MCP SDK and httpx run on AnyIO."""


def write_rewritten_tests(config: pytest.Config, tests: Path = REPO_ROOT / "tests") -> int:
    """Write pytest's cache of the rewritten test modules where it is missing or stale; the number written."""
    return write_rewrite_cache(config, rewritten_modules(tests))


def write_rewritten_imports(config: pytest.Config, names: tuple[str, ...] = WORKER_IMPORTS) -> int:
    """Import ``names`` and write pytest's cache of every module this process's import hook rewrote (the plugins'
    packages, Hypothesis, ``names``) where it is missing or stale; the number written."""
    hook = _rewriting_hook(config)
    if hook is None:
        return 0
    writes_bytecode = sys.dont_write_bytecode
    sys.dont_write_bytecode = False  # pytest's hook writes its cache as it rewrites them: each is rewritten once
    try:
        for name in names:
            with contextlib.suppress(ImportError):  # not installed: no worker imports it either
                importlib.import_module(name)
    finally:
        sys.dont_write_bytecode = writes_bytecode
    loaded = getattr(hook, "_rewritten_names", {})
    return write_rewrite_cache(config, sorted({Path(path) for path in loaded.values()}))


def _rewriting_hook(config: pytest.Config) -> object | None:
    """pytest's assertion-rewriting import hook in this process, or None when asserts are not rewritten."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return None
    state = config.stash.get(rewrite.assertstate_key, None) if hasattr(rewrite, "assertstate_key") else None
    return getattr(state, "hook", None)


def write_rewrite_cache(config: pytest.Config, sources: list[Path]) -> int:
    """Write pytest's cache of ``sources`` rewritten where it is missing or stale; the number written.

    Uses pytest's private rewriting functions (the same ones its import hook calls); with another pytest that lacks
    them, or with assertion rewriting turned off, nothing is written and each worker rewrites as before. A folder
    that cannot be written (a read-only install) is skipped, as pytest's hook skips it."""
    try:
        from _pytest.assertion import rewrite
    except ImportError:
        return 0
    needed = ("PYC_TAIL", "get_cache_dir", "try_makedirs", "_read_pyc", "_rewrite_test", "_write_pyc")
    if config.getoption("assertmode", "rewrite") != "rewrite" or not all(hasattr(rewrite, name) for name in needed):
        return 0
    quiet = types.SimpleNamespace(trace=lambda message: None)  # the AssertionState part _write_pyc uses
    written = 0
    for source in sources:
        cache = rewrite.get_cache_dir(source)
        pyc = cache / (source.name[:-3] + rewrite.PYC_TAIL)
        if rewrite._read_pyc(source, pyc) is not None or not rewrite.try_makedirs(cache):
            continue
        with contextlib.suppress(SyntaxError):  # pytest reports it when it imports the module
            source_hash, code = rewrite._rewrite_test(source, config)
            written += rewrite._write_pyc(quiet, code, source_hash, pyc)  # type: ignore[arg-type]
    return written


def write_hypothesis_unicode_tables() -> None:
    """Hypothesis's tables of the characters ``st.text()`` draws from, written to ``.hypothesis/unicode_data``.

    Built from every code point of the UTF-8 codec, ~1.3 s of CPU, in each worker whose tests draw text when the
    checkout has no ``.hypothesis`` folder yet (a fresh clone, as in CI); written once here, each worker reads it."""
    from hypothesis import strategies
    from hypothesis.errors import HypothesisSideeffectWarning

    with warnings.catch_warnings():  # its warning that this is slow work for a plugin's start: it is the point
        warnings.simplefilter("ignore", HypothesisSideeffectWarning)
        strategies.text().validate()


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # the controlling process, before any worker starts
        compile_tree()
        write_rewritten_tests(config)
        write_rewritten_imports(config)
        write_hypothesis_unicode_tables()
