"""aury-agent (the real package, in a Python 3.13 venv of its own) under review: every decision kind it can
carry, decided by ``reviewer-app decide`` in another process while the example agent waits (issue 24)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.framework_venv import framework_python
from tests.integrations.support import decide_elsewhere, every_request, pending

REPO_ROOT = Path(__file__).resolve().parents[2]
AURY = "aury-agent==0.0.23"


@pytest.fixture(scope="session")
def aury_python() -> str:
    return framework_python("aury", [AURY], minor="3.13")


@pytest.mark.timeout(300)
@pytest.mark.asyncio
async def test_every_decision_reaches_aury_and_the_tool_runs_as_decided(
    aury_python: str, db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    work = tmp_path / "work"
    agent = await asyncio.create_subprocess_exec(
        aury_python, str(REPO_ROOT / "examples" / "aury_agent.py"), "--db", str(db_path), "--workdir", str(work),
        env=subprocess_env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    decisions = [
        ("write_note", {"path": "a.txt", "text": "one"}, ["approve"]),
        ("write_note", {"path": "b.txt", "text": "two"}, ["edit", "--args", '{"path": "b.txt", "text": "edited"}']),
        ("write_note", {"path": "c.txt", "text": "three"}, ["reject", "--message", "c.txt is read-only"]),
        ("write_note", {"path": "d.txt", "text": "four"}, ["steer", "--message", "put it in e.txt"]),
        ("write_note", {"path": "s.txt", "text": "same"}, ["approve_for_session"]),
        # the next identical write_note is settled by the waiver: no request waits for it
        (
            "ask_user",
            {"question": "Which folder should the notes go to?", "options": ["notes", "inbox"]},
            ["respond", "--message", "notes"],
        ),
        ("confirm", {"action": "delete the cache", "risk_level": "high"}, ["reject", "--message", "keep the cache"]),
    ]
    async with SQLHITLBackend(db_path, reviewer="observer") as reviewer:
        for index, (tool, arguments, decide) in enumerate(decisions):
            records = await asyncio.wait_for(pending(reviewer, 1), 60)
            [record] = records
            assert record["tool_name"] == tool, index
            if tool == "ask_user":
                assert record["hitl_type"] == "ask_user" and record["data"]["question"] == arguments["question"]
            else:
                assert record["data"]["arguments"] == arguments
            await decide_elsewhere(db_path, record["hitl_id"], *decide, env=subprocess_env)
        out, err = await asyncio.wait_for(agent.communicate(), 60)
        assert agent.returncode == 0, err.decode()
        report = json.loads(out.decode().strip().splitlines()[-1])
        # side effects: approve ran once, edit ran with the edit, reject and steer never ran, the waived repeat ran
        assert report["written"] == [["a.txt", "one"], ["b.txt", "edited"], ["s.txt", "same"], ["s.txt", "same"]]
        assert sorted(p.name for p in work.iterdir()) == ["a.txt", "b.txt", "s.txt"]
        assert report["model_read"] == [
            "wrote a.txt",
            "wrote b.txt",
            "rejected by reviewer: c.txt is read-only",
            "Reviewer guidance: put it in e.txt",
            "wrote s.txt",
            "wrote s.txt",
            "notes",
            "rejected by reviewer: keep the cache",
        ]
        every = await every_request(reviewer)
        waived = [r for r in every if (r["user_response"] or {}).get("reviewer", "").startswith("session-rule:")]
        assert len(waived) == 1 and len(await reviewer.audit(waived[0]["hitl_id"])) == 1
        assert all(r["status"] == "completed" for r in every) and len(every) == 8


def test_an_unknown_aury_release_is_refused_with_a_clear_message(
    aury_python: str, subprocess_env: dict[str, str]
) -> None:
    import subprocess

    script = (
        "import importlib.metadata as m\n"
        "m.version = lambda name: '0.9.0'\n"
        "import reviewer_app.integrations.versions as v\n"
        "v.version = m.version\n"
        "from reviewer_app.integrations.aury import reviewer_middleware\n"
        "try:\n    reviewer_middleware(db='x.db')\nexcept v.UnsupportedFrameworkVersion as exc:\n    print(exc)\n"
    )
    done = subprocess.run([aury_python, "-c", script], env=subprocess_env, capture_output=True, text=True, check=True)
    assert "supports aury-agent >=0.0.13,<0.0.24; 0.9.0 is installed" in done.stdout
