"""The decision log's hash chain: what one row commits to, and how rows link.

Plain Python so every writer of the log (the store, the hook's fast path) computes exactly the same chain; the
chain's step itself is :mod:`reviewer_app.domain.audit_chain` (standard library only, for the hook's lean path).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from reviewer_app.domain.audit_chain import (
    AUDIT_HEAD_KEY,
    AUDIT_KEY_ID_KEY,
    AUDIT_KEYED_FROM_KEY,
    CHAIN_META_KEYS,
    DATABASE_ID_KEY,
    GENESIS_HASH,
    AuditKeyMismatch,
    ChainStep,
    audit_fields,
    audit_row_hash,
    chain_meta_defaults,
    key_id,
    next_chain_step,
)
from reviewer_app.domain.decisions import args_digest, canonical_json
from reviewer_app.domain.hitl import HITLStatus, shown_arguments

__all__ = [
    "AUDIT_HEAD_KEY",
    "AUDIT_KEYED_FROM_KEY",
    "AUDIT_KEY_ID_KEY",
    "CHAIN_META_KEYS",
    "DATABASE_ID_KEY",
    "GENESIS_HASH",
    "AuditKeyMismatch",
    "ChainStep",
    "audit_fields",
    "audit_row_hash",
    "canonical_json_bytes",
    "chain_meta_defaults",
    "decided_audit_problems",
    "key_id",
    "next_chain_step",
    "record_audit_problem",
    "row_hash_matches",
    "shown_digest_matches",
]


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


ALIKE_CHECK_LIMIT = 10_000
"""Values :func:`canonical_json_bytes` checks one by one at most: beyond, the check costs what ``json.dumps`` does."""


def canonical_json_bytes(value: Any) -> bytes:
    """``canonical_json(value)`` encoded, by orjson when it is sure to print the same text (a 1 MB argument in
    ~0.3 ms instead of ~5 ms: the detail pane hashes the selected request's arguments while it shows them)."""
    if _orjson_prints_alike(value):
        fast = _fast_canonical(value)  # None: a lone surrogate, an integer beyond 64 bits
        if fast is not None:
            return fast
    return canonical_json(value).encode("utf-8")


def _orjson_prints_alike(value: Any) -> bool:
    """Whether orjson prints ``value`` as :func:`canonical_json` does: JSON's own types only (no subclass, tuple or
    object ``default=str`` would print), string keys, floats it writes as ``repr`` does (not ``1e-05`` or NaN),
    and at most :data:`ALIKE_CHECK_LIMIT` values. Strings are escaped alike (tested over every code point)."""
    orjson = _orjson()
    if orjson is None:
        return False
    stack = [value]
    for _ in range(ALIKE_CHECK_LIMIT):
        if not stack:
            return True
        item = stack.pop()
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is float:
            if orjson.dumps(item) != float.__repr__(item).encode():
                return False
        elif kind is dict:
            if any(type(key) is not str for key in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        else:
            return False
    return not stack


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


def decided_audit_problems(
    decided: Sequence[Mapping[str, Any]],
    audit_rows: Iterable[Mapping[str, Any]],
    meta: Mapping[str, str],
    key: bytes | None,
    position: Callable[[int], int],
) -> dict[str, str]:
    """Of the ``decided`` records, the ones their ``audit_rows`` (dicts of ``audit_log``'s columns) do not sign:
    ``hitl_id`` → why (:func:`record_audit_problem`). Only rows signed under the chain's ``key`` count, where this
    process has it (``meta``: the chain's ``reviewer_meta`` values; ``position``: an audit row's 1-based place in
    the log, asked only of a row that may predate keying). The store's readers and the hook's lean waiter check
    decisions with this one function."""
    if key is not None and key_id(key) != meta.get(AUDIT_KEY_ID_KEY):
        key = None  # not the chain's key: the rows' own hashes cannot be checked here
    rows: dict[str, list[Mapping[str, Any]]] = {}
    for fields in audit_rows:
        if key is None or _row_signed(fields, meta, key, position):
            rows.setdefault(str(fields["hitl_id"]), []).append(fields)
    problems = {}
    for record in decided:
        problem = record_audit_problem(record, rows.get(str(record["hitl_id"]), []))
        if problem is not None:
            problems[str(record["hitl_id"])] = problem
    return problems


def _row_signed(row: Mapping[str, Any], meta: Mapping[str, str], key: bytes, position: Callable[[int], int]) -> bool:
    """Whether this audit row's hash is its HMAC under the chain's ``key`` (plain SHA-256 only for the rows that
    predate keying): a row rewritten without the key does not count. A process without the key (an agent's
    machine) compares the fields only; ``audit verify``, run with the key, checks the chain itself."""
    fields = audit_fields(
        row["hitl_id"], row["decision"], row["reviewer"], row["at_ms"], row["shown_args_sha256"],
        row["edited_args"], row["message"],
    )  # fmt: skip
    if row_hash_matches(row["prev_hash"], fields, key, row["row_hash"]):
        return True
    keyed_from = int(meta.get(AUDIT_KEYED_FROM_KEY) or 0)
    if keyed_from <= 1:
        return False
    return position(int(row["id"])) < keyed_from and row_hash_matches(row["prev_hash"], fields, None, row["row_hash"])
