"""A real PostgreSQL server for the tests: ``initdb`` + ``pg_ctl`` into a temporary folder.

The server runs as a non-root account (``postgres`` via ``runuser`` when the tests
run as root, since PostgreSQL refuses to run as root), listens on a free loopback
port, lives for the whole test session and is stopped and deleted at the end.
Tests that need it are marked ``@pytest.mark.postgres``; they are skipped, with the
reason, only where no PostgreSQL server binaries are installed.

Registered as a pytest plugin by ``tests/conftest.py``; fixtures:

- ``postgres_server``: the session's :class:`PgServer`.
- ``pg_url``: a fresh database at the schema head on it, as a ``postgresql+psycopg://`` URL: a copy
  (``CREATE DATABASE … TEMPLATE``) of one database the real migrations brought to the head once per worker.
- ``empty_pg_url``: a fresh, empty database, for the tests of migrating and creating one.
- ``any_db`` / ``empty_any_db``: the same, parametrised over SQLite (a file in ``tmp_path``) and PostgreSQL.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

SERVER_ACCOUNTS = ("postgres", "nobody")
INSTALL_HINT = "install them with `apt-get install postgresql` (.ci/run does this)"


def find_bindir() -> Path | None:
    """The newest PostgreSQL server ``bin`` folder that has ``initdb`` and ``pg_ctl``."""
    candidates: list[Path] = []
    if env := os.environ.get("REVIEWER_PG_BINDIR"):
        candidates.append(Path(env))
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    candidates += sorted((Path(p) for p in versions), key=lambda p: int(p.parent.name), reverse=True)
    for tool in ("initdb", "pg_ctl"):
        found = shutil.which(tool)
        if found:
            candidates.append(Path(found).resolve().parent)
    for folder in candidates:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    return None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PgServer:
    """One throw-away PostgreSQL cluster. Use :meth:`start` / :meth:`stop` (or the fixture)."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.port = 0
        self.user = "postgres"  # the cluster's superuser (initdb -U), independent of the OS account
        self.account: pwd.struct_passwd | None = None
        self.root = Path(tempfile.mkdtemp(prefix="reviewer-pg-"))
        self.datadir = self.root / "data"
        self.logfile = self.root / "server.log"

    # -- running commands as the server account ----------------------------------------
    def _as_account(self, argv: list[str]) -> list[str]:
        if self.account is None:
            return argv
        return ["runuser", "-u", self.account.pw_name, "--", *argv]

    def _run(self, *argv: str, timeout: float = 120) -> None:
        result = subprocess.run(
            self._as_account([str(self.bindir / argv[0]), *argv[1:]]),
            check=False,
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.root,
        )
        if result.returncode != 0:
            log = self.logfile.read_text(errors="replace")[-4000:] if self.logfile.exists() else ""
            raise RuntimeError(
                f"{argv[0]} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}\nserver log:\n{log}"
            )

    def _pick_account(self) -> None:
        if os.geteuid() != 0:
            return  # already unprivileged
        if shutil.which("runuser") is None:
            raise RuntimeError("running as root, but `runuser` is missing to start PostgreSQL as another account")
        for name in SERVER_ACCOUNTS:
            with contextlib.suppress(KeyError):
                self.account = pwd.getpwnam(name)
                break
        if self.account is None:
            raise RuntimeError(f"running as root and none of the accounts {SERVER_ACCOUNTS} exists to run PostgreSQL")
        os.chown(self.root, self.account.pw_uid, self.account.pw_gid)
        self.root.chmod(0o700)

    # -- life cycle -----------------------------------------------------------------------
    def start(self) -> None:
        self._pick_account()
        self._run(
            "initdb", "-D", str(self.datadir), "-U", self.user, "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync"
        )
        for attempt in range(5):
            self.port = free_port()
            settings = {
                "port": str(self.port),
                "listen_addresses": "'127.0.0.1'",
                "unix_socket_directories": f"'{self.root}'",
                "max_connections": "120",
                "shared_buffers": "32MB",
                "fsync": "off",  # a throw-away cluster: durability is not what the tests check
                "synchronous_commit": "off",
                "full_page_writes": "off",
            }
            with open(self.datadir / "postgresql.auto.conf", "a", encoding="utf-8") as conf:
                conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
            try:
                self._run("pg_ctl", "-D", str(self.datadir), "-l", str(self.logfile), "-w", "-t", "60", "start")
                return
            except RuntimeError:
                if attempt == 4:
                    raise
                time.sleep(0.2)  # the port was taken in the meantime: try another

    def pause(self) -> None:
        """Shut the server down (``pg_ctl stop -m fast``: clients see 57P01, then refused connections), data kept."""
        self._run("pg_ctl", "-D", str(self.datadir), "-m", "fast", "-w", "stop", timeout=60)

    def resume(self) -> None:
        """Start the paused server again on the same port."""
        self._run("pg_ctl", "-D", str(self.datadir), "-l", str(self.logfile), "-w", "-t", "60", "start")

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self._run("pg_ctl", "-D", str(self.datadir), "-m", "immediate", "-w", "stop", timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    # -- databases ------------------------------------------------------------------------
    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.user}@127.0.0.1:{self.port}/{database}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user=self.user, dbname="postgres", autocommit=True) as c:
            c.execute(sql)

    def create_database(self, template: str | None = None) -> str:
        """A new database, empty or a copy of ``template`` (which nothing may be connected to meanwhile)."""
        name = f"t_{uuid.uuid4().hex[:12]}"
        self._admin(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return name

    def drop_database(self, name: str) -> None:
        self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PgServer]:
    bindir = find_bindir()
    if bindir is None:
        pytest.skip(f"no PostgreSQL server binaries (initdb, pg_ctl) on this machine; {INSTALL_HINT}")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg 3 is not installed (pip install 'reviewer-app[postgres]')")
    server = PgServer(bindir)
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def migrated_pg_template(postgres_server: PgServer) -> str:
    """A database at the bundled schema head, made once per worker by the real migrations (``Store.open``).

    Migrating a new PostgreSQL database costs ~0.1 s of the test's CPU and ~0.5 s of the server's, for each of the
    hundreds of tests on it; copying this one as a template costs a tenth of that. Closing the store closes its
    connections, as ``CREATE DATABASE … TEMPLATE`` requires.
    """
    from reviewer_app.persistence.store import Store

    name = postgres_server.create_database()
    Store.open(postgres_server.url(name)).close()
    return name


@pytest.fixture
def pg_url(postgres_server: PgServer, migrated_pg_template: str) -> Iterator[str]:
    """A fresh database at the schema head for one test (what opening a new one makes), dropped afterwards."""
    name = postgres_server.create_database(template=migrated_pg_template)
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture
def empty_pg_url(postgres_server: PgServer) -> Iterator[str]:
    """A fresh, empty database for one test (no tables: the tests of migrations and of creating one), dropped
    afterwards."""
    name = postgres_server.create_database()
    yield postgres_server.url(name)
    postgres_server.drop_database(name)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on a new SQLite file and on a new PostgreSQL database, both at the schema head."""
    if request.param == "sqlite":
        from tests.conftest import at_schema_head

        return str(at_schema_head(tmp_path / "reviews.db", request.getfixturevalue("migrated_sqlite")))
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty_any_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same test on a SQLite path with no file yet and on a fresh, empty PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "reviews.db")
    return str(request.getfixturevalue("empty_pg_url"))
