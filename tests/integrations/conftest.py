"""Fixtures for the MCP proxy tests: the proxy's command line, a real MCP client session, deciding from elsewhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from tests.conftest import REPO_ROOT
from tests.helpers.shared_cache import installing
from tests.integrations import mcp_server_forks
from tests.integrations.agent_run import HostE2E
from tests.integrations.npm_cli import cache_root
from tests.runtime.test_runner_support import approval, eventually

if TYPE_CHECKING:
    from mcp import ClientSession

NAME = "notes"
NOTES_SERVER = Path(__file__).with_name("mcp_test_server.py")
HOST_SCRIPT = Path(__file__).with_name("mcp_host_script.py")
SERVER_FORKS = Path(mcp_server_forks.__file__)
FILESYSTEM_VERSION = "2026.8.31"
FILESYSTEM_PACKAGE = f"@modelcontextprotocol/server-filesystem@{FILESYSTEM_VERSION}"
NODE_DIR = cache_root() / f"mcp-server-filesystem-{FILESYSTEM_VERSION}"
"""With the agent CLIs' cache, outside the checkout: a fresh clone (as in CI) does not install it again."""


def proxy_command(db_path: Path, upstream: list[str], *options: str, name: str = NAME) -> list[str]:
    return [
        sys.executable,
        "-m",
        "reviewer_app",
        "mcp-proxy",
        "--name",
        name,
        "--db",
        str(db_path),
        "--progress-interval",
        "0.2",
        *options,
        "--",
        *upstream,
    ]


def notes_upstream() -> list[str]:
    """The notes server's command: forked from a process with the MCP SDK imported where that works
    (``mcp_server_forks.py``), else the script itself."""
    if mcp_server_forks.SUPPORTED:
        return [sys.executable, "-I", "-S", str(SERVER_FORKS), "run", str(NOTES_SERVER)]
    return [sys.executable, str(NOTES_SERVER)]


@pytest.fixture(scope="session")
def forking_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """This worker's forking server for ``notes_upstream()``, as the environment variable that names it."""
    if not mcp_server_forks.SUPPORTED:
        yield {}
        return
    path = tmp_path_factory.mktemp("forks") / "socket"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    server = subprocess.Popen(
        [sys.executable, str(SERVER_FORKS), "serve", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=env,
        cwd=REPO_ROOT,
    )
    assert server.stdout is not None
    try:
        assert server.stdout.readline() == b"ready\n"
        server.stdout.close()
        yield {mcp_server_forks.SOCKET_VARIABLE: str(path)}
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.fixture
def notes_file(tmp_path: Path) -> Path:
    return tmp_path / "notes.txt"


@pytest.fixture
def env(subprocess_env: dict[str, str], notes_file: Path, forking_server: dict[str, str]) -> dict[str, str]:
    return {**subprocess_env, "NOTES_FILE": str(notes_file), **forking_server}


@asynccontextmanager
async def connect(command: list[str], env: dict[str, str], **session_options: Any) -> AsyncIterator[ClientSession]:
    """A real MCP client (the official SDK) connected over stdio to ``command``, initialised.

    The SDK is imported here, not at collection: in every parallel worker it would add ~50,000 objects to the heap
    that each full garbage collection walks (see docs/performance.md)."""
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import Implementation

    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(REPO_ROOT))
    async with stdio_client(params) as (read, write):
        info = Implementation(name="test-host", version="1.0")
        async with ClientSession(read, write, client_info=info, **session_options) as session:
            await session.initialize()
            yield session


async def pending_request(backend: SQLHITLBackend, count: int = 1, timeout: float = 20.0) -> list[HITLRecord]:
    async def probe() -> list[HITLRecord] | None:
        records = await backend.list_records(RequestQuery())
        return records if len(records) >= count else None

    return await eventually(probe, backend, timeout)


async def decide_first(backend: SQLHITLBackend, kind: DecisionKind, **extra: Any) -> HITLRecord:
    """Wait for a pending request and decide it the way a reviewer would (naming the shown arguments' hash)."""
    (record,) = await pending_request(backend)
    decision = approval(record, kind, **extra) if kind.needs_hash else Decision(kind, **extra)
    return await backend.decide(record["hitl_id"], decision)


@pytest.fixture(scope="session")
def filesystem_server() -> list[str]:
    """The reference filesystem MCP server from npm, installed once into the tests' npm cache."""
    binary = NODE_DIR / "node_modules" / ".bin" / "mcp-server-filesystem"
    if not binary.exists():
        with installing(NODE_DIR):
            _install_filesystem_server(binary)
    return [str(binary)]


def _install_filesystem_server(binary: Path) -> None:
    if not binary.exists():  # another test worker may have installed it while this one waited for the lock
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            pytest.skip("node and npm are needed for the reference filesystem MCP server")
        NODE_DIR.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(NODE_DIR), FILESYSTEM_PACKAGE],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0 or not binary.exists():
            pytest.skip(f"npm could not install {FILESYSTEM_PACKAGE}: {done.stderr.strip()[-500:]}")


@pytest.fixture
def host_e2e(tmp_path: Path, db_path: Path, backend: SQLHITLBackend) -> HostE2E:
    """The set-up every real agent CLI's end-to-end test shares (Gemini, Qwen, Copilot, Factory, OpenCode)."""
    project = tmp_path / "project"
    project.mkdir()
    return HostE2E(backend, db_path, project, tmp_path / "home")


@pytest.fixture(params=["lean", "full"])
def waiter(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Which waiter a hook whose request the lean path wrote waits with: the lean waiter (the product's default,
    ``integrations/claude_code/lean_wait.py``) or the full path (``REVIEWER_HOOK_WAITER=full``). The hook
    processes inherit this process's environment (``hook_env``)."""
    from reviewer_app.integrations.claude_code.lean_wait import WAITER_ENV

    monkeypatch.setenv(WAITER_ENV, request.param)
    return str(request.param)
