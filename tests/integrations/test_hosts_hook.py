"""Every host's hook payload × every decision, in that host's answer format, through the real hook process.

Gemini's, Qwen's, Copilot's and Factory's payloads were captured from the real CLIs (0.61.0, 0.24.4, 1.0.102,
droid 0.225.2); Cursor's follows its published hook reference (its CLI is not on npm); OpenCode's is what
Reviewer's own plugin sends.
"""

from __future__ import annotations

import asyncio
import json
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.hitl import shown_arguments
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import DATA, finish, run_hook, start_hook, wait_pending

pytestmark = pytest.mark.asyncio


def _data(name: str) -> dict[str, Any]:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@dataclass(frozen=True)
class HostCase:
    host: str
    payload: dict[str, Any]
    tool_name: str
    verdict: Callable[[dict[str, Any]], str]
    reason: Callable[[dict[str, Any]], str]
    edited: Callable[[dict[str, Any]], Any] | None
    """Where the answer carries edited arguments; None: the host takes none (no "edit" offered)."""
    edit: dict[str, Any] | None = None


def _claude_verdict(answer: dict[str, Any]) -> str:
    return str(answer["hookSpecificOutput"]["permissionDecision"])


def _claude_reason(answer: dict[str, Any]) -> str:
    return str(answer["hookSpecificOutput"].get("permissionDecisionReason", ""))


GEMINI = HostCase(
    "gemini",
    _data("gemini_beforetool.json"),
    "write_file",
    verdict=lambda answer: str(answer["decision"]),
    reason=lambda answer: str(answer.get("reason", "")),
    edited=lambda answer: answer["hookSpecificOutput"]["tool_input"],
    edit={"file_path": "notes.txt", "content": "edited\n"},
)
QWEN = HostCase("qwen", _data("qwen_pretooluse.json"), "edit", _claude_verdict, _claude_reason, None)
FACTORY = HostCase(
    "factory",
    _data("factory_pretooluse.json"),
    "Execute",
    _claude_verdict,
    _claude_reason,
    edited=lambda answer: answer["hookSpecificOutput"]["updatedInput"],
    edit={"command": "touch edited.txt", "riskLevelReason": "creates a file", "riskLevel": "low"},
)
COPILOT = HostCase(
    "copilot",
    _data("copilot_pretooluse.json"),
    "bash",
    verdict=lambda answer: str(answer["permissionDecision"]),
    reason=lambda answer: str(answer.get("permissionDecisionReason", "")),
    edited=lambda answer: answer["modifiedArgs"],
    edit={"command": "touch edited.txt", "description": "clean"},
)
CURSOR = HostCase(
    "cursor",
    {
        "conversation_id": "c-conv",
        "generation_id": "c-gen",
        "hook_event_name": "beforeShellExecution",
        "workspace_roots": ["/home/user/project"],
        "command": "git push origin main",
        "cwd": "/home/user/project",
    },
    "Shell",
    verdict=lambda answer: str(answer["permission"]),
    reason=lambda answer: str(answer.get("agent_message", "")),
    edited=None,
)
OPENCODE = HostCase(
    "opencode",
    {
        "hook_event_name": "tool.execute.before",
        "session_id": "ses_1",
        "call_id": "call_1",
        "tool": "bash",
        "args": {"command": "npm publish", "description": "publish"},
        "cwd": "/home/user/project",
    },
    "bash",
    verdict=lambda answer: str(answer["decision"]),
    reason=lambda answer: str(answer.get("reason", "")),
    edited=lambda answer: answer["args"],
    edit={"command": "npm publish --dry-run", "description": "publish"},
)
CASES = [GEMINI, QWEN, FACTORY, COPILOT, CURSOR, OPENCODE]
IDS = [case.host for case in CASES]


def _another_call(payload: dict[str, Any]) -> dict[str, Any]:
    ids = {key: f"{payload[key]}-again" for key in ("tool_use_id", "call_id", "toolCallId") if key in payload}
    return {**payload, **ids}


async def _decide(backend: SQLHITLBackend, record: dict[str, Any], decision: Decision) -> None:
    await backend.decide(record["hitl_id"], decision)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize(
    ("kind", "message", "verdict", "said"),
    [
        (DecisionKind.APPROVE, None, "allow", "approved in Reviewer"),
        (DecisionKind.APPROVE_FOR_SESSION, None, "allow", "for this session"),
        (DecisionKind.REJECT, "keep it", "deny", "rejected by reviewer: keep it"),
        (DecisionKind.STEER, "use make clean", "deny", "Reviewer guidance: use make clean"),
    ],
)
async def test_every_host_answers_each_decision_in_its_format(
    tmp_path: Path,
    db_path: Path,
    backend: SQLHITLBackend,
    case: HostCase,
    kind: DecisionKind,
    message: str | None,
    verdict: str,
    said: str,
) -> None:
    process = start_hook(tmp_path, db_path, case.payload, "--allow-tools", "", host=case.host)
    [record] = await wait_pending(backend)
    assert record["metadata"]["agent"] == case.host and record["tool_name"] == case.tool_name
    assert ("edit" in record["data"]["allowed_decisions"]) == (case.edited is not None)
    digest = args_digest(shown_arguments(record)) if kind.needs_hash else None
    await _decide(backend, record, Decision(kind, message=message, args_sha256=digest))
    code, answer, err = finish(process)
    assert code == 0, err
    assert answer is not None and case.verdict(answer) == verdict, answer
    assert said in case.reason(answer)


