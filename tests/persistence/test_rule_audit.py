"""Issue 25: rule added, edited, revoked and expired are audited in the decision log's hash chain, on SQLite and on a
real PostgreSQL server, and ``audit verify`` still checks the whole chain; each row reads as a log line."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from reviewer_app.domain.audit_words import audit_decision_words, audit_what
from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend


async def _rules_and_decisions(backend: SQLHITLBackend) -> None:
    await backend.create(
        hitl_id="h1",
        hitl_type="tool_approval",
        session_id="s",
        invocation_id="i",
        data={"arguments": {"command": "git status"}},
        tool_name="Bash",
    )
    await backend.respond("h1", {"decision": "approve", "args_sha256": args_digest({"command": "git status"})})
    first = Rule("allow", "Bash(git status*)", note="read-only")
    await backend.add_rule(first, created_by="alice")
    await backend.add_rule(Rule("allow", "Bash(git *)", id="r-wider"), created_by="alice", replaces=first.id)
    assert await backend.revoke_rule("r-wider", revoked_by="bob")
    await backend.add_rule(Rule("deny", "Bash(curl *)", expires_at=time.time() - 1, id="r-old"), created_by="alice")
    await backend.expire_due()
    await backend.expire_due()  # the expiry is recorded once


def test_rule_changes_are_audited_in_the_chain_and_it_verifies(any_db: str) -> None:
    async def main() -> tuple[Any, list[Any]]:
        async with SQLHITLBackend(any_db, reviewer="alice") as backend:
            await _rules_and_decisions(backend)
            return await backend.verify_audit(), await backend.audit_page(after_id=0, limit=100)

    report, rows = asyncio.run(main())
    assert report.ok, report
    assert report.rows_checked == len(rows) == 6
    decision, first, edited, revoked, added, expired = rows
    assert [audit_decision_words(row) for row in rows] == [
        "Approved",
        "Rule added",
        "Rule edited",
        "Rule revoked",
        "Rule added",
        "Rule expired",
    ]
    assert audit_what(decision) == "Bash “git status”"
    assert first.message == "read-only" and audit_what(first) == "allow Bash(git status*) (scope global)"
    assert edited.hitl_id == "rule:r-wider" and "alice" in edited.reviewer
    assert audit_what(edited) == "allow Bash(git *) (scope global) (was: allow Bash(git status*) (scope global))"
    assert "bob" in revoked.reviewer and audit_what(revoked) == "allow Bash(git *) (scope global)"
    assert added.hitl_id == "rule:r-old" and audit_what(added).startswith("deny Bash(curl *) (scope global), expires")
    assert expired.hitl_id == "rule:r-old" and "system:expiry" in expired.reviewer
