"""One installer at a time for the caches the tests share across processes (npm CLIs, framework venvs).

The suite runs in parallel workers (pytest-xdist); two workers reaching an empty cache at once must not both run
``npm install`` or ``pip install`` into the same folder. A file lock next to the cache serialises them; the second
worker then finds the first one's result.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock


@contextmanager
def installing(target: Path, timeout: float = 1800.0) -> Iterator[None]:
    """Hold the lock for installing into ``target`` (a folder; the lock file sits beside it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f".{target.name}.lock"), timeout=timeout):
        yield
