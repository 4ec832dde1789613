"""OpenAI Agents SDK runs reviewed in Reviewer: the real SDK with an offline Model, a real database.

The SDK is imported inside the tests, not at collection: every test worker collects this module, and the SDK's
objects would make each of its full garbage collections (one after every UI test) slower.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import DecisionError, DecisionKind
from reviewer_app.domain.timeline import fold_events
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.openai_agents import resume_reviewed, run_reviewed
from tests.integrations.support import by_tool, decision, every_request, pending

pytestmark = pytest.mark.usefixtures("db_at_schema_head")  # the adapter is tested, not creating a database

REPO_ROOT = Path(__file__).resolve().parents[2]


def runs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.asyncio
async def test_two_approvals_decided_in_reverse_order(db_path: Path, tmp_path: Path) -> None:
    from tests.integrations.oa_agent import build_agent

    log = tmp_path / "tools.log"
    agent = build_agent(log)
    task = asyncio.create_task(run_reviewed(agent, "Tidy my folder", db=db_path, session_id="s1"))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = by_tool(await pending(reviewer, 2))
        write, delete = records["write_file"], records["delete_file"]
        assert write["data"]["arguments"] == {"path": "notes.txt", "content": "hello"}
        assert write["tool_call_id"] == "call_write" and write["session_id"] == "s1"
        assert write["data"]["allowed_decisions"] == ["approve", "approve_for_session", "reject", "steer"]
        assert write["tool_state"]["state"]["current_turn"] == 1  # the RunState, saved with the request
        await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.APPROVE))
        assert not task.done()
        await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.REJECT, message="not that file"))
        result = await task
        assert runs(log) == [{"tool": "delete_file", "args": {"path": "old.txt"}}]
        assert result.final_output == "Done: rejected by reviewer: not that file | deleted old.txt"
        [run] = await reviewer.list_runs()
        assert (run.prompt, run.state, run.agent) == ("Tidy my folder", "done", "tidy-agent")
        blocks = fold_events(await reviewer.events(run.id))
        tools_ = {b.data["name"]: b.data for b in blocks if b.kind.value == "tool_use"}
        assert tools_["delete_file"]["status"] == "success" and tools_["write_file"]["status"] == "error"
        hitl = [b.data for b in blocks if b.kind.value == "hitl"]
        assert sorted(h["decision"] for h in hitl) == ["approve", "reject"]
        assert blocks[-2].data["content"].startswith("Done:") and blocks[-1].kind.value == "end"
        # The run finished: nothing is left to resume, and nothing runs again.
        with pytest.raises(LookupError):
            await resume_reviewed(agent, db=db_path, session_id="s1")
        assert len(runs(log)) == 1


@pytest.mark.parametrize(
    ("kind", "extra", "ran", "output"),
    [
        (DecisionKind.APPROVE, {}, True, "wrote notes.txt"),
        (DecisionKind.APPROVE_FOR_SESSION, {}, True, "wrote notes.txt"),
        (DecisionKind.REJECT, {"message": "no"}, False, "rejected by reviewer: no"),
        (DecisionKind.REJECT, {}, False, "Tool execution was not approved."),
        (DecisionKind.STEER, {"message": "use drafts/"}, False, "Reviewer guidance: use drafts/"),
    ],
)
@pytest.mark.asyncio
async def test_every_decision_kind(
    db_path: Path, tmp_path: Path, kind: DecisionKind, extra: dict[str, Any], ran: bool, output: str
) -> None:
    from tests.integrations.oa_agent import CALLS, build_agent

    log = tmp_path / "tools.log"
    agent = build_agent(log, calls=CALLS[:1])
    task = asyncio.create_task(run_reviewed(agent, "Write my notes", db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        await reviewer.decide(record["hitl_id"], decision(record, kind, **extra))
        result = await task
    assert runs(log) == ([{"tool": "write_file", "args": {"path": "notes.txt", "content": "hello"}}] if ran else [])
    assert result.final_output == f"Done: {output}"


@pytest.mark.asyncio
async def test_edit_and_answer_are_not_offered(db_path: Path, tmp_path: Path) -> None:
    from tests.integrations.oa_agent import CALLS, build_agent

    log = tmp_path / "tools.log"
    task = asyncio.create_task(run_reviewed(build_agent(log, calls=CALLS[:1]), "Write", db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        with pytest.raises(DecisionError, match="does not allow edit"):
            await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.EDIT, edited_args={"path": "x"}))
        with pytest.raises(DecisionError, match="does not allow respond"):
            await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.RESPOND, message="x"))
        await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.APPROVE))
        await task
    assert len(runs(log)) == 1


@pytest.mark.asyncio
async def test_killed_while_waiting_then_resumed(db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    log = tmp_path / "tools.log"

    async def agent_process(step: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.integrations.oa_agent", str(db_path), str(log), step,
            env=subprocess_env, cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip

    first = await agent_process("start")
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = by_tool(await pending(reviewer, 2))
        os.kill(first.pid, signal.SIGKILL)
        await first.wait()
        write, delete = records["write_file"], records["delete_file"]
        await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.APPROVE))
        await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.STEER, message="archive it instead"))
        second = await agent_process("resume")
        out, err = await second.communicate()
        assert second.returncode == 0, err.decode()
        final = json.loads(out.decode().splitlines()[-1])["final"]
        assert final == "Done: wrote notes.txt | Reviewer guidance: archive it instead"
        assert runs(log) == [{"tool": "write_file", "args": {"path": "notes.txt", "content": "hello"}}]
        assert len(await every_request(reviewer)) == 2


@pytest.mark.asyncio
async def test_a_session_of_several_runs_resumes_the_one_that_paused_last(db_path: Path, tmp_path: Path) -> None:
    from tests.integrations.oa_agent import CALLS, build_agent

    log = tmp_path / "tools.log"
    agent = build_agent(log, calls=CALLS[:1])
    first = asyncio.create_task(run_reviewed(agent, "First", db=db_path, session_id="s"))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.APPROVE))
        await first
        second = asyncio.create_task(
            run_reviewed(build_agent(log, calls=CALLS[1:]), "Second", db=db_path, session_id="s")
        )
        [record] = await pending(reviewer, 1)
        second.cancel()  # the process gave up while waiting
        with pytest.raises(asyncio.CancelledError):
            await second
        await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.APPROVE))
        result = await resume_reviewed(build_agent(log, calls=CALLS[1:]), db=db_path, session_id="s")
        assert result.final_output == "Done: deleted old.txt"
        runs_ = {run.prompt: run for run in await reviewer.list_runs()}
        assert runs_["First"].id != runs_["Second"].id and runs_["Second"].state == "done"
    assert [entry["tool"] for entry in runs(log)] == ["write_file", "delete_file"]
