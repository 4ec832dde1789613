"""Attacks on the decision path: every way in must bind to the arguments shown and pass the schema.

Each case here was reproduced on main before the fix (issue "Trust"): respond() ran tools with no hash or with a
stale one, edits skipped the schema, an edit to ``{}`` ran the original arguments, a made-up reviewer name was
recorded, and request data could widen an approve-for-session rule.
"""

from __future__ import annotations

import pytest

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLType
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import Outcome

pytestmark = pytest.mark.asyncio

ARGS = {"path": "notes.txt", "content": "hello"}
SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
    "additionalProperties": False,
}


async def make(backend: SQLHITLBackend, hitl_id: str, *, data: dict | None = None, tool: str = "write_file") -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type=HITLType.TOOL_APPROVAL.value,
        session_id="s1",
        invocation_id="i1",
        data=data if data is not None else {"arguments": ARGS, "schema": SCHEMA},
        tool_name=tool,
    )


async def test_respond_approve_without_hash_is_refused(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    with pytest.raises(DecisionError, match="SHA-256"):
        await backend.respond("h1", {"decision": "approve"})
    assert (await backend.get("h1"))["status"] == "pending"
    assert await backend.audit("h1") == []


async def test_respond_approve_with_stale_hash_is_refused(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    stale = args_digest({"path": "notes.txt", "content": "an older version"})
    with pytest.raises(DecisionError, match="changed since they were shown"):
        await backend.respond("h1", {"decision": "approve", "args_sha256": stale})
    assert (await backend.get("h1"))["status"] == "pending"


async def test_respond_edit_is_schema_checked(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    response = {"decision": "edit", "args": {"path": 7}, "args_sha256": args_digest(ARGS)}
    with pytest.raises(DecisionError, match="invalid"):
        await backend.respond("h1", response)
    assert (await backend.get("h1"))["status"] == "pending"


async def test_respond_edit_without_hash_is_refused(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    with pytest.raises(DecisionError):
        await backend.respond("h1", {"decision": "edit", "args": {"path": "/etc/passwd", "content": "x"}})


async def test_respond_with_a_valid_hash_applies(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    await backend.respond("h1", {"decision": "approve", "args_sha256": args_digest(ARGS)})
    record = await backend.get("h1")
    assert record["status"] == "completed"
    assert Outcome.from_record(record).arguments == ARGS


async def test_plain_aury_answers_still_accepted_where_nothing_runs(backend: SQLHITLBackend) -> None:
    await backend.create(
        hitl_id="q1", hitl_type=HITLType.ASK_USER.value, session_id="s", invocation_id="i", data={"question": "?"}
    )
    await backend.respond("q1", {"answer": "yes"})
    record = await backend.get("q1")
    assert record["user_response"] == {"answer": "yes"} and record["status"] == "completed"


async def test_edit_to_empty_object_runs_the_empty_object_not_the_original(backend: SQLHITLBackend) -> None:
    await make(backend, "h1", data={"arguments": ARGS})  # no schema: {} is what the reviewer asked for
    decision = Decision(DecisionKind.EDIT, edited_args={}, args_sha256=args_digest(ARGS))
    assert decision.effective_args(ARGS) == {}
    await backend.decide("h1", decision)
    assert Outcome.from_record(await backend.get("h1")).arguments == {}


async def test_edit_to_empty_object_fails_the_schema(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    with pytest.raises(DecisionError, match="invalid"):
        await backend.decide("h1", Decision(DecisionKind.EDIT, edited_args={}, args_sha256=args_digest(ARGS)))


async def test_spoofed_reviewer_name_is_not_recorded(backend: SQLHITLBackend) -> None:
    await make(backend, "h1")
    await backend.respond("h1", {"decision": "approve", "args_sha256": args_digest(ARGS), "reviewer": "the-ceo"})
    await make(backend, "h2")
    await backend.decide("h2", Decision(DecisionKind.REJECT, reviewer="the-ceo", message="no"))
    for hitl_id in ("h1", "h2"):
        (entry,) = await backend.audit(hitl_id)
        assert entry.reviewer == "tester"
        assert (await backend.get(hitl_id))["user_response"]["reviewer"] == "tester"


async def test_request_data_cannot_widen_a_session_rule(backend: SQLHITLBackend) -> None:
    """An external request that omits run_shell from ``shell_tools`` must not turn its approval into 'any command'."""
    args = {"command": "git status"}
    await make(backend, "h1", data={"arguments": args, "shell_tools": ["something_else"]}, tool="run_shell")
    await backend.decide("h1", Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=args_digest(args)))
    rules = await backend.session_rules("s1")
    assert rules, "approve-for-session records a rule"
    assert not any(rule.matches("run_shell", {"command": "rm -rf /"}) for rule in rules)
    assert any(rule.matches("run_shell", args) for rule in rules)


async def test_the_audit_hashes_what_was_shown_when_data_has_no_arguments_key(backend: SQLHITLBackend) -> None:
    data = {"path": "a.txt", "content": "x"}  # a plain aury request: the data itself is what is shown
    await make(backend, "h1", data=data)
    await backend.decide("h1", Decision(DecisionKind.APPROVE, args_sha256=args_digest(data)))
    (entry,) = await backend.audit("h1")
    assert entry.shown_args_sha256 == args_digest(data)
