"""The window's first screen read with plain sqlite3: the same rows as the store's page, read-only, cheap to import."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.hitl.first_screen import first_screen, has_first_screen
from reviewer_app.persistence.first_screen import SUMMARY_COLUMN_NAMES, sqlite_file
from reviewer_app.persistence.store import Store
from reviewer_app.persistence.store.requests import SUMMARY_COLUMNS
from tests.helpers.hostile_requests import overwrite_summaries, seed_hostile_requests

REPO_ROOT = Path(__file__).resolve().parents[2]
PENDING = (HITLStatus.PENDING.value,)


def test_the_first_screen_is_the_stores_first_page_and_pending_count(db_path: Path) -> None:
    store = Store.open(db_path)
    try:
        seed_hostile_requests(store, 40)
        overwrite_summaries(db_path, 40)
        expected_page = store.requests.summary_page(PENDING, limit=25)
        expected_count = store.requests.count_pending()
    finally:
        store.close()
    screen = first_screen(str(db_path), 25)
    assert screen is not None
    assert screen.summaries == expected_page
    assert screen.pending_count == expected_count == 39
    assert any("\u202e" in s.summary for s in screen.summaries)  # shown as stored: escaping is the view's, as always


def test_the_first_screens_columns_are_the_stores_summary_columns() -> None:
    assert tuple(column.name for column in SUMMARY_COLUMNS) == SUMMARY_COLUMN_NAMES


def test_the_read_never_creates_or_changes_the_database(tmp_path: Path, db_path: Path) -> None:
    missing = tmp_path / "nothing-here.db"
    assert first_screen(str(missing), 10) is None
    assert not missing.exists()  # the backend creates databases, the first screen never does
    store = Store.open(db_path)
    try:
        seed_hostile_requests(store, 5)
    finally:
        store.close()
    before = db_path.read_bytes()
    assert first_screen(str(db_path), 10) is not None
    assert db_path.read_bytes() == before


def test_a_writer_holding_the_database_does_not_block_the_first_screen(db_path: Path) -> None:
    store = Store.open(db_path)
    try:
        seed_hostile_requests(store, 5)
        with store.transaction() as tx:  # BEGIN IMMEDIATE: the write lock, held while the first screen reads
            tx.requests.decide("r002", {"decision": "reject"}, status=HITLStatus.COMPLETED, reviewer="x")
            screen = first_screen(str(db_path), 10)
            assert screen is not None
            assert [s.hitl_id for s in screen.summaries] == ["r000", "r002", "r003", "r004"]  # the committed state
    finally:
        store.close()


def test_a_database_the_backend_must_migrate_or_refuse_has_no_first_screen(db_path: Path) -> None:
    store = Store.open(db_path)
    try:
        seed_hostile_requests(store, 3)
    finally:
        store.close()
    for version in ("0001_older", "9999_newer"):
        with sqlite3.connect(db_path) as raw:
            raw.execute("UPDATE alembic_version SET version_num = ?", (version,))
        assert first_screen(str(db_path), 10) is None


def test_rows_the_store_could_not_read_give_no_first_screen_instead_of_an_error(db_path: Path, tmp_path: Path) -> None:
    store = Store.open(db_path)
    try:
        seed_hostile_requests(store, 3)
    finally:
        store.close()
    with sqlite3.connect(db_path) as raw:
        raw.execute("UPDATE hitl_requests SET hitl_type = X'6869' WHERE hitl_id = 'r000'")  # bytes: SQLite allows it
    store = Store.open(db_path)
    try:
        with pytest.raises(TypeError):  # the window's normal path refuses the page too (and says so in its banner)
            store.requests.summary_page(PENDING, limit=10)
    finally:
        store.close()
    assert first_screen(str(db_path), 10) is None
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    assert first_screen(str(garbage), 10) is None


@pytest.mark.parametrize(
    ("database", "expected"),
    [
        ("postgresql+psycopg://u@localhost/reviews", None),
        ("sqlite:///:memory:", None),
        ("sqlite:///reviews.db?mode=ro", None),
        ("/var/review%20s.db", None),  # the backend's URL would open "/var/review s.db"
        ("/var/reviews?.db", None),
        ("sqlite:////var/reviews.db", Path("/var/reviews.db")),
        ("sqlite+pysqlite:////var/reviews.db", Path("/var/reviews.db")),
        ("/var/reviews.db", Path("/var/reviews.db")),
    ],
)
def test_only_plain_sqlite_files_have_a_first_screen(database: str, expected: Path | None) -> None:
    assert sqlite_file(database) == expected
    if expected is None:
        assert not has_first_screen(database)
        assert first_screen(database, 10) is None


def test_importing_the_first_screen_imports_no_sqlalchemy(subprocess_env: dict[str, str], db_path: Path) -> None:
    Store.open(db_path).close()
    script = (
        "import sys; import reviewer_app.persistence, reviewer_app.hitl; "
        "from reviewer_app.hitl.first_screen import first_screen; "
        f"assert first_screen({str(db_path)!r}, 10) is not None; "
        "print(sorted(m for m in ('sqlalchemy', 'sqlmodel', 'pydantic', 'alembic', 'reviewer_app.hitl.backend') "
        "if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=subprocess_env, cwd=REPO_ROOT, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "[]", done.stderr


def test_the_backend_package_still_exports_its_names_on_use() -> None:
    import reviewer_app.hitl as hitl
    from reviewer_app.hitl.backend import SQLHITLBackend

    assert hitl.SQLHITLBackend is SQLHITLBackend
    assert set(hitl.__all__) <= set(dir(hitl))
    assert all(getattr(hitl, name) is not None for name in hitl.__all__)
    with pytest.raises(AttributeError):
        _ = hitl.no_such_name  # type: ignore[attr-defined]


def test_a_path_with_uri_characters_is_read(tmp_path: Path) -> None:
    """The read-only URI quotes the path: "#" and spaces in a folder name are part of the file name (unquoted, "#"
    would end the URI)."""
    folder = tmp_path / "odd name #1"
    folder.mkdir()
    database = folder / "reviews.db"
    store = Store.open(database)
    try:
        seed_hostile_requests(store, 4)
    finally:
        store.close()
    screen = first_screen(str(database), 10)
    assert screen is not None and screen.pending_count == 3


def test_a_name_the_file_system_refuses_gives_no_first_screen_instead_of_an_error(tmp_path: Path) -> None:
    too_long = str(tmp_path / ("x" * 300 + ".db"))  # stat fails with ENAMETOOLONG (an unreadable folder: EACCES)
    with pytest.raises(OSError):
        Path(too_long).is_file()
    assert not has_first_screen(too_long)
    assert first_screen(too_long, 10) is None
