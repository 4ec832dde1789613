"""Issue 25: the audit window reads as a log (tool, command or target, decision in words) and shows rule changes;
the exports and ``reviewer-app audit`` say the same; ``audit verify`` still checks the whole chain."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path
from typing import Any

from reviewer_app.cli.audit import print_audit
from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.rules import Rule
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.ui.audit.model import COLUMNS
from tests.ui.conftest import run_async
from tests.ui.test_audit_view import open_window


async def decide_and_change_rules(backend: SQLHITLBackend) -> None:
    for hitl_id, command in (("h1", "git status"), ("h2", "rm -rf build"), ("h3", "make deploy")):
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": {"command": command}},
            tool_name="Bash",
        )
    await backend.respond("h1", {"decision": "approve", "args_sha256": args_digest({"command": "git status"})})
    edited = {"command": "rm -rf build/tmp"}
    await backend.respond(
        "h2", {"decision": "edit", "args": edited, "args_sha256": args_digest({"command": "rm -rf build"})}
    )
    await backend.respond("h3", {"decision": "reject", "message": "not on a Friday"})
    rule = Rule("allow", "Bash(git status*)", id="r1")
    await backend.add_rule(rule, created_by="alice")
    await backend.revoke_rule("r1", revoked_by="alice")
    await backend.add_rule(Rule("deny", "Bash(curl *)", expires_at=time.time() - 1, id="r2"), created_by="alice")
    await backend.expire_due()


def row_text(window: Any, row: int) -> dict[str, str]:
    return {name: window.model.index(row, column).data() for column, name in enumerate(COLUMNS)}


def test_the_audit_window_reads_as_a_log_with_rule_changes(qtbot: Any, qt_backend: SQLHITLBackend) -> None:
    run_async(qtbot, decide_and_change_rules(qt_backend))
    window = open_window(qtbot, qt_backend)
    qtbot.waitUntil(lambda: window.model.rowCount() == 7)
    rows = [row_text(window, row) for row in range(7)]
    approved, edited, rejected, added, revoked, added_expiring, expired = rows
    assert (approved["Decision"], approved["Tool"], approved["Command or target"]) == (
        "Approved",
        "Bash",
        "Bash “git status”",
    )
    assert edited["Decision"] == "Approved with edited arguments"
    assert edited["Command or target"] == "Bash “rm -rf build/tmp” (shown: “rm -rf build”)"
    assert (rejected["Decision"], rejected["Reason or note"]) == ("Rejected", "not on a Friday")
    assert (added["Decision"], added["Tool"], added["Request"]) == ("Rule added", "rule", "rule:r1")
    assert added["Command or target"] == "allow Bash(git status*) (scope global)" and added["Reviewer"] == "alice"
    assert revoked["Decision"] == "Rule revoked" and added_expiring["Decision"] == "Rule added"
    assert expired["Decision"] == "Rule expired" and expired["Request"] == "rule:r2"
    with qtbot.waitSignal(window.verified, timeout=15_000) as signal:
        window.verify_action.trigger()
    assert signal.args[0].ok and signal.args[0].rows_checked == 7
    window.close()


def test_the_exports_and_the_cli_say_it_in_words(qtbot: Any, qt_backend: SQLHITLBackend, tmp_path: Path) -> None:
    run_async(qtbot, decide_and_change_rules(qt_backend))
    window = open_window(qtbot, qt_backend)
    target = tmp_path / "audit.jsonl"
    with qtbot.waitSignal(window.exported, timeout=15_000):
        window.start_export(target, "jsonl")
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert rows[1]["decision_words"] == "Approved with edited arguments" and rows[1]["tool_name"] == "Bash"
    assert rows[1]["what"] == "Bash “rm -rf build/tmp” (shown: “rm -rf build”)"
    assert [row["decision"] for row in rows[3:]] == ["rule_added", "rule_revoked", "rule_added", "rule_expired"]
    out = io.StringIO()
    run_async(qtbot, print_audit(qt_backend, False, out))
    lines = out.getvalue().splitlines()
    assert "Approved" in lines[0] and "Bash “git status”" in lines[0]
    assert "Rule revoked" in lines[4] and "allow Bash(git status*) (scope global)" in lines[4] and "alice" in lines[4]
    window.close()
