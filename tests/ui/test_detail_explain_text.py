"""The detail pane's "What it will touch" text for requests that run no tool."""

from __future__ import annotations

from typing import Any

from reviewer_app.domain.why import PreviewInputs
from reviewer_app.preview.request import preview_inputs
from reviewer_app.ui.detail.explain import body_html

NOW = 1_800_000_000.0


def _record(hitl_type: str, **fields: Any) -> dict[str, Any]:
    return {"hitl_id": "q1", "hitl_type": hitl_type, "session_id": "s1", "data": {}, "metadata": {}, **fields}


def test_a_question_says_it_runs_no_tool(qapp: Any) -> None:
    """A question's answer goes back to the agent as text: "Nothing Reviewer can name" read as if Reviewer had
    failed to work something out."""
    question = _record("ask_user", data={"question": "Which database?"})
    html = body_html(preview_inputs(PreviewInputs(record=question), now=NOW), [])
    assert "a question runs no tool" in html
    assert "Nothing Reviewer can name" not in html


def test_a_request_of_an_unknown_kind_claims_nothing(qapp: Any) -> None:
    """Another process's row of a kind this version does not know: nothing is claimed about what it runs."""
    html = body_html(preview_inputs(PreviewInputs(record=_record("deploy_gate")), now=NOW), [])
    assert "Nothing Reviewer can name" in html
    assert "runs no tool" not in html
