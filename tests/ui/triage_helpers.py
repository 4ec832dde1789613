"""Shared set-up for the triage tests (issue 14): a real window on a real SQLite file, no agent runtime."""

from __future__ import annotations

from typing import Any

from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.window.main_window import MainWindow
from tests.ui.conftest import run_async

WORKSPACE = "/work/proj"


def triage_models(window: MainWindow) -> tuple[Any, ...]:
    """The models the triage tests watch with QAbstractItemModelTester (``open_main_window(checked=…)``)."""
    return (window.inbox.model, window.triage.rules.model)


def shell(
    qtbot: Any,
    backend: SQLHITLBackend,
    hitl_id: str,
    command: str,
    *,
    session: str = "s1",
    invocation: str = "i1",
    tool: str = "Bash",
    **data: Any,
) -> str:
    return call(qtbot, backend, hitl_id, tool, {"command": command}, session=session, invocation=invocation, **data)


def call(
    qtbot: Any,
    backend: SQLHITLBackend,
    hitl_id: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    session: str = "s1",
    invocation: str = "i1",
    **data: Any,
) -> str:
    """A pending request for one call of ``tool`` by claude-code in the workspace."""
    run_async(
        qtbot,
        backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id=session,
            invocation_id=invocation,
            data={"arguments": arguments, "cwd": WORKSPACE, "agent": "claude-code", **data},
            tool_name=tool,
        ),
    )
    return hitl_id


def status(qtbot: Any, backend: SQLHITLBackend, hitl_id: str) -> tuple[str, str | None, str | None]:
    """(status, decision, decided by) as the database has them."""
    record = run_async(qtbot, backend.get(hitl_id))
    assert record is not None
    response = record["user_response"] or {}
    return record["status"], response.get("decision"), response.get("reviewer")


def show(qtbot: Any, win: MainWindow, hitl_id: str) -> None:
    """Select ``hitl_id`` in the inbox and wait until the detail pane can decide it, its checks (the secret scan)
    ended."""
    qtbot.waitUntil(lambda: win.inbox.model.index_for(hitl_id).isValid(), timeout=10_000)
    win.inbox.select_request(hitl_id)
    qtbot.waitUntil(
        lambda: win.detail.hitl_id == hitl_id and win.detail.decidable() and win.detail.checked(), timeout=10_000
    )


def dialog_of(qtbot: Any, win: MainWindow, kind: type) -> Any:
    qtbot.waitUntil(lambda: any(isinstance(d, kind) for d in win.dialogs.open_dialogs))
    return next(d for d in win.dialogs.open_dialogs if isinstance(d, kind))
