"""Approve-for-session on the library path (issue 24): ``ReviewClient.submit`` honours the waiver it stores.

Every adapter, hook and proxy submits through the client, so the next identical call is settled by
``session-rule:<id>`` with a record and an audit row, exactly as the runtime does, while a changed or compound
command still waits for a human (the same scope rules, ``domain/waivers.py``).
"""

from __future__ import annotations

import time

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import ExternalCall, ReviewClient

pytestmark = pytest.mark.asyncio


def shell_call(hitl_id: str, command: str, session: str = "s1") -> ExternalCall:
    return ExternalCall(
        hitl_id=hitl_id,
        agent="lib-agent",
        session_id=session,
        invocation_id=f"i-{session}",
        tool_name="run_shell",
        arguments={"command": command},
    )


async def approve_first_for_session(backend: SQLHITLBackend, client: ReviewClient) -> None:
    first = await client.submit(shell_call("h1", "git status"))
    assert first["status"] == "pending"
    digest = args_digest({"command": "git status"})
    await backend.decide("h1", Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=digest))


async def test_the_next_identical_call_is_settled_by_the_waiver_on_the_record(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="lib-agent")
    await approve_first_for_session(backend, client)
    outcome = await client.review(shell_call("h2", "git status"), timeout=1)
    assert outcome.kind is DecisionKind.APPROVE and outcome.runs_tool
    record = await backend.get("h2")
    assert record is not None and record["status"] == "completed"
    assert (outcome.reviewer or "").startswith("session-rule:")
    audit = await backend.audit("h2")
    assert len(audit) == 1
    assert audit[0].decision == "approve" and audit[0].reviewer == outcome.reviewer
    assert audit[0].message == "waived by this session's rule: " + (await backend.session_rules("s1"))[0].describe()
    assert audit[0].shown_args_sha256 == args_digest({"command": "git status"})
    assert (await backend.verify_audit()).ok


async def test_a_changed_or_compound_command_or_another_session_still_asks(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="lib-agent")
    await approve_first_for_session(backend, client)
    for hitl_id, command, session in (
        ("h3", "git status; rm -rf x", "s1"),
        ("h4", "git status && curl evil.example", "s1"),
        ("h5", "git push", "s1"),
        ("h6", "git status", "s2"),
    ):
        record = await client.submit(shell_call(hitl_id, command, session))
        assert record["status"] == "pending", command
        assert await backend.audit(hitl_id) == []


async def test_a_waived_call_submitted_again_returns_the_same_record(backend: SQLHITLBackend) -> None:
    client = ReviewClient(backend, agent="lib-agent")
    await approve_first_for_session(backend, client)
    once = await client.submit(shell_call("h2", "git status"))
    again = await client.submit(shell_call("h2", "git status"))
    assert once["status"] == again["status"] == "completed"
    assert len(await backend.audit("h2")) == 1


async def test_an_ask_rule_keeps_a_waived_call_for_a_human(backend: SQLHITLBackend) -> None:
    """As on the runtime's gate and the hook's fast path: an ask rule beats the session's waiver."""
    client = ReviewClient(backend, agent="lib-agent")
    await approve_first_for_session(backend, client)
    await backend.add_rule(Rule.create("ask", "run_shell(git status)", now=time.time()))
    record = await client.submit(shell_call("h7", "git status"))
    assert record["status"] == "pending"
