"""The CLI's one-line listings: a question reads as a question, a long prompt is elided with its quotes balanced."""

from __future__ import annotations

from pathlib import Path

import pytest

from reviewer_app.cli import main
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.store import Store


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_pending_prints_the_question_of_an_ask_user_request(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store.open(db_path)
    with store.transaction() as tx:
        tx.requests.create(
            NewRequest(
                hitl_id="h-ask",
                hitl_type="ask_user",
                session_id="s1",
                invocation_id="i1",
                data={"question": "Deploy to production now?", "options": ["yes", "no"], "context": {"x": 1}},
                tool_name="ask_user",
            )
        )
    store.close()
    code, out, _ = run_cli(capsys, "pending", "--db", str(db_path))
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("h-ask"))
    assert line.endswith("Deploy to production now?  [yes / no]"), line
    assert "{" not in line and "question" not in line


def test_runs_elides_a_long_prompt_keeping_its_quotes_balanced(
    db_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = Store.open(db_path)
    prompt = "please rewrite the deployment guide so that every section " * 3 + "ends well"
    with store.transaction() as tx:
        tx.runs.ensure_session("s1", agent="demo")
        tx.runs.ensure("i1", "s1", agent="demo", prompt=prompt)
    store.close()
    code, out, _ = run_cli(capsys, "runs", "--db", str(db_path))
    assert code == 0
    line = out.splitlines()[0]
    quoted = line[line.index("'") :].split("  ")[0]
    assert quoted.startswith("'please rewrite") and quoted.endswith("…'"), quoted
    assert quoted.count("'") == 2
    assert len(quoted) <= 62
    # A short prompt is shown whole, newlines folded.
    assert "ends well" not in line
