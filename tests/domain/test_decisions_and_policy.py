from __future__ import annotations

import pytest

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind, args_digest
from reviewer_app.domain.hitl import summarize_arguments
from reviewer_app.domain.runs import InvalidTransition, RunState, check_transition
from reviewer_app.domain.shell_scopes import CommandScope
from reviewer_app.domain.waivers import ApprovalPolicy, SessionRule, rule_for


def test_digest_is_canonical() -> None:
    assert args_digest({"b": 1, "a": [1, "é"]}) == args_digest({"a": [1, "é"], "b": 1})
    assert args_digest({"a": 1}) != args_digest({"a": 2})


def test_decision_round_trips_through_user_response() -> None:
    decision = Decision(DecisionKind.EDIT, message="tidy", edited_args={"x": 1}, args_sha256="ab", reviewer="r")
    assert Decision.from_user_response(decision.to_user_response()) == decision
    bare = Decision.from_user_response({"answer": "blue"})  # a plain protocol answer
    assert (bare.kind, bare.message, bare.extra) == (DecisionKind.RESPOND, "blue", {"answer": "blue"})


def test_a_stored_kind_is_read_as_its_enum_whatever_form_it_takes() -> None:
    """The kind's text (looked up in one dictionary), the enum member itself and anything else (through
    ``DecisionKind``) read as they always did; what is no kind is refused with the same message."""
    for kind in DecisionKind:
        for stored in (kind.value, kind):
            response = {"decision": stored, "message": "m", "args": {"a": 1}, "args_sha256": "ab", "reviewer": "r"}
            decision = Decision.from_user_response(response)
            assert decision.kind is kind
            assert type(decision.kind) is DecisionKind
    assert Decision.from_user_response({"decision": "", "answer": "x"}).kind is DecisionKind.RESPOND
    assert Decision.from_user_response({"decision": None, "answer": "x"}).kind is DecisionKind.RESPOND
    for refused in ("Approve", "approve ", ["approve"], 1, {"approve": 1}):
        with pytest.raises(DecisionError, match="unknown decision"):
            Decision.from_user_response({"decision": refused})


def test_only_the_kinds_that_run_the_tool_need_the_hash() -> None:
    assert {kind for kind in DecisionKind if kind.needs_hash} == {kind for kind in DecisionKind if kind.runs_tool}
    assert {kind for kind in DecisionKind if kind.needs_hash} == {
        DecisionKind.APPROVE,
        DecisionKind.APPROVE_FOR_SESSION,
        DecisionKind.EDIT,
    }


def test_invalid_decisions_are_refused() -> None:
    with pytest.raises(DecisionError):
        Decision(DecisionKind.EDIT)
    with pytest.raises(DecisionError):
        Decision(DecisionKind.STEER, message="  ")
    with pytest.raises(DecisionError, match="unknown decision"):
        Decision.from_user_response({"decision": "maybe"})
    approve = Decision(DecisionKind.APPROVE, args_sha256=args_digest({"a": 1}))
    approve.check_hash({"a": 1})
    with pytest.raises(DecisionError, match="changed"):
        approve.check_hash({"a": 2})
    Decision(DecisionKind.REJECT).check_hash({"anything": True})  # rejections need no hash


def test_policy_and_session_rules() -> None:
    policy = ApprovalPolicy()
    assert policy.needs_approval("write_file", {}, side_effects=True)
    assert not policy.needs_approval("read_file", {}, side_effects=False)
    rule = rule_for("run_shell", {"command": "git push origin"})
    assert rule == SessionRule("run_shell", CommandScope.exact("git push origin"))
    assert not policy.needs_approval("run_shell", {"command": "git push origin"}, side_effects=True, rules=[rule])
    assert policy.needs_approval("run_shell", {"command": "git status"}, side_effects=True, rules=[rule])
    assert policy.needs_approval("run_shell", {"command": "rm -rf x"}, side_effects=True, rules=[rule])
    assert rule_for("write_file", {"path": "a"}) == SessionRule("write_file", None)
    explicit = ApprovalPolicy(gated=frozenset({"read_file"}))
    assert explicit.needs_approval("read_file", {}, side_effects=False)
    assert not explicit.needs_approval("write_file", {}, side_effects=True)


def test_run_transitions() -> None:
    check_transition(RunState.QUEUED, RunState.RUNNING)
    check_transition(RunState.FAILED, RunState.QUEUED)  # retry
    with pytest.raises(InvalidTransition):
        check_transition(RunState.DONE, RunState.RUNNING)


def test_summaries_are_one_short_line() -> None:
    assert summarize_arguments({"command": "ls\n -la"}) == "ls -la"
    assert summarize_arguments({"path": "a.txt", "content": "x"}) == "a.txt"
    assert len(summarize_arguments({"command": "x" * 1000})) == 160


def test_a_plain_decision_skips_nothing_a_limit_would_refuse() -> None:
    assert Decision(DecisionKind.APPROVE, args_sha256="0" * 64).extra == {}
    for refused in (set(), frozenset()):  # empty, yet not JSON: still refused
        with pytest.raises(DecisionError, match="is not JSON data"):
            Decision(DecisionKind.REJECT, extra=refused)  # type: ignore[arg-type]
