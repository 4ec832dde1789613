"""Large shown arguments settled on the hook's fast path are stored as the backend stores them: one blob, no copy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reviewer_app.domain.settlement import Settlement
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.claude_code import request
from reviewer_app.integrations.claude_code.events import Host, parse_event
from reviewer_app.integrations.claude_code.fast import FastStore
from reviewer_app.integrations.claude_code.hook import settle_by_rule_tx
from tests.integrations.hook_helpers import fixture
from tests.integrations.test_claude_code_fast import _comparable, _rows

LONG_COMMAND = "echo " + "a-long-argument " * 600  # ~9.6 KB of tool input


def _large_fields(suffix: str):
    payload = dict(fixture("pretooluse.json"))
    payload.update(session_id=f"session-{suffix}", prompt_id=f"prompt-{suffix}", tool_use_id=f"toolu-{suffix}")
    payload["tool_input"] = {"command": LONG_COMMAND}
    event = parse_event(json.dumps(payload).encode(), Host.CLAUDE_CODE)
    return request.request_fields(event, hitl_id=f"hitl-{suffix}", title="a long command"), event


@pytest.mark.asyncio
async def test_fast_path_stores_large_shown_arguments_like_the_backend(db_path: Path, backend: SQLHITLBackend) -> None:
    verdict = Settlement.by_allow_tools("Bash")
    slow_fields, event = _large_fields("slow")
    assert await backend.write(lambda tx: settle_by_rule_tx(tx, slow_fields, ("Bash",), event.cwd)) is not None
    fast_fields, _ = _large_fields("fast")
    store = FastStore.open(str(db_path))
    assert store is not None
    try:
        assert store.settle(fast_fields, verdict.decision(fast_fields.arguments), workspace=event.cwd)
    finally:
        store.close()

    [slow] = _rows(db_path, "audit_log", "hitl_id", "hitl-slow")
    [fast] = _rows(db_path, "audit_log", "hitl_id", "hitl-fast")
    assert slow["shown_args_ref"] and slow["shown_args"] == "null"  # not copied into the log
    assert _comparable(fast) | {"hitl_id": None} == _comparable(slow) | {"hitl_id": None}
    [blob] = _rows(db_path, "blobs", "sha256", slow["shown_args_ref"][2:])  # both rows name the same one blob
    assert blob["codec"] == "zlib"
    entries = {e.hitl_id: e.shown_args for e in await backend.audit()}
    assert entries["hitl-fast"] == entries["hitl-slow"] == {"command": LONG_COMMAND}
    report = await backend.verify_audit()
    assert report.ok and report.rows_checked == 2
