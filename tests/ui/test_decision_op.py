"""The window's one decision operation (issue 28): runtime first, else the backend; one conflict sentence; the Qt
thread goes on while the database is busy. Real SQLite file, real runtime, real Qt event loop."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.agents import AgentCatalog
from reviewer_app.ui.decide.operation import DecisionOp, conflict_message
from tests.ui.conftest import RecordingRuntime, run_async

ARGS = {"command": "echo hi"}


async def pending(backend: SQLHITLBackend, hitl_id: str) -> None:
    await backend.create(
        hitl_id=hitl_id,
        hitl_type="tool_approval",
        session_id="s",
        invocation_id="i",
        data={"arguments": ARGS},
        tool_name="run_shell",
    )


def approve() -> Decision:
    return Decision(DecisionKind.APPROVE, args_sha256=args_digest(ARGS))


def test_a_decision_is_committed_and_announced(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, pending(qt_backend, "h1"))
    op = DecisionOp(qt_backend)
    deciding: list[str] = []
    op.deciding.connect(deciding.append)
    with qtbot.waitSignal(op.decided) as decided:
        outcome = run_async(qtbot, op.decide("h1", approve()))
    assert outcome.decided and not outcome.still_pending and outcome.problem is None
    assert outcome.record is not None and outcome.record["status"] == "completed"
    assert deciding == ["h1"] and decided.args == ["h1", "approve"]
    record = run_async(qtbot, qt_backend.get("h1"))
    assert record is not None and record["user_response"]["reviewer"] == "tester"


def test_someone_else_decided_first_is_one_sentence(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, pending(qt_backend, "h1"))
    run_async(qtbot, qt_backend.respond("h1", {"decision": "reject", "message": "by the other reviewer"}))
    op = DecisionOp(qt_backend)
    outcome = run_async(qtbot, op.decide("h1", approve()))
    assert not outcome.decided and not outcome.still_pending  # decided, but not by us
    assert outcome.elsewhere is not None and outcome.elsewhere.startswith("it was rejected by tester at ")
    assert outcome.problem == conflict_message(outcome.elsewhere)
    assert outcome.problem.startswith("Someone else decided first: it was rejected by tester at ")
    assert outcome.problem.endswith("; yours was not recorded.")
    assert [entry.decision for entry in run_async(qtbot, qt_backend.audit("h1"))] == ["reject"]


def test_a_refused_decision_leaves_the_request_pending(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, pending(qt_backend, "h1"))
    op = DecisionOp(qt_backend)
    stale = Decision(DecisionKind.APPROVE, args_sha256=args_digest({"command": "something else"}))
    outcome = run_async(qtbot, op.decide("h1", stale))
    assert outcome.still_pending and outcome.problem is not None
    assert outcome.problem.startswith("The decision was not recorded: ")
    missing = run_async(qtbot, op.decide("nope", approve()))
    assert missing.still_pending and missing.problem is not None and "not recorded" in missing.problem
    record = run_async(qtbot, qt_backend.get("h1"))
    assert record is not None and record["status"] == "pending"


def test_decide_each_goes_on_past_a_conflict(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    for hitl_id in ("h1", "h2", "h3"):
        run_async(qtbot, pending(qt_backend, hitl_id))
    run_async(qtbot, qt_backend.respond("h2", {"decision": "reject"}))
    outcomes = run_async(qtbot, DecisionOp(qt_backend).decide_each([(h, approve()) for h in ("h1", "h2", "h3")]))
    assert [(o.hitl_id, o.decided, o.elsewhere is not None) for o in outcomes] == [
        ("h1", True, False),
        ("h2", False, True),
        ("h3", True, False),
    ]


def test_the_runtime_is_used_when_there_is_one(qtbot: Any, qt_backend: SQLHITLBackend, tmp_path: Path) -> None:
    runtime = RecordingRuntime(qt_backend, AgentCatalog(), workspaces_dir=tmp_path / "workspaces")
    run_async(qtbot, runtime.start())
    try:
        script = [{"tool_calls": [{"name": "run_shell", "args": ARGS}]}]
        invocation_id = run_async(qtbot, runtime.start_run("demo", "do it", script=script))

        async def waiting() -> str:
            while True:
                rows = await qt_backend.list_summaries(RequestQuery(statuses=("pending",)))
                if rows:
                    return rows[0].hitl_id
                await asyncio.sleep(0.05)

        hitl_id = run_async(qtbot, waiting())
        op = DecisionOp(qt_backend)
        op.runtime = runtime
        assert run_async(qtbot, op.decide(hitl_id, approve())).decided
        assert runtime.decided_here == [(hitl_id, "approve")]
        record = run_async(qtbot, runtime.wait_for_run(invocation_id, timeout=15), timeout=20_000)
        assert record.state == "done"
    finally:
        run_async(qtbot, runtime.stop())


def test_the_qt_thread_goes_on_while_the_database_is_locked(
    qtbot: Any, qt_backend: SQLHITLBackend, db_path: Path
) -> None:
    """Another process holds the write lock: the decision waits on the DB thread, Qt's timers keep firing."""
    run_async(qtbot, pending(qt_backend, "h1"))
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    ticks: list[int] = []
    timer = QTimer(interval=10)
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start()
    op = DecisionOp(qt_backend)
    task = asyncio.ensure_future(op.decide("h1", approve()))
    try:
        qtbot.waitUntil(lambda: len(ticks) >= 20, timeout=5_000)  # 200 ms of a live event loop
        assert not task.done()  # the decision is still waiting for the lock, off this thread
    finally:
        other.execute("ROLLBACK")
        other.close()
    qtbot.waitUntil(task.done, timeout=15_000)
    timer.stop()
    assert task.result().decided
