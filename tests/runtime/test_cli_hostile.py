"""The CLI against hostile surroundings: undecodable arguments, unusable databases, huge arguments.

Each case prints one clear line on stderr and exits with its own code, never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from reviewer_app.cli import main
from reviewer_app.cli.errors import EXIT_BAD_ENCODING, EXIT_DB_CORRUPT, EXIT_DB_DIRECTORY, EXIT_DB_READ_ONLY
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.store import Store

REPO_ROOT = Path(__file__).resolve().parents[2]


def cli(env: dict[str, str], *args: str | bytes, honour_modes: bool = False, stdin: str | None = None):  # type: ignore[no-untyped-def]
    prefix = without_root_override() if honour_modes else []
    return subprocess.run(
        [*prefix, sys.executable, "-m", "reviewer_app", *args],
        env=env,
        cwd=REPO_ROOT,
        capture_output=True,
        input=stdin.encode() if stdin is not None else None,
        timeout=120,
        check=False,
    )


def one_clear_line(result: subprocess.CompletedProcess[bytes]) -> str:
    err = result.stderr.decode("utf-8")  # itself valid UTF-8
    assert "Traceback" not in err, err
    # A fault that may pass is ridden out first, saying so one line each time ("database read-only — retrying").
    lines = [line for line in err.strip().splitlines() if "— retrying (" not in line]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: "), err
    return lines[0]


def seeded(db: Path) -> None:
    store = Store.open(db)
    with store.transaction() as tx:
        tx.requests.create(
            NewRequest(
                hitl_id="h1",
                hitl_type="tool_approval",
                session_id="s1",
                invocation_id="i1",
                data={"arguments": {"path": "a.txt", "content": "x"}},
                tool_name="write_file",
            )
        )
    store.close()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX argv bytes")
@pytest.mark.parametrize(
    "argv",
    [
        [b"decide", b"\xff", b"approve"],
        [b"decide", b"h1", b"edit", b"--args", b'{"a": "\xfe"}'],
        [b"pending", b"--reviewer", b"caf\xe9"],
    ],
)
def test_invalid_utf8_on_the_command_line(tmp_path: Path, subprocess_env: dict[str, str], argv: list[bytes]) -> None:
    db = tmp_path / "r.db"
    seeded(db)
    result = cli(subprocess_env, *argv, "--db", str(db))
    line = one_clear_line(result)
    assert result.returncode == EXIT_BAD_ENCODING
    assert "not valid UTF-8" in line
    assert Store.open(db).requests.get("h1")["status"] == "pending"  # type: ignore[index]


@pytest.fixture
def shared_dir(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "shared"
    path.mkdir()
    yield path
    path.chmod(0o755)


def without_root_override() -> list[str]:
    """Root ignores file modes: run the CLI without CAP_DAC_OVERRIDE then, so that 0444 means read-only."""
    if not hasattr(os, "geteuid"):
        pytest.skip("POSIX file modes")
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and util-linux setpriv is missing: cannot make a file read-only for root")
    return [setpriv, "--bounding-set", "-dac_override,-dac_read_search", "--"]


@pytest.mark.parametrize("how", ["file", "folder"])
def test_a_read_only_database(shared_dir: Path, subprocess_env: dict[str, str], how: str) -> None:
    db = shared_dir / "r.db"
    seeded(db)
    if how == "file":
        db.chmod(0o444)
    else:  # the file is writable, but SQLite cannot create its journal next to it
        shared_dir.chmod(0o555)
    result = cli(subprocess_env, "decide", "h1", "reject", "--db", str(db), honour_modes=True)
    line = one_clear_line(result)
    assert result.returncode == EXIT_DB_READ_ONLY, line
    assert "read-only" in line and str(db) in line
    shared_dir.chmod(0o755)
    db.chmod(0o644)
    assert Store.open(db).requests.get("h1")["status"] == "pending"  # type: ignore[index]


def test_a_database_folder_that_cannot_exist(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = cli(subprocess_env, "pending", "--db", str(blocker / "sub" / "r.db"))
    line = one_clear_line(result)
    assert result.returncode == EXIT_DB_DIRECTORY, line
    assert "folder" in line and str(blocker) in line


def test_a_database_folder_that_cannot_be_created(shared_dir: Path, subprocess_env: dict[str, str]) -> None:
    shared_dir.chmod(0o555)
    result = cli(subprocess_env, "pending", "--db", str(shared_dir / "missing" / "r.db"), honour_modes=True)
    line = one_clear_line(result)
    assert result.returncode == EXIT_DB_DIRECTORY, line
    assert "folder" in line


def test_a_corrupt_database_file(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    db = tmp_path / "r.db"
    db.write_bytes(os.urandom(64 * 1024))
    before = db.read_bytes()
    for args in (["pending"], ["pending", "--json"], ["decide", "h1", "reject"], ["runs"]):
        result = cli(subprocess_env, *args, "--db", str(db))
        line = one_clear_line(result)
        assert result.returncode == EXIT_DB_CORRUPT, line
        assert "not a Reviewer database" in line or "corrupt" in line
    assert db.read_bytes() == before  # nothing was written to it


def test_a_corrupt_database_file_is_reported_before_the_migrations_load(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    """Alembic loads only when a migration may be due (~0.5 s of CPU): a file that is no database says so first."""
    db = tmp_path / "r.db"
    db.write_bytes(os.urandom(64 * 1024))
    result = cli({**subprocess_env, "PYTHONPROFILEIMPORTTIME": "1"}, "pending", "--db", str(db))
    lines = result.stderr.decode("utf-8").splitlines()
    imported = {line.rpartition("|")[2].strip() for line in lines if line.startswith("import time:")}
    said = [line for line in lines if not line.startswith("import time:")]
    assert result.returncode == EXIT_DB_CORRUPT, said
    assert len(said) == 1 and "not a Reviewer database" in said[0], said
    assert "reviewer_app.persistence.store" in imported
    assert "alembic" not in imported


def test_edit_arguments_from_a_file_or_stdin_beyond_the_argv_limit(
    tmp_path: Path, subprocess_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    seeded(db)
    big = {"path": "a.txt", "content": "y" * (1024 * 1024)}  # 1 MiB: far beyond one argv string (128 KiB)
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(big))
    assert main(["decide", "h1", "edit", "--args-file", str(args_file), "--db", str(db)]) == 0
    record = Store.open(db).requests.get("h1")
    assert record is not None and record["user_response"]["args"] == big

    second = tmp_path / "r2.db"
    seeded(second)
    result = cli(subprocess_env, "decide", "h1", "edit", "--args-file", "-", "--db", str(second), stdin=json.dumps(big))
    assert result.returncode == 0, result.stderr
    assert Store.open(second).requests.get("h1")["user_response"]["args"] == big  # type: ignore[index]

    bad = cli(subprocess_env, "decide", "h1", "edit", "--args-file", str(tmp_path / "nope.json"), "--db", str(db))
    assert bad.returncode == 2 and "cannot read" in one_clear_line(bad)
    both = cli(subprocess_env, "decide", "h1", "edit", "--args", "{}", "--args-file", "-", "--db", str(db))
    assert both.returncode == 2


def test_pending_lists_a_poison_row_without_crashing(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    db = tmp_path / "r.db"
    seeded(db)
    store = Store.open(db)
    with store.transaction() as tx:
        tx.requests.create(
            NewRequest(hitl_id="h2", hitl_type="tool_approval", session_id="s1", invocation_id="i1", data={})
        )
    store.close()
    with sqlite3.connect(db) as connection:
        connection.execute("UPDATE hitl_requests SET data = ? WHERE hitl_id = 'h2'", ('{"arguments": "\\ud800"}',))
    connection.close()
    table = cli(subprocess_env, "pending", "--db", str(db))
    assert table.returncode == 0, table.stderr
    assert b"h1" in table.stdout and b"h2" in table.stdout
    listed = cli(subprocess_env, "pending", "--json", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    assert {r["hitl_id"] for r in json.loads(listed.stdout)} == {"h1", "h2"}
    approved = cli(subprocess_env, "decide", "h2", "approve", "--db", str(db))
    assert approved.returncode == 2 and "could not be read" in one_clear_line(approved)
    rejected = cli(subprocess_env, "decide", "h2", "reject", "--db", str(db))
    assert rejected.returncode == 0, rejected.stderr


def test_pending_with_large_arguments_lists_the_summary_and_streams_the_full_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "r.db"
    seeded(db)
    content = "z" * (20 * 1024 * 1024)
    store = Store.open(db)
    with store.transaction() as tx:  # the store directly: as an older version, before the 16 MiB limit
        tx.requests.create(
            NewRequest(
                hitl_id="h-big",
                hitl_type="tool_approval",
                session_id="s1",
                invocation_id="i1",
                data={"arguments": {"path": "big.txt", "content": content}},
                metadata={"agent": "bulk"},
                tool_name="write_file",
            )
        )
    store.close()
    assert main(["pending", "--db", str(db)]) == 0
    table = capsys.readouterr().out.splitlines()
    assert len(table) == 2 and all(len(line) < 300 for line in table)  # one summary line each, never the blob
    assert table[1].startswith("h-big") and " big.txt" in table[1] and "bulk" in table[1]
    assert main(["pending", "--json", "--db", str(db)]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [r["hitl_id"] for r in listed] == ["h1", "h-big"]
    assert listed[1]["data"]["arguments"]["content"] == content
    assert listed[1]["metadata"] == {"agent": "bulk"}


def test_run_refuses_a_script_that_cannot_be_stored(
    tmp_path: Path, db_at_schema_head: Path, subprocess_env: dict[str, str]
) -> None:
    script = tmp_path / "s.json"
    script.write_text('[{"text": "bad \\ud800 text"}]')  # valid JSON text, a lone surrogate once decoded
    result = cli(subprocess_env, "run", "demo", "x", "--script", str(script), "--db", str(db_at_schema_head))
    line = one_clear_line(result)
    assert result.returncode == 2 and "surrogate" in line