@pytest.mark.parametrize("case", [case for case in CASES if case.edited is not None], ids=lambda case: case.host)
async def test_edits_reach_the_hosts_that_take_them(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, case: HostCase
) -> None:
    process = start_hook(tmp_path, db_path, case.payload, "--allow-tools", "", host=case.host)
    [record] = await wait_pending(backend)
    digest = args_digest(shown_arguments(record))
    await _decide(backend, record, Decision(DecisionKind.EDIT, edited_args=case.edit, args_sha256=digest))
    _, answer, _ = finish(process)
    assert answer is not None and case.verdict(answer) == "allow"
    assert case.edited is not None and case.edited(answer) == case.edit


@pytest.mark.parametrize("case", [case for case in CASES if case.edited is None], ids=lambda case: case.host)
async def test_hosts_without_edits_refuse_them(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, case: HostCase
) -> None:
    from reviewer_app.domain.decisions import DecisionError

    process = start_hook(tmp_path, db_path, case.payload, "--allow-tools", "", host=case.host)
    [record] = await wait_pending(backend)
    digest = args_digest(shown_arguments(record))
    with pytest.raises(DecisionError, match="does not allow edit"):
        await _decide(backend, record, Decision(DecisionKind.EDIT, edited_args={"x": 1}, args_sha256=digest))
    await _decide(backend, record, Decision(DecisionKind.REJECT))
    _, answer, _ = finish(process)
    assert answer is not None and case.verdict(answer) == "deny"


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_timeouts_never_allow(tmp_path: Path, db_path: Path, backend: SQLHITLBackend, case: HostCase) -> None:
    code, answer, _ = run_hook(tmp_path, db_path, case.payload, "--allow-tools", "", "--timeout", "1", host=case.host)
    assert code == 0 and answer is not None and case.verdict(answer) == "ask"
    again = _another_call(case.payload)  # the same call id would find the first, expired request
    code, answer, _ = run_hook(
        tmp_path, db_path, again, "--allow-tools", "", "--timeout", "1", "--on-timeout", "deny", host=case.host
    )
    assert answer is not None and case.verdict(answer) == "deny" and "decided within 1 s" in case.reason(answer)
    assert await backend.list_records() == []  # nothing pending is left behind
    expired = await backend.list_records(RequestQuery(statuses=("expired",)))
    assert len(expired) == 2 and {record["metadata"]["agent"] for record in expired} == {case.host}


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_an_abandoned_hook_withdraws_its_request(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, case: HostCase
) -> None:
    process = start_hook(tmp_path, db_path, case.payload, "--allow-tools", "", host=case.host)
    [record] = await wait_pending(backend)
    await asyncio.sleep(0.3)  # the watchdog is up before the request exists; let the hook settle into waiting
    process.send_signal(signal.SIGTERM)
    _, answer, _ = finish(process)
    assert answer is None or case.verdict(answer) == "ask"  # stopped before answering, or handed back: never allow
    deadline = time.monotonic() + 10
    while (stored := await backend.get(record["hitl_id"])) is not None and stored["status"] == "pending":
        assert time.monotonic() < deadline, "the request stayed pending"
        await asyncio.sleep(0.05)
    assert stored is not None and stored["status"] == "cancelled"


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_an_unusable_database_or_event_never_allows(tmp_path: Path, case: HostCase) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"this is not a database" * 100)
    code, answer, err = run_hook(tmp_path, broken, case.payload, "--allow-tools", "", host=case.host)
    assert code == 0 and answer is not None and case.verdict(answer) == "ask", err
    code, answer, _ = run_hook(tmp_path, broken, case.payload, "--on-error", "deny", host=case.host)
    assert answer is not None and case.verdict(answer) == "deny" and "Reviewer could not decide" in case.reason(answer)
    code, answer, _ = run_hook(tmp_path, tmp_path / "x.db", b'{"not": "an event"', "--on-error", "deny", host=case.host)
    assert code == 0 and answer is not None and case.verdict(answer) == "deny"


@pytest.mark.parametrize("case", CASES, ids=IDS)
async def test_a_rule_settles_on_the_fast_path(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, case: HostCase
) -> None:
    code, answer, _ = run_hook(tmp_path, db_path, case.payload, "--allow-tools", case.tool_name, host=case.host)
    assert code == 0 and answer is not None and case.verdict(answer) == "allow"
    assert "--allow-tools" in case.reason(answer)
    [record] = await backend.list_records(RequestQuery(statuses=("completed",)))
    assert record["metadata"]["agent"] == case.host and record["user_response"]["reviewer"] == "rule:allow-tools"


async def test_allow_tools_never_settles_a_high_risk_call(tmp_path: Path, db_at_schema_head: Path) -> None:
    """``--allow-tools`` is a wildcard: a force push through Cursor's shell event still waits for a person."""
    payload = {**CURSOR.payload, "command": "git push --force"}
    process = start_hook(
        tmp_path, db_at_schema_head, payload, "--allow-tools", "Shell", "--timeout", "2", host="cursor"
    )
    code, answer, _ = finish(process)
    assert code == 0 and answer is not None and answer["permission"] == "ask"
