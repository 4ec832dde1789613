"""Approve-for-session settles the identical pending siblings of its session at once (issue 14)."""

from __future__ import annotations

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend

pytestmark = pytest.mark.asyncio


async def shell(backend: SQLHITLBackend, hitl_id: str, command: str, session: str = "s1", **data: object) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id=session,
        invocation_id=f"i-{hitl_id}",
        data={"arguments": {"command": command}, **data},
        tool_name="run_shell",
    )


async def approve_for_session(backend: SQLHITLBackend, hitl_id: str, command: str) -> None:
    digest = args_digest({"command": command})
    await backend.decide(hitl_id, Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=digest))


async def status(backend: SQLHITLBackend, hitl_id: str) -> tuple[str, str | None]:
    record = await backend.get(hitl_id)
    assert record is not None
    response = record["user_response"] or {}
    return record["status"], response.get("decision")


async def test_identical_siblings_in_the_session_are_approved_and_others_stay(backend: SQLHITLBackend) -> None:
    await shell(backend, "h1", "git status")
    await shell(backend, "h2", "git status")  # identical
    await shell(backend, "h3", "'git' status")  # the same parsed command
    await shell(backend, "h4", "git status; touch x")  # more than was approved
    await shell(backend, "h5", "git push")  # another command
    await shell(backend, "h6", "git status", session="s2")  # another session
    await approve_for_session(backend, "h1", "git status")
    assert await status(backend, "h1") == ("completed", "approve_for_session")
    assert await status(backend, "h2") == ("completed", "approve")
    assert await status(backend, "h3") == ("completed", "approve")
    for pending in ("h4", "h5", "h6"):
        assert (await status(backend, pending))[0] == "pending"
    audit = await backend.audit("h2")
    assert audit[-1].decision == "approve" and audit[-1].reviewer == "tester"
    assert audit[-1].message == "approved for the session with h1"
    assert audit[-1].shown_args_sha256 == args_digest({"command": "git status"})


async def test_respond_with_approve_for_session_approves_the_siblings_as_decide_does(
    backend: SQLHITLBackend,
) -> None:
    """aury-style ``respond`` goes through the same decision gate as ``decide``: the same waiver, the same siblings."""
    await shell(backend, "h1", "git status")
    await shell(backend, "h2", "git status")
    await shell(backend, "h3", "git push")
    digest = args_digest({"command": "git status"})
    await backend.respond("h1", {"decision": "approve_for_session", "args_sha256": digest})
    assert await status(backend, "h1") == ("completed", "approve_for_session")
    assert await status(backend, "h2") == ("completed", "approve")
    assert (await status(backend, "h3"))[0] == "pending"
    assert [rule.tool_name for rule in await backend.session_rules("s1")] == ["run_shell"]


async def test_a_sibling_that_does_not_allow_approve_is_left_for_a_human(backend: SQLHITLBackend) -> None:
    await shell(backend, "h1", "ls")
    await shell(backend, "h2", "ls", allowed_decisions=["reject"])
    await approve_for_session(backend, "h1", "ls")
    assert (await status(backend, "h2"))[0] == "pending"


async def test_identical_non_shell_calls_only(backend: SQLHITLBackend) -> None:
    for hitl_id, path in (("w1", "a.txt"), ("w2", "a.txt"), ("w3", "b.txt")):
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s1",
            invocation_id="i1",
            data={"arguments": {"path": path, "content": "x"}},
            tool_name="write_file",
        )
    digest = args_digest({"path": "a.txt", "content": "x"})
    await backend.decide("w1", Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=digest))
    assert (await status(backend, "w2")) == ("completed", "approve")
    assert (await status(backend, "w3"))[0] == "pending"  # a different file is not an identical call


async def test_settle_pending_by_rule_can_be_limited_to_the_previewed_ids(backend: SQLHITLBackend) -> None:
    import time

    from reviewer_app.domain.rules import Rule

    await shell(backend, "h1", "make lint")
    await shell(backend, "h2", "make lint", session="s2")
    rule = Rule.create("allow", "run_shell(make lint)", now=time.time())
    await backend.add_rule(rule)
    settled = await backend.settle_pending_by_rule(rule.id, only=["h1"])
    assert [r["hitl_id"] for r in settled] == ["h1"]
    assert (await status(backend, "h2"))[0] == "pending"
