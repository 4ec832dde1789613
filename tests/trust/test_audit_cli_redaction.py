"""``reviewer-app audit`` prints the log with credentials redacted, as the exports do."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend

pytestmark = pytest.mark.asyncio
KEY = "sk-ant-" + "A1b2C3d4E5f6G7h8J9k0"


async def test_audit_listing_redacts_secrets_in_reasons_and_edits(
    backend: SQLHITLBackend, db_path: Path, subprocess_env: dict[str, str]
) -> None:
    for hitl_id in ("h-reject", "h-edit"):
        await backend.create(
            hitl_id=hitl_id,
            hitl_type="tool_approval",
            session_id="s",
            invocation_id="i",
            data={"arguments": {"url": "https://example.org"}},
            tool_name="fetch",
        )
    await backend.decide("h-reject", Decision(DecisionKind.REJECT, message=f"leaked api_key={KEY} in the URL"))
    edit = {"url": "https://example.org", "headers": {"Authorization": f"Bearer {KEY}"}, "token": "hunter2hunter2"}
    await backend.decide(
        "h-edit", Decision(DecisionKind.EDIT, edited_args=edit, args_sha256=args_digest({"url": "https://example.org"}))
    )
    for extra in ([], ["--json"]):
        listed = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "reviewer_app", "audit", *extra, "--db", str(db_path)],
            capture_output=True, text=True, env=subprocess_env, timeout=60, check=True,
        )  # fmt: skip
        assert KEY not in listed.stdout and "hunter2hunter2" not in listed.stdout
        assert "[redacted]" in listed.stdout
    rows = json.loads(listed.stdout)
    assert rows[1]["edited_args"]["url"] == "https://example.org" and rows[1]["edited_args"]["token"] == "[redacted]"
