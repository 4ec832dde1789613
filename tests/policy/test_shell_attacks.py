"""Issue 23, shell: the attacks that got through, replayed the way an operator meets them.

Each rule is added with ``reviewer-app rules add``; the call then arrives as a Claude Code PreToolUse payload on
the hook's stdin (the real hook command in a child process, on its sqlite3 fast path). An allow rule that is
wider than what the operator can read off it must leave the call to a human (the hook times out and answers
"ask"); a deny rule must catch the command however its global options are spelled.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.cli import main
from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.hook_helpers import finish, fixture, run_hook, start_hook, wait_pending

# (effect, pattern, command, what the hook must answer)
ATTACKS: list[tuple[str, str, str, str]] = [
    ("allow", "Bash", "$'\\x72m' -rf ~", "ask"),
    ("allow", "Bash", "X=rm; $X -rf /", "ask"),
    ("allow", "Bash", "env -S 'rm -rf /'", "ask"),
    ("allow", "Bash", "flock /tmp/lock rm -rf /", "ask"),
    ("allow", "Bash", "unshare rm -rf /", "ask"),
    ("allow", "Bash(find:*)", "find . -fprintf /home/dev/.profile-copy '%p'", "ask"),
    ("allow", "Bash(sed -n:*)", "sed -n '1e touch /tmp/pwned' README.md", "ask"),
    ("allow", "Bash(git grep:*)", "git grep --open-files-in-pager='rm -rf ~' TODO", "ask"),
    ("deny", "Bash(git push:*)", "git -C . push", "deny"),
    ("deny", "Bash(git push:*)", "git -c k=v push", "deny"),
]


@pytest.mark.parametrize(("effect", "pattern", "command", "answer"), ATTACKS, ids=[row[2] for row in ATTACKS])
def test_attack_through_cli_rule_and_hook(
    tmp_path: Path,
    db_path: Path,
    capsys: pytest.CaptureFixture[str],
    effect: str,
    pattern: str,
    command: str,
    answer: str,
) -> None:
    assert main(["rules", "add", effect, pattern, "--db", str(db_path)]) == 0
    capsys.readouterr()
    payload = {**fixture("pretooluse.json"), "tool_input": {"command": command, "description": "attack"}}
    code, output, err = run_hook(tmp_path, db_path, payload, "--timeout", "1")
    assert code == 0, err
    assert output is not None, err
    decision = output["hookSpecificOutput"]["permissionDecision"]
    assert decision == answer, output


def test_an_allow_rule_that_could_never_show_its_effect_is_refused_by_the_cli(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["rules", "add", "allow", "Bash(xargs rm)", "--db", str(db_path)])
    _, err = capsys.readouterr()
    assert code != 0 and "asked every time" in err and "xargs runs commands built from its input" in err
    assert main(["rules", "add", "deny", "Bash(xargs rm)", "--db", str(db_path)]) == 0  # deny may name it
    # an exact rule for a fully literal command whose whole effect is in its text is accepted and settles it
    assert main(["rules", "add", "allow", "Bash(find . -name '*.pyc' -delete)", "--db", str(db_path)]) == 0


@pytest.mark.asyncio
@pytest.mark.parametrize("command", ["timeout 5 rm notes.txt", "env -S 'ls -la'", "find . -name '*.pyc' -delete"])
async def test_approve_for_session_waives_nothing_it_cannot_show(
    tmp_path: Path, db_path: Path, backend: SQLHITLBackend, command: str
) -> None:
    first = {**fixture("pretooluse.json"), "tool_input": {"command": command, "description": "x"}}
    process = start_hook(tmp_path, db_path, first, "--timeout", "30")
    [pending] = await wait_pending(backend)
    digest = args_digest(pending["data"]["arguments"])
    await backend.decide(pending["hitl_id"], Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=digest))
    assert finish(process)[1]["hookSpecificOutput"]["permissionDecision"] == "allow"
    again = {**first, "tool_use_id": "toolu_again"}
    code, output, err = run_hook(tmp_path, db_path, again, "--timeout", "1")
    assert code == 0 and output is not None, err
    assert output["hookSpecificOutput"]["permissionDecision"] == "ask"  # asked again, not waived


def test_an_exact_allow_rule_stored_before_the_check_is_listed_and_revocable_but_settles_nothing() -> None:
    """A database written before allow rules were checked may hold one for a command that is asked every time:
    it must still be listed (so it can be revoked), and it must never settle the command."""
    from reviewer_app.domain.rules import Rule, RuleError
    from reviewer_app.domain.toolcall import ToolCall

    stored = Rule("allow", "Bash(xargs rm)")  # as read back from a row: loads without the check
    with pytest.raises(RuleError, match="asked every time"):
        stored.checked()
    assert stored.refusal() is not None
    assert not stored.parsed.matches(ToolCall("Bash", {"command": "xargs rm"}))
