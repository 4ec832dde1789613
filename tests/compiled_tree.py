"""Compile this tree's Python files once before the run, so the processes the tests start do not each compile them.

The suite starts hundreds of Python processes (``python -m reviewer_app`` hooks and commands, the examples,
helper scripts, the parallel workers). Each one reads ``__pycache__``, but with ``PYTHONDONTWRITEBYTECODE`` set (as
some shells and CI images do) nothing ever writes it, and every process compiles the package from source again:
~0.2 s of CPU each on 2 cores. ``compileall`` writes the bytecode explicitly (that variable only stops the implicit
writes at import), once, in the controlling process; files whose bytecode is current are left alone (a stat each).
Bytecode is checked against its source's size and mtime at every import, so a stale file is never used.

Registered as a plugin by ``tests/conftest.py``.
"""

from __future__ import annotations

import compileall
import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("reviewer_app", "resources", "tests", "examples")


def compile_tree(root: Path = REPO_ROOT) -> bool:
    """Write current bytecode for every Python file of the packages the tests' child processes import."""
    return all(compileall.compile_dir(root / name, quiet=2, workers=1) for name in PACKAGES if (root / name).is_dir())


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("PYTEST_XDIST_WORKER") is None:  # the controlling process, before any worker starts
        compile_tree()
