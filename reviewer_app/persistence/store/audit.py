"""The decision log: appending keyed, hash-chained rows, anchoring the head outside, and verifying it all.

A row's hash is an HMAC over the previous hash and its fields (:mod:`reviewer_app.domain.audit`), keyed with
the audit key kept outside the database (:mod:`reviewer_app.persistence.audit_seal`); after each commit the new
head is appended to the database's anchor file. Verification walks the chain, checks every anchor against it,
and cross-checks every decided request against its audit row, so editing a row, recomputing the chain,
truncating it or flipping a decision in ``hitl_requests`` is reported.
"""

from __future__ import annotations

import re
import sqlite3
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from functools import cache
from typing import Any, cast

from sqlalchemy import bindparam, func, insert, literal, or_, select, update

from reviewer_app.domain.audit import (
    AUDIT_HEAD_KEY,
    AUDIT_KEY_ID_KEY,
    AUDIT_KEYED_FROM_KEY,
    DATABASE_ID_KEY,
    GENESIS_HASH,
    AuditKeyMismatch,
    audit_fields,
    chain_meta_defaults,
    decided_audit_problems,
    next_chain_step,
)
from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.hitl import HITLRecord, HITLStatus
from reviewer_app.domain.limits import decode_stored_json_fast
from reviewer_app.domain.records import AuditEntry, AuditReport
from reviewer_app.persistence.audit_seal import AuditKeyError, AuditSeal
from reviewer_app.persistence.audit_walk import (
    BATCH_ROWS,
    SQLITE_CHAIN_SELECT,
    BatchResult,
    ChainRange,
    ChainWalk,
    check_rows,
    pg_chain_select,
    walk_here,
    walk_in_workers,
    worker_count,
)
from reviewer_app.persistence.blobs import decode_value, encode_value
from reviewer_app.persistence.core_tables import audit_t, meta_t, requests_t
from reviewer_app.persistence.store.base import Reader, Statements
from reviewer_app.persistence.store.blobstore import BlobWrites, read_blobs
from reviewer_app.persistence.store.records import now_ms, row_to_record

_CHAIN_KEYS = (AUDIT_HEAD_KEY, AUDIT_KEY_ID_KEY, AUDIT_KEYED_FROM_KEY, DATABASE_ID_KEY)
_CHAIN_KEY_SET = frozenset(_CHAIN_KEYS)
# One bind parameter per key (the SQLite fast path compiles statements once; no expanding IN lists).
_SELECT_CHAIN_META = select(meta_t.c.key, meta_t.c.value).where(
    or_(*(meta_t.c.key == literal(name) for name in _CHAIN_KEYS))
)
# Locked in key order: in the order a scan meets them, two decisions could take them in different orders once the
# head row had moved (each decision rewrites it), and PostgreSQL killed one of them as a deadlock.
_SELECT_CHAIN_META_FOR_UPDATE = _SELECT_CHAIN_META.order_by(meta_t.c.key).with_for_update()
_UPDATE_AUDIT_HEAD = update(meta_t).where(meta_t.c.key == AUDIT_HEAD_KEY)
_INSERT_AUDIT = insert(audit_t)
ANCHOR_GRACE_MS = 10_000
"""An anchor is appended just after its commit: a log whose keyed rows are all younger may lack one yet."""

_SIGNED_COLUMNS = (
    audit_t.c.id,
    audit_t.c.hitl_id,
    audit_t.c.decision,
    audit_t.c.reviewer,
    audit_t.c.at_ms,
    audit_t.c.shown_args_sha256,
    audit_t.c.edited_args,
    audit_t.c.message,
    audit_t.c.prev_hash,
    audit_t.c.row_hash,
)
_SIGNED_LABELS = {f"audit_{column.name}": column.name for column in _SIGNED_COLUMNS}
_SIGNED_META_KEYS = (AUDIT_KEY_ID_KEY, AUDIT_KEYED_FROM_KEY)


