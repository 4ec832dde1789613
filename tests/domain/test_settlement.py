"""The one place that says what settles a call: the order of rules, --allow-tools and waivers, and their words."""

from __future__ import annotations

import itertools
import time

import pytest

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.rule_outcome import verdict_decision, verdict_message, waiver_decision
from reviewer_app.domain.rules import Rule, evaluate, parse_rule_pattern
from reviewer_app.domain.settlement import ALLOW_TOOLS, Settlement, may_concern, settlement_for
from reviewer_app.domain.toolcall import ToolCall
from reviewer_app.domain.waivers import SessionRule, rule_for

NOW = 1_700_000_000.0
PATTERNS = [
    "Bash",
    "Bash(git status)",
    "Bash(npm run test:*)",
    " Bash(git push:*) ",
    "Write(src/**)",
    "Read(**)",
    "WebFetch(domain:example.com)",
    "mcp__github",
    "mcp__github__*",
    "mcp__github__create_issue",
    "mcp__other__tool",
    "run_shell(ls)",
    "Glob",
]
TOOLS = [
    "Bash",
    "Write",
    "Read",
    "WebFetch",
    "mcp__github__create_issue",
    "mcp__github__x",
    "mcp__other__tool",
    "run_shell",
    "Glob",
    "Grep",
    "bash",
    "mcp__githubx__y",
]


@pytest.mark.parametrize(("pattern", "tool"), list(itertools.product(PATTERNS, TOOLS)))
def test_may_concern_never_drops_a_rule_that_could_match(pattern: str, tool: str) -> None:
    if parse_rule_pattern(pattern).concerns(tool):
        assert may_concern(pattern, tool)


def test_may_concern_drops_rules_about_other_tools() -> None:
    assert not may_concern("Bash(git status)", "Read")
    assert not may_concern("Write(src/**)", "Bash")
    assert not may_concern("mcp__github__*", "Bash")


def _waiver(command: str) -> tuple[int, SessionRule]:
    rule = rule_for("Bash", {"command": command})
    assert rule is not None
    return (7, rule)


def _call(command: str) -> ToolCall:
    return ToolCall("Bash", {"command": command}, agent="claude-code", session_id="s", cwd="/work/project")


def test_a_deny_rule_beats_a_waiver_and_allow_tools() -> None:
    deny = Rule.create("deny", "Bash(git:*)", now=NOW)
    settled = settlement_for(
        _call("git status"), rules=[deny], waivers=[_waiver("git status")], allow_tools=["Bash"], now=NOW
    )
    assert settled is not None and settled.effect == "deny" and settled.decided_by == f"rule:{deny.id}"
    assert settled.rule_id == deny.id and settled.verdict is not None
    assert settled.decision({"command": "git status"}).kind is DecisionKind.REJECT


def test_an_ask_rule_settles_nothing_and_stops_the_search() -> None:
    ask = Rule.create("ask", "Bash(git status)", now=NOW)
    settled = settlement_for(_call("git status"), rules=[ask], waivers=[_waiver("git status")], allow_tools=["Bash"])
    assert settled is not None and settled.effect == "ask" and not settled.settles
    with pytest.raises(ValueError):
        settled.decision({"command": "git status"})


def test_allow_tools_comes_before_a_waiver_and_never_settles_a_high_risk_call() -> None:
    settled = settlement_for(_call("ls"), waivers=[_waiver("ls")], allow_tools=["Bash"])
    assert settled is not None and settled.decided_by == ALLOW_TOOLS and settled.waiver is None
    assert settlement_for(_call("rm -rf /"), allow_tools=["Bash"]) is None


def test_a_waiver_settles_its_exact_call_only() -> None:
    waiver = _waiver("git status")
    settled = settlement_for(_call("git status"), waivers=[waiver])
    assert settled is not None and settled.decided_by == "session-rule:7" and settled.waiver == waiver
    assert settlement_for(_call("git status; rm -rf x"), waivers=[waiver]) is None
    assert settlement_for(ToolCall("Read", {"file_path": "x"}), waivers=[waiver]) is None


def test_the_record_helpers_use_the_settlements_words() -> None:
    rule = Rule.create("allow", "Bash(git status)", note="safe", now=NOW)
    verdict = evaluate([rule], _call("git status"), NOW)
    assert verdict is not None
    settled = Settlement.by_rule(verdict)
    assert verdict_message(verdict) == settled.message == f"allowed by rule {rule.id}: Bash(git status) (safe)"
    assert verdict_decision(verdict, {"command": "git status"}) == settled.decision({"command": "git status"})
    waiver_id, waiver = _waiver("git status")
    by_waiver = Settlement.by_waiver(waiver_id, waiver)
    assert waiver_decision(waiver_id, waiver, {"a": 1}) == by_waiver.decision({"a": 1})
    assert by_waiver.message.startswith("waived by this session's rule: allow `git status` exactly")


def test_nothing_in_force_settles_nothing_without_loading_the_engine() -> None:
    assert settlement_for(_call("git status"), now=time.time()) is None
