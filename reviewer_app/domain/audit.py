"""The decision log's hash chain: what one row commits to, and how rows link.

Plain Python so every writer of the log (the store, the hook's fast path) computes exactly the same chain.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from reviewer_app.domain.decisions import canonical_json

AUDIT_HEAD_KEY = "audit_head"
AUDIT_KEY_ID_KEY = "audit_key_id"
"""Meta key: which audit key (by :func:`key_id`) the chain is keyed with."""
AUDIT_KEYED_FROM_KEY = "audit_keyed_from"
"""Meta key: the chain position (1-based) of the first keyed row; rows before it predate keying."""
DATABASE_ID_KEY = "database_id"
"""Meta key: the database's identity, naming its anchor file outside the database."""
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


def audit_row_hash(prev_hash: str, fields: dict[str, Any], key: bytes | None = None) -> str:
    """HMAC-SHA256 (with ``key``) over the previous row's hash and this row's canonical fields.

    Keyed, a row cannot be rewritten and the chain recomputed by someone who can write the database but not
    read the key. ``key=None`` is the plain SHA-256 of rows written before the chain was keyed.
    """
    payload = (prev_hash + canonical_json(fields)).encode("utf-8")
    if key is None:
        return hashlib.sha256(payload).hexdigest()
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def key_id(key: bytes) -> str:
    """A public name for an audit key: says which key a chain needs without revealing it."""
    return hmac.new(key, b"reviewer-audit-key-id", hashlib.sha256).hexdigest()[:16]