@cache
def _signed_decided_statement(count: int) -> Any:
    """Decided requests among ``count`` ids (one bind parameter each), each with its audit rows (a row per audit row,
    the audit columns labelled ``audit_<name>``) and the chain's meta values the check needs (``meta_<i>``): one
    statement, one snapshot, one round trip for a waiting agent's look-up."""
    meta = [
        select(meta_t.c.value).where(meta_t.c.key == literal(name)).scalar_subquery().label(f"meta_{i}")
        for i, name in enumerate(_SIGNED_META_KEYS)
    ]
    audit_columns = [column.label(label) for label, column in zip(_SIGNED_LABELS, _SIGNED_COLUMNS, strict=True)]
    return (
        select(requests_t, *audit_columns, *meta)
        .select_from(requests_t.outerjoin(audit_t, audit_t.c.hitl_id == requests_t.c.hitl_id))
        .where(
            requests_t.c.hitl_id.in_([bindparam(f"id_{i}") for i in range(count)]),
            requests_t.c.status != HITLStatus.PENDING.value,
        )
        .order_by(audit_t.c.id)
    )


# Audit rows with the tool of the request each decided, so a listing names the tool (rule events have none).
_SELECT_ENTRIES = select(audit_t, requests_t.c.tool_name).select_from(
    audit_t.outerjoin(requests_t, requests_t.c.hitl_id == audit_t.c.hitl_id)
)


class AuditWrites:
    """``tx.audit``: appending to the chain inside one transaction (the head is serialised by the write lock)."""

    __slots__ = ("_blobs", "_db")

    def __init__(self, db: Statements, blobs: BlobWrites) -> None:
        self._db = db
        self._blobs = blobs

    def _chain_meta(self) -> dict[str, str]:
        # SQLite is already serialised by BEGIN IMMEDIATE; PostgreSQL locks the chain's meta rows.
        query = _SELECT_CHAIN_META_FOR_UPDATE if self._db.dialect == "postgresql" else _SELECT_CHAIN_META
        return {str(row["key"]): str(row["value"]) for row in self._db.rows(query, {})}

    def append(
        self,
        *,
        hitl_id: str,
        decision: str,
        reviewer: str,
        at_ms: int,
        shown_args: Any,
        edited_args: Any,
        message: str | None,
        shown_sha256: str | None = None,
    ) -> str:
        """Append the decision's row to the chain; ``shown_sha256``: the digest of ``shown_args`` if the caller has
        it (checked against them in this transaction), else it is computed here."""
        db = self._db
        seal = db.seal
        if seal is None:
            raise AuditKeyError("audit rows are written only inside a Store transaction (it holds the audit key)")
        reviewer = db.recorded(reviewer)  # what migration 0006's trigger accepts, and what the hash covers
        meta = self._chain_meta()
        # A database id is drawn only for a chain that has none yet: uuid4 and the key id cost ~60 µs per decision.
        missing = (
            {}
            if meta.keys() >= _CHAIN_KEY_SET  # every key there (one set test, no generator a decision)
            else chain_meta_defaults(meta, seal.key_id, uuid.uuid4().hex)
        )
        if missing:
            # Read again after inserting: on PostgreSQL a concurrent first decision's rows block these inserts
            # until it commits, and the second read then locks them, so two processes never start two chains.
            for name, value in missing.items():
                db.insert_ignore(meta_t, {"key": name, "value": value}, ["key"])
            meta = self._chain_meta()
        shown_sha = None if shown_args is None else shown_sha256 or args_digest(shown_args)
        fields = audit_fields(hitl_id, decision, reviewer, at_ms, shown_sha, edited_args, message)
        try:
            step = next_chain_step(meta, fields, seal.key, key_id_value=seal.key_id)
        except AuditKeyMismatch as exc:
            raise AuditKeyError(str(exc)) from None
        # Large shown arguments are not copied into the log: the row names their blob (the run's timeline and
        # checkpoint already hold it), and the hash covers their SHA-256 either way.
        encoded = encode_value(shown_args)  # the hook's fast path decides the same way (claude_code/fast.py)
        shown_ref = f"{encoded[0]}:{self._blobs.put(encoded[1])}" if encoded is not None else None
        db.write(
            _INSERT_AUDIT,
            {
                "shown_args": shown_args if shown_ref is None else None,
                "shown_args_ref": shown_ref,
                "prev_hash": step.prev_hash,
                "row_hash": step.row_hash,
                **fields,
            },
        )
        db.write(_UPDATE_AUDIT_HEAD, {"value": step.head_value})
        url = db.database_url
        db.after_commit("audit-anchor", lambda: seal.anchor(step.database_id, step.position, step.row_hash, url))
        return step.row_hash


