"""Real faults for the hook and record tests: a write lock held by another process, a full disk, an immutable file."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integrations.hook_helpers import REPO_ROOT  # noqa: F401  (the tree the child processes import)

_LOCKER = (
    "import sqlite3, sys, time\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "print('locked', flush=True)\n"
    "time.sleep(float(sys.argv[2]))\n"
    "c.execute('ROLLBACK')\n"
)


@contextlib.contextmanager
def write_lock_held(db: Path, seconds: float) -> Iterator[subprocess.Popen[bytes]]:
    """Another process holds SQLite's write lock (``BEGIN IMMEDIATE``) for ``seconds``, then lets go."""
    locker = subprocess.Popen([sys.executable, "-c", _LOCKER, str(db), str(seconds)], stdout=subprocess.PIPE)
    assert locker.stdout is not None
    assert locker.stdout.readline().strip() == b"locked"
    try:
        yield locker
    finally:
        locker.kill()
        locker.wait()


@contextlib.contextmanager
def small_filesystem(where: Path, size: str = "8m") -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (root only; the test is skipped, with the reason, elsewhere)."""
    where.mkdir(parents=True, exist_ok=True)
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs to fill needs root and mount(8)")
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, check=False
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(folder: Path) -> Path:
    """Fill the file system ``folder`` is on until writes fail with ENOSPC; delete the file to free it."""
    filler = folder / "filler"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(descriptor, b"\0" * size)
    finally:
        os.close(descriptor)
    return filler


@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """``chattr +i``: even root cannot open the file for writing (new connections see a read-only database)."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr(1) is missing")
    result = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"cannot make a file immutable here: {result.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=False)


def watchdogs_of(pid: int) -> list[int]:
    """The watchdog processes watching ``pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"_watch" in argv and str(pid).encode() in argv:
            found.append(int(entry.name))
    return found


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(interval)
