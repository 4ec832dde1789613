"""The Claude Code hook applies the same persistent rules on its sqlite3 fast path and on its backend path.

The real hook command runs in a child process with a captured PreToolUse payload on stdin, as Claude Code runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.records import RequestQuery
from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import DATA, finish, fixture, hook_env, run_hook, start_hook, wait_pending

pytestmark = pytest.mark.asyncio

PATHS = {"fast": (), "backend": ("--no-fast-path",)}


def _output(answer: dict | None) -> dict:
    assert answer is not None, "the hook printed no answer"
    output = answer["hookSpecificOutput"]
    assert output["hookEventName"] == "PreToolUse"
    return output


async def _decided(backend: SQLHITLBackend) -> list[dict]:
    return await backend.list_records(RequestQuery(statuses=("completed",)))


@pytest.mark.parametrize("path", PATHS)
async def test_deny_rule_answers_deny_with_the_rule_and_records_it(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str
) -> None:
    stored = await backend.add_rule(Rule.create("deny", "Bash(echo:*)", note="no markers", now=time.time()))
    rule_id = stored.rule.id
    code, answer, err = run_hook(tmp_path, db_path, fixture("pretooluse.json"), *PATHS[path])
    output = _output(answer)
    assert code == 0 and output["permissionDecision"] == "deny", err
    assert f"denied by rule {rule_id}: Bash(echo:*)" in output["permissionDecisionReason"]
    (record,) = await _decided(backend)
    assert record["user_response"]["decision"] == "reject"
    assert record["user_response"]["reviewer"] == f"rule:{rule_id}"
    (entry,) = await backend.audit(record["hitl_id"])
    assert entry.decision == "reject" and entry.reviewer == f"rule:{rule_id}"
    assert (await backend.verify_audit()).ok
    (listed,) = await backend.list_rules()
    assert listed.hit_count == 1 and listed.last_hit_at is not None


@pytest.mark.parametrize("path", PATHS)
async def test_exact_allow_rule_answers_allow_without_a_reviewer(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str
) -> None:
    payload = fixture("pretooluse.json")
    rule = Rule.create("allow", f"Bash({payload['tool_input']['command']})", now=time.time())
    await backend.add_rule(rule)
    code, answer, err = run_hook(tmp_path, db_path, payload, *PATHS[path])
    output = _output(answer)
    assert code == 0 and output["permissionDecision"] == "allow", err
    assert f"allowed by rule {rule.id}" in output["permissionDecisionReason"]
    (record,) = await _decided(backend)
    assert record["user_response"]["decision"] == "approve"
    assert record["user_response"]["reviewer"] == f"rule:{rule.id}"
    assert await backend.list_records() == []  # nothing waits
    assert (await backend.verify_audit()).ok


@pytest.mark.parametrize("path", PATHS)
async def test_ask_rule_beats_the_default_allow_and_a_reviewer_decides(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str
) -> None:
    await backend.add_rule(Rule.create("ask", "Grep", now=time.time()))
    payload = {**fixture("pretooluse.json"), "tool_name": "Grep", "tool_input": {"pattern": "TODO"}}
    process = start_hook(tmp_path, db_path, payload, "--timeout", "30", *PATHS[path])  # Grep is in --allow-tools
    [pending] = await wait_pending(backend)
    assert pending["tool_name"] == "Grep"
    await backend.decide(pending["hitl_id"], Decision(DecisionKind.REJECT, message="not now"))
    code, answer, _ = finish(process)
    assert code == 0 and _output(answer)["permissionDecision"] == "deny"


@pytest.mark.parametrize("path", PATHS)
async def test_a_prefix_allow_does_not_settle_a_high_risk_command(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str
) -> None:
    await backend.add_rule(Rule.create("allow", "Bash(rm:*)", now=time.time()))
    payload = {**fixture("pretooluse.json"), "tool_input": {"command": "rm -rf /home/dev/project"}}
    process = start_hook(tmp_path, db_path, payload, "--timeout", "30", *PATHS[path])
    [pending] = await wait_pending(backend)  # asked: rm -rf is high risk, only an exact rule may settle it
    await backend.decide(pending["hitl_id"], Decision(DecisionKind.REJECT, message="no"))
    assert _output(finish(process)[1])["permissionDecision"] == "deny"
    (listed,) = await backend.list_rules()
    assert listed.hit_count == 0


HOOK_IN_PROCESS = (
    "import os, runpy, sys\n"
    "def _exit(code):\n"
    "    raise SystemExit(code)\n"
    "os._exit = _exit  # the hook ends with os._exit: keep this process alive to look at its modules\n"
    "sys.argv = ['reviewer_app', 'hook', 'claude-code', '--db', sys.argv[1]]\n"
    "try:\n"
    "    runpy.run_module('reviewer_app', run_name='__main__')\n"
    "except SystemExit:\n"
    "    pass\n"
)


def _run_probe(
    probe: str, db_path: Path, tmp_path: Path, payload: dict | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-c", probe, str(db_path)],
        input=json.dumps(payload or fixture("pretooluse.json")).encode(),
        capture_output=True,
        check=False,
        env=hook_env(tmp_path),
        timeout=60,
    )


async def test_a_persistent_rule_is_answered_on_the_fast_path_without_the_orm(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    rule = (await backend.add_rule(Rule.create("deny", "Bash(echo:*)", now=time.time()))).rule
    probe = (
        HOOK_IN_PROCESS
        + "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('sqlalchemy', 'sqlmodel', 'alembic')"
        " or m == 'reviewer_app.hitl' or m.startswith('reviewer_app.persistence.store'))\n"
        "print('HEAVY', heavy, file=sys.stderr)\n"
    )
    result = _run_probe(probe, db_path, tmp_path)
    output = _output(json.loads(result.stdout))
    assert output["permissionDecision"] == "deny" and rule.id in output["permissionDecisionReason"]
    assert "HEAVY []" in result.stderr.decode(), result.stderr.decode()


@pytest.mark.parametrize("path", PATHS)
async def test_codex_permission_requests_obey_the_same_rules(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str
) -> None:
    event = json.loads((DATA / "codex_permissionrequest.json").read_text(encoding="utf-8"))
    rule = (await backend.add_rule(Rule.create("deny", "Bash(touch:*)", scope="agent:codex", now=time.time()))).rule
    code, answer, err = run_hook(tmp_path, db_path, event, *PATHS[path], host="codex")
    assert code == 0 and answer is not None, err
    decision = answer["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and f"denied by rule {rule.id}" in decision["message"]
    (record,) = await _decided(backend)
    assert record["user_response"]["reviewer"] == f"rule:{rule.id}"


async def _waive(backend: SQLHITLBackend, payload: dict) -> None:
    """An approve-for-session decision in the payload's session: the waiver of its exact call."""
    arguments = {"command": payload["tool_input"]["command"]}
    await backend.create(
        hitl_id="waived-before",
        hitl_type="tool_approval",
        session_id=payload["session_id"],
        invocation_id="earlier-prompt",
        data={"arguments": arguments},
        metadata={"agent": "claude-code", "external": True},
        tool_name=payload["tool_name"],
    )
    await backend.decide(
        "waived-before", Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=args_digest(arguments))
    )