class AuditReads:
    """``store.audit``: the log's rows, the chain verified against its anchors, decided records checked against it.

    ``seal`` and ``identity_url`` are the store's (the key and anchors are loaded on first use).
    """

    def __init__(self, db: Reader, seal: Callable[[], AuditSeal], identity_url: Callable[[], str]) -> None:
        self._db = db
        self._seal = seal
        self._identity_url = identity_url

    def entries(self, *, hitl_id: str | None = None, limit: int | None = None) -> list[AuditEntry]:
        query = _SELECT_ENTRIES.order_by(audit_t.c.id)
        if hitl_id is not None:
            query = query.where(audit_t.c.hitl_id == hitl_id)
        if limit is not None:
            query = query.limit(limit)
        with self._db.reading() as connection:
            return _entries(connection, connection.execute(query).all())

    def page(self, *, after_id: int = 0, limit: int = 1000) -> list[AuditEntry]:
        """Audit rows after ``after_id`` in order: exports page through the log with flat memory."""
        query = _SELECT_ENTRIES.where(audit_t.c.id > after_id).order_by(audit_t.c.id).limit(limit)
        with self._db.reading() as connection:
            return _entries(connection, connection.execute(query).all())

    def count(self) -> int:
        """How many rows the decision log holds (an export's progress is measured against it)."""
        with self._db.reading() as connection:
            return int(connection.execute(select(func.count()).select_from(audit_t)).scalar_one())

    def decision_problems(self, records: Sequence[HITLRecord]) -> dict[str, str]:
        """For decided records about to be handed to an agent: ``hitl_id`` → why the record is not what the audit
        chain signed (its row missing, edited without the key, or saying something else). Absent when it is."""
        decided = [r for r in records if r.get("status") != HITLStatus.PENDING.value]
        if not decided:
            return {}
        ids = sorted({str(r["hitl_id"]) for r in decided})
        query = select(*_SIGNED_COLUMNS).where(audit_t.c.hitl_id.in_(ids)).order_by(audit_t.c.id)
        with self._db.reading() as connection:
            meta = {str(k): str(v) for k, v in connection.execute(_SELECT_CHAIN_META)}
            audit_rows = [dict(row._mapping) for row in connection.execute(query)]
            return self._problems(connection, decided, audit_rows, meta)

    def signed_decided_among(self, hitl_ids: Sequence[str]) -> tuple[list[HITLRecord], dict[str, str]]:
        """The requests among ``hitl_ids`` that are no longer pending, and of those the ones their audit rows do not
        sign (``hitl_id`` → why, as :meth:`decision_problems`): the requests, their audit rows and the chain's meta
        in one statement (see :func:`_signed_decided_statement`)."""
        ids = list(dict.fromkeys(hitl_ids))
        records: dict[str, HITLRecord] = {}
        audit_rows: list[dict[str, Any]] = []
        meta: dict[str, str] = {}
        problems: dict[str, str] = {}
        with self._db.reading() as connection:
            tx = self._db.on(connection)
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                rows = tx.rows(_signed_decided_statement(len(chunk)), {f"id_{i}": v for i, v in enumerate(chunk)})
                for row in rows:
                    records.setdefault(str(row["hitl_id"]), row_to_record(row))
                    if row["audit_id"] is not None:
                        audit_rows.append({name: row[label] for label, name in _SIGNED_LABELS.items()})
                    for i, name in enumerate(_SIGNED_META_KEYS):
                        if row[f"meta_{i}"] is not None:
                            meta[name] = str(row[f"meta_{i}"])
                decided = [records[hitl_id] for hitl_id in chunk if hitl_id in records]
                problems.update(self._problems(connection, decided, audit_rows, meta))
                audit_rows, meta = [], {}
        return list(records.values()), problems

    def _problems(
        self,
        connection: Any,
        decided: Sequence[HITLRecord],
        audit_rows: Iterable[dict[str, Any]],
        meta: Mapping[str, str],
    ) -> dict[str, str]:
        """``decided`` records checked against their ``audit_rows`` (:func:`.decided_audit_problems`, which the
        hook's lean waiter checks with too), under the chain's key where this process has it."""
        key = self._seal().existing_key() if decided else None

        def position(row_id: int) -> int:
            return int(connection.execute(select(func.count()).where(audit_t.c.id <= row_id)).scalar_one())

        return decided_audit_problems(decided, audit_rows, meta, key, position)

    def verify(self, *, _attempt: int = 0) -> AuditReport:
        """Walk the keyed chain, check it against its anchors, and cross-check every decided request."""
        seal = self._seal()
        # Anchors before the snapshot: each is appended after its commit, so every anchor read now is covered by
        # the rows the snapshot below sees (read after it, a busy log would look truncated).
        with self._db.reading() as connection:
            early_id = connection.execute(select(meta_t.c.value).where(meta_t.c.key == DATABASE_ID_KEY)).scalar()
        early_anchors = seal.anchors(str(early_id)) if early_id else []
        anchored_ids = seal.anchored_ids_for(self._identity_url())
        with self._db.reading() as connection, ExitStack() as stack:
            if self._db.dialect == "postgresql":  # head and rows from one snapshot, as SQLite reads anyway
                connection.execution_options(isolation_level="REPEATABLE READ")
            meta = {str(k): str(v) for k, v in connection.execute(_SELECT_CHAIN_META)}
            keyed_from = int(meta.get(AUDIT_KEYED_FROM_KEY) or 0)
            if keyed_from and meta.get(AUDIT_KEY_ID_KEY) != seal.key_id:
                return AuditReport(
                    False,
                    0,
                    None,
                    f"the log is keyed with key id {meta.get(AUDIT_KEY_ID_KEY)}, not this machine's "
                    f"({seal.key_id}): verify with REVIEWER_AUDIT_KEY_FILE set to that key",
                )
            database_id = meta.get(DATABASE_ID_KEY)
            if database_id is not None and database_id != early_id and _attempt < 3:
                # The first decision set the id between the two reads: its anchors, read now, could be newer than
                # this snapshot. Start again, with the id known before the snapshot.
                return self.verify(_attempt=_attempt + 1)
            cross_check = stack.enter_context(self._decisions_checked_alongside(connection))
            anchors = {a.count: a.head for a in early_anchors} if database_id else {}
            rows_expected = int((meta.get(AUDIT_HEAD_KEY) or "0").partition(":")[0])
            key = seal.key if keyed_from else None
            workers = worker_count(rows_expected) if self._db.dialect == "postgresql" else 0
            if workers > 1:
                walk = self._walk_in_workers(connection, workers, rows_expected, key, keyed_from, anchors)
            else:
                walk = walk_here(self._chain_batches(connection), key, keyed_from, anchors)
            if walk.problem is not None:
                position, row_id, message = walk.problem
                return AuditReport(False, position, row_id, message)
            checked, first_keyed_ms = walk.checked, walk.first_keyed_ms
            prev_hash = walk.last_hash or GENESIS_HASH
            expected_count, expected_head = (0, GENESIS_HASH)
            head_value = meta.get(AUDIT_HEAD_KEY)
            if head_value is not None:
                count_text, _, expected_head = head_value.partition(":")
                expected_count = int(count_text)
            if checked != expected_count or prev_hash != expected_head:
                return AuditReport(
                    False, checked, None, f"rows at the end of the log were removed ({expected_count} expected)"
                )
            anchored = max(anchors, default=0)
            if anchored > checked:
                return AuditReport(
                    False, checked, None, f"rows were removed: the anchor outside the database records {anchored}"
                )
            warning = None
            if not anchors:
                hidden = [i for i in anchored_ids if i != database_id]
                if hidden:
                    return AuditReport(
                        False, checked, None, f"the log's anchor was cut off: this database was anchored as {hidden[0]}"
                    )
                if first_keyed_ms is not None and now_ms() - first_keyed_ms > ANCHOR_GRACE_MS:
                    return AuditReport(False, checked, None, f"no anchor found for this database (id {database_id})")
                if first_keyed_ms is not None:  # its first decisions committed a moment ago: anchors follow commits
                    warning = "the newest rows are not anchored yet"
                elif checked:
                    warning = "not anchored yet: every row predates anchoring"
            problem = cross_check()
            if problem is not None:
                return AuditReport(False, checked, None, problem, anchors_checked=len(anchors))
            return AuditReport(True, checked, anchors_checked=len(anchors), warning=warning)

    @contextmanager
    def _decisions_checked_alongside(self, connection: Any) -> Iterator[Callable[[], str | None]]:
        """The cross-check of the decided requests (:meth:`_unaudited_decision`), to call once the chain is walked.

        On PostgreSQL it starts at once on a second connection in this transaction's snapshot, so the server joins
        while this thread walks the chain (over a million decisions each took 10 s or more, one after the other).
        """
        if self._db.dialect != "postgresql":
            yield lambda: self._unaudited_decision(connection)
            return
        snapshot = str(connection.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one())
        with ThreadPoolExecutor(1, thread_name_prefix="reviewer-audit-check") as pool:  # waits for it on the way out
            yield pool.submit(self._unaudited_decision_in, snapshot).result

    def _unaudited_decision_in(self, snapshot: str) -> str | None:
        """:meth:`_unaudited_decision` on another connection, in the exported ``snapshot`` (PostgreSQL)."""
        with self._db.engines.read() as other:
            other.execution_options(isolation_level="REPEATABLE READ")
            other.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
            return self._unaudited_decision(other)

    def _walk_in_workers(
        self,
        connection: Any,
        workers: int,
        rows_expected: int,
        key: bytes | None,
        keyed_from: int,
        anchors: Mapping[int, str],
    ) -> ChainWalk:
        """PostgreSQL: the chain cut into ``workers`` ranges of about equal length, each read and checked by its own
        process in this transaction's snapshot (:func:`walk_in_workers`)."""
        parts: list[ChainRange] = []
        start, low_id = 0, None
        for index in range(1, workers):
            position = rows_expected * index // workers
            row_id = connection.exec_driver_sql(
                f"SELECT id FROM {audit_t.name} ORDER BY id LIMIT 1 OFFSET {int(position)}"
            ).scalar()
            if row_id is None or position <= start:
                break
            parts.append(ChainRange(start, low_id, int(row_id)))
            start, low_id = position, int(row_id)
        parts.append(ChainRange(start, low_id, None))
        snapshot = str(connection.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one())
        reader = self._db.engines.reader
        args, kwargs = reader.dialect.create_connect_args(reader.url)
        kwargs.pop("context", None)  # SQLAlchemy's adapters: a worker reads plain text

        def check_here(part: ChainRange, part_anchors: Mapping[int, str]) -> BatchResult:
            batches = _pg_batches(connection, pg_chain_select(part.low_id, part.high_id), BATCH_ROWS)
            rows = (row for batch in batches for row in batch)
            return check_rows(rows, part.start, key, keyed_from, part_anchors)

        return walk_in_workers((list(args), kwargs), snapshot, parts, key, keyed_from, anchors, check_here)

    @staticmethod
    def _chain_batches(connection: Any) -> Iterator[Sequence[Any]]:
        """The log in chain order, a batch of rows at a time (flat memory at any length): straight from the DB-API
        cursor (SQLAlchemy's row processing cost more than the hashing), on PostgreSQL a server-side one, the JSON
        columns read as text (COPY's text, parsed in Python, cost more than the cursor's rows)."""
        if connection.dialect.name == "sqlite":
            driver = cast(sqlite3.Connection, connection.connection.driver_connection)
            yield from _sqlite_batches(driver.execute(SQLITE_CHAIN_SELECT), BATCH_ROWS)
        else:
            yield from _pg_batches(connection, pg_chain_select(), BATCH_ROWS)

    @staticmethod
    def _unaudited_decision(connection: Any) -> str | None:
        """A decided request whose decision is not the one its audit row records, if any."""
        if connection.dialect.name == "sqlite":
            return AuditReads._unaudited_decision_sqlite(connection)
        row = connection.exec_driver_sql(_UNAUDITED_OR_UNSIGNED_PLAIN_PG).first()
        if row is not None and row.unaudited:
            return _unaudited_text(row.hitl_id, row.decision, row.decided_by)
        # As on SQLite: streamed (a million responses never sit in memory at once), read as text, and decoded
        # only where the text could state another decision than the request's.
        problem = _first_response_problem(_pg_batches(connection, _RESPONSES_TO_READ_PG))
        if problem is not None:
            return problem
        if row is not None:  # a plain response no audit row signs
            return _unsigned_edit_text(str(row.hitl_id))
        return _unsigned_edit(connection, _UNSIGNED_EDIT_PG)

    @staticmethod
    def _unaudited_decision_sqlite(connection: Any) -> str | None:
        """The same checks on the DB-API cursor, with SQL reading past the responses that state their own decision
        in the one form the store writes (a million decided requests in ~1.5 s of CPU instead of ~5)."""
        driver = cast(sqlite3.Connection, connection.connection.driver_connection)
        row = driver.execute(_UNAUDITED_SQL, (HITLStatus.PENDING.value,)).fetchone()
        if row is not None:
            return _unaudited_text(*row)
        cursor = driver.execute(_RESPONSES_TO_READ_SQL, (HITLStatus.PENDING.value,))
        problem = _first_response_problem(_sqlite_batches(cursor))
        if problem is not None:
            return problem
        return _unsigned_edit(connection, _UNSIGNED_EDIT_SQLITE) or _escaped_unsigned_edit(connection)


