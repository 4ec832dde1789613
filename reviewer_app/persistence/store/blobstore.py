"""Blobs in the store: large values written once by their SHA-256, read back for the rows that reference them."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, bindparam, select

from reviewer_app.persistence.blobs import BlobCorrupt, digest, pack, unpack
from reviewer_app.persistence.core_tables import blobs_t
from reviewer_app.persistence.store.base import Statements

_BLOB_EXISTS = select(blobs_t.c.sha256).where(blobs_t.c.sha256 == bindparam("match_sha"))
_READ_CHUNK = 200  # digests per IN list


class BlobWrites:
    """``tx.blobs``: ``put`` writes the row only if no blob has those bytes yet (remembered for the transaction)."""

    __slots__ = ("_db", "_put")

    def __init__(self, db: Statements) -> None:
        self._db = db
        self._put: set[str] = set()

    def has(self, sha: str) -> bool:
        known = self._put
        if sha in known:
            return True
        if self._db.rows(_BLOB_EXISTS, {"match_sha": sha}):
            known.add(sha)
            return True
        return False

    def put(self, raw: bytes) -> str:
        sha = digest(raw)
        known = self._put
        if sha in known:
            return sha
        if not self._db.rows(_BLOB_EXISTS, {"match_sha": sha}):
            codec, data = pack(raw)  # compressed only when new: an existing blob costs one indexed lookup
            self._db.insert_ignore(blobs_t, {"sha256": sha, "codec": codec, "size": len(raw), "data": data}, ["sha256"])
        known.add(sha)
        return sha


def read_blobs(connection: Connection, digests: Iterable[str]) -> dict[str, bytes]:
    """The blobs named, checked against their addresses; a missing or damaged one is left out (callers say so)."""
    wanted = sorted(set(digests))
    found: dict[str, bytes] = {}
    for start in range(0, len(wanted), _READ_CHUNK):
        chunk = wanted[start : start + _READ_CHUNK]
        query = select(blobs_t.c.sha256, blobs_t.c.codec, blobs_t.c.data).where(blobs_t.c.sha256.in_(chunk))
        for sha, codec, data in connection.execute(query):
            try:
                found[sha] = unpack(sha, codec, data)
            except BlobCorrupt:
                continue
    return found
