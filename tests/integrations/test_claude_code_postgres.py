"""The hook on PostgreSQL: no sqlite3 fast path there, the same answers and records through the backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import shown_arguments
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import finish, fixture, run_hook, start_hook, wait_pending

pytestmark = [pytest.mark.asyncio, pytest.mark.postgres]


async def test_waiting_rules_and_allow_tools_on_postgres(tmp_path: Path, pg_url: str) -> None:
    async with SQLHITLBackend(pg_url, reviewer="pg-tester") as backend:
        payload = fixture("pretooluse.json")
        process = start_hook(tmp_path, pg_url, payload)
        [record] = await wait_pending(backend)
        await backend.decide(
            record["hitl_id"],
            Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=args_digest(shown_arguments(record))),
        )
        assert finish(process)[1]["hookSpecificOutput"]["permissionDecision"] == "allow"

        again = {**payload, "tool_use_id": "toolu_pg_2"}  # the identical command, later
        code, answer, _ = run_hook(tmp_path, pg_url, again)
        assert code == 0 and "waived by this session's rule" in answer["hookSpecificOutput"]["permissionDecisionReason"]
        read = {**payload, "tool_use_id": "toolu_pg_3", "tool_name": "Glob", "tool_input": {"pattern": "*.py"}}
        code, answer, _ = run_hook(tmp_path, pg_url, read, "--allow-tools", "Glob")  # written in the command
        assert answer["hookSpecificOutput"]["permissionDecision"] == "allow"
        reviewers = [e.reviewer for e in await backend.audit()]
        # Recorded under the database login of the process that decided (issue 12): the window's and the hook's.
        login = backend.store.database_login()
        assert reviewers[0] == f"{login} (pg-tester)" and reviewers[1].startswith(f"{login}/session-rule:")
        assert reviewers[2] == f"{login}/rule:allow-tools"
        assert (await backend.verify_audit()).ok
        assert await backend.list_records() == []
