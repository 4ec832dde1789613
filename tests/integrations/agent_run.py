"""Driving a real agent CLI end to end: ``hook install`` into a temp home, the agent against a fake model API,
one request decided with ``reviewer-app decide``, and what the agent did afterwards."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import REPO_ROOT, wait_pending


def reviewer(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "reviewer_app", *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def agent_env(home: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(REPO_ROOT), **extra}
    env.pop("REVIEWER_DB", None)
    return env


def install_hook(env: dict[str, str], host: str, db_path: Path, *args: str) -> str:
    installed = reviewer(env, "hook", "install", host, "--db", str(db_path), "--hook-timeout", "60", *args)
    assert installed.returncode == 0, installed.stderr
    return installed.stdout


def merge_json(path: Path, values: dict[str, Any]) -> None:
    """Add the host's offline settings next to what ``hook install`` wrote (whose entry must survive)."""
    settings = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    settings.update(values)
    path.write_text(json.dumps(settings), encoding="utf-8")


@dataclass
class AgentResult:
    record: dict[str, Any]
    returncode: int
    stdout: str
    stderr: str


async def run_and_decide(
    backend: SQLHITLBackend,
    db_path: Path,
    env: dict[str, str],
    command: list[str],
    cwd: Path,
    decision: str,
    *extra: str,
    start_within: float = 60,
) -> AgentResult:
    """Start the agent, wait for its one request, decide it, and wait for the agent to finish."""
    agent = await asyncio.to_thread(
        subprocess.Popen,
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        [record] = await wait_pending(backend, timeout=start_within)
        decided = await asyncio.to_thread(
            reviewer, env, "decide", record["hitl_id"], decision, *extra, "--db", str(db_path)
        )
        assert decided.returncode == 0, decided.stderr
        out, err = await asyncio.to_thread(agent.communicate, timeout=90)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
    return AgentResult(record, agent.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


async def session_recorded(backend: SQLHITLBackend, record: dict[str, Any]) -> tuple[str | None, list[Any]]:
    """The request's run state and the tool results on its session's timelines, once the host's last lifecycle
    hook has had its moment (hosts may fire the session's end as they exit)."""
    run_state = None
    results: list[Any] = []
    for _ in range(100):
        run = await backend.get_run(record["invocation_id"])
        run_state = run.state if run is not None else None
        runs = [run for run in await backend.list_runs() if run.session_id == record["session_id"]]
        results = [
            event.data.get("result")
            for run in runs
            for event in await backend.events(run.id)
            if event.kind.value == "tool_use" and event.op.value == "patch"
        ]
        if run_state == "done" and results:
            break
        await asyncio.sleep(0.1)
    return run_state, results


MARKER = "touch marker.txt"
EDITED = "touch edited.txt"


def decisions(edited_arguments: dict[str, Any] | None) -> list[tuple[str, list[str]]]:
    """approve, reject with a reason, and edit (to ``touch edited.txt``) where the host runs edited arguments."""
    cases: list[tuple[str, list[str]]] = [("approve", []), ("reject", ["--message", "not here"])]
    if edited_arguments is not None:
        cases.append(("edit", ["--args", json.dumps(edited_arguments)]))
    return cases


async def check_decided(
    backend: SQLHITLBackend,
    result: AgentResult,
    project: Path,
    decision: str,
    model_saw: list[str],
    *,
    host: str,
    tool: str,
    edits: bool,
    session_end: bool = True,
) -> None:
    """The request as the host asked it, and the agent's deeds as decided: approve → the command ran (and the
    session's tool result and end are on its run), reject → it did not and the model read the reason, edit → the
    edited command ran instead."""
    record = result.record
    assert record["metadata"]["agent"] == host and record["tool_name"] == tool
    assert record["data"]["arguments"]["command"] == MARKER
    assert ("edit" in record["data"]["allowed_decisions"]) == edits
    assert result.returncode == 0, result.stderr[-2000:]
    if decision == "approve":
        assert (project / "marker.txt").exists()
        state, results = await session_recorded(backend, record)
        assert results and (state == "done" or not session_end), (state, results)
    elif decision == "edit":
        assert (project / "edited.txt").exists() and not (project / "marker.txt").exists()
    else:
        assert not (project / "marker.txt").exists()
        assert any("rejected by reviewer: not here" in text for text in model_saw), model_saw


@dataclass
class HostE2E:
    """One real agent CLI run under Reviewer: a project folder to work in, a temporary home that receives the
    host's hook, and the database the hook writes to (the ``host_e2e`` fixture)."""

    backend: SQLHITLBackend
    db_path: Path
    project: Path
    home: Path

    def install(self, host: str, *, drop: Iterable[str] = (), **extra: str) -> dict[str, str]:
        """The agent's environment (the temporary home, ``PWD`` the project, less ``drop``) after ``hook install``
        there; the variables that choose the host's config folder must be set or dropped before the install."""
        env = agent_env(self.home, PWD=str(self.project), **extra)
        for key in drop:
            env.pop(key, None)
        install_hook(env, host, self.db_path)
        return env

    async def run(
        self, env: dict[str, str], command: list[str], decision: str, extra: list[str], *, start_within: float = 60
    ) -> AgentResult:
        return await run_and_decide(
            self.backend, self.db_path, env, command, self.project, decision, *extra, start_within=start_within
        )

    async def check(self, result: AgentResult, decision: str, model_saw: list[str], **expected: Any) -> None:
        """:func:`check_decided` on this run's project (``host``, ``tool``, ``edits``, ``session_end``)."""
        await check_decided(self.backend, result, self.project, decision, model_saw, **expected)
