"""react-agent-harness (the real package, in a venv of its own: it installs a top-level ``agents`` package that
would shadow the OpenAI Agents SDK's) under review (issue 24): its approval prompt answered from Reviewer, every
decision it can carry, and kill -9 → decide → ``runtime.resume(key)`` running the tool once. Decisions come from
``reviewer-app decide`` in another process."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.framework_venv import framework_python
from tests.integrations.support import (
    NOTE_DECISIONS,
    NOTES_WRITTEN,
    assert_one_waiver_on_record,
    decide_elsewhere,
    decide_in_turn,
    pending,
    report_of,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "react_agent_harness_agent.py"
RELEASES = ["0.14.0", "0.0.2"]  # the newest, and the release the reference design is from

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]


@pytest.fixture(scope="session", params=RELEASES)
def harness_python(request: pytest.FixtureRequest) -> str:
    return framework_python(
        "react-agent-harness", [f"react-agent-harness=={request.param}"], minor="3.11", example=EXAMPLE
    )


async def start(python: str, db: Path, tmp: Path, env: dict[str, str], *mode: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        python, str(EXAMPLE), "--db", str(db), "--state", str(tmp / "checkpoints"), "--workdir", str(tmp / "work"),
        *mode, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.asyncio
async def test_every_decision_reaches_the_harness(
    harness_python: str, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    agent = await start(harness_python, db_path, tmp_path, subprocess_env)
    await decide_in_turn(db_path, NOTE_DECISIONS, env=subprocess_env)
    report = await report_of(agent)
    assert report["written"] == NOTES_WRITTEN  # the edit ran as edited; reject and steer ran nothing
    assert report["model_read"] == [
        "Observation: wrote a.txt",
        "Observation: wrote b.txt",
        "Human guidance: rejected by reviewer: c.txt is read-only",
        "Human guidance: put it in e.txt",
        "Observation: wrote s.txt",
        "Observation: wrote s.txt",
    ]
    await assert_one_waiver_on_record(db_path, 6)


@pytest.mark.asyncio
async def test_kill_9_then_decide_then_resume_runs_the_tool_once(
    harness_python: str, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    first = await start(harness_python, db_path, tmp_path, subprocess_env, "--short")
    async with SQLHITLBackend(db_path, reviewer="observer") as reviewer:
        [record] = await asyncio.wait_for(pending(reviewer, 1), 60)
    first.send_signal(signal.SIGKILL)
    await first.wait()
    assert not (tmp_path / "work").exists()
    await decide_elsewhere(db_path, record["hitl_id"], "approve", env=subprocess_env)
    report = await report_of(await start(harness_python, db_path, tmp_path, subprocess_env, "--resume"))
    assert report == {"written": [["notes.txt", "Buy milk.\n"]], "model_read": ["Observation: wrote notes.txt"]}
    assert (tmp_path / "work" / "notes.txt").read_text() == "Buy milk.\n"
