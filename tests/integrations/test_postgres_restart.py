"""A PostgreSQL restart is ridden out: the CLI's ``pending`` and ``decide``, an open backend, and the hook."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import shown_arguments
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.retry import UNREACHABLE
from tests.helpers.process_output import ProcessOutput
from tests.integrations.hook_helpers import fixture, hook_env, wait_pending
from tests.pg_server import PgServer

pytestmark = [pytest.mark.asyncio, pytest.mark.postgres]

DOWN_S = 3.0


def _restart_later(server: PgServer, after: float) -> threading.Thread:
    thread = threading.Thread(target=lambda: (threading.Event().wait(after), server.resume()))
    thread.start()
    return thread


def _restart_once_retrying(server: PgServer, output: ProcessOutput) -> threading.Thread:
    """Bring the server back once the child has met it down and said it retries (at least DOWN_S): on a loaded
    machine a child may start after a fixed outage ended and never meet it."""

    def restart() -> None:
        try:
            output.wait_for(UNREACHABLE, timeout=120)
            threading.Event().wait(DOWN_S)
        finally:
            server.resume()

    thread = threading.Thread(target=restart)
    thread.start()
    return thread


def _start_while_down(
    server: PgServer, tmp_path: Path, *args: str, stdin: str | None = None
) -> tuple[ProcessOutput, threading.Thread]:
    """``reviewer-app args`` started with the server down, and the thread that brings it back once the child
    retries."""
    server.pause()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "reviewer_app", *args],
            env=hook_env(tmp_path),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    except BaseException:
        server.resume()
        raise
    if stdin is not None:
        assert process.stdin is not None
        process.stdin.write(stdin)
        process.stdin.close()
    output = ProcessOutput(process)
    return output, _restart_once_retrying(server, output)


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
    arguments = ("pending",) if command == "pending" else ("decide", "h-restart", "approve", "--sha256", digest)
    output, restarter = _start_while_down(postgres_server, tmp_path, *arguments, "--db", pg_url)
    try:
        out, err = output.finish(timeout=120)
    finally:
        restarter.join()
    assert output.process.returncode == 0, err
    assert UNREACHABLE in err
    if command == "pending":
        assert "h-restart" in out
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
        payload = json.dumps(fixture("pretooluse.json"))
        hook = ("hook", "claude-code", "--db", pg_url, "--timeout", "60")
        output, restarter = _start_while_down(postgres_server, tmp_path, *hook, stdin=payload)
        try:
            [record] = await wait_pending(backend, timeout=150)
        finally:
            await asyncio.to_thread(restarter.join)
        await backend.decide(
            record["hitl_id"], Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(record)))
        )
        out, err = await asyncio.to_thread(output.finish, 60)
    assert output.process.returncode == 0 and out.strip(), err
    assert json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow", err
    assert UNREACHABLE in err