# As on SQLite: the server reads past the responses that state their own decision in the one form the store writes
# (a million responses sent to Python cost more than the rest of the check).
_RESPONSES_TO_READ_PG = (
    "SELECT hitl_id, decision, user_response::text FROM hitl_requests"
    " WHERE status <> 'pending' AND user_response IS NOT NULL"
    " AND NOT coalesce(strpos(user_response::text, '\"decision\": \"' || decision || '\"') > 0"
    " AND length(user_response::text) - length(replace(user_response::text, '\"decision\"', '')) = 10"
    " AND strpos(user_response::text, '\\u') = 0, false)"
)
_BATCH = 5000


def _sqlite_batches(cursor: sqlite3.Cursor, size: int = _BATCH) -> Iterator[Sequence[Any]]:
    while rows := cursor.fetchmany(size):
        yield rows


def _first_response_problem(batches: Iterable[Sequence[Any]]) -> str | None:
    """The first stored response, of ``(hitl_id, decision, text)`` rows read in batches, that states another
    decision than its request's (only the texts that could are decoded)."""
    for rows in batches:
        for hitl_id, decision, text in rows:
            if isinstance(text, str) and not _states_only(text, decision):
                problem = _response_problem(hitl_id, decision, decode_stored_json_fast(text))
                if problem is not None:
                    return problem
    return None


