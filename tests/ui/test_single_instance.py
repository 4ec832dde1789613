"""One window per database (issue 19), with real processes: a second launch on the same database focuses the
first window and exits 0; a launch on another database opens its own window."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.ui.desktop.single_instance import SingleInstance, database_key, server_name

pytestmark = pytest.mark.slow


def launch(db: Path, home: Path, run: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "XDG_RUNTIME_DIR": str(run),
        "XDG_CONFIG_HOME": str(home / "config"),
        "HOME": str(home),
        "REVIEWER_AGENTS_FILE": str(home / "agents.yaml"),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "reviewer_app", "--db", str(db), "gui"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def listening(path: Path) -> bool:
    probe = socket.socket(socket.AF_UNIX)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def wait_until_listening(path: Path, process: subprocess.Popen[str], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not listening(path):
        if process.poll() is not None:
            raise AssertionError(f"the window exited ({process.returncode}): {process.communicate()[1]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"no socket at {path}")
        time.sleep(0.1)


@pytest.fixture
def run_dir() -> Iterator[Path]:
    """A short private runtime folder: a socket path must fit AF_UNIX's 108 bytes, and pytest's per-worker
    ``tmp_path`` can be longer than that."""
    path = Path(tempfile.mkdtemp(prefix="ri-"))
    path.chmod(0o700)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_second_launch_focuses_the_first(tmp_path: Path, run_dir: Path) -> None:
    run = run_dir
    first_db, other_db = tmp_path / "a.db", tmp_path / "b.db"
    os.environ["XDG_RUNTIME_DIR"] = str(run)  # server_name() below resolves the same directory as the children
    try:
        socket_a, socket_b = Path(server_name(str(first_db))), Path(server_name(str(other_db)))
    finally:
        os.environ.pop("XDG_RUNTIME_DIR", None)
    assert socket_a.parent == run and socket_a != socket_b
    # A stale socket, as a crashed window leaves it (bound, nobody listening), is taken over.
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(socket_a))
    stale.close()
    assert socket_a.is_socket()
    first = launch(first_db, tmp_path, run)
    processes = [first]
    try:
        wait_until_listening(socket_a, first)
        second = launch(tmp_path / "." / "a.db", tmp_path, run)  # the same file named differently
        out, err = second.communicate(timeout=60)
        assert second.returncode == 0, err
        assert "already open; it was brought to the front" in out
        other = launch(other_db, tmp_path, run)
        processes.append(other)
        wait_until_listening(socket_b, other)
        assert other.poll() is None  # its own window
    finally:
        for process in processes:
            process.terminate()
        outputs = [process.communicate(timeout=30) for process in processes]
    assert "another launch asked for this window" in outputs[0][1]


def test_database_key() -> None:
    assert database_key("x.db") == database_key(f"sqlite:///{Path('x.db').resolve()}")
    assert "secret" not in database_key("postgresql://bob:secret@db/reviews")


def test_guard_in_process(qtbot: Any, tmp_path: Path, run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(run_dir))
    first, second = SingleInstance(str(tmp_path / "x.db")), SingleInstance(str(tmp_path / "x.db"))
    assert not second.hand_over()  # nobody listens yet
    assert first.listen()
    try:
        with qtbot.waitSignal(first.activated, timeout=5000):
            assert second.hand_over()
        from multiprocessing.connection import Client  # the wire format: multiprocessing's, as on Windows

        assert first.name is not None
        with qtbot.waitSignal(first.activated, timeout=5000), Client(first.name, "AF_UNIX") as client:
            client.send_bytes(b"show")
    finally:
        first.close()
    assert not Path(first.name).exists() and not second.hand_over()  # closed: the next launch opens its own


def test_no_guard_in_a_directory_others_can_enter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from reviewer_app.ui.desktop.single_instance import runtime_dir

    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ours = runtime_dir()
    assert ours == tmp_path / f"reviewer-app-{os.getuid()}" and (ours.stat().st_mode & 0o777) == 0o700
    ours.chmod(0o755)  # as if another user had made it first, open to all
    assert runtime_dir() is None and server_name(str(tmp_path / "x.db")) is None
    guard = SingleInstance(str(tmp_path / "x.db"))
    assert not guard.hand_over() and not guard.listen()  # off: the window opens without the guard
