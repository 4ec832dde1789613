"""LangGraph / LangChain v1 agents reviewed in Reviewer: the real libraries, a real database, outside decisions."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import pytest

from reviewer_app.domain.decisions import DecisionError, DecisionKind
from reviewer_app.domain.timeline import fold_events
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.langgraph import run_reviewed
from tests.integrations.lc_calls import CALLS, runs
from tests.integrations.support import by_tool, decision, every_request, pending

pytestmark = pytest.mark.usefixtures("db_at_schema_head")  # the adapter is tested, not creating a database

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG = {"configurable": {"thread_id": "thread-1"}}
START_INPUT = {"messages": [{"role": "user", "content": "Tidy my folder"}]}


class Order(TypedDict, total=False):
    dish: str
    colour: str


# LangChain and LangGraph are imported by the tests that run them, not at collection: in every parallel worker they
# would add ~100,000 objects to the heap that each full garbage collection walks (see docs/performance.md).


def build_agent(log: Path, **options: Any) -> Any:
    """The scripted LangChain agent of ``lc_agent`` with an in-memory checkpointer."""
    from langgraph.checkpoint.memory import InMemorySaver

    from tests.integrations.lc_agent import build_agent as lc_build_agent

    return lc_build_agent(log, InMemorySaver(), **options)


def one_node_graph(name: str, node: Callable[[Order], Order]) -> Any:
    """START -> ``node`` -> END over an ``Order``, with an in-memory checkpointer."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(Order)
    builder.add_node(name, node)
    builder.add_edge(START, name)
    builder.add_edge(name, END)
    return builder.compile(checkpointer=InMemorySaver())


def tool_messages(final: dict[str, Any]) -> dict[str, Any]:
    from langchain_core.messages import ToolMessage

    return {m.tool_call_id: m for m in final["messages"] if isinstance(m, ToolMessage)}


@pytest.mark.asyncio
async def test_batched_interrupt_decided_in_reverse_order(db_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "tools.log"
    agent = build_agent(log)
    task = asyncio.create_task(run_reviewed(agent, START_INPUT, CONFIG, db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = by_tool(await pending(reviewer, 2))
        write, delete = records["write_file"], records["delete_file"]
        # Every action of the batch is its own request, with what LangChain allows for it.
        assert write["data"]["arguments"] == {"path": "notes.txt", "content": "hello"}
        assert write["tool_call_id"] == "call_write" and delete["tool_call_id"] == "call_delete"
        assert set(write["data"]["allowed_decisions"]) == {
            "approve",
            "approve_for_session",
            "edit",
            "reject",
            "steer",
            "respond",
        }
        assert set(delete["data"]["allowed_decisions"]) == {"approve", "approve_for_session", "reject", "steer"}
        assert write["data"]["schema"]["required"] == ["path", "content"]
        # Decided last action first: matched by id, not by position.
        await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.APPROVE))
        assert not task.done()
        await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.REJECT, message="not that file"))
        final = await task
        assert runs(log) == [{"tool": "delete_file", "args": {"path": "old.txt"}}]
        results = tool_messages(final)
        assert results["call_delete"].content == "deleted old.txt"
        assert results["call_write"].status == "error" and "not that file" in str(results["call_write"].content)
        # The run, its title and its timeline are in Reviewer.
        [run] = await reviewer.list_runs()
        assert (run.session_id, run.prompt, run.state, run.external) == (
            "langgraph-thread-1",
            "Tidy my folder",
            "done",
            True,
        )
        blocks = fold_events(await reviewer.events(run.id))
        kinds = [block.kind.value for block in blocks]
        assert kinds.count("tool_use") == 2 and kinds.count("hitl") == 2 and kinds[-1] == "end"
        tools_ = {block.data["name"]: block.data for block in blocks if block.kind.value == "tool_use"}
        assert tools_["delete_file"]["status"] == "success" and tools_["write_file"]["status"] == "error"
        assert blocks[0].data["content"] == "I will use my tools."
        # Running again finds the thread finished: nothing is asked twice, nothing runs again.
        again = await run_reviewed(agent, None, CONFIG, db=db_path)
        assert len(again["messages"]) == len(final["messages"])
        assert len(await every_request(reviewer)) == 2 and len(runs(log)) == 1