def _pg_batches(connection: Any, sql: str, size: int = _BATCH) -> Iterator[Sequence[Any]]:
    """Rows of ``sql`` a batch at a time from a server-side cursor in the connection's open transaction (and so
    its snapshot): psycopg's ordinary cursor holds the whole result in memory, a million rows at once."""
    driver = connection.connection.driver_connection
    with driver.cursor(name=f"reviewer_{uuid.uuid4().hex}") as cursor:
        cursor.execute(sql)
        while rows := cursor.fetchmany(size):
            yield rows


def _entries(connection: Any, rows: Sequence[Any]) -> list[AuditEntry]:
    """Audit rows as entries, large shown arguments read back from their blob (a damaged one is shown as such)."""
    refs = {row._mapping["shown_args_ref"] for row in rows if row._mapping["shown_args_ref"]}
    blobs = read_blobs(connection, [ref[2:] for ref in refs]) if refs else {}
    entries = []
    for row in rows:
        fields = dict(row._mapping)
        ref = fields.pop("shown_args_ref", None)
        if ref:
            raw = blobs.get(ref[2:])
            fields["shown_args"] = (
                decode_value(ref[:1], raw) if raw is not None else f"<stored arguments {ref[2:]} missing or damaged>"
            )
        entries.append(AuditEntry(**fields))
    return entries


