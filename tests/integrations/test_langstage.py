"""The langstage task board (langgraph-stream-parser 1.0.0 over langstage-core, the real packages) under review
(issue 24): tasks mirrored on Reviewer's Runs board, ``review_needed`` interrupts as requests, and decisions made
by ``reviewer-app decide`` in another process resumed through ``TaskRunner.resume``."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.support import assert_one_waiver_on_record, decide_elsewhere, pending, report_of

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = REPO_ROOT / "examples" / "langstage_agent.py"
BATCH = {
    "a.txt": ["approve"],
    "b.txt": ["edit", "--args", '{"path": "b.txt", "text": "edited"}'],
    "c.txt": ["reject", "--message", "c.txt is read-only"],
    "d.txt": ["steer", "--message", "put it in e.txt"],
    "e.txt": ["respond", "--message", "e.txt already says five"],
}


@pytest.mark.slow
@pytest.mark.timeout(180)
@pytest.mark.asyncio
async def test_the_board_is_mirrored_and_every_decision_resumes_the_task(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    agent = await asyncio.create_subprocess_exec(
        sys.executable, str(EXAMPLE), "--db", str(db_path), "--workdir", str(tmp_path / "work"),
        env=subprocess_env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with SQLHITLBackend(db_path, reviewer="observer") as reviewer:
        batch = await asyncio.wait_for(pending(reviewer, 5), 60)
        [run] = await reviewer.list_runs()
        assert (run.state, run.prompt) == ("waiting", "Tidy my notes")  # review_needed on the board
        for record in batch:
            path = record["data"]["arguments"]["path"]
            await decide_elsewhere(db_path, record["hitl_id"], *BATCH[path], env=subprocess_env)
        [again] = await asyncio.wait_for(pending(reviewer, 1), 60)  # the next turn's pause
        assert again["data"]["arguments"] == {"path": "s.txt", "text": "same"}
        await decide_elsewhere(db_path, again["hitl_id"], "approve_for_session", env=subprocess_env)
        report = await report_of(agent)
        [run] = await reviewer.list_runs()
        assert run.state == "done"
    assert report["state"] == "done"
    # The graph's tool node runs one turn's calls concurrently: which note is written first is not ours to fix.
    assert sorted(report["written"]) == [["a.txt", "one"], ["b.txt", "edited"], ["s.txt", "same"], ["s.txt", "same"]]
    read = report["model_read"]
    assert "User rejected the tool call for `write_note` with reason: c.txt is read-only" in read
    assert "User rejected the tool call for `write_note` with reason: Reviewer guidance: put it in e.txt" in read
    assert "e.txt already says five" in read
    assert any(str(text).endswith("wrote b.txt") and "edited" in str(text) for text in read)
    await assert_one_waiver_on_record(db_path, 7)  # the repeated s.txt was settled by the waiver, then resumed
