"""The one entry of ``python -m reviewer_app``, the console script and the frozen launcher (``__main__``)."""

from __future__ import annotations

from reviewer_app.__main__ import on_error_answer


def test_a_hook_that_cannot_start_reads_its_on_error_answer_by_hand() -> None:
    assert on_error_answer(["reviewer-app", "hook", "claude-code", "--on-error", "deny"]) == "deny"
    assert on_error_answer(["reviewer-app", "hook", "claude-code", "--on-error=deny"]) == "deny"
    assert on_error_answer(["reviewer-app", "hook", "claude-code"]) == "ask"
    assert on_error_answer(["reviewer-app", "hook", "claude-code", "--on-error"]) == "ask"
