"""What runs is what the audit signed: a decided record changed afterwards in ``hitl_requests`` (a second reviewer's
process, a second login) is refused by every reader that hands decisions to agents, and ``audit verify`` says so."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import DecisionNotOnRecord
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import ExternalCall, ReviewClient
from reviewer_app.persistence.store import Store
from tests.pg_server import PgServer
from tests.runtime.test_runner_support import approval, messages, pending_requests, started_runtime, tool_results
from tests.trust.test_postgres_trust import _as, _reviewer_grants, _role, _sql

pytestmark = pytest.mark.asyncio
SHOWN = {"command": "ls"}
CALL = ExternalCall(
    hitl_id="ext_edit", agent="outside", session_id="s", invocation_id="i", tool_name="Bash", arguments=SHOWN
)
TAMPER = (
    "UPDATE hitl_requests SET user_response = json_set(user_response, '$.args', json(?)) WHERE hitl_id = 'ext_edit'"
)


async def _edited(backend: SQLHITLBackend) -> ReviewClient:
    client = ReviewClient(backend, agent="outside")
    await client.submit(CALL)
    edit = Decision(DecisionKind.EDIT, edited_args={"command": "ls -la"}, args_sha256=args_digest(SHOWN))
    await backend.decide(CALL.hitl_id, edit)
    return client


def _other_process(db_path: Path, statement: str, *params: str) -> None:
    """A second reviewer's process writing the database file directly."""
    script = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2], sys.argv[3:]); c.commit()"
    subprocess.run([sys.executable, "-c", script, str(db_path), statement, *params], check=True, timeout=60)


async def test_edited_arguments_rewritten_in_another_process_are_refused(
    backend: SQLHITLBackend, db_path: Path
) -> None:
    client = await _edited(backend)
    assert (await client.review(CALL)).arguments == {"command": "ls -la"}  # as signed: runs
    await asyncio.to_thread(_other_process, db_path, TAMPER, json.dumps({"command": "rm -rf ~"}))
    with pytest.raises(DecisionNotOnRecord):
        await client.review(CALL)
    with pytest.raises(DecisionNotOnRecord):
        await client.wait(CALL.hitl_id)
    with pytest.raises(DecisionNotOnRecord):
        await backend.wait_for_response(CALL.hitl_id)
    errors = [e for e in await backend.events("i") if e.kind.value == "error"]
    assert errors and "audit row" in errors[-1].data["message"]
    report = await backend.verify_audit()
    assert not report.ok and "ext_edit" in (report.problem or "") and "edited arguments" in (report.problem or "")


async def test_a_message_changed_after_the_decision_is_refused(backend: SQLHITLBackend, db_path: Path) -> None:
    client = await _edited(backend)
    with sqlite3.connect(db_path) as connection:
        connection.execute("UPDATE hitl_requests SET user_response = json_set(user_response, '$.message', 'rm it')")
    with pytest.raises(DecisionNotOnRecord):
        await client.review(CALL)
    assert not (await backend.verify_audit()).ok


async def test_shown_arguments_changed_after_the_decision_are_refused(backend: SQLHITLBackend, db_path: Path) -> None:
    """The request now shows another command than the one approved: waiting on it is refused, and the call is
    asked again as a new request rather than run on the old decision."""
    client = await _edited(backend)
    with sqlite3.connect(db_path) as connection:
        connection.execute("UPDATE hitl_requests SET data = json_set(data, '$.arguments.command', 'rm -rf ~')")
    with pytest.raises(DecisionNotOnRecord):
        await client.wait(CALL.hitl_id)
    with pytest.raises(TimeoutError):
        await client.review(CALL, timeout=0.2)
    [asked] = await backend.list_records()
    assert asked["hitl_id"] != CALL.hitl_id and asked["data"]["arguments"] == SHOWN


async def test_unicode_edits_and_every_decision_kind_verify_clean(backend: SQLHITLBackend) -> None:
    """The cross-check compares JSON as stored: non-ASCII text, nesting and every decision stay green."""
    client = ReviewClient(backend, agent="outside")
    kinds = {
        "e": Decision(DecisionKind.EDIT, edited_args={"command": "écho «ok» ✓", "n": [1, {"b": None}]}),
        "r": Decision(DecisionKind.REJECT, message="nein – ✗"),
        "s": Decision(DecisionKind.STEER, message="use printf"),
        "a": Decision(DecisionKind.APPROVE),
    }
    for key, decision in kinds.items():
        call = dataclasses.replace(CALL, hitl_id=f"ext_{key}")
        await client.submit(call)
        digest = args_digest(SHOWN) if decision.kind.needs_hash else None
        await backend.decide(call.hitl_id, Decision(decision.kind, decision.message, decision.edited_args, digest))
        assert (await client.review(call)).kind is decision.kind
    await client.submit(dataclasses.replace(CALL, hitl_id="ext_c"))  # type: ignore[arg-type]
    await backend.cancel("ext_c", reason="gone")
    assert (await client.review(dataclasses.replace(CALL, hitl_id="ext_c"))).kind is DecisionKind.CANCEL  # type: ignore[arg-type]
    assert (await backend.verify_audit()).ok


