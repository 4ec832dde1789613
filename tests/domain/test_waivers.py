"""Approve-for-session waives exactly the approved command (issue 12's attacks), and request data never widens it."""

from __future__ import annotations

import pytest

from reviewer_app.domain.shell import Redirection
from reviewer_app.domain.shell_scopes import CommandScope
from reviewer_app.domain.waivers import (
    ApprovalPolicy,
    SessionRule,
    describe_session_approval,
    is_shell_tool,
    rule_for,
)

POLICY = ApprovalPolicy()

ATTACKS_AFTER_GIT_STATUS = [
    "git status; touch X",
    "git status && touch X || touch Y",
    "git $(touch X)",
    "git status\ntouch X",
    "git status | sh -c 'touch X'",
    "git status & touch X",
    "git push --force origin main",
    "git status `touch X`",
    "git status <(touch X)",
    "git status > ~/.bashrc",
    "FOO=1 git status",
    "command git status",
    "git status 'unterminated",
]


def waived(tool: str, args: dict[str, object], rules: list[SessionRule]) -> bool:
    return not POLICY.needs_approval(tool, dict(args), side_effects=True, rules=rules)


@pytest.mark.parametrize("tool", ["run_shell", "Bash", "shell", "exec_command"])
@pytest.mark.parametrize("attack", ATTACKS_AFTER_GIT_STATUS)
def test_approving_git_status_for_the_session_waives_none_of_the_attacks(tool: str, attack: str) -> None:
    key = "cmd" if tool == "exec_command" else "command"
    rule = rule_for(tool, {key: "git status"})
    assert rule is not None
    assert waived(tool, {key: "git status"}, [rule])  # the identical command is waived
    assert waived(tool, {key: "'git'  status"}, [rule])
    assert not waived(tool, {key: attack}, [rule])


def test_an_ls_rule_does_not_waive_a_second_command() -> None:
    rule = rule_for("run_shell", {"command": "ls"})
    assert rule is not None
    assert not waived("run_shell", {"command": "ls && echo hi > file"}, [rule])


def test_codex_argv_commands_are_read_as_the_script_they_run() -> None:
    rule = rule_for("shell", {"command": ["bash", "-lc", "git status"]})
    assert rule == SessionRule("shell", CommandScope.exact("git status"))
    assert waived("shell", {"command": ["bash", "-lc", "git status"]}, [rule])
    assert not waived("shell", {"command": ["bash", "-lc", "git status; touch X"]}, [rule])
    assert not waived("shell", {"command": ["git", "status", "--porcelain"]}, [rule])
    assert not waived("exec_command", {"cmd": "git status", "command": "ls"}, [SessionRule("exec_command", rule.scope)])


def test_unwaivable_commands_make_no_rule_and_say_why() -> None:
    assert rule_for("run_shell", {"command": "git $(touch X)"}) is None
    assert rule_for("run_shell", {"command": ["not", 3]}) is None
    assert "substitution" in describe_session_approval("run_shell", {"command": "git $(touch X)"})
    assert describe_session_approval("run_shell", {"command": "git status"}) == (
        "allow `git status` exactly (run_shell, this session)"
    )
    assert describe_session_approval("write_file", {"path": "a"}) == "allow every write_file call in this session"


def test_shell_tools_come_from_the_fixed_set_never_from_request_data() -> None:
    # Issue 12: a request whose data.shell_tools omitted run_shell made a rule waiving every shell command.
    # rule_for takes no such argument: run_shell is a shell tool whatever the request says.
    assert is_shell_tool("run_shell") and is_shell_tool("Bash") and is_shell_tool("exec_command")
    assert not is_shell_tool("mcp__terminal__shell") and not is_shell_tool("write_file")
    rule = rule_for("run_shell", {"command": "ls"})
    assert rule is not None and rule.scope is not None
    assert not waived("run_shell", {"command": "rm -rf /"}, [rule])
    # A stored rule for a shell tool without a scope (the old shape) waives nothing.
    assert not waived("run_shell", {"command": "ls"}, [SessionRule("run_shell", None)])


def test_prefix_session_rules_never_waive_high_risk_commands() -> None:
    rule = SessionRule("run_shell", CommandScope.prefix(["git", "push"]))
    assert waived("run_shell", {"command": "git push origin main"}, [rule])
    assert not waived("run_shell", {"command": "git push --force origin main"}, [rule])
    exact = SessionRule("run_shell", CommandScope.exact("git push --force origin main"))
    assert waived("run_shell", {"command": "git push --force origin main"}, [exact])


def test_non_shell_rules_waive_the_whole_tool_only() -> None:
    rule = rule_for("write_file", {"path": "a"})
    assert rule == SessionRule("write_file", None)
    assert waived("write_file", {"path": "b"}, [rule])
    assert not waived("run_shell", {"command": "ls"}, [rule])
    assert not waived("write_file", {"path": "b"}, [SessionRule("write_file", CommandScope.exact("ls"))])
    # A whole-tool waiver is a wildcard: high-risk calls of the tool are still asked.
    assert not waived("write_file", {"path": ".git/hooks/pre-commit", "content": "x"}, [rule])
    assert not waived("write_file", {"path": ".env", "content": "x"}, [rule])
    assert not waived("write_file", {"path": "../escape.txt", "content": "x"}, [rule])
    destructive = SessionRule("mcp__db__drop", None)
    assert waived("mcp__db__drop", {"name": "t"}, [destructive])
    hint = {"annotations": {"destructiveHint": True}}
    assert POLICY.needs_approval("mcp__db__drop", {"name": "t"}, side_effects=True, rules=[destructive], metadata=hint)
    inside = {"path": "/w/src/a.py", "content": "x"}
    assert not POLICY.needs_approval("write_file", inside, side_effects=True, rules=[rule], cwd="/w")
    assert POLICY.needs_approval("write_file", inside, side_effects=True, rules=[rule], cwd="/elsewhere")


def test_session_rules_round_trip_as_json_friendly_dicts() -> None:
    import json

    rules = [
        SessionRule("run_shell", CommandScope.exact("git status")),
        SessionRule("Bash", CommandScope.prefix(["npm", "run", "test"], [Redirection(">", "out.log")])),
        SessionRule("write_file", None),
    ]
    for rule in rules:
        assert SessionRule.from_dict(json.loads(json.dumps(rule.to_dict()))) == rule
    with pytest.raises(ValueError):
        SessionRule.from_dict({"tool_name": "", "scope": None})
    with pytest.raises(ValueError):
        SessionRule.from_dict({"tool_name": "run_shell", "scope": "git"})
