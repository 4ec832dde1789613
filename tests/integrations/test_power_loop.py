"""power-loop (the real package) under review (issue 24): the ``TOOL_BEFORE`` gate carries every decision; the
durable pause survives kill -9 and is settled by ``resume()``/``abort_pending()`` in a new process. Decisions
come from ``reviewer-app decide`` in another process, as an operator would make them."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.versions import UnsupportedFrameworkVersion, require_version
from tests.integrations.support import (
    NOTE_DECISIONS,
    NOTES_READ,
    NOTES_WRITTEN,
    assert_one_waiver_on_record,
    decide_elsewhere,
    decide_in_turn,
    pending,
    report_of,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "power_loop_agent.py"

pytestmark = [pytest.mark.timeout(180), pytest.mark.slow]


async def start(db: Path, tmp: Path, env: dict[str, str], *mode: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--db", str(db), "--state", str(tmp / "agent.db"),
        "--workdir", str(tmp / "work"), *mode,
        env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.asyncio
async def test_the_gate_obeys_every_decision(db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    agent = await start(db_path, tmp_path, subprocess_env)
    await decide_in_turn(db_path, NOTE_DECISIONS, env=subprocess_env)
    report = await report_of(agent)
    assert report["written"] == NOTES_WRITTEN
    assert report["model_read"] == NOTES_READ
    await assert_one_waiver_on_record(db_path, 6)


async def paused_then_killed(db: Path, tmp: Path, env: dict[str, str]) -> str:
    """Start a durable run, wait for its request, kill -9 the process; returns the request's id."""
    agent = await start(db, tmp, env, "--pause")
    async with SQLHITLBackend(db, reviewer="observer") as reviewer:
        [record] = await asyncio.wait_for(pending(reviewer, 1), 60)
    agent.send_signal(signal.SIGKILL)
    await agent.wait()
    assert record["data"]["allowed_decisions"] == ["approve", "approve_for_session", "reject", "steer"]
    return str(record["hitl_id"])


@pytest.mark.asyncio
async def test_kill_9_then_approve_then_resume_runs_the_tool_once(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    hitl_id = await paused_then_killed(db_path, tmp_path, subprocess_env)
    assert not (tmp_path / "work").exists()  # nothing ran before the decision
    await decide_elsewhere(db_path, hitl_id, "approve", env=subprocess_env)
    report = await report_of(await start(db_path, tmp_path, subprocess_env, "--resume"))
    assert report == {"written": [["notes.txt", "Buy milk.\n"]], "model_read": ["wrote notes.txt"]}
    again = await report_of(await start(db_path, tmp_path, subprocess_env, "--resume"))
    assert again["written"] == []  # a second resume finds nothing pending: the tool ran exactly once


@pytest.mark.asyncio
async def test_a_rejection_reaches_the_model_after_a_restart_and_edit_is_not_offered(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    hitl_id = await paused_then_killed(db_path, tmp_path, subprocess_env)
    refused = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "reviewer_app", "decide", hitl_id, "edit", "--args", '{"path": "x", "text": "y"}',
        "--db", str(db_path), env=subprocess_env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await refused.communicate()
    assert refused.returncode != 0 and b"edit" in err
    await decide_elsewhere(db_path, hitl_id, "reject", "--message", "no shopping lists", env=subprocess_env)
    report = await report_of(await start(db_path, tmp_path, subprocess_env, "--resume"))
    assert report == {"written": [], "model_read": ["<aborted: rejected by reviewer: no shopping lists>"]}


def test_a_release_outside_the_known_range_is_refused_by_name() -> None:
    assert require_version("power-loop", "8.0.0", "9") == "8.0.0"
    with pytest.raises(UnsupportedFrameworkVersion, match=r"supports power-loop >=0\.2\.0,<8; 8\.0\.0 is installed"):
        require_version("power-loop", "0.2.0", "8")
    with pytest.raises(UnsupportedFrameworkVersion, match="not installed"):
        require_version("no-such-framework-here", "1", "2")


@pytest.mark.asyncio
async def test_a_round_decided_both_ways_is_refused_and_nothing_runs(db_path: Path, tmp_path: Path) -> None:
    from power_loop import StatefulAgentLoop
    from power_loop._vendor.llm_client.interface import LLMResponse
    from power_loop.contracts.tools import ToolDefinition
    from power_loop.tools.registry import ToolRegistry

    from reviewer_app.domain.decisions import DecisionKind
    from reviewer_app.integrations.power_loop import MixedDecisions, pause_for_review, settle_and_resume
    from tests.integrations.support import decision

    ran: list[str] = []

    class TwoCalls:
        async def complete(self, request: object, **_: object) -> LLMResponse:
            calls = [
                {"id": f"c{i}", "type": "function", "function": {"name": "touch", "arguments": json.dumps({"name": n})}}
                for i, n in enumerate(("a", "b"))
            ]
            return LLMResponse(raw_text="", tool_calls=calls)

        async def close(self) -> None:
            return None

    tools = ToolRegistry()
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}

    def touch(name: str) -> str:
        ran.append(name)
        return f"touched {name}"

    tools.register(ToolDefinition(name="touch", description="t", input_schema=schema), touch)
    loop = StatefulAgentLoop(llm=TwoCalls(), dsn=str(tmp_path / "agent.db"), tool_registry=tools)
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        pause_for_review(loop, db=reviewer)
        session_id = await loop.new_session()
        await loop.send("touch two", session_id=session_id)
        first, second = await pending(reviewer, 2)
        await reviewer.decide(first["hitl_id"], decision(first, DecisionKind.APPROVE))
        assert await settle_and_resume(loop, session_id, db=reviewer) is None  # one still undecided
        await reviewer.decide(second["hitl_id"], decision(second, DecisionKind.REJECT, message="not b"))
        with pytest.raises(MixedDecisions, match="use review_gate"):
            await settle_and_resume(loop, session_id, db=reviewer)
    await loop.aclose()
    assert ran == []