_UNAUDITED_SQL = (
    "SELECT r.hitl_id, r.decision, r.decided_by FROM hitl_requests AS r WHERE r.status != ? AND NOT EXISTS"
    " (SELECT 1 FROM audit_log AS a WHERE a.hitl_id = r.hitl_id AND a.decision = r.decision"
    " AND a.reviewer = r.decided_by) LIMIT 1"
)
# Responses are read in Python unless their text holds exactly one "decision" key, written as the store writes
# it with this request's decision as its value, and no \u escape (which could spell another such key).
_RESPONSES_TO_READ_SQL = (
    "SELECT hitl_id, decision, user_response FROM hitl_requests WHERE status != ? AND user_response IS NOT NULL"
    " AND NOT (instr(user_response, '\"decision\": \"' || decision || '\"') > 0"
    " AND length(user_response) - length(replace(user_response, '\"decision\"', '')) = 10"
    " AND instr(user_response, '\\u') = 0)"
)


# A decided request whose edited arguments or message (what an agent runs or reads) no audit row of its decision
# signs: changed in hitl_requests after the decision. Responses that are not JSON objects are left to the checks
# above (nothing can act on them).
_RESPONSE_OBJECT_SQLITE = "CASE WHEN json_valid(r.user_response) THEN json_type(r.user_response) END = 'object'"
_UNSIGNED_EDIT_SQLITE = (
    "SELECT r.hitl_id FROM hitl_requests AS r WHERE r.status != 'pending' AND r.user_response IS NOT NULL"
    f" AND {_RESPONSE_OBJECT_SQLITE} AND NOT EXISTS (SELECT 1 FROM audit_log AS a WHERE a.hitl_id = r.hitl_id"
    " AND a.decision = r.decision AND a.reviewer = r.decided_by"
    f" AND (CASE WHEN {_RESPONSE_OBJECT_SQLITE} THEN json_quote(json_extract(r.user_response, '$.args')) END)"
    " = (CASE WHEN a.edited_args IS NULL THEN 'null' WHEN json_valid(a.edited_args) THEN json(a.edited_args)"
    " ELSE a.edited_args END)"
    f" AND (CASE WHEN {_RESPONSE_OBJECT_SQLITE} AND json_type(r.user_response, '$.message') = 'text'"
    " THEN json_extract(r.user_response, '$.message') END) IS a.message) LIMIT 1"
)
# A response whose text names neither "args" nor "message" (and has no \u escape that could spell them) carries
# no edit and no message: an audit row signs it when it has none either. Those (nearly all) are matched by a hash
# join on plain columns; only the rest are compared as JSON, which costs a parse per row (10 s over a million).
_PLAIN_RESPONSE_PG = (
    "strpos(r.user_response::text, '\"args\"') = 0 AND strpos(r.user_response::text, '\"message\"') = 0"
    " AND strpos(r.user_response::text, '\\u') = 0"
)
_PLAIN_OBJECT_PG = f"{_PLAIN_RESPONSE_PG} AND left(ltrim(r.user_response::text, E' \\t\\n\\r'), 1) = '{{'"
# Two findings in one anti-join (each alone cost a join over a million requests): a decided request with no audit
# row naming its decision and reviewer (a flipped or forged decision: ``unaudited``, reported first), and a plain
# response whose audit rows of that decision all carry an edit or a message (dropped from hitl_requests).
_UNAUDITED_OR_UNSIGNED_PLAIN_PG = (
    "SELECT r.hitl_id, r.decision, r.decided_by, NOT EXISTS (SELECT 1 FROM audit_log AS a"
    " WHERE a.hitl_id = r.hitl_id AND a.decision = r.decision AND a.reviewer = r.decided_by) AS unaudited"
    " FROM hitl_requests AS r WHERE r.status <> 'pending' AND NOT EXISTS (SELECT 1 FROM audit_log AS a"
    " WHERE a.hitl_id = r.hitl_id AND a.decision = r.decision AND a.reviewer = r.decided_by"
    f" AND (r.user_response IS NULL OR NOT ({_PLAIN_OBJECT_PG}) OR (a.message IS NULL"
    " AND (a.edited_args IS NULL OR a.edited_args::text = 'null' OR a.edited_args::jsonb = 'null'::jsonb))))"
    " ORDER BY unaudited DESC LIMIT 1"
)
_UNSIGNED_EDIT_PG = (
    "SELECT r.hitl_id FROM hitl_requests AS r WHERE r.status <> 'pending' AND r.user_response IS NOT NULL"
    f" AND NOT ({_PLAIN_RESPONSE_PG})"
    " AND json_typeof(r.user_response) = 'object' AND NOT EXISTS (SELECT 1 FROM audit_log AS a"
    " WHERE a.hitl_id = r.hitl_id AND a.decision = r.decision AND a.reviewer = r.decided_by"
    " AND coalesce((r.user_response -> 'args')::jsonb, 'null'::jsonb) = coalesce(a.edited_args::jsonb, 'null'::jsonb)"
    " AND (CASE WHEN json_typeof(r.user_response -> 'message') = 'string' THEN r.user_response ->> 'message' END)"
    " IS NOT DISTINCT FROM a.message) LIMIT 1"
)