def _git_status() -> dict:
    return {**fixture("pretooluse.json"), "tool_input": {"command": "git status", "description": "status"}}


async def _answer_to_waived_git_status(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str, expected: str
) -> dict:
    """The hook's answer to ``git status`` in a session that waived it."""
    payload = _git_status()
    await _waive(backend, payload)
    code, answer, err = run_hook(tmp_path, db_path, payload, *PATHS[path])
    output = _output(answer)
    assert code == 0 and output["permissionDecision"] == expected, err
    return output


@pytest.mark.parametrize("path", PATHS)
async def test_a_waiver_settles_with_the_same_record_and_words_on_both_paths(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str
) -> None:
    output = await _answer_to_waived_git_status(tmp_path, db_path, backend, path, "allow")
    assert (
        output["permissionDecisionReason"]
        == "waived by this session's rule: allow `git status` exactly (Bash, this session)"
    )
    record = next(r for r in await _decided(backend) if r["hitl_id"] != "waived-before")
    assert record["user_response"]["reviewer"].startswith("session-rule:")
    assert record["user_response"]["message"] == output["permissionDecisionReason"]


@pytest.mark.parametrize("path", PATHS)
async def test_a_deny_rule_beats_this_sessions_waiver(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str
) -> None:
    rule = (await backend.add_rule(Rule.create("deny", "Bash(git:*)", now=time.time()))).rule
    output = await _answer_to_waived_git_status(tmp_path, db_path, backend, path, "deny")
    assert f"denied by rule {rule.id}" in output["permissionDecisionReason"]


@pytest.mark.parametrize("path", PATHS)
async def test_an_ask_rule_beats_this_sessions_waiver(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, path: str
) -> None:
    payload = _git_status()
    await _waive(backend, payload)
    await backend.add_rule(Rule.create("ask", "Bash(git status)", now=time.time()))
    process = start_hook(tmp_path, db_path, payload, "--timeout", "30", *PATHS[path])
    [pending] = await wait_pending(backend)
    await backend.decide(pending["hitl_id"], Decision(DecisionKind.REJECT, message="not now"))
    assert _output(finish(process)[1])["permissionDecision"] == "deny"


async def test_a_rule_about_another_tool_loads_no_shell_parser_on_the_fast_path(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend
) -> None:
    """A Read call meets only Read rules: the Bash rules in force are not built, so bashlex is never imported."""
    await backend.add_rule(Rule.create("deny", "Bash(git push:*)", now=time.time()))
    await backend.add_rule(Rule.create("allow", "Bash(npm run test:*)", now=time.time()))
    await backend.add_rule(Rule.create("allow", "Read(**)", now=time.time()))
    payload = {
        **fixture("pretooluse.json"),
        "tool_name": "Read",
        "tool_input": {"file_path": str(tmp_path / "notes.txt")},
        "cwd": str(tmp_path),
    }
    (tmp_path / "notes.txt").write_text("x")
    probe = (
        HOOK_IN_PROCESS
        + "print('PARSER', sorted(m for m in sys.modules if m.split('.')[0] == 'bashlex'), file=sys.stderr)\n"
    )
    result = _run_probe(probe, db_path, tmp_path, payload)
    output = _output(json.loads(result.stdout))
    assert output["permissionDecision"] == "allow" and "Read(**)" in output["permissionDecisionReason"]
    assert "PARSER []" in result.stderr.decode(), result.stderr.decode()
