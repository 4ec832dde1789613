"""Shared fixtures: real SQLite files in tmp_path, never a mocked database."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
import pytest_asyncio

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Never the real user data dir: the audit key and anchors (and any default database) go to a throw-away one.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="reviewer-tests-data-")

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.store import Store

REPO_ROOT = Path(__file__).resolve().parent.parent

# A real PostgreSQL server started by the tests themselves (fixtures postgres_server, pg_url, any_db); the slow
# tests first on every parallel worker; the tree's bytecode written once for the processes the tests start.
pytest_plugins = ("tests.pg_server", "tests.slow_first", "tests.compiled_tree")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "reviews.db"


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite file at the bundled schema head, made once per worker by the real migrations."""
    path = tmp_path_factory.mktemp("migrated") / "reviews.db"
    Store.open(path).close()
    assert not path.with_name(path.name + "-wal").exists(), "closing the last connection checkpoints the WAL"
    return path


def at_schema_head(db_path: Path, migrated: Path) -> Path:
    """``db_path`` as a copy of the migrated empty database (what opening a new file makes, without running the
    eleven migrations again: ~0.1 s of CPU for each of the many tests that open a store or backend)."""
    if not db_path.exists():
        shutil.copyfile(migrated, db_path)
    return db_path


@pytest.fixture
def fresh_db(tmp_path: Path, migrated_sqlite: Path) -> Callable[[str], Path]:
    """A new database file in ``tmp_path`` at the schema head: a copy of the migrated template, what opening a new
    file makes, for tests that make several databases (without running the migrations again for each)."""
    return lambda name: at_schema_head(tmp_path / name, migrated_sqlite)


@pytest.fixture
def db_at_schema_head(db_path: Path, migrated_sqlite: Path) -> Path:
    """``db_path`` made before the test as a copy of the migrated template, for tests of an adapter whose first
    use would otherwise create and migrate it (creating a database is tested where it is the point: the
    migrations' and the concurrency tests)."""
    return at_schema_head(db_path, migrated_sqlite)


@pytest.fixture
def store(db_path: Path, migrated_sqlite: Path) -> Store:
    opened = Store.open(at_schema_head(db_path, migrated_sqlite))
    yield opened
    opened.close()


@pytest_asyncio.fixture
async def backend(db_path: Path, migrated_sqlite: Path) -> AsyncIterator[SQLHITLBackend]:
    opened = SQLHITLBackend(at_schema_head(db_path, migrated_sqlite), reviewer="tester")
    yield opened
    await opened.aclose()


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """Environment for child Python processes that import the package from this tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["QT_QPA_PLATFORM"] = "offscreen"
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


@pytest.fixture
def python_exe() -> str:
    return sys.executable