EDIT_ARGS = {"path": "notes.txt", "content": "edited by the reviewer"}


@pytest.mark.parametrize(
    ("kind", "extra", "ran", "result"),
    [
        (DecisionKind.APPROVE, {}, {"path": "notes.txt", "content": "hello"}, "wrote notes.txt"),
        (DecisionKind.APPROVE_FOR_SESSION, {}, {"path": "notes.txt", "content": "hello"}, "wrote notes.txt"),
        (DecisionKind.EDIT, {"edited_args": EDIT_ARGS}, EDIT_ARGS, "wrote notes.txt"),
        (DecisionKind.REJECT, {"message": "no"}, None, "User rejected the tool call for `write_file` with reason: no"),
        (DecisionKind.STEER, {"message": "use drafts/"}, None, "Reviewer guidance: use drafts/"),
        (DecisionKind.RESPOND, {"message": "pretend it is written"}, None, "pretend it is written"),
    ],
)
@pytest.mark.asyncio
async def test_every_decision_kind(
    db_path: Path, tmp_path: Path, kind: DecisionKind, extra: dict[str, Any], ran: dict[str, Any] | None, result: str
) -> None:
    log = tmp_path / "tools.log"
    agent = build_agent(log, calls=CALLS[:1])
    task = asyncio.create_task(run_reviewed(agent, START_INPUT, CONFIG, db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        await reviewer.decide(record["hitl_id"], decision(record, kind, **extra))
        final = await task
    assert runs(log) == ([{"tool": "write_file", "args": ran}] if ran else [])
    message = tool_messages(final)["call_write"]
    assert result in str(message.content)
    assert message.status == ("success" if kind.runs_tool or kind is DecisionKind.RESPOND else "error")


@pytest.mark.asyncio
async def test_per_call_mode_checks_edits_against_the_tool_schema(db_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "tools.log"
    agent = build_agent(log, mode="per_call")
    task = asyncio.create_task(run_reviewed(agent, START_INPUT, CONFIG, db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = by_tool(await pending(reviewer, 2))
        write, delete = records["write_file"], records["delete_file"]
        assert write["tool_call_id"] == "call_write"
        assert set(delete["data"]["allowed_decisions"]) == {"approve", "approve_for_session", "reject", "steer"}
        # The per-call response_schema's argument schema guards edits before anything is committed.
        with pytest.raises(DecisionError, match="content"):
            await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.EDIT, edited_args={"path": "x"}))
        await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.REJECT, message="keep it"))
        await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.EDIT, edited_args=EDIT_ARGS))
        final = await task
    assert runs(log) == [{"tool": "write_file", "args": EDIT_ARGS}]
    results = tool_messages(final)
    assert "keep it" in str(results["call_delete"].content)
    assert "wrote notes.txt" in str(results["call_write"].content)


@pytest.mark.asyncio
async def test_a_decision_the_request_does_not_allow_is_refused(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    agent = build_agent(tmp_path / "tools.log")
    task = asyncio.create_task(run_reviewed(agent, START_INPUT, CONFIG, db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        delete = by_tool(await pending(reviewer, 2))["delete_file"]
        with pytest.raises(DecisionError, match="does not allow edit"):
            await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.EDIT, edited_args={"path": "x"}))
        with pytest.raises(DecisionError, match="does not allow respond"):
            await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.RESPOND, message="done"))
        cli = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "reviewer_app", "decide", delete["hitl_id"], "respond", "--message", "done",
            "--db", str(db_path), env=subprocess_env, cwd=REPO_ROOT,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        _out, err = await cli.communicate()
        assert cli.returncode != 0 and "does not allow respond" in err.decode()
        assert (await reviewer.get(delete["hitl_id"]))["status"] == "pending"  # type: ignore[index]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def ask_colour(state: Order) -> Order:
    from langgraph.types import interrupt

    return {"colour": interrupt({"question": "Which colour?", "options": ["red", "blue"]})}


