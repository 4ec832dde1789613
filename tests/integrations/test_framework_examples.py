"""The framework examples run offline: each agent asks, a reviewer in another process decides, it acts."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.support import decision, every_request, pending

REPO_ROOT = Path(__file__).resolve().parents[2]
EDITED = {"path": "notes.txt", "text": "Buy oat milk.\n"}


async def start(example: str, db: Path, workdir: Path, env: dict[str, str], *extra: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, str(REPO_ROOT / "examples" / example), "--db", str(db), "--workdir", str(workdir), *extra,
        env=env, cwd=REPO_ROOT, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("example", "kind", "written"),
    [
        ("langgraph_agent.py", DecisionKind.EDIT, EDITED["text"]),
        ("openai_agents_agent.py", DecisionKind.APPROVE, "Buy milk.\n"),
        ("pydantic_ai_agent.py", DecisionKind.EDIT, EDITED["text"]),
    ],
)
@pytest.mark.asyncio
async def test_example_writes_the_note_as_decided(
    example: str, kind: DecisionKind, written: str, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    agent = await start(example, db_path, tmp_path / "work", subprocess_env)
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        assert record["tool_name"] == "write_note"
        assert record["data"]["arguments"] == {"path": "notes.txt", "text": "Buy milk.\n"}
        extra = {"edited_args": EDITED} if kind is DecisionKind.EDIT else {}
        await reviewer.decide(record["hitl_id"], decision(record, kind, **extra))
        out, err = await agent.communicate()
        assert agent.returncode == 0, err.decode()
        assert out.decode().strip().splitlines()[-1] == "agent: Finished: wrote notes.txt"
        assert (tmp_path / "work" / "notes.txt").read_text() == written
        [run] = await reviewer.list_runs()
        assert (run.state, run.prompt) == ("done", "Note that I need milk")


@pytest.mark.slow
@pytest.mark.parametrize("example", ["openai_agents_agent.py", "pydantic_ai_agent.py"])
@pytest.mark.asyncio
async def test_example_resumes_after_its_process_died(
    example: str, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    first = await start(example, db_path, tmp_path / "work", subprocess_env, "--session", "s")
    async with SQLHITLBackend(db_path, reviewer="rita") as reviewer:
        [record] = await pending(reviewer, 1)
        first.kill()
        await first.wait()
        await reviewer.decide(record["hitl_id"], decision(record, DecisionKind.APPROVE))
        second = await start(example, db_path, tmp_path / "work", subprocess_env, "--session", "s", "--resume")
        out, err = await second.communicate()
        assert second.returncode == 0, err.decode()
        assert out.decode().strip().splitlines()[-1] == "agent: Finished: wrote notes.txt"
        assert len(await every_request(reviewer)) == 1
