"""A PostgreSQL restart is ridden out: the CLI's ``pending`` and ``decide``, an open backend, and the hook."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import shown_arguments
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import finish, fixture, hook_env, start_hook, wait_pending
from tests.pg_server import PgServer

pytestmark = [pytest.mark.asyncio, pytest.mark.postgres]

DOWN_S = 3.0


def _cli(tmp_path: Path, *args: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "reviewer_app", *args]
    return subprocess.Popen(command, env=hook_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _restart_later(server: PgServer, after: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (threading.Event().wait(after), server.resume()))
    thread.start()
    return thread


@pytest.mark.parametrize("command", ["pending", "decide"])
async def test_the_cli_rides_out_a_restart(
    tmp_path: Path, pg_url: str, postgres_server: PgServer, command: str
) -> None:
    async with SQLHITLBackend(pg_url, reviewer="pg-tester") as backend:
        await backend.create(
            hitl_id="h-restart",
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            tool_name="Bash",
            data={"arguments": {"command": "true"}},
        )
        record = await backend.get("h-restart")
        assert record is not None
    digest = args_digest(shown_arguments(record))
    postgres_server.pause()
    restarter = _restart_later(postgres_server, DOWN_S)
    try:
        if command == "pending":
            process = _cli(tmp_path, "pending", "--db", pg_url)
        else:
            process = _cli(tmp_path, "decide", "h-restart", "approve", "--sha256", digest, "--db", pg_url)
        out, err = process.communicate(timeout=120)
    finally:
        restarter.join()
    assert process.returncode == 0, err.decode()
    if command == "pending":
        assert b"h-restart" in out
    else:
        async with SQLHITLBackend(pg_url) as backend:
            decided = await backend.get("h-restart")
        assert decided is not None and decided["status"] == "completed"


async def test_an_open_backend_rides_out_a_restart(tmp_path: Path, pg_url: str, postgres_server: PgServer) -> None:
    async with SQLHITLBackend(pg_url, reviewer="pg-tester") as backend:
        await backend.create(
            hitl_id="h-open",
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            tool_name="Bash",
            data={"arguments": {"command": "true"}},
        )
        record = await backend.get("h-open")
        assert record is not None
        postgres_server.pause()
        restarter = _restart_later(postgres_server, DOWN_S)
        try:
            # Its pooled connections were terminated (57P01), then refused: read and decide all the same.
            assert [r["hitl_id"] for r in await backend.list_records()] == ["h-open"]
            decided = await backend.decide(
                "h-open", Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(record)))
            )
        finally:
            await asyncio.to_thread(restarter.join)
        assert decided["status"] == "completed"


async def test_a_hook_rides_out_a_restart(tmp_path: Path, pg_url: str, postgres_server: PgServer) -> None:
    async with SQLHITLBackend(pg_url, reviewer="pg-tester") as backend:
        postgres_server.pause()
        restarter = _restart_later(postgres_server, DOWN_S)
        try:
            process = start_hook(tmp_path, pg_url, fixture("pretooluse.json"), "--timeout", "60")
            [record] = await wait_pending(backend, timeout=60)
        finally:
            await asyncio.to_thread(restarter.join)
        await backend.decide(
            record["hitl_id"], Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(record)))
        )
        code, answer, err = finish(process)
    assert code == 0 and answer is not None, err
    assert answer["hookSpecificOutput"]["permissionDecision"] == "allow", err
    assert "database server unreachable — retrying" in err
