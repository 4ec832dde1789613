"""Driving a real agent CLI end to end: ``hook install`` into a temp home, the agent against a fake model API,
each of its calls decided with ``reviewer-app decide``, and what the agent did afterwards."""

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


@dataclass(frozen=True)
class DecidedCall:
    """One call the fake model asks for in the session and how ``reviewer-app decide`` decides its request."""

    decision: str
    command: str
    """The shell command the model asks to run: each call touches a file of its own."""
    extra: tuple[str, ...] = ()
    """The ``decide`` command's options (the reason, the edited arguments)."""

    def asked(self, **fields: Any) -> dict[str, Any]:
        """The call's arguments as the model sends them: the command and the host's other ``fields``."""
        return {"command": self.command, **fields}


EDITED = "touch edited.txt"


def decided_calls(edited_arguments: dict[str, Any] | None) -> list[DecidedCall]:
    """approve, edit (to ``touch edited.txt``, where the host runs edited arguments) and reject with a reason: the
    calls one session makes in turn, reject last (the model reads the reason, then the session ends)."""
    calls = [DecidedCall("approve", "touch approved.txt")]
    if edited_arguments is not None:
        edited = json.dumps({**edited_arguments, "command": EDITED})
        calls.append(DecidedCall("edit", "touch to-edit.txt", ("--args", edited)))
    calls.append(DecidedCall("reject", "touch rejected.txt", ("--message", "not here")))
    return calls


@dataclass
class AgentResult:
    records: list[dict[str, Any]]
    """The request of each decided call, in the calls' order."""
    returncode: int
    stdout: str
    stderr: str


async def run_and_decide(
    backend: SQLHITLBackend,
    db_path: Path,
    env: dict[str, str],
    command: list[str],
    cwd: Path,
    calls: list[DecidedCall],
    *,
    start_within: float = 60,
) -> AgentResult:
    """Start the agent, decide the request of each of its calls in turn as the call says, and wait for the agent
    to finish. Every request is decided while the agent waits on it, through ``reviewer-app decide``."""
    agent = await asyncio.to_thread(
        subprocess.Popen,
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    records = []
    try:
        for call in calls:
            [record] = await wait_pending(backend, timeout=start_within)  # one request at a time: the call's
            assert record["data"]["arguments"]["command"] == call.command, record
            decided = await asyncio.to_thread(
                reviewer, env, "decide", record["hitl_id"], call.decision, *call.extra, "--db", str(db_path)
            )
            assert decided.returncode == 0, decided.stderr
            records.append(record)
        out, err = await asyncio.to_thread(agent.communicate, timeout=90)
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.communicate()
    return AgentResult(records, agent.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


async def session_recorded(backend: SQLHITLBackend, record: dict[str, Any]) -> tuple[str | None, list[Any]]:
    """The request's run state and the results of its call (the tool-use blocks on its session's timelines with
    the request's call id, or whose arguments name its command), once the host's last lifecycle hook has had its
    moment (hosts may fire the session's end as they exit)."""
    command, call_id = record["data"]["arguments"]["command"], record.get("tool_call_id")
    run_state = None
    results: list[Any] = []
    for _ in range(100):
        run = await backend.get_run(record["invocation_id"])
        run_state = run.state if run is not None else None
        runs = [run for run in await backend.list_runs() if run.session_id == record["session_id"]]
        called: dict[str, tuple[Any, Any]] = {}
        returned: dict[str, Any] = {}
        for run in runs:
            for event in await backend.events(run.id):
                if event.kind.value != "tool_use":
                    continue
                if event.op.value == "apply":
                    called[event.block_id] = (event.data.get("call_id"), event.data.get("arguments"))
                elif event.op.value == "patch":
                    returned[event.block_id] = event.data.get("result")
        results = [
            returned[block]
            for block, (called_id, arguments) in called.items()
            if block in returned and ((call_id and called_id == call_id) or command in json.dumps(arguments))
        ]
        if run_state == "done" and results:
            break
        await asyncio.sleep(0.1)
    return run_state, results


async def check_decided(
    backend: SQLHITLBackend,
    result: AgentResult,
    project: Path,
    calls: list[DecidedCall],
    model_saw: list[str],
    *,
    host: str,
    tool: str,
    edits: bool,
    session_end: bool = True,
) -> None:
    """Each request as the host asked it, and the agent's deeds as decided: approve → its command ran (and the
    session's result of that call and its end are on its run), reject → it did not and the model read the reason,
    edit → the edited command ran instead."""
    assert result.returncode == 0, result.stderr[-2000:]
    assert [record["data"]["arguments"]["command"] for record in result.records] == [c.command for c in calls]
    for call, record in zip(calls, result.records, strict=True):
        assert record["metadata"]["agent"] == host and record["tool_name"] == tool
        assert ("edit" in record["data"]["allowed_decisions"]) == edits
        touched = project / call.command.removeprefix("touch ")
        if call.decision == "approve":
            assert touched.exists()
            state, results = await session_recorded(backend, record)
            assert results and (state == "done" or not session_end), (state, results)
        elif call.decision == "edit":
            assert (project / "edited.txt").exists() and not touched.exists()
        else:
            assert not touched.exists()
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
        self, env: dict[str, str], command: list[str], calls: list[DecidedCall], *, start_within: float = 60
    ) -> AgentResult:
        return await run_and_decide(
            self.backend, self.db_path, env, command, self.project, calls, start_within=start_within
        )

    async def check(self, result: AgentResult, calls: list[DecidedCall], model_saw: list[str], **expected: Any) -> None:
        """:func:`check_decided` on this run's project (``host``, ``tool``, ``edits``, ``session_end``)."""
        await check_decided(self.backend, result, self.project, calls, model_saw, **expected)