@pytest.mark.postgres
async def test_a_second_login_cannot_rewrite_a_decided_request_on_postgresql(
    pg_url: str, postgres_server: PgServer
) -> None:
    Store.open(pg_url).close()
    for role in ("carol", "dave"):
        _role(postgres_server, role)
        _sql(pg_url, _reviewer_grants(role))
    carol = SQLHITLBackend(_as(pg_url, "carol"))
    try:
        client = await _edited(carol)
        rewrite = "UPDATE hitl_requests SET user_response = %s WHERE hitl_id = 'ext_edit'"
        forged = {"decision": "edit", "args": {"command": "rm -rf ~"}, "args_sha256": args_digest(SHOWN),
                  "reviewer": "carol"}  # fmt: skip
        with pytest.raises(psycopg.errors.RaiseException, match="decided request"):
            _sql(_as(pg_url, "dave"), rewrite, (json.dumps(forged),))
        assert (await client.review(CALL)).arguments == {"command": "ls -la"}
        _sql(pg_url, "ALTER TABLE hitl_requests DISABLE TRIGGER USER")  # the owner goes round the triggers
        try:
            _sql(pg_url, rewrite, (json.dumps(forged),))
        finally:
            _sql(pg_url, "ALTER TABLE hitl_requests ENABLE TRIGGER USER")
        with pytest.raises(DecisionNotOnRecord):
            await client.review(CALL)
        assert not (await carol.verify_audit()).ok
    finally:
        await carol.aclose()


# -- the runtime: the call runs only on a decision the chain signed, for the arguments it was asked with --------
WRITE = {"name": "write_file", "args": {"path": "notes.txt", "content": "hello\n"}}


async def test_the_runtime_refuses_an_edit_rewritten_while_it_was_down(
    backend: SQLHITLBackend, db_path: Path, tmp_path: Path
) -> None:
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "write", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
    edit = approval(request, DecisionKind.EDIT, edited_args={"path": "notes.txt", "content": "edited\n"})
    await backend.decide(request["hitl_id"], edit)
    forged = json.dumps({"path": "../../owned.txt", "content": "owned\n"})
    await asyncio.to_thread(_other_process, db_path, TAMPER.replace("ext_edit", request["hitl_id"]), forged)
    async with started_runtime(backend, tmp_path) as runtime:  # recovery takes the waiting run over
        done = await runtime.wait_for_run(inv, timeout=20)
    assert not (Path(done.workspace) / "notes.txt").exists() and not (tmp_path / "owned.txt").exists()
    results = tool_results(await messages(backend, inv))
    assert "not run" in results["call_0_0"] and "audit row" in results["call_0_0"]
    errors = [e for e in await backend.events(inv) if e.kind.value == "error"]
    assert any("audit row" in e.data["message"] for e in errors)


async def test_the_runtime_refuses_an_approval_of_arguments_changed_before_the_decision(
    backend: SQLHITLBackend, db_path: Path, tmp_path: Path
) -> None:
    """Another process rewrites a pending request's arguments; the reviewer approves what is shown. The run's own
    call has other arguments than the approval names: it does not run (neither version)."""
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "write", script=[{"tool_calls": [WRITE]}])
        (request,) = await pending_requests(backend, inv)
        with sqlite3.connect(db_path) as connection:
            connection.execute("UPDATE hitl_requests SET data = json_set(data, '$.arguments.content', 'evil')")
        shown = await backend.get(request["hitl_id"])
        assert shown is not None
        await runtime.decide_and_resume(request["hitl_id"], approval(shown))
        done = await runtime.wait_for_run(inv, timeout=20)
    assert not (Path(done.workspace) / "notes.txt").exists()
    assert "not run" in tool_results(await messages(backend, inv))["call_0_0"]


async def test_an_agent_without_the_audit_key_still_refuses_a_rewritten_edit(
    backend: SQLHITLBackend, db_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Agents' machines do not hold the audit key: they compare the record with its audit row's fields (and create no
    key of their own); the chain's own hashes are checked by ``audit verify`` where the key is."""
    await _edited(backend)
    missing = tmp_path / "agent-home" / "audit.key"
    monkeypatch.setenv("REVIEWER_AUDIT_KEY_FILE", str(missing))
    agent = SQLHITLBackend(db_path)
    try:
        client = ReviewClient(agent, agent="outside")
        assert (await client.review(CALL)).arguments == {"command": "ls -la"}
        await asyncio.to_thread(_other_process, db_path, TAMPER, json.dumps({"command": "rm -rf ~"}))
        with pytest.raises(DecisionNotOnRecord):
            await client.review(CALL)
    finally:
        await agent.aclose()
    assert not missing.exists()