@pytest.mark.asyncio
async def test_any_other_interrupt_is_a_question(db_path: Path) -> None:
    graph = one_node_graph("ask_colour", ask_colour)
    task = asyncio.create_task(run_reviewed(graph, {"dish": "soup"}, CONFIG, db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        assert record["hitl_type"] == "ask_user"
        assert record["data"]["question"] == "Which colour?" and record["data"]["options"] == ["red", "blue"]
        with pytest.raises(DecisionError):
            await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.APPROVE))
        await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.RESPOND, message="blue"))
        final = await task
    assert final == {"dish": "soup", "colour": "blue"}


@pytest.mark.asyncio
async def test_killed_while_waiting_then_called_again(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    log, checkpoints = tmp_path / "tools.log", tmp_path / "checkpoints.sqlite"

    async def agent_process(step: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.integrations.lc_agent", str(db_path), str(checkpoints), str(log), step,
            env=subprocess_env, cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip

    first = await agent_process("start")
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = by_tool(await pending(reviewer, 2))
        os.kill(first.pid, signal.SIGKILL)
        await first.wait()
        assert first.returncode == -signal.SIGKILL
        write, delete = records["write_file"], records["delete_file"]
        await reviewer.decide(write["hitl_id"], decision(write, DecisionKind.APPROVE))
        await reviewer.decide(delete["hitl_id"], decision(delete, DecisionKind.REJECT, message="keep it"))
        second = await agent_process("resume")
        out, err = await second.communicate()
        assert second.returncode == 0, err.decode()
        final = json.loads(out.decode().splitlines()[-1])["final"]
        assert "wrote notes.txt" in final and "keep it" in final
        assert runs(log) == [{"tool": "write_file", "args": {"path": "notes.txt", "content": "hello"}}]
        assert sorted(r["hitl_id"] for r in await every_request(reviewer)) == sorted(
            r["hitl_id"] for r in records.values()
        )


def explode(state: Order) -> Order:
    raise RuntimeError("the kitchen is on fire")


@pytest.mark.asyncio
async def test_a_graph_that_fails_marks_its_run_failed(db_path: Path) -> None:
    graph = one_node_graph("explode", explode)
    with pytest.raises(RuntimeError, match="on fire"):
        await run_reviewed(graph, {"dish": "soup"}, CONFIG, db=db_path)
    async with SQLHITLBackend(db_path) as reviewer:
        [run] = await reviewer.list_runs()
        assert (run.state, run.error) == ("failed", "the kitchen is on fire")


@pytest.mark.asyncio
async def test_a_cancelled_request_is_a_reject_or_a_clear_error(db_path: Path, tmp_path: Path) -> None:
    log = tmp_path / "tools.log"
    approve_only = {"write_file": True, "delete_file": {"allowed_decisions": ["approve"]}}
    agent = build_agent(log, interrupt_on=approve_only)
    task = asyncio.create_task(run_reviewed(agent, START_INPUT, CONFIG, db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        records = by_tool(await pending(reviewer, 2))
        await reviewer.cancel(records["write_file"]["hitl_id"], reason="not now")
        await reviewer.cancel(records["delete_file"]["hitl_id"], reason="not now")
        with pytest.raises(RuntimeError, match="is cancelled, but LangChain lets delete_file only be approve"):
            await task
    assert runs(log) == []


@pytest.mark.parametrize(("allowed", "status"), [(["approve", "reject"], "error"), (["approve", "respond"], "success")])
@pytest.mark.asyncio
async def test_a_cancelled_request_tells_the_model_the_call_was_not_run(
    db_path: Path, tmp_path: Path, allowed: list[str], status: str
) -> None:
    log = tmp_path / "tools.log"
    agent = build_agent(log, calls=CALLS[:1], interrupt_on={"write_file": {"allowed_decisions": allowed}})
    task = asyncio.create_task(run_reviewed(agent, START_INPUT, CONFIG, db=db_path))
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        await reviewer.cancel(record["hitl_id"], reason="not now")
        final = await task
    message = tool_messages(final)["call_write"]
    assert "the request was cancelled; the call was not run" in str(message.content)
    assert message.status == status and runs(log) == []