def _unsigned_edit(connection: Any, statement: str) -> str | None:
    hitl_id = connection.exec_driver_sql(statement).scalar()
    return None if hitl_id is None else _unsigned_edit_text(str(hitl_id))


def _unsigned_edit_text(hitl_id: str) -> str:
    return (
        f"request {hitl_id}'s edited arguments or message differ from what its audit row signed "
        "(changed in hitl_requests after the decision)"
    )


_ESCAPED_RESPONSES_SQLITE = (
    "SELECT hitl_id, decision, decided_by, user_response FROM hitl_requests"
    " WHERE status != 'pending' AND instr(user_response, '\\u') > 0"
)
_SIGNED_EDITS_SQLITE = "SELECT edited_args, message FROM audit_log WHERE hitl_id = ? AND decision = ? AND reviewer = ?"


def _escaped_unsigned_edit(connection: Any) -> str | None:
    """SQLite's JSON functions match keys as written, so a key spelled with an escape (``"\\u0061rgs"``) is not
    ``$.args`` to them, though every JSON reader (the agent's too) decodes it as ``args``: the few responses with
    an escape are decoded here and compared with their audit rows as :data:`_UNSIGNED_EDIT_SQLITE` does."""
    driver = cast(sqlite3.Connection, connection.connection.driver_connection)
    for hitl_id, decision, decided_by, text in driver.execute(_ESCAPED_RESPONSES_SQLITE).fetchall():
        try:
            response = decode_stored_json_fast(text)
        except ValueError:
            continue  # not JSON: nothing can act on it
        if not isinstance(response, dict):
            continue
        message = response.get("message") if isinstance(response.get("message"), str) else None
        signed = driver.execute(_SIGNED_EDITS_SQLITE, (hitl_id, decision, decided_by)).fetchall()
        if not any(
            _stored(edited) == response.get("args") and signed_message == message for edited, signed_message in signed
        ):
            return _unsigned_edit_text(str(hitl_id))
    return None


