"""Codex's PermissionRequest hook: its stdin shape, allow or deny with a message, no edits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import shown_arguments
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import DATA, finish, run_hook, start_hook, wait_pending

pytestmark = pytest.mark.asyncio

# Captured from Codex 0.169.0 (``codex exec``, a command asking to leave the sandbox); paths rewritten.
CODEX_EVENT = json.loads((DATA / "codex_permissionrequest.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("kind", "message", "expected"),
    [
        (DecisionKind.APPROVE, None, {"behavior": "allow"}),
        (DecisionKind.REJECT, "keep it", {"behavior": "deny", "message": "rejected by reviewer: keep it"}),
        (DecisionKind.STEER, "use make clean", {"behavior": "deny", "message": "Reviewer guidance: use make clean"}),
    ],
)
async def test_codex_decisions(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, kind: DecisionKind, message: str | None, expected: dict
) -> None:
    process = start_hook(tmp_path, db_path, CODEX_EVENT, host="codex")
    [record] = await wait_pending(backend)
    assert record["metadata"]["agent"] == "codex"
    assert record["invocation_id"] == CODEX_EVENT["turn_id"] and record["session_id"] == CODEX_EVENT["session_id"]
    assert record["data"]["model"] == "gpt-5-codex" and record["data"]["description"] == "a marker"
    assert "edit" not in record["data"]["allowed_decisions"]
    digest = args_digest(shown_arguments(record)) if kind.needs_hash else None
    await backend.decide(record["hitl_id"], Decision(kind, message=message, args_sha256=digest))
    code, answer, _ = finish(process)
    assert code == 0
    assert answer == {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": expected}}


async def test_codex_refuses_edits_and_falls_back_on_errors(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    from reviewer_app.domain.decisions import DecisionError

    process = start_hook(tmp_path, db_path, CODEX_EVENT, host="codex")
    [record] = await wait_pending(backend)
    with pytest.raises(DecisionError, match="does not allow edit"):
        await backend.decide(
            record["hitl_id"],
            Decision(
                DecisionKind.EDIT, edited_args={"command": "ls"}, args_sha256=args_digest(shown_arguments(record))
            ),
        )
    await backend.decide(record["hitl_id"], Decision(DecisionKind.REJECT))
    finish(process)

    code, answer, err = run_hook(tmp_path, db_path, {**CODEX_EVENT, "hook_event_name": "PreToolUse"}, host="codex")
    assert code == 0 and answer is None and "PermissionRequest" in err  # no decision: Codex asks as usual
    code, answer, _ = run_hook(tmp_path, db_path, b"{", "--on-error", "deny", host="codex")
    assert answer["hookSpecificOutput"]["decision"]["behavior"] == "deny"
