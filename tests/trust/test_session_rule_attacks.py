"""After approve-for-session of one command, compound commands built on it are asked, never waived.

Reproduced on main (first-word rules): each of these ran with no request and no audit row after the session
approved ``git status``. Here the runtime itself is driven: each variant must arrive as a request, and after it
is rejected nothing it would have done exists.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.hitl import SQLHITLBackend
from tests.runtime.test_runner_support import approval, pending_requests, started_runtime

pytestmark = pytest.mark.asyncio

APPROVED = "git status"
ATTACKS = [
    "git status; touch X1",
    "git status && touch X2 || touch X2b",
    "git $(touch X3)",
    "git status\ntouch X4",
    "git status | sh -c 'touch X5'",
    "git status & touch X6",
    "git push --force origin main",
    "git status > X8",
    "git `touch X9`",
]


async def test_compound_commands_after_approve_for_session_are_all_asked(
    backend: SQLHITLBackend, tmp_path: Path
) -> None:
    script = [{"tool_calls": [{"name": "run_shell", "args": {"command": APPROVED}}]}]
    script += [{"tool_calls": [{"name": "run_shell", "args": {"command": attack}}]} for attack in ATTACKS]
    script.append({"tool_calls": [{"name": "run_shell", "args": {"command": APPROVED}}]})  # identical: waived
    async with started_runtime(backend, tmp_path) as runtime:
        inv = await runtime.start_run("tester", "x", script=script)
        (first,) = await pending_requests(backend, inv)
        await runtime.decide_and_resume(first["hitl_id"], approval(first, DecisionKind.APPROVE_FOR_SESSION))
        for attack in ATTACKS:
            (request,) = await pending_requests(backend, inv)
            assert request["data"]["arguments"]["command"] == attack  # asked, not waived
            await runtime.decide_and_resume(request["hitl_id"], Decision(DecisionKind.REJECT, message="no"))
        done = await runtime.wait_for_run(inv, timeout=30)
    assert done.state == "done"
    workspace = tmp_path / "workspaces" / done.session_id
    assert sorted(p.name for p in workspace.iterdir() if p.name.startswith("X")) == []
    audit = await backend.audit()
    reviewers = [entry.reviewer for entry in audit]
    assert reviewers.count("tester") == 1 + len(ATTACKS)
    assert sum(r.startswith("session-rule:") for r in reviewers) == 1  # only the identical command was waived
