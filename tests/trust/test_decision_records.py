"""A decision belongs to the arguments it was made on, and what runs is what the audit chain signed."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.limits import RequestRejected
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import REPEATED_CALL_ID, ExternalCall, ReviewClient, stable_id

pytestmark = pytest.mark.asyncio


def shell_call(command: str, hitl_id: str = "ext_toolu_1") -> ExternalCall:
    return ExternalCall(
        hitl_id=hitl_id,
        agent="outside",
        session_id="s-outside",
        invocation_id="run-outside",
        tool_name="Bash",
        arguments={"command": command},
    )


async def test_a_decision_is_not_reused_for_other_arguments_under_the_same_id(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="outside")
    first = await client.submit(shell_call("echo harmless"))
    await backend.decide(
        first["hitl_id"], Decision(DecisionKind.APPROVE, args_sha256=args_digest({"command": "echo harmless"}))
    )
    assert (await client.review(shell_call("echo harmless"))).runs_tool  # a crash-retry of the same call: same decision

    hostile = await client.submit(shell_call("echo PWNED"))
    assert hostile["hitl_id"] != first["hitl_id"] and hostile["status"] == HITLStatus.PENDING.value
    assert hostile["data"]["arguments"] == {"command": "echo PWNED"}
    assert hostile["hitl_id"] == stable_id("ext_toolu_1", args_digest({"command": "echo PWNED"}))
    with pytest.raises(TimeoutError):
        await client.review(shell_call("echo PWNED"), timeout=0.2)  # asked, not allowed
    again = await client.submit(shell_call("echo PWNED"))  # asking again finds the same new request
    assert again["hitl_id"] == hostile["hitl_id"]
    events = await backend.events("run-outside")
    [said] = [e for e in events if e.kind.value == "error"][:1]
    assert REPEATED_CALL_ID in said.data["message"] and said.data["new_hitl_id"] == hostile["hitl_id"]
    assert len(await backend.list_records()) == 1


async def test_another_tool_under_a_used_id_is_a_new_request(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="outside")
    first = await client.submit(shell_call("ls"))
    await backend.decide(first["hitl_id"], Decision(DecisionKind.APPROVE, args_sha256=args_digest({"command": "ls"})))
    other = dataclasses.replace(shell_call("ls"), tool_name="Write")  # same id and arguments, another tool
    record = await client.submit(other)
    assert record["hitl_id"] != first["hitl_id"] and record["status"] == HITLStatus.PENDING.value


async def test_an_existing_row_is_checked_at_the_door_like_a_new_one(backend: SQLHITLBackend, db_path: Path) -> None:
    client = ReviewClient(backend, agent="outside")
    await client.submit(shell_call("ls"))
    nested = "[" * 100 + "]" * 100  # deeper than any creator accepts (64)
    with sqlite3.connect(db_path) as connection:  # another process wrote a row no creator would accept
        connection.execute("UPDATE hitl_requests SET metadata = ? WHERE hitl_id = 'ext_toolu_1'", (nested,))
    with pytest.raises(RequestRejected):
        await client.submit(shell_call("ls"))
