"""Blobs in the store: large values written once by their SHA-256, read back for the rows that reference them."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, bindparam, select

from reviewer_app.persistence.blobs import BlobCorrupt, ValueMemo, digest, pack, unpack
from reviewer_app.persistence.store.base import TxBase
from reviewer_app.persistence.tables import blobs_t

_BLOB_EXISTS = select(blobs_t.c.sha256).where(blobs_t.c.sha256 == bindparam("match_sha"))
_READ_CHUNK = 200  # digests per IN list


class BlobWrites(TxBase):
    """``put_blob`` inside a transaction: the row is written only if no blob has those bytes yet."""

    _blobs_put: set[str] | None = None
    blob_memo: ValueMemo | None = None  # the Store's, set on each transaction (see ValueMemo)

    def _known_blobs(self) -> set[str]:
        known = self._blobs_put
        if known is None:
            known = self._blobs_put = set()
        return known

    def has_blob(self, sha: str) -> bool:
        known = self._known_blobs()
        if sha in known:
            return True
        if self._rows(_BLOB_EXISTS, {"match_sha": sha}):
            known.add(sha)
            return True
        return False

    def put_blob(self, raw: bytes) -> str:
        sha = digest(raw)
        known = self._known_blobs()
        if sha in known:
            return sha
        if not self._rows(_BLOB_EXISTS, {"match_sha": sha}):
            codec, data = pack(raw)  # compressed only when new: an existing blob costs one indexed lookup
            self._insert_ignore(blobs_t, {"sha256": sha, "codec": codec, "size": len(raw), "data": data}, ["sha256"])
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
