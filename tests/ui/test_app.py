"""Start-up: a database that cannot be opened, and the real ``reviewer-app --demo`` start path."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QMessageBox

from reviewer_app.config import AppContext
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.startup.app import open_failure_text, run_gui


def test_a_database_from_a_newer_reviewer_gets_a_clear_message_and_exit_code_2(
    db_path: Path, qapp: Any, tmp_path: Path, capsys: Any
) -> None:
    SQLHITLBackend(db_path).close()
    with sqlite3.connect(db_path) as connection:
        connection.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    shown: list[str] = []

    def close_box() -> None:
        box = QApplication.activeModalWidget()
        if isinstance(box, QMessageBox):
            shown.append(f"{box.text()}\n{box.informativeText()}")
            box.accept()
        else:
            QTimer.singleShot(50, close_box)

    QTimer.singleShot(50, close_box)
    code = run_gui(AppContext(database=str(db_path), workspaces_dir=tmp_path / "ws"))
    assert code == 2
    assert shown and "newer version of Reviewer" in shown[0]
    assert "9999_from_the_future" in shown[0]
    assert "Traceback" not in capsys.readouterr().err


def test_locked_database_message_says_what_to_do() -> None:
    title, details = open_failure_text("/data/r.db", RuntimeError("database is locked"))
    assert "could not open" in title
    assert "/data/r.db" in details and "lock" in details


def test_demo_start_path_shows_every_kind_of_request(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    """``reviewer-app --demo`` in its own process: runtime on the qasync loop, demo runs, a screenshot."""
    db = tmp_path / "demo.db"
    shot = tmp_path / "shot.png"
    env = dict(subprocess_env)
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # QSettings and agents.toml stay in the temp dir
    env["XDG_DATA_HOME"] = str(tmp_path / "data")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "reviewer_app",
            "--db",
            str(db),
            "--workspaces",
            str(tmp_path / "ws"),
            "--reviewer",
            "tester",
            "--demo",
            "--screenshot",
            str(shot),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert shot.stat().st_size > 10_000
    backend = SQLHITLBackend(db)
    try:
        pending = backend.store.requests.summaries(RequestQuery())
    finally:
        backend.close()
    tools = sorted(s.tool_name or s.hitl_type for s in pending)
    assert tools == ["ask_user", "run_shell", "run_shell", "write_file", "write_file"]
    by_run: dict[str, int] = {}
    for s in pending:
        by_run[s.invocation_id] = by_run.get(s.invocation_id, 0) + 1
    assert sorted(by_run.values()) == [1, 1, 1, 2]  # one assistant turn asked for two calls
