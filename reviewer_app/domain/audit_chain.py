"""The argument hash and the audit chain's next step, with the standard library alone.

Why: every writer of the decision log (the store, the hook's fast path and its lean path) must compute exactly the
same canonical JSON, argument hash and HMAC chain; the hook's lean path answers a waived call in little more than
the interpreter's start, so this module imports no dataclasses, enums or ``typing`` (``decisions`` and ``audit``
re-export what is here).
"""

from __future__ import annotations

from reviewer_app.domain.lean_json import dumps
from reviewer_app.domain.sha import hmac_sha256_hex, sha256_hex

TYPE_CHECKING = False  # ``typing`` costs the hook's lean path milliseconds; mypy reads the block below
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

AUDIT_HEAD_KEY = "audit_head"
AUDIT_KEY_ID_KEY = "audit_key_id"
"""Meta key: which audit key (by :func:`key_id`) the chain is keyed with."""
AUDIT_KEYED_FROM_KEY = "audit_keyed_from"
"""Meta key: the chain position (1-based) of the first keyed row; rows before it predate keying."""
DATABASE_ID_KEY = "database_id"
"""Meta key: the database's identity, naming its anchor file outside the database."""
CHAIN_META_KEYS = (AUDIT_HEAD_KEY, AUDIT_KEY_ID_KEY, AUDIT_KEYED_FROM_KEY, DATABASE_ID_KEY)
GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    """A stable text form: the same arguments always give the same hash."""
    return dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def args_digest(args: Any) -> str:
    """SHA-256 of the canonical JSON of ``args``; what an approval names."""
    return sha256_hex(canonical_json(args).encode("utf-8"))


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
        return sha256_hex(payload)
    return hmac_sha256_hex(key, payload)


def key_id(key: bytes) -> str:
    """A public name for an audit key: says which key a chain needs without revealing it."""
    return hmac_sha256_hex(key, b"reviewer-audit-key-id")[:16]


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


class ChainStep:
    """The next audit row's place in the chain: every writer of the log computes it with :func:`next_chain_step`.

    A plain class, not a dataclass: ``dataclasses`` alone costs the lean hook more than its whole SQLite work.
    """

    __slots__ = ("database_id", "position", "prev_hash", "row_hash")

    def __init__(self, position: int, prev_hash: str, row_hash: str, database_id: str) -> None:
        self.position = position
        self.prev_hash = prev_hash
        self.row_hash = row_hash
        self.database_id = database_id

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChainStep):
            return NotImplemented
        return (self.position, self.prev_hash, self.row_hash, self.database_id) == (
            other.position,
            other.prev_hash,
            other.row_hash,
            other.database_id,
        )

    def __hash__(self) -> int:
        return hash((self.position, self.prev_hash, self.row_hash, self.database_id))

    def __repr__(self) -> str:
        return f"ChainStep({self.position}, {self.prev_hash!r}, {self.row_hash!r}, {self.database_id!r})"

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
