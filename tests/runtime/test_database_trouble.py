"""Database trouble never fails a run: a write lock held past busy_timeout, a full disk; and a clear exit when
the database stays unusable. Real ``reviewer-app run`` processes, a real second SQLite connection, a real tmpfs."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewer_app.persistence.store import Store
from tests.runtime.test_recovery_process import kill, start_run, wait_until, write_script

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")]

LOCK_HELD_S = 40  # past the engine's 30 s busy_timeout


def _running(db_path: Path) -> str | None:
    store = Store.open(db_path)
    try:
        runs = store.runs.list(states=["running"])
        return runs[0].id if runs else None
    finally:
        store.close()


def test_a_write_lock_held_for_40_s_by_another_process_does_not_fail_the_run(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    Store.open(db_path).close()  # migrated first
    script = write_script(tmp_path / "script.json", [{"text": "all done", "delay_ms": 1500}])
    proc = start_run(subprocess_env, db_path, tmp_path / "ws", script, "say done")
    locker = sqlite3.connect(db_path, isolation_level=None)
    try:
        inv = wait_until(lambda: _running(db_path), what="the run to be running")
        locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock while the run commits its end
        held_at = time.monotonic()
        time.sleep(LOCK_HELD_S)
        locker.execute("ROLLBACK")
        released_at = time.monotonic()
        _, stderr = proc.communicate(timeout=120)
        finished_after = time.monotonic() - released_at
    finally:
        locker.close()
        if proc.poll() is None:
            kill(proc)
    assert proc.returncode == 0, stderr
    assert "database busy — retrying" in stderr
    assert "Traceback" not in stderr
    store = Store.open(db_path)
    try:
        run = store.runs.get(inv)
    finally:
        store.close()
    assert run.state == "done" and run.error is None
    print(f"\nlock held {released_at - held_at:.1f} s; the run finished {finished_after:.2f} s after its release")


@contextlib.contextmanager
def _small_tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _fill(directory: Path) -> Path:
    """Fill the file system up to the last byte (unbuffered: nothing is left to flush on close)."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_is_retried_and_the_run_finishes_once_space_is_freed(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    with _small_tmpfs(tmp_path / "small", "8m") as disk:
        db_path = disk / "reviews.db"
        Store.open(db_path).close()
        text = "all done " + "x" * 600_000  # the end commit must grow the files
        script = write_script(tmp_path / "script.json", [{"text": text, "delay_ms": 1500}])
        proc = start_run(subprocess_env, db_path, tmp_path / "ws", script, "say done")
        try:
            inv = wait_until(lambda: _running(db_path), what="the run to be running")
            filler = _fill(disk)
            time.sleep(5)  # the end commit meets a full disk, and retries
            filler.unlink()
            _, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                kill(proc)
        assert proc.returncode == 0, stderr
        assert "disk full — retrying" in stderr
        store = Store.open(db_path)
        try:
            run = store.runs.get(inv)
        finally:
            store.close()
        assert run.state == "done"


def test_a_database_that_stays_full_gives_the_run_up_with_a_clear_error_instead_of_hanging(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    with _small_tmpfs(tmp_path / "small", "8m") as disk:
        db_path = disk / "reviews.db"
        Store.open(db_path).close()
        text = "all done " + "x" * 600_000
        script = write_script(tmp_path / "script.json", [{"text": text, "delay_ms": 1500}])
        env = {**subprocess_env, "REVIEWER_DB_RETRY_S": "4"}
        proc = start_run(env, db_path, tmp_path / "ws", script, "say done")
        try:
            inv = wait_until(lambda: _running(db_path), what="the run to be running")
            filler = _fill(disk)
            _, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                kill(proc)
        filler.unlink()
        assert proc.returncode == 11, stderr
        assert "disk full" in stderr and "cannot record anything" in stderr
        assert "Traceback" not in stderr
        store = Store.open(db_path)
        try:
            run = store.runs.get(inv)
        finally:
            store.close()
        assert run.state != "failed"  # never marked failed for the database's trouble: resumable
