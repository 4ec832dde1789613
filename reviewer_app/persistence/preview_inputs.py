"""What the database holds for one request's preview (why it was asked, what it will touch), read in one go.

Called on the backend's DB thread (``SQLHITLBackend.preview_inputs``, ``reviewer-app why``, the benchmark): the
record, the persistent rules in force and those expired (not the revoked ones), the session's approve-for-session
waivers and the workspace the call runs in (its ``cwd``, else its run's or session's workspace).
"""

from __future__ import annotations

import time
from typing import Any

from reviewer_app.domain.rules import Rule
from reviewer_app.domain.why import PreviewInputs


def read_inputs(store: Any, hitl_id: str, *, now: float | None = None) -> PreviewInputs | None:
    """The record, the rules (in force and expired), the session's waivers and the workspace (DB thread)."""
    record = store.requests.get(hitl_id)
    if record is None:
        return None
    now = time.time() if now is None else now
    active: list[Rule] = []
    expired: list[Rule] = []
    for entry in store.rules.list(include_inactive=True):
        if entry.revoked_at is not None:
            continue
        (expired if entry.rule.expired(now) else active).append(entry.rule)
    data = record.get("data") if isinstance(record.get("data"), dict) else {}
    workspace = data.get("cwd") if isinstance(data, dict) and isinstance(data.get("cwd"), str) else None
    if workspace is None:
        run = store.runs.get(record["invocation_id"])
        workspace = run.workspace if run is not None and run.workspace else None
    if workspace is None:
        info = store.runs.session_info(record["session_id"]) or {}
        workspace = info.get("workspace") if isinstance(info.get("workspace"), str) else None
    return PreviewInputs(
        record, tuple(active), tuple(expired), tuple(store.waivers.of_session(record["session_id"])), workspace
    )
