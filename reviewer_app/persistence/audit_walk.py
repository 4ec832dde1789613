"""Walking the audit chain: each row's own checks in batches, in worker processes when the log is long.

A row's checks need nothing but the row and its position: its stored predecessor hash, its shown arguments
against their digest, its hash (keyed from ``audit_keyed_from`` on), the anchor at its position. Only the link
between rows is sequential, and it is a comparison of two stored hashes. So the log is read in batches and each
batch is checked on its own, by worker processes when the machine has several cores (over a million rows the
hashing, not the reading, takes most of the time); the batches' results are joined in chain order, which gives
exactly the verdict and message a single walk gives: the first failing row in chain order, and on that row the
first failing check.

Workers are plain ``python -c`` processes of this interpreter fed batches over a pipe (not ``multiprocessing``,
whose ``spawn`` runs the parent's main script again in each child: a caller's script without a main guard would
run twice). A frozen build, one core, a short log or ``REVIEWER_AUDIT_WORKERS=0`` walks the log in this process
with the same functions, as does any batch a worker fails to answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import struct
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import orjson

from reviewer_app.domain.audit import GENESIS_HASH, row_hash_matches, shown_digest_matches
from reviewer_app.domain.limits import decode_stored_json, decode_stored_json_fast
from reviewer_app.persistence.blobs import BlobCorrupt, decode_value, unpack

BATCH_ROWS = 5_000
PARALLEL_FROM_ROWS = 60_000
"""Logs shorter than this are walked in this process: starting workers costs more than they save."""

LINK_BROKEN = "its predecessor is missing or was changed (chain broken before it)"
SHOWN_CHANGED = "the shown arguments do not match their hash"
ROW_EDITED = "the row was edited after it was written"


def anchor_differs(position: int) -> str:
    return f"the chain was rewritten: it differs from the anchor at row {position}"


# The columns read, in this order; the blob's codec and bytes only for rows whose shown arguments are in one (on
# PostgreSQL the JSON columns as text, decoded as on SQLite).
CHAIN_SELECT = (
    "SELECT a.id, a.hitl_id, a.decision, a.reviewer, a.at_ms, {shown}, a.shown_args_sha256, {edited}, a.message,"
    " a.prev_hash, a.row_hash, a.shown_args_ref,"
    " CASE WHEN a.shown_args_ref IS NOT NULL THEN"
    " (SELECT b.codec FROM blobs AS b WHERE b.sha256 = substr(a.shown_args_ref, 3)) END,"
    " CASE WHEN a.shown_args_ref IS NOT NULL THEN"
    " (SELECT b.data FROM blobs AS b WHERE b.sha256 = substr(a.shown_args_ref, 3)) END"
    " FROM audit_log AS a {where} ORDER BY a.id"
)
SQLITE_CHAIN_SELECT = CHAIN_SELECT.format(shown="a.shown_args", edited="a.edited_args", where="")


def pg_chain_select(low_id: int | None = None, high_id: int | None = None) -> str:
    """The chain's rows with ids in ``[low_id, high_id)`` (either end open when None), JSON as text."""
    bounds = ([f"a.id >= {int(low_id)}"] if low_id is not None else []) + (
        [f"a.id < {int(high_id)}"] if high_id is not None else []
    )
    where = f"WHERE {' AND '.join(bounds)}" if bounds else ""
    return CHAIN_SELECT.format(shown="a.shown_args::text", edited="a.edited_args::text", where=where)


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One batch's rows checked on their own: how many, its first row (id and stored predecessor hash), its last
    hash, and its first problem in chain order (index in the batch, row id, message)."""

    count: int
    first_id: int | None
    first_prev: str | None
    last_hash: str | None
    problem: tuple[int, int, str] | None
    first_keyed_ms: int | None


@dataclass(frozen=True, slots=True)
class ChainWalk:
    """The whole walk: rows checked, the last hash, the first problem as ``(position, row id, message)``."""

    checked: int
    last_hash: str | None
    problem: tuple[int, int | None, str] | None
    first_keyed_ms: int | None


def _shown(shown: Any, ref: str | None, codec: str | None, data: bytes | None) -> Any:
    """The shown arguments as the writer hashed them: decoded JSON (by the exact decoder: orjson reads an integer
    beyond 64 bits as a float), or read back from their blob (a missing or damaged one reads as a placeholder,
    which then fails its digest)."""
    if ref:
        if codec is not None and data is not None:
            try:
                return decode_value(ref[:1], unpack(ref[2:], codec, data))
            except BlobCorrupt:
                pass
        return f"<stored arguments {ref[2:]} missing or damaged>"
    return None if shown is None else decode_stored_json(shown)


def _edited(edited: str | None) -> Any:
    """The edited arguments as the writer hashed them (the exact decoder, as for :func:`_shown`)."""
    return None if edited is None or edited == "null" else decode_stored_json(edited)


def check_rows(
    rows: Iterable[Sequence[Any]], start: int, key: bytes | None, keyed_from: int, anchors: Mapping[int, str]
) -> BatchResult:
    """Check rows at positions ``start + 1 …`` (as :data:`CHAIN_SELECT` reads them); stops at the first problem.

    Each check runs its fast form inline (orjson's canonical bytes, the key's prepared HMAC state: a million rows
    pay for every function call), and only a row whose fast form does not match goes through the exact checks
    (``shown_digest_matches``, ``row_hash_matches``), which decide: a row passes exactly when they pass it.
    """
    count = 0
    first_id: int | None = None
    first_prev: str | None = None
    prev_hash: str | None = None
    first_keyed_ms = None
    dumps, sort_keys, sha256 = orjson.dumps, orjson.OPT_SORT_KEYS, hashlib.sha256().copy
    keyed = KeyedHash(key) if key is not None else None
    keyed_at = keyed_from if keyed_from else sys.maxsize

    def failed(row_id: int, message: str) -> BatchResult:
        return BatchResult(count, first_id, first_prev, prev_hash, (count - 1, row_id, message), first_keyed_ms)

    for row in rows:
        row_id, hitl_id, decision, reviewer, at_ms, shown, shown_sha, edited, message, row_prev, row_hash = row[:11]
        position = start + count + 1
        count += 1
        if count == 1:
            first_id, first_prev = row_id, row_prev
        elif row_prev != prev_hash:
            return failed(row_id, LINK_BROKEN)
        if (row[11] or not _shown_digest_is(dumps, sort_keys, sha256, shown, shown_sha)) and not shown_digest_matches(
            _shown(shown, *row[11:]), shown_sha
        ):
            return failed(row_id, SHOWN_CHANGED)
        edited_args = None if edited is None or edited == "null" else decode_stored_json_fast(edited)
        fields = {
            "at_ms": at_ms,
            "decision": decision,
            "edited_args": edited_args,
            "hitl_id": hitl_id,
            "message": message,
            "reviewer": reviewer,
            "shown_args_sha256": shown_sha,
        }
        if position == keyed_from:
            first_keyed_ms = at_ms
        row_key = key if position >= keyed_at else None
        if not _row_hash_is(dumps, sort_keys, keyed if row_key is not None else None, row_prev, fields, row_hash) and (
            not row_hash_matches(row_prev, {**fields, "edited_args": _edited(edited)}, row_key, row_hash)
        ):
            return failed(row_id, ROW_EDITED)
        if anchors and anchors.get(position, row_hash) != row_hash:
            return failed(row_id, anchor_differs(position))
        prev_hash = row_hash
    return BatchResult(count, first_id, first_prev, prev_hash, None, first_keyed_ms)


def _shown_digest_is(dumps: Any, sort_keys: int, sha256: Any, shown: str | None, digest: str | None) -> bool:
    """Whether the stored JSON text ``shown`` decodes to a value whose canonical bytes (orjson's) hash to ``digest``
    (False for no arguments or a value orjson cannot encode: the exact check decides those)."""
    if shown is None or digest is None:
        return False
    value = decode_stored_json_fast(shown)
    if value is None:
        return False
    try:
        hashed = sha256()  # a copy of an empty SHA-256: cheaper than a new one
        hashed.update(dumps(value, option=sort_keys))
        return bool(hashed.hexdigest() == digest)
    except (TypeError, orjson.JSONEncodeError):
        return False


def _row_hash_is(
    dumps: Any, sort_keys: int, keyed: KeyedHash | None, prev: str, fields: dict[str, Any], row_hash: str
) -> bool:
    """Whether ``row_hash`` is the hash of ``prev`` and orjson's canonical bytes of ``fields`` (``keyed``: the
    chain's key, None for the plain SHA-256 of rows that predate keying)."""
    try:
        payload = prev.encode("utf-8") + dumps(fields, option=sort_keys)
    except (TypeError, AttributeError, UnicodeError, orjson.JSONEncodeError):
        return False
    if keyed is None:
        return bool(hashlib.sha256(payload).hexdigest() == row_hash)
    return keyed.hexdigest(payload) == row_hash


_PAD_INNER = bytes(x ^ 0x36 for x in range(256))
_PAD_OUTER = bytes(x ^ 0x5C for x in range(256))


class KeyedHash:
    """HMAC-SHA256 under one key, from the SHA-256 states of its two padded keys (RFC 2104), copied per row.

    The same digest as ``hmac.new(key, payload, "sha256")``; copying two plain SHA-256 states costs about half
    of copying OpenSSL's HMAC context (a million rows: about 0.7 s of CPU less).
    """

    __slots__ = ("_inner", "_outer")

    def __init__(self, key: bytes) -> None:
        block = (hashlib.sha256(key).digest() if len(key) > 64 else key).ljust(64, b"\0")
        self._inner = hashlib.sha256(block.translate(_PAD_INNER))
        self._outer = hashlib.sha256(block.translate(_PAD_OUTER))

    def hexdigest(self, payload: bytes) -> str:
        inner = self._inner.copy()
        inner.update(payload)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.hexdigest()


# -- worker processes (PostgreSQL) ---------------------------------------------------------------------------
_FRAME = struct.Struct(">Q")


def _send(stream: BinaryIO, value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_FRAME.pack(len(data)) + data)
    stream.flush()


def _receive(stream: BinaryIO) -> Any:
    head = stream.read(_FRAME.size)
    if len(head) < _FRAME.size:
        raise EOFError("the worker closed its pipe")
    (size,) = _FRAME.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError("the worker closed its pipe")
    return pickle.loads(data)


@dataclass(frozen=True, slots=True)
class ChainRange:
    """A stretch of the chain for one worker: ids ``[low_id, high_id)``, the first at position ``start + 1``."""

    start: int
    low_id: int | None
    high_id: int | None


def check_range(
    connect: tuple[Sequence[Any], Mapping[str, Any]],
    snapshot: str,
    part: ChainRange,
    key: bytes | None,
    keyed_from: int,
    anchors: Mapping[int, str],
) -> BatchResult:
    """A worker's stretch, read on its own connection in the parent's exported ``snapshot`` (so exactly the rows
    the parent's transaction sees) with a server-side cursor, and checked."""
    import psycopg

    args, kwargs = connect
    with psycopg.connect(*args, **kwargs) as connection:
        connection.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        connection.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
        with connection.cursor(name="reviewer_audit_walk") as cursor:
            cursor.execute(pg_chain_select(part.low_id, part.high_id))
            rows = (row for batch in iter(lambda: cursor.fetchmany(BATCH_ROWS), []) for row in batch)
            return check_rows(rows, part.start, key, keyed_from, anchors)


def serve() -> None:
    """A worker: one ``check_range`` task from the pipe, its :class:`BatchResult` (as a tuple) back."""
    task = _receive(sys.stdin.buffer)
    _send(sys.stdout.buffer, astuple(check_range(*task)))


def worker_count(rows: int) -> int:
    """Worker processes for a log of ``rows``: one per core (``REVIEWER_AUDIT_WORKERS`` overrides), none for a
    short log, a frozen build or one core."""
    wanted = os.environ.get("REVIEWER_AUDIT_WORKERS", "").strip()
    if wanted.isdigit():
        return int(wanted)
    if rows < PARALLEL_FROM_ROWS or getattr(sys, "frozen", False):
        return 0
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores if cores > 1 else 0


class RangeWorker:
    """One worker process (this interpreter, this package first on its path) checking one range."""

    def __init__(self, task: tuple[Any, ...]) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
        self.process = subprocess.Popen(
            [sys.executable, "-P", "-c", "from reviewer_app.persistence.audit_walk import serve; serve()"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        with contextlib.suppress(OSError):  # a worker that died at once is noticed by result()
            _send(cast(BinaryIO, self.process.stdin), task)
            cast(BinaryIO, self.process.stdin).close()

    def result(self) -> BatchResult | None:
        """Its answer, or None when it failed (the caller checks the range itself)."""
        try:
            return BatchResult(*_receive(cast(BinaryIO, self.process.stdout)))
        except (EOFError, OSError, pickle.UnpicklingError, TypeError):
            return None
        finally:
            self.process.wait()
            cast(BinaryIO, self.process.stdout).close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        with contextlib.suppress(OSError):
            cast(BinaryIO, self.process.stdout).close()


# -- joining the results ------------------------------------------------------------------------------------------
class ChainJoin:
    """Results of consecutive stretches of the chain, joined in chain order into one :class:`ChainWalk`."""

    def __init__(self) -> None:
        self.checked = 0
        self.last_hash: str | None = None
        self.first_keyed_ms: int | None = None
        self.problem: tuple[int, int | None, str] | None = None

    def add(self, start: int, result: BatchResult) -> bool:
        """The stretch whose first row is at position ``start + 1``; False once a problem is known."""
        if result.count and result.first_prev != (self.last_hash if start else GENESIS_HASH):
            self.problem = (start + 1, result.first_id, LINK_BROKEN)
            self.checked = start + 1
            return False
        if result.first_keyed_ms is not None:
            self.first_keyed_ms = result.first_keyed_ms
        if result.problem is not None:
            index, row_id, message = result.problem
            self.problem = (start + index + 1, row_id, message)
            self.checked = start + index + 1
            return False
        self.checked = start + result.count
        self.last_hash = result.last_hash if result.count else self.last_hash
        return True

    def walk(self) -> ChainWalk:
        return ChainWalk(self.checked, self.last_hash, self.problem, self.first_keyed_ms)


def anchors_between(anchors: Mapping[int, str], first: int, last: int | None) -> dict[int, str]:
    """The anchors at positions ``first …`` ``last`` (to the end when None)."""
    return {p: h for p, h in anchors.items() if p >= first and (last is None or p <= last)}


def walk_here(batches: Iterable[Sequence[Any]], key: bytes | None, keyed_from: int, anchors: Mapping[int, str]) -> Any:
    """The chain walked in this process, a batch at a time."""
    join = ChainJoin()
    start = 0
    for rows in batches:
        if not join.add(start, check_rows(rows, start, key, keyed_from, anchors)):
            break
        start += len(rows)
    return join.walk()


def walk_in_workers(
    connect: tuple[Sequence[Any], Mapping[str, Any]],
    snapshot: str,
    parts: Sequence[ChainRange],
    key: bytes | None,
    keyed_from: int,
    anchors: Mapping[int, str],
    check_here: Callable[[ChainRange, Mapping[int, str]], BatchResult],
) -> ChainWalk:
    """Each range checked by its own worker process at once, joined in order; a range whose worker failed is
    checked here by ``check_here`` (the parent's connection, same snapshot)."""
    tasks = []
    for index, part in enumerate(parts):
        last = parts[index + 1].start if index + 1 < len(parts) else None
        tasks.append((connect, snapshot, part, key, keyed_from, anchors_between(anchors, part.start + 1, last)))
    workers = [RangeWorker(task) for task in tasks]
    join = ChainJoin()
    try:
        for worker, task in zip(workers, tasks, strict=True):
            part, range_anchors = task[2], task[5]
            result = worker.result()
            if result is None:
                result = check_here(part, range_anchors)
            if not join.add(part.start, result):
                break
    finally:
        for worker in workers:
            worker.stop()
    return join.walk()


if __name__ == "__main__":  # pragma: no cover - workers start through serve()
    serve()
