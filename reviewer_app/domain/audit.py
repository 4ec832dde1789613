"""The decision log's hash chain: what one row commits to, and how rows link.

Plain Python so every writer of the log (the store, the hook's fast path) computes exactly the same chain.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reviewer_app.domain.decisions import args_digest, canonical_json
from reviewer_app.domain.hitl import HITLStatus, shown_arguments

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


class AuditKeyMismatch(ValueError):
    """The chain is keyed with another key than the one this process holds."""


def chain_meta_defaults(meta: Mapping[str, str], key_id_value: str, new_database_id: str) -> dict[str, str]:
    """The meta rows a keyed chain needs that ``meta`` lacks (insert each only if still missing).

    A database whose chain predates keying gets ``audit_keyed_from`` = its next row, so older rows keep
    verifying with plain SHA-256.
    """
    count = int((meta.get(AUDIT_HEAD_KEY) or "0").partition(":")[0])
    wanted = {
        AUDIT_HEAD_KEY: f"0:{GENESIS_HASH}",
        AUDIT_KEY_ID_KEY: key_id_value,
        AUDIT_KEYED_FROM_KEY: str(count + 1),
        DATABASE_ID_KEY: new_database_id,
    }
    return {name: value for name, value in wanted.items() if name not in meta}


@dataclass(frozen=True, slots=True)
class ChainStep:
    """The next audit row's place in the chain: every writer of the log computes it with :func:`next_chain_step`."""

    position: int
    prev_hash: str
    row_hash: str
    database_id: str

    @property
    def head_value(self) -> str:
        return f"{self.position}:{self.row_hash}"


def next_chain_step(
    meta: Mapping[str, str], fields: dict[str, Any], key: bytes, *, key_id_value: str | None = None
) -> ChainStep:
    """Where a row with ``fields`` goes after the head in ``meta`` (complete, see :func:`chain_meta_defaults`).

    ``key_id_value``: :func:`key_id` of ``key`` when the caller holds it already (an HMAC saved per decision).
    """
    own_id = key_id(key) if key_id_value is None else key_id_value
    if meta[AUDIT_KEY_ID_KEY] != own_id:
        raise AuditKeyMismatch(
            f"this database's audit log is keyed with another key (id {meta[AUDIT_KEY_ID_KEY]}, this machine's "
            f"is {own_id}): set REVIEWER_AUDIT_KEY_FILE to the team's key"
        )
    count, _, prev_hash = meta[AUDIT_HEAD_KEY].partition(":")
    return ChainStep(int(count) + 1, prev_hash, audit_row_hash(prev_hash, fields, key), meta[DATABASE_ID_KEY])


# -- verifying a million rows in seconds ---------------------------------------------------------------------
def _orjson() -> Any:
    """orjson, imported on first use (None when it is missing)."""
    global _ORJSON
    if _ORJSON is False:
        try:
            import orjson as module
        except ImportError:  # pragma: no cover - orjson is a dependency; the exact path still verifies
            module = None  # type: ignore[assignment]
        _ORJSON = module
    return _ORJSON


_ORJSON: Any = False


def _fast_canonical(value: Any) -> bytes | None:
    """``canonical_json(value)`` encoded, by orjson (~5x faster than json.dumps), or None.

    orjson's compact, key-sorted output is the canonical text for the values JSON columns hold; where it might
    differ (floats' exponent form, integers beyond 64 bits) the callers below fall back to the exact form, so
    a row is accepted only when the bytes its writer hashed are reproduced.
    """
    orjson = _orjson()
    if orjson is None:
        return None
    try:
        return bytes(orjson.dumps(value, option=orjson.OPT_SORT_KEYS))
    except (TypeError, orjson.JSONEncodeError):
        return None


_HMAC_BASES: dict[bytes, Any] = {}


def _keyed(key: bytes, payload: bytes) -> str:
    """HMAC-SHA256 from a copy of the key's prepared state (cheaper than keying afresh for every row)."""
    base = _HMAC_BASES.get(key)
    if base is None:
        _HMAC_BASES.clear()  # one key at a time
        base = _HMAC_BASES.setdefault(key, hmac.new(key, digestmod=hashlib.sha256))
    mac = base.copy()
    mac.update(payload)
    return str(mac.hexdigest())


def shown_digest_matches(shown_args: Any, shown_sha: str | None) -> bool:
    """Whether ``shown_sha`` is the SHA-256 of ``shown_args``' canonical JSON (None for no arguments)."""
    if shown_args is None:
        return shown_sha is None
    fast = _fast_canonical(shown_args)
    if fast is not None and hashlib.sha256(fast).hexdigest() == shown_sha:
        return True
    return hashlib.sha256(canonical_json(shown_args).encode("utf-8")).hexdigest() == shown_sha


def row_hash_matches(prev_hash: str, fields: dict[str, Any], key: bytes | None, row_hash: str) -> bool:
    """Whether ``row_hash`` is :func:`audit_row_hash` of this row: the fast encoding first, the exact one after."""
    fast = _fast_canonical(fields)
    if fast is not None:
        payload = prev_hash.encode("utf-8") + fast
        digest = hashlib.sha256(payload).hexdigest() if key is None else _keyed(key, payload)
        if digest == row_hash:
            return True
    return audit_row_hash(prev_hash, fields, key) == row_hash


# -- what a reader hands an agent is what the chain signed ---------------------------------------------------------
def record_audit_problem(record: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> str | None:
    """Why a decided request's record is not what its audit rows sign, or None when one row signs all of it.

    An agent acts on the record (``user_response``: the decision, edited arguments, message; ``data``: the
    arguments shown), but only the audit row is chained: the record counts only when one of ``rows`` (this
    request's audit rows, as dicts of their columns) states the same decision, the same edit, the same message
    and the SHA-256 of the same shown arguments.
    """
    hitl_id = record.get("hitl_id")
    if not rows:
        return f"request {hitl_id} is decided but no audit row records its decision"
    response = record.get("user_response")
    stated = response.get("decision") if isinstance(response, dict) else None
    if stated is None and record.get("status") == HITLStatus.CANCELLED.value:
        stated = "cancel"
    edited = response.get("args") if isinstance(response, dict) else None
    message = response.get("message") if isinstance(response, dict) else None
    shown = shown_arguments(dict(record))
    shown_sha = None if shown is None else args_digest(shown)
    for row in rows:
        if stated is not None and row.get("decision") != stated:
            continue
        if row.get("edited_args") != edited or row.get("shown_args_sha256") != shown_sha:
            continue
        if isinstance(response, dict) and row.get("message") != (message if isinstance(message, str) else None):
            continue
        return None
    return (
        f"request {hitl_id}'s decision, edited arguments, message or shown arguments differ from what its audit "
        "row signed (changed in hitl_requests after the decision)"
    )
