"""The proxy's pure parts: which calls wait, what risk a reviewer sees, how a form answer becomes an ElicitResult."""

from __future__ import annotations

from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.integrations.core import Outcome
from reviewer_app.integrations.mcp_proxy.elicitation import (
    ElicitationError,
    elicit_result,
    parse_form_request,
    question_data,
)
from reviewer_app.integrations.mcp_proxy.gating import GatePolicy, risk_of

READ_ONLY = {"name": "read", "annotations": {"readOnlyHint": True}}
WRITE = {"name": "write", "annotations": {"readOnlyHint": False, "destructiveHint": False}}


def test_only_an_explicit_read_only_hint_passes_by_default() -> None:
    policy = GatePolicy(server="fs")
    assert policy.needs_review("read", READ_ONLY) is False
    assert policy.needs_review("write", WRITE) is True
    assert policy.needs_review("unknown", None) is True
    assert policy.needs_review("lying", {"annotations": {"readOnlyHint": "true"}}) is True
    assert policy.needs_review("odd", {"annotations": ["readOnlyHint"]}) is True


def test_gate_wins_over_allow_and_both_match_either_name() -> None:
    policy = GatePolicy(server="fs", gate=["mcp__fs__read*"], allow=["write", "read"])
    assert policy.needs_review("read", READ_ONLY) is True
    assert policy.needs_review("write", WRITE) is False
    assert GatePolicy(server="fs", allow=["mcp__fs__*"]).needs_review("anything", None) is False
    assert GatePolicy(server="fs", allow=["mcp__other__*"]).needs_review("anything", None) is True


def test_risk_follows_the_specs_defaults() -> None:
    assert risk_of(READ_ONLY) == ["read-only"]
    assert risk_of(None) == ["destructive", "not idempotent", "open world"]
    assert risk_of({"annotations": {"destructiveHint": False, "idempotentHint": True, "openWorldHint": False}}) == []


FORM = {
    "type": "object",
    "properties": {"colour": {"type": "string", "enum": ["red", "blue"]}},
    "required": ["colour"],
}


def outcome(kind: DecisionKind, message: str | None = None, **extra: Any) -> Outcome:
    response = Decision(kind, message=message, extra=extra).to_user_response()
    return Outcome.from_record({"hitl_id": "h", "status": "completed", "user_response": response, "data": {}})


def test_form_requests_are_checked_by_the_sdk_types() -> None:
    assert parse_form_request({"message": "Pick", "requestedSchema": FORM}) == ("Pick", FORM)
    with pytest.raises(ElicitationError):
        parse_form_request({"message": "Pick"})
    with pytest.raises(ElicitationError):
        parse_form_request({"message": "Pick", "requestedSchema": {"type": "array"}})
    with pytest.raises(ElicitationError):
        parse_form_request(["not", "params"])


def test_a_one_field_enum_form_offers_its_choices() -> None:
    data = question_data("fs", "Pick", FORM)
    assert data["options"] == ["red", "blue"]
    assert data["form"] == FORM


def test_answers_become_accept_decline_or_cancel() -> None:
    assert elicit_result(outcome(DecisionKind.RESPOND, "blue"), FORM) == {
        "action": "accept",
        "content": {"colour": "blue"},
    }
    assert elicit_result(outcome(DecisionKind.RESPOND, '{"colour": "red"}'), FORM)["content"] == {"colour": "red"}
    assert elicit_result(outcome(DecisionKind.RESPOND, "", content={"colour": "red"}), FORM)["content"] == {
        "colour": "red"
    }
    assert elicit_result(outcome(DecisionKind.REJECT, "no"), FORM) == {"action": "decline"}
    cancelled = Outcome.from_record({"hitl_id": "h", "status": "cancelled", "user_response": None, "data": {}})
    assert elicit_result(cancelled, FORM) == {"action": "cancel"}
    with pytest.raises(ElicitationError):
        elicit_result(outcome(DecisionKind.RESPOND, "green"), FORM)
