"""Runs of outside agents on the Runs board tell the truth: waiting while their hook asks, named by their project.

Seen in the window: Claude Code runs whose hook had a pending request sat under "Running" (the window's own runs
with one sat under "Waiting for review"), labelled ``claude…`` with an empty prompt.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from reviewer_app.domain.decisions import Decision, DecisionKind
from reviewer_app.domain.records import RunRecord
from reviewer_app.domain.runs import RunState
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.runs.model import COL_PROMPT, COL_RUN, STATE_ROLE, run_label
from reviewer_app.ui.window.main_window import MainWindow
from tests.integrations.hook_helpers import finish, fixture, start_hook
from tests.ui.conftest import OpenMainWindow, run_async


def _payload(tmp_path: Path, *, transcript: Path | None = None) -> dict[str, Any]:
    """Claude Code's PreToolUse (as the CLI sends it) from a project named ``shop-api``, with fresh ids."""
    project = tmp_path / "shop-api"
    project.mkdir(exist_ok=True)
    payload = fixture("pretooluse.json")
    payload.update(
        session_id=str(uuid.uuid4()),
        prompt_id=str(uuid.uuid4()),
        tool_use_id=f"toolu_{uuid.uuid4().hex[:24]}",
        cwd=str(project),
        transcript_path=str(transcript or tmp_path / "no-transcript.jsonl"),
    )
    return payload


def _group(win: MainWindow, run_id: str) -> str | None:
    index = win.runs.model.index_for(run_id)
    return index.parent().data(STATE_ROLE) if index.isValid() else None


def _text(win: MainWindow, run_id: str, column: int, role: int = Qt.ItemDataRole.DisplayRole) -> str:
    return str(win.runs.model.index_for(run_id, column).data(role))


@pytest.mark.parametrize("settle", ["decided", "expired", "withdrawn"])
def test_an_external_run_waits_for_review_while_its_hook_asks_and_runs_again_once_settled(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, db_path: Path, qtbot: Any, tmp_path: Path, settle: str
) -> None:
    window = open_main_window()
    payload = _payload(tmp_path)
    run_id = payload["prompt_id"]
    hook = start_hook(tmp_path, db_path, payload)
    try:
        qtbot.waitUntil(lambda: _group(window, run_id) == RunState.WAITING.value, timeout=30_000)
        assert window.runs.model.count(RunState.WAITING) == 1 and window.runs.model.count(RunState.RUNNING) == 0
        [record] = run_async(qtbot, qt_backend.list_records())
        if settle == "decided":
            run_async(qtbot, qt_backend.decide(record["hitl_id"], Decision(DecisionKind.REJECT, message="no")))
            finish(hook)
        elif settle == "expired":
            assert len(run_async(qtbot, qt_backend.expire_due(now=int(time.time()) + 86_400))) == 1
            finish(hook)
        else:  # the host stopped waiting (Esc, a closed terminal): the hook's watchdog withdraws the request
            hook.kill()
            hook.wait()
    finally:
        if hook.poll() is None:
            hook.kill()
            hook.wait()
    qtbot.waitUntil(lambda: _group(window, run_id) == RunState.RUNNING.value, timeout=10_000)
    assert _text(window, run_id, 2) == ""  # nothing pending any more


def test_an_external_run_is_named_by_its_project_and_the_prompt_its_transcript_gives(
    open_main_window: OpenMainWindow, qt_backend: SQLHITLBackend, db_path: Path, qtbot: Any, tmp_path: Path
) -> None:
    window = open_main_window()
    transcript = tmp_path / "session.jsonl"
    payload = _payload(tmp_path, transcript=transcript)
    line = {
        "type": "user",
        "promptId": payload["prompt_id"],
        "uuid": "u-1",
        "sessionId": payload["session_id"],
        "message": {"role": "user", "content": "Add a health check endpoint"},
    }
    transcript.write_text(json.dumps(line) + "\n", encoding="utf-8")
    hook = start_hook(tmp_path, db_path, payload)
    try:
        qtbot.waitUntil(lambda: window.runs.model.index_for(payload["prompt_id"]).isValid(), timeout=30_000)
        run_id = payload["prompt_id"]
        qtbot.waitUntil(lambda: _text(window, run_id, COL_PROMPT) == "Add a health check endpoint", timeout=10_000)
        label = _text(window, run_id, COL_RUN)
        assert (
            label == "claude-code · shop-api"
        )  # the agent (operators triage by it), then the word that tells runs apart
        assert "claude-code run" in _text(window, run_id, COL_RUN, Qt.ItemDataRole.ToolTipRole)
        # ...and it fits: the Run column is not cut to "claude…" at the window's size
        view = window.runs.view
        wanted = view.fontMetrics().horizontalAdvance(label) + 48
        qtbot.waitUntil(lambda: view.header().sectionSize(COL_RUN) >= wanted, timeout=2_000)
    finally:
        hook.kill()
        hook.wait()


def test_outside_runs_without_a_workspace_are_told_apart_by_their_ids() -> None:
    """Seen on the Runs board: outside runs with no workspace read "aider · aider…un0" whatever their session, their
    id cut to 8 characters. Their id is all that tells them apart: it keeps 20 (as the request header does); the
    window's own runs keep their short ids."""

    def run(run_id: str, *, external: bool = True) -> RunRecord:
        return RunRecord(run_id, "s", "aider", None, "running", None, external, None, None, 0, 0, None, 0, 0)

    labels = {run_label(run(f"aider-infra-s{n:02d}-run0")) for n in (2, 7)}
    assert labels == {"aider · aider-infra-s02-run0", "aider · aider-infra-s07-run0"}
    assert run_label(run("inv_0123456789abcdef", external=False)) == "aider · 01234…def"
    uuid_label = run_label(run("d19c73e1-9781-4e2b-8c61-3b0a46a2124e"))
    assert uuid_label.startswith("aider · d19c73e1-9") and uuid_label.endswith("46a2124e"), uuid_label
