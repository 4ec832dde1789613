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
from tests.helpers.process_output import ProcessOutput
from tests.runtime.test_recovery_process import start_run, wait_until, write_script

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform == "win32", reason="POSIX processes")]

ENGINE_BUSY_TIMEOUT_S = 30  # the app engine's busy_timeout: a lock held past it makes the run retry
RUNNING_WINDOW_MS = 8000
"""The scripted model's one turn takes this long: the run stays ``running`` (its end commit still to come) long after
the test has seen it running and taken the lock or filled the disk, whatever the machine's load."""


def _state(db_path: Path, query: str, *args: str) -> str | None:
    """One value read with plain ``sqlite3``, read-only: cheap enough to poll, and it never writes (a full disk)."""
    connection = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, timeout=5)
    try:
        row = connection.execute(query, args).fetchone()
        return row[0] if row else None
    finally:
        connection.close()


def _running(db_path: Path) -> str | None:
    """The id of the run in state ``running`` (the ``invocations`` table), if any."""
    return _state(db_path, "SELECT id FROM invocations WHERE state = 'running' LIMIT 1")


def _state_of(db_path: Path, invocation_id: str) -> str | None:
    return _state(db_path, "SELECT state FROM invocations WHERE id = ?", invocation_id)


def _start_running(env: dict[str, str], db_path: Path, tmp_path: Path, text: str) -> tuple[ProcessOutput, str]:
    """A ``reviewer-app run`` whose one model turn lasts :data:`RUNNING_WINDOW_MS`, once it is running."""
    script = write_script(tmp_path / "script.json", [{"text": text, "delay_ms": RUNNING_WINDOW_MS}])
    output = ProcessOutput(start_run(env, db_path, tmp_path / "ws", script, "say done"))
    inv = wait_until(
        lambda: _running(db_path), what="the run to be running", process=output.process, stderr=output.stderr
    )
    return output, inv


def test_a_write_lock_held_past_the_busy_timeout_by_another_process_does_not_fail_the_run(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    Store.open(db_path).close()  # migrated first
    output, inv = _start_running(subprocess_env, db_path, tmp_path, "all done")
    locker = sqlite3.connect(db_path, isolation_level=None)
    try:
        locker.execute("BEGIN IMMEDIATE")  # another process holds the write lock while the run commits its end
        held_at = time.monotonic()
        assert _state_of(db_path, inv) == "running"  # taken before the run's end commit
        output.wait_for("database busy — retrying", timeout=ENGINE_BUSY_TIMEOUT_S + 90)  # its busy_timeout ran out
        locker.execute("ROLLBACK")
        released_at = time.monotonic()
        _, stderr = output.finish(timeout=120)
        finished_after = time.monotonic() - released_at
    finally:
        locker.close()
        if output.process.poll() is None:
            output.kill()
    assert released_at - held_at >= ENGINE_BUSY_TIMEOUT_S
    assert output.process.returncode == 0, stderr
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
        output, inv = _start_running(subprocess_env, db_path, tmp_path, text)
        try:
            filler = _fill(disk)
            assert _state_of(db_path, inv) == "running"  # full before the run's end commit
            output.wait_for("disk full — retrying", timeout=120)  # its end commit met the full disk
            filler.unlink()
            _, stderr = output.finish(timeout=120)
        finally:
            if output.process.poll() is None:
                output.kill()
        assert output.process.returncode == 0, stderr
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
        env = {**subprocess_env, "REVIEWER_DB_RETRY_S": "4"}
        output, inv = _start_running(env, db_path, tmp_path, text)
        try:
            filler = _fill(disk)
            assert _state_of(db_path, inv) == "running"  # full before the run's end commit
            _, stderr = output.finish(timeout=120)
        finally:
            if output.process.poll() is None:
                output.kill()
        filler.unlink()
        assert output.process.returncode == 11, stderr
        assert "disk full" in stderr and "cannot record anything" in stderr
        assert "Traceback" not in stderr
        store = Store.open(db_path)
        try:
            run = store.runs.get(inv)
        finally:
            store.close()
        assert run.state != "failed"  # never marked failed for the database's trouble: resumable