def _stored(text: str | None) -> Any:
    try:
        return None if text is None else decode_stored_json_fast(text)
    except ValueError:
        return text


_STATED_DECISION = re.compile(r'"decision":\s*"([^"\\]*)"')


def _states_only(text: str, decision: str | None) -> bool:
    """Whether a stored response's text can state no decision but ``decision``, read without decoding it.

    True when the text names no decision at all (neither the word nor an escape that could spell it), or when
    ``"decision"`` occurs exactly once, as a key whose plain string value is ``decision``: inside JSON strings
    quotes are escaped, so that one occurrence is the only key of that name anywhere. Anything else is decoded.
    """
    if "\\u" in text:
        return False
    occurrences = text.count('"decision"')
    if occurrences == 0:
        return "decision" not in text
    if occurrences > 1:
        return False
    match = _STATED_DECISION.search(text)
    return match is not None and match.group(1) == decision


def _unaudited_text(hitl_id: str, decision: str | None, decided_by: str | None) -> str:
    return f"request {hitl_id} says {decision} by {decided_by}, which no audit row records (changed in hitl_requests)"


def _response_problem(hitl_id: str, decision: str | None, response: Any) -> str | None:
    stated = response.get("decision") if isinstance(response, dict) else None
    if stated is not None and stated != decision:
        return f"request {hitl_id}'s stored response says {stated}, its audited decision is {decision}"
    return None
