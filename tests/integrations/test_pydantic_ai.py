"""Pydantic AI runs reviewed in Reviewer: the real library with FunctionModel/TestModel, a real database.

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
from reviewer_app.integrations.pydantic_ai import resume_reviewed, reviewer_handler, run_reviewed
from tests.integrations.support import by_tool, decision, every_request, pending

pytestmark = pytest.mark.usefixtures("db_at_schema_head")  # the adapter is tested, not creating a database

REPO_ROOT = Path(__file__).resolve().parents[2]
EDIT_ARGS = {"path": "notes.txt", "content": "edited by the reviewer"}


def runs(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.asyncio
async def test_two_approvals_decided_in_reverse_order(db_path: Path, tmp_path: Path) -> None:
    from tests.integrations.pa_agent import build_agent

    log = tmp_path / "tools.log"
    agent = build_agent(log)
    task = asyncio.create_task(run_reviewed(agent, "Tidy my folder", db=db_path, session_id="s1"))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = by_tool(await pending(reviewer, 2))
        write, delete = records["write_file"], records["delete_file"]
        assert write["data"]["arguments"] == {"path": "notes.txt", "content": "hello"}
        assert write["data"]["allowed_decisions"] == ["approve", "approve_for_session", "edit", "reject", "steer"]
        assert write["data"]["schema"]["required"] == ["path", "content"]
        await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.APPROVE))
        assert not task.done()
        await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.REJECT, message="not that file"))
        result = await task
        assert runs(log) == [{"tool": "delete_file", "args": {"path": "old.txt"}}]
        assert result.output == "Done: rejected by reviewer: not that file | deleted old.txt"
        [run] = await reviewer.list_runs()
        assert (run.prompt, run.state, run.agent, run.session_id) == ("Tidy my folder", "done", "tidy-agent", "s1")
        blocks = fold_events(await reviewer.events(run.id))
        tools_ = {b.data["name"]: b.data for b in blocks if b.kind.value == "tool_use"}
        assert tools_["delete_file"]["status"] == "success" and tools_["write_file"]["status"] == "error"
        assert blocks[-2].data["content"].startswith("Done:") and blocks[-1].kind.value == "end"
        with pytest.raises(LookupError):
            await resume_reviewed(agent, db=db_path, session_id="s1")
        assert len(runs(log)) == 1


@pytest.mark.parametrize(
    ("kind", "extra", "ran", "output"),
    [
        (DecisionKind.APPROVE, {}, {"path": "notes.txt", "content": "hello"}, "wrote notes.txt"),
        (DecisionKind.APPROVE_FOR_SESSION, {}, {"path": "notes.txt", "content": "hello"}, "wrote notes.txt"),
        (DecisionKind.EDIT, {"edited_args": EDIT_ARGS}, EDIT_ARGS, "wrote notes.txt"),
        (DecisionKind.REJECT, {"message": "no"}, None, "rejected by reviewer: no"),
        (DecisionKind.STEER, {"message": "use drafts/"}, None, "Reviewer guidance: use drafts/"),
    ],
)
@pytest.mark.asyncio
async def test_every_decision_kind(
    db_path: Path, tmp_path: Path, kind: DecisionKind, extra: dict[str, Any], ran: dict[str, Any] | None, output: str
) -> None:
    from tests.integrations.pa_agent import CALLS, build_agent

    log = tmp_path / "tools.log"
    task = asyncio.create_task(run_reviewed(build_agent(log, CALLS[:1]), "Write my notes", db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        await reviewer.decide(record["hitl_id"], decision(record, kind, **extra))
        result = await task
    assert runs(log) == ([{"tool": "write_file", "args": ran}] if ran else [])
    assert result.output == f"Done: {output}"


@pytest.mark.asyncio
async def test_a_question_is_answered_and_answer_is_refused_on_approvals(db_path: Path, tmp_path: Path) -> None:
    from tests.integrations.pa_agent import CALLS, QUESTION, build_agent

    log = tmp_path / "tools.log"
    task = asyncio.create_task(run_reviewed(build_agent(log, [CALLS[0], QUESTION]), "Tidy", db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = await pending(reviewer, 2)
        [question] = [r for r in records if r["hitl_type"] == "ask_user"]
        [write] = [r for r in records if r["hitl_type"] == "tool_approval"]
        assert question["data"]["question"] == "Which folder?"
        with pytest.raises(DecisionError, match="does not allow respond"):
            await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.RESPOND, message="x"))
        with pytest.raises(DecisionError, match="content"):  # edits are checked against the tool's schema
            await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.EDIT, edited_args={"path": "x"}))
        await reviewer.decide(question["hitl_id"], decision(question, DecisionKind.RESPOND, message="drafts/"))
        await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.APPROVE))
        result = await task
    assert result.output == "Done: wrote notes.txt | drafts/"


@pytest.mark.asyncio
async def test_reviewer_handler_inline_with_test_model(db_path: Path, tmp_path: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    done: list[str] = []
    agent = Agent(TestModel(), name="inline-agent")

    @agent.tool_plain(requires_approval=True)
    def publish(channel: str) -> str:
        """Publish to a channel."""
        done.append(channel)
        return f"published to {channel}"

    task = asyncio.create_task(agent.run("Publish", capabilities=[reviewer_handler(db=db_path, session_id="inline")]))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        assert record["tool_name"] == "publish" and record["session_id"] == "inline"
        edited = {"channel": "staging"}
        await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.EDIT, edited_args=edited))
        result = await task
    assert done == ["staging"]
    assert "published to staging" in result.output


@pytest.mark.asyncio
async def test_killed_while_waiting_then_resumed(db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    log = tmp_path / "tools.log"

    async def agent_process(step: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.integrations.pa_agent", str(db_path), str(log), step,
            env=subprocess_env, cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip

    first = await agent_process("start")
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = by_tool(await pending(reviewer, 2))
        os.kill(first.pid, signal.SIGKILL)
        await first.wait()
        write, delete = records["write_file"], records["delete_file"]
        await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.EDIT, edited_args=EDIT_ARGS))
        await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.REJECT, message="keep it"))
        second = await agent_process("resume")
        out, err = await second.communicate()
        assert second.returncode == 0, err.decode()
        final = json.loads(out.decode().splitlines()[-1])["final"]
        assert final == "Done: wrote notes.txt | rejected by reviewer: keep it"
        assert runs(log) == [{"tool": "write_file", "args": EDIT_ARGS}]
        assert len(await every_request(reviewer)) == 2


@pytest.mark.asyncio
async def test_a_pause_with_calls_to_run_elsewhere_goes_back_to_the_caller(db_path: Path, tmp_path: Path) -> None:
    from pydantic_ai.tools import DeferredToolRequests

    from tests.integrations.pa_agent import CALLS, EXTERNAL, build_agent

    log = tmp_path / "tools.log"
    result = await run_reviewed(build_agent(log, [CALLS[0], EXTERNAL]), "Back up", db=db_path)
    assert isinstance(result.output, DeferredToolRequests)
    assert [c.tool_call_id for c in result.output.calls] == ["call_external"]
    assert [c.tool_call_id for c in result.output.approvals] == ["call_write"]
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        assert await every_request(reviewer) == []
    assert runs(log) == []
