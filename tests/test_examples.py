"""The runnable examples work: an external agent process asks, a reviewer elsewhere decides, it acts."""

from __future__ import annotations

import asyncio
import getpass
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import HITLRecord
from reviewer_app.domain.timeline import fold_events
from reviewer_app.hitl import SQLHITLBackend, shown_arguments

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "examples" / "external_agent.py"
HITL_ID = "demo-r1-run-write"


async def _run_example(
    db: str, workdir: Path, env: dict[str, str], decision_for: Callable[[HITLRecord], Decision] | list[str], *extra: str
) -> tuple[int, str, SQLHITLBackend]:
    """Start the example; once it waits, decide its request (here, or with a ``reviewer-app`` command line)."""
    agent = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLE),
        "--db",
        db,
        "--agent",
        "demo",
        "--run-id",
        "r1",
        "--workdir",
        str(workdir),
        "--timeout",
        "60",
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
        cwd=REPO_ROOT,
    )
    assert agent.stdout is not None and agent.stderr is not None
    line = (await asyncio.wait_for(agent.stdout.readline(), 60)).decode()
    assert line.strip() == f"waiting for a decision on {HITL_ID}", (line, (await agent.stderr.read()).decode())
    reviewer = SQLHITLBackend(db, reviewer="rita")
    record = await reviewer.get(HITL_ID)
    assert record is not None and record["status"] == "pending"
    if callable(decision_for):
        await reviewer.decide(HITL_ID, decision_for(record))
    else:  # a command line for `reviewer-app` in another process
        cli = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "reviewer_app",
            *decision_for,
            "--db",
            db,
            env=env,
            cwd=REPO_ROOT,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        cli_out, cli_err = await asyncio.wait_for(cli.communicate(), 60)
        assert cli.returncode == 0, cli_err.decode()
        assert f"{HITL_ID}: " in cli_out.decode()
    out, err = await asyncio.wait_for(agent.communicate(), 60)
    assert not err.decode().strip(), err.decode()
    return int(agent.returncode or 0), line + out.decode(), reviewer


@pytest.mark.asyncio
async def test_external_agent_writes_the_file_when_approved(
    any_db: str, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    def approve(record: dict[str, object]) -> Decision:
        return Decision(DecisionKind.APPROVE, args_sha256=args_digest(shown_arguments(record)))

    code, output, reviewer = await _run_example(
        any_db, tmp_path / "work", subprocess_env, approve, "--content", "approved text\n"
    )
    try:
        assert code == 0, output
        assert (tmp_path / "work" / "notes.txt").read_text() == "approved text\n"
        assert "outcome: wrote" in output and f"approve by {reviewer.reviewer}" in output
        # Marked external everywhere the window and the CLI look, and the run is finished.
        [run] = await reviewer.list_runs()
        assert (run.id, run.external, run.state, run.agent) == ("demo-r1-run", True, "done", "demo")
        record = await reviewer.get(HITL_ID)
        assert record is not None and record["metadata"] == {"external": True, "agent": "demo"}
        # Its timeline, written from the other process, folds into blocks.
        blocks = fold_events(await reviewer.events("demo-r1-run"))
        assert [block.kind.value for block in blocks] == ["text", "tool_use", "hitl", "text"]
        tool = blocks[1]
        assert tool.data["status"] == "success" and tool.data["arguments"]["content"] == "approved text\n"
        expected = [(HITL_ID, reviewer.reviewer, "approve")]  # "rita"; on PostgreSQL "<login> (rita)"
        assert [(e.hitl_id, e.reviewer, e.decision) for e in await reviewer.audit()] == expected
    finally:
        await reviewer.aclose()


@pytest.mark.asyncio
async def test_external_agent_writes_what_the_reviewer_edited(
    db_at_schema_head: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    def edit(record: dict[str, object]) -> Decision:
        edited = {"path": "edited.txt", "content": "the reviewer's words\n"}
        return Decision(DecisionKind.EDIT, edited_args=edited, args_sha256=args_digest(shown_arguments(record)))

    code, output, reviewer = await _run_example(str(db_at_schema_head), tmp_path / "work", subprocess_env, edit)
    await reviewer.aclose()
    assert code == 0, output
    assert not (tmp_path / "work" / "notes.txt").exists()
    assert (tmp_path / "work" / "edited.txt").read_text() == "the reviewer's words\n"
    assert "edit by rita" in output  # SQLite only: the OS-level name is the identity


@pytest.mark.asyncio
async def test_external_agent_does_not_act_when_rejected(
    db_at_schema_head: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    def reject(_record: dict[str, object]) -> Decision:
        return Decision(DecisionKind.REJECT, message="not in this folder")

    code, output, reviewer = await _run_example(str(db_at_schema_head), tmp_path / "work", subprocess_env, reject)
    try:
        assert code == 0, output
        assert not (tmp_path / "work").exists()
        assert "did not write notes.txt: reject by rita: not in this folder" in output
        blocks = fold_events(await reviewer.events("demo-r1-run"))
        assert blocks[1].data["status"] == "error"
    finally:
        await reviewer.aclose()


@pytest.mark.asyncio
async def test_external_agent_is_resumed_by_reviewer_app_decide(
    any_db: str, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    command = ["decide", HITL_ID, "approve", "--reviewer", "carol"]
    code, output, reviewer = await _run_example(any_db, tmp_path / "work", subprocess_env, command)
    try:
        assert code == 0, output
        assert (tmp_path / "work" / "notes.txt").exists()
        # on PostgreSQL the recorded identity is the database login, the name only its label
        carol = "carol" if reviewer.reviewer == "rita" else reviewer.reviewer.replace("(rita)", "(carol)")
        assert f"approve by {carol}" in output
        extras = await reviewer.run(reviewer.store.requests.extras, HITL_ID)
        assert extras is not None and extras["decided_by"] == carol
        assert [(e.reviewer, e.decision) for e in await reviewer.audit()] == [(carol, "approve")]
    finally:
        await reviewer.aclose()


@pytest.mark.asyncio
async def test_reviewer_app_decide_records_the_os_user_by_default(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    subprocess_env.pop("REVIEWER_NAME", None)
    command = ["decide", HITL_ID, "reject", "--message", "not today"]
    code, output, reviewer = await _run_example(str(db_path), tmp_path / "work", subprocess_env, command)
    try:
        assert code == 0, output
        assert f"reject by {getpass.getuser()}: not today" in output
        [entry] = await reviewer.audit()
        assert entry.reviewer == getpass.getuser()
    finally:
        await reviewer.aclose()
