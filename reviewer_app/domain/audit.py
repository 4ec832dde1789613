"""The decision log's hash chain: what one row commits to, and how rows link.

Plain Python so every writer of the log (the store, the hook's fast path) computes exactly the same chain.
"""

from __future__ import annotations

import hashlib
from typing import Any

from reviewer_app.domain.decisions import canonical_json

AUDIT_HEAD_KEY = "audit_head"
GENESIS_HASH = "0" * 64


def audit_fields(
    hitl_id: str,
    decision: str,
    reviewer: str,
    at_ms: int,
    shown_sha: str | None,
    edited_args: Any,
    message: str | None,
) -> dict[str, Any]:
    """The fields of one audit row that its hash covers."""
    return {
        "hitl_id": hitl_id,
        "decision": decision,
        "reviewer": reviewer,
        "at_ms": at_ms,
        "shown_args_sha256": shown_sha,
        "edited_args": edited_args,
        "message": message,
    }


def audit_row_hash(prev_hash: str, fields: dict[str, Any]) -> str:
    """SHA-256 over the previous row's hash and this row's canonical fields."""
    payload = prev_hash + canonical_json(fields)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()
