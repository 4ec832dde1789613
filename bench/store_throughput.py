"""Store throughput: create + respond pairs per second, SQLHITLBackend against raw ``sqlite3``.

Both sides write the same rows into the same schema (made by the real migrations):
create = one ``BEGIN IMMEDIATE`` transaction inserting the session and the invocation if absent and
the pending request; respond = one ``BEGIN IMMEDIATE`` transaction doing the compare-and-set UPDATE,
the keyed, hash-chained audit row (the chain's meta rows read, HMAC with the audit key) and the audit head,
then the new head anchored in the anchor file outside the database (both sides append it with the same
``AuditSeal.anchor``). Same pragmas (WAL, synchronous=NORMAL, busy_timeout,
foreign_keys=ON), one commit per create and per respond. Ours goes through the public async API
(``await backend.create`` / ``await backend.respond``, each run on the backend's database thread);
the raw side is a plain synchronous loop on one connection, with no thread hop at all.

The two sides alternate in chunks of pairs (so both meet the same machine load); the goal is the
ratio of their fastest chunks, the figure least disturbed by other work on a shared machine (the
whole-run ratio is printed too, and the CPU time the process spent per pair on each side, every thread
counted: the figure least moved by other load, though it misses what waiting for a wake-up costs). Two
diagnostic sides split our time: the raw writes awaited on the
backend's database thread (what the thread hop costs) and the Store called synchronously (what
the store layer costs); they do not enter the goal. After the run both databases are checked to hold the same rows and
a valid audit chain.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from common import WRITE_MODES, Goal, add_write_mode_option, clock, load_average, new_database, report, settle

from reviewer_app.domain.audit import (
    AUDIT_HEAD_KEY,
    AUDIT_KEY_ID_KEY,
    AUDIT_KEYED_FROM_KEY,
    DATABASE_ID_KEY,
    audit_fields,
    audit_row_hash,
    chain_meta_defaults,
)
from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.records import NewRequest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.audit_seal import AuditSeal
from reviewer_app.persistence.engine import BUSY_TIMEOUT_MS
from reviewer_app.persistence.store import Store, summarize_request

SESSIONS = 50
INVOCATIONS = 200
SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}


def workload(n: int, prefix: str) -> list[dict[str, Any]]:
    """``n`` tool approvals spread over a few sessions and invocations, as an agent would raise them."""
    items = []
    for i in range(n):
        invocation = i % INVOCATIONS
        arguments = {"path": f"notes/file_{i}.txt", "content": f"line {i}\n" * 20}
        items.append(
            {
                "hitl_id": f"{prefix}-h{i}",
                "session_id": f"{prefix}-s{invocation % SESSIONS}",
                "invocation_id": f"{prefix}-i{invocation}",
                "data": {"arguments": arguments, "schema": SCHEMA},
                "metadata": {"agent": "bench"},
                "tool_name": "write_file",
                "tool_call_id": f"call_{i}",
                "response": {"decision": "approve", "args_sha256": args_digest(arguments), "reviewer": "bench"},
            }
        )
    return items


# -- ours ---------------------------------------------------------------------------------------
async def _ours(backend: SQLHITLBackend, items: list[dict[str, Any]]) -> None:
    for item in items:
        await backend.create(
            hitl_id=item["hitl_id"],
            hitl_type="tool_approval",
            session_id=item["session_id"],
            invocation_id=item["invocation_id"],
            data=item["data"],
            metadata=item["metadata"],
            tool_name=item["tool_name"],
            tool_call_id=item["tool_call_id"],
        )
        await backend.respond(item["hitl_id"], item["response"])


# -- raw sqlite3 --------------------------------------------------------------------------------
INSERT_SESSION = (
    "INSERT INTO sessions (id, agent, workspace, external, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (id) DO NOTHING"
)
INSERT_INVOCATION = (
    "INSERT INTO invocations (id, session_id, agent, prompt, state, parent_id, external, owner, created_at,"
    " started_at, updated_at_ms, active_ms) VALUES (?, ?, ?, NULL, 'running', NULL, ?, NULL, ?, ?, ?, 0)"
    " ON CONFLICT (id) DO NOTHING"
)
INSERT_REQUEST = (
    "INSERT INTO hitl_requests (hitl_id, hitl_type, session_id, invocation_id, data, metadata, block_id, status,"
    " resume_mode, tool_state, checkpoint_id, tool_name, tool_call_id, node_id, expires_at, user_response,"
    " responded_at, created_at, updated_at, updated_at_ms, summary, agent)"
    " VALUES (?, ?, ?, ?, ?, ?, NULL, 'pending', 'response', 'null', NULL, ?, ?, NULL, NULL, 'null', NULL,"
    " ?, ?, ?, ?, ?)"
    " ON CONFLICT (hitl_id) DO NOTHING"
)
DECIDE = (
    "UPDATE hitl_requests SET status = 'completed', user_response = ?, responded_at = ?, updated_at = ?,"
    " updated_at_ms = ?, decision = ?, decided_by = ? WHERE hitl_id = ? AND status = 'pending'"
    " RETURNING hitl_type, data"
)
CHAIN_KEYS = (AUDIT_HEAD_KEY, AUDIT_KEY_ID_KEY, AUDIT_KEYED_FROM_KEY, DATABASE_ID_KEY)
SELECT_CHAIN_META = "SELECT key, value FROM reviewer_meta WHERE key IN (?, ?, ?, ?)"
INSERT_META = "INSERT INTO reviewer_meta (key, value) VALUES (?, ?)"
JSON_NULL = "null"  # SQLAlchemy's JSON type stores Python None as JSON null, not SQL NULL
INSERT_AUDIT = (
    "INSERT INTO audit_log (hitl_id, decision, reviewer, at_ms, shown_args, shown_args_sha256, edited_args, message,"
    " prev_hash, row_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def raw_connect(path: Path) -> sqlite3.Connection:
    """The same pragmas the app's engine applies, autocommit off so we say BEGIN IMMEDIATE ourselves."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute("PRAGMA synchronous = NORMAL")
    connection.execute("PRAGMA foreign_keys = ON")
    return connection


def _raw(connection: sqlite3.Connection, chain: RawChain, items: list[dict[str, Any]]) -> None:
    for item in items:
        raw_create(connection, item)
        raw_respond(connection, item, chain)


def raw_create(connection: sqlite3.Connection, item: dict[str, Any]) -> None:
    """Session and invocation if absent, then the pending request: one committed transaction."""
    execute = connection.execute
    data, metadata = item["data"], item["metadata"]
    agent = metadata.get("agent")
    ms = time.time_ns() // 1_000_000
    execute("BEGIN IMMEDIATE")
    try:
        execute(INSERT_SESSION, (item["session_id"], agent, None, False, ms // 1000, ms // 1000))
        execute(
            INSERT_INVOCATION,
            (item["invocation_id"], item["session_id"], agent, False, ms // 1000, ms // 1000, ms),
        )
        cursor = execute(
            INSERT_REQUEST,
            (
                item["hitl_id"],
                "tool_approval",
                item["session_id"],
                item["invocation_id"],
                json.dumps(data),
                json.dumps(metadata),
                item["tool_name"],
                item["tool_call_id"],
                ms // 1000,
                ms // 1000,
                ms,
                summarize_request("tool_approval", data, item["tool_name"]),
                agent,
            ),
        )
        if cursor.rowcount != 1:
            raise RuntimeError(f"request {item['hitl_id']} already exists")
        execute("COMMIT")
    except BaseException:
        execute("ROLLBACK")
        raise


class RawChain:
    """What the raw side needs to extend a keyed audit chain as the store does: the audit key, the anchor file and
    the database's name in it (the same :class:`AuditSeal` files the store uses)."""

    def __init__(self, path: Path) -> None:
        self.seal = AuditSeal.default()
        self.key = self.seal.key
        self.key_id = self.seal.key_id
        self.url = str(path.resolve())


def raw_respond(connection: sqlite3.Connection, item: dict[str, Any], chain: RawChain) -> None:
    """Compare-and-set the request, append the keyed, hash-chained audit row, move the audit head: one
    transaction; then anchor the new head outside the database, as every decision is."""
    execute = connection.execute
    response = item["response"]
    reviewer = response["reviewer"]
    ms = time.time_ns() // 1_000_000
    execute("BEGIN IMMEDIATE")
    try:
        row = execute(
            DECIDE, (json.dumps(response), ms // 1000, ms // 1000, ms, "approve", reviewer, item["hitl_id"])
        ).fetchone()
        if row is None:
            raise RuntimeError(f"request {item['hitl_id']} is not pending")
        shown = json.loads(row[1]).get("arguments")
        meta = dict(execute(SELECT_CHAIN_META, CHAIN_KEYS).fetchall())
        if len(meta) < len(CHAIN_KEYS):  # the first decision starts the keyed chain
            missing = chain_meta_defaults(meta, chain.key_id, uuid.uuid4().hex)
            connection.executemany(INSERT_META, list(missing.items()))
            meta.update(missing)
        count_text, _, prev_hash = meta[AUDIT_HEAD_KEY].partition(":")
        count = int(count_text) + 1
        shown_sha = args_digest(shown)
        fields = audit_fields(item["hitl_id"], "approve", reviewer, ms, shown_sha, None, None)
        row_hash = audit_row_hash(prev_hash, fields, chain.key)
        execute(
            INSERT_AUDIT,
            (
                item["hitl_id"],
                "approve",
                reviewer,
                ms,
                json.dumps(shown),
                shown_sha,
                JSON_NULL,
                None,
                prev_hash,
                row_hash,
            ),
        )
        execute("UPDATE reviewer_meta SET value = ? WHERE key = ?", (f"{count}:{row_hash}", AUDIT_HEAD_KEY))
        execute("COMMIT")
    except BaseException:
        execute("ROLLBACK")
        raise
    chain.seal.anchor(meta[DATABASE_ID_KEY], count, row_hash, chain.url)


# -- checks -------------------------------------------------------------------------------------
# Columns that hold the clock (and hashes over it) differ between the runs; everything else must match.
CLOCK_COLUMNS = {
    "created_at",
    "updated_at",
    "updated_at_ms",
    "responded_at",
    "started_at",
    "at_ms",
    "prev_hash",
    "row_hash",
    "user_response",  # holds no clock, but compared parsed below (key order is free in JSON)
}
TABLES = {"sessions": "id", "invocations": "id", "hitl_requests": "hitl_id", "audit_log": "id"}


def table_rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    connection = sqlite3.connect(path)
    try:
        rows = {}
        for table, key in TABLES.items():
            columns = [r[1] for r in connection.execute(f"PRAGMA table_info({table})") if r[1] not in CLOCK_COLUMNS]
            rows[table] = connection.execute(f"SELECT {', '.join(columns)} FROM {table} ORDER BY {key}").fetchall()
        rows["responses"] = [
            (hitl_id, json.loads(text) if text is not None else None)
            for hitl_id, text in connection.execute("SELECT hitl_id, user_response FROM hitl_requests ORDER BY hitl_id")
        ]
        return rows
    finally:
        connection.close()


def check_same_rows(ours: Path, raw: Path) -> None:
    """Both sides must have written the same rows (clock columns aside), and both audit chains must verify."""
    ours_rows, raw_rows = table_rows(ours), table_rows(raw)
    for table in ours_rows:
        if len(ours_rows[table]) != len(raw_rows[table]):
            raise SystemExit(f"{table}: {len(ours_rows[table])} rows against {len(raw_rows[table])} on the raw side")
        if ours_rows[table] != raw_rows[table]:
            diff = next((a, b) for a, b in zip(ours_rows[table], raw_rows[table], strict=False) if a != b)
            raise SystemExit(f"{table}: the two sides wrote different rows, e.g. ours {diff[0]} raw {diff[1]}")
    for path in (ours, raw):
        store = Store.open(path)
        try:
            verdict = store.audit.verify()
            if not verdict.ok:
                raise SystemExit(f"audit chain of {path.name} does not verify: {verdict}")
            sample = store.requests.get("x-h7")
            if sample is None or sample["status"] != "completed" or sample["user_response"]["decision"] != "approve":
                raise SystemExit(f"{path.name}: request x-h7 was not completed as expected: {sample}")
        finally:
            store.close()


def _store_sync(store: Store, items: list[dict[str, Any]]) -> None:
    """The store layer alone: the same two transactions, called directly (no thread, no event loop)."""
    for item in items:
        with store.transaction() as tx:
            tx.requests.create(
                NewRequest(
                    hitl_id=item["hitl_id"],
                    hitl_type="tool_approval",
                    session_id=item["session_id"],
                    invocation_id=item["invocation_id"],
                    data=item["data"],
                    metadata=item["metadata"],
                    tool_name=item["tool_name"],
                    tool_call_id=item["tool_call_id"],
                )
            )
        with store.transaction() as tx:
            tx.requests.decide(item["hitl_id"], item["response"], reviewer=item["response"]["reviewer"])


async def _raw_via_db_thread(
    backend: SQLHITLBackend, connection: sqlite3.Connection, chain: RawChain, items: list[dict[str, Any]]
) -> None:
    """Raw sqlite3 writes, each transaction awaited on the backend's database thread (the hop alone)."""
    for item in items:
        await backend.run(raw_create, connection, item)
        await backend.run(raw_respond, connection, item, chain)


SIDES = ("ours", "raw")
DIAGNOSTIC_SIDES = ("raw_via_db_thread", "store_sync")
LABELS = {
    "ours": "ours (SQLHITLBackend, async API)",
    "raw": "raw sqlite3, same rows",
    "raw_via_db_thread": "diagnostic: raw sqlite3 awaited on the DB thread",
    "store_sync": "diagnostic: Store transactions, no thread",
}


def _database_thread_clock(backend: SQLHITLBackend) -> int:
    """The CPU clock of the backend's database thread."""
    return time.pthread_getcpuclockid(backend._db_thread._thread.ident or 0)


async def measure(
    paths: dict[str, Path],
    items: list[dict[str, Any]],
    chunk: int,
    sides: tuple[str, ...],
    mode: str = "thread",
    counts: dict[str, int] | None = None,
    on_database_thread: dict[str, float] | None = None,
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Alternate chunks of pairs between the sides so all of them meet the same machine load; returns each
    side's chunk durations and the CPU time the process spent on it (every thread). ``mode`` ``loop``: our
    backend is made with ``writes_on_loop`` (write transactions on the loop's own thread); ``counts`` is told how
    many of its write transactions committed there; ``on_database_thread``, the CPU time of the sides that hop
    spent on their backend's database thread."""
    backend = SQLHITLBackend(paths["ours"], reviewer="bench", writes_on_loop=mode == "loop")
    raw, raw_chain = raw_connect(paths["raw"]), RawChain(paths["raw"])
    helper = SQLHITLBackend(paths["raw_via_db_thread"], reviewer="bench") if "raw_via_db_thread" in sides else None
    hop_raw = raw_connect(paths["raw_via_db_thread"]) if helper is not None else None
    hop_chain = RawChain(paths["raw_via_db_thread"])
    store = Store.open(paths["store_sync"]) if "store_sync" in sides else None

    async def run(side: str, part: list[dict[str, Any]]) -> None:
        if side == "ours":
            await _ours(backend, part)
        elif side == "raw":
            _raw(raw, raw_chain, part)
        elif side == "raw_via_db_thread":
            assert helper is not None and hop_raw is not None
            await _raw_via_db_thread(helper, hop_raw, hop_chain, part)
        else:
            assert store is not None
            _store_sync(store, part)

    try:
        warmup = workload(100, "w")
        for side in sides:
            await run(side, warmup)
        seconds: dict[str, list[float]] = {side: [] for side in sides}
        cpu: dict[str, float] = dict.fromkeys(sides, 0.0)
        clocks = {"ours": _database_thread_clock(backend)}
        if helper is not None:
            clocks["raw_via_db_thread"] = _database_thread_clock(helper)
        threaded = on_database_thread if on_database_thread is not None else {}
        threaded.update(dict.fromkeys(clocks, 0.0))
        for index, start in enumerate(range(0, len(items), chunk)):
            part = items[start : start + chunk]
            settle()
            order = sides if index % 2 == 0 else tuple(reversed(sides))
            for side in order:
                side_clock = clocks.get(side)
                began_thread = time.clock_gettime(side_clock) if side_clock is not None else 0.0
                began, began_cpu = clock(), time.process_time()
                await run(side, part)
                seconds[side].append(clock() - began)
                cpu[side] += time.process_time() - began_cpu
                if side_clock is not None:
                    threaded[side] += time.clock_gettime(side_clock) - began_thread
        if counts is not None:
            counts["writes"] = 2 * (len(items) + len(warmup))
            counts["committed_on_loop"] = backend.writes_committed_on_loop or 0
        return seconds, cpu
    finally:
        raw.close()
        await backend.aclose()
        if hop_raw is not None:
            hop_raw.close()
        if helper is not None:
            await helper.aclose()
        if store is not None:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5000, help="timed create+respond pairs per side")
    parser.add_argument("--chunk", type=int, default=100, help="pairs per alternation between the sides")
    parser.add_argument(
        "--no-diagnostics", action="store_true", help="skip the two sides that split our time into hop and store"
    )
    add_write_mode_option(parser)
    args = parser.parse_args()

    sides = SIDES if args.no_diagnostics else SIDES + DIAGNOSTIC_SIDES
    load_before = os.getloadavg()[0]
    items = workload(args.pairs, "x")
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-") as tmp:
        # Both sides key their chain with one audit key and anchor it in this run's own directory.
        os.environ.setdefault("REVIEWER_AUDIT_KEY_FILE", str(Path(tmp) / "audit.key"))
        os.environ.setdefault("REVIEWER_AUDIT_ANCHOR_DIR", str(Path(tmp) / "anchors"))
        paths = {side: new_database(Path(tmp) / f"{side}.db") for side in SIDES + DIAGNOSTIC_SIDES}
        counts: dict[str, int] = {}
        threaded: dict[str, float] = {}
        seconds, cpu = asyncio.run(measure(paths, items, args.chunk, sides, args.mode, counts, threaded))
        for side in sides:
            if side != "raw":
                check_same_rows(paths[side], paths["raw"])
    # Two figures per side: the whole run, and its fastest chunk (the least disturbed by other load on a
    # shared machine, where a busy CPU slows the single-threaded raw loop more than our waiting threads).
    rates = {side: args.pairs / sum(seconds[side]) for side in sides}
    best = {side: chunk_size(args, len(seconds[side])) / min(seconds[side]) for side in sides}
    ratio_total = rates["ours"] / rates["raw"]
    ratio_best = best["ours"] / best["raw"]
    chunk_ratios = [r / o for o, r in zip(seconds["ours"], seconds["raw"], strict=True)]
    details: dict[str, Any] = {"pairs": args.pairs, "chunk": args.chunk, "ratio_best_chunks": ratio_best}
    details["mode"] = args.mode
    details["ratio_whole_run"] = ratio_total
    details["chunk_ratio_median"] = statistics.median(chunk_ratios)
    details["loadavg_before"] = load_before
    print(
        f"store throughput, {args.pairs} create+respond pairs per side (alternating chunks of {args.chunk}), "
        f"ours writing {WRITE_MODES[args.mode]}, {load_average()}:"
    )
    print(f"  {'':50s} {'whole run':>17s}   {'fastest chunk':>17s}   {'CPU per pair':>12s}")
    for side in sides:
        details[f"{side}_pairs_per_s"] = rates[side]
        details[f"{side}_best_pairs_per_s"] = best[side]
        details[f"{side}_cpu_us_per_pair"] = cpu[side] / args.pairs * 1e6
        print(
            f"  {LABELS[side]:50s} {rates[side]:7.0f} pairs/s ({1e6 / rates[side]:4.0f} us)"
            f"  {best[side]:7.0f} pairs/s ({1e6 / best[side]:4.0f} us)  {cpu[side] / args.pairs * 1e6:8.0f} us"
        )
    details["cpu_ratio"] = cpu["raw"] / cpu["ours"]
    print(
        f"  ratio ours/raw: fastest chunks {ratio_best:.2f}, whole run {ratio_total:.2f},"
        f" median of chunk ratios {details['chunk_ratio_median']:.2f}, CPU {details['cpu_ratio']:.2f}"
        f" (load average {load_before:.2f} before)"
    )
    split = "; ".join(
        f"{LABELS[side].partition(' (')[0].removeprefix('diagnostic: ')} {threaded[side] / args.pairs * 1e6:.0f} us"
        f" of {cpu[side] / args.pairs * 1e6:.0f}"
        for side in sides
        if side in threaded
    )
    print(f"  CPU per pair on the database thread (the rest: the loop's and the checkpoints' threads): {split}")
    for side, seconds_there in threaded.items():
        details[f"{side}_database_thread_cpu_us_per_pair"] = seconds_there / args.pairs * 1e6
    if args.mode == "loop":
        details["writes_committed_on_loop"] = counts["committed_on_loop"]
        print(
            f"  ours: {counts['committed_on_loop']} of {counts['writes']} write transactions committed on the loop's"
            " thread (the rest met a reason to go to the database thread: see hitl/loop_writes.py)"
        )
    goal = Goal("store_throughput_vs_raw", ratio_best, 0.6, "x", at_least=True)  # issue #29
    report([goal], details, bench="store_throughput")


def chunk_size(args: argparse.Namespace, chunks: int) -> int:
    """Pairs per chunk (the timed pairs divide evenly into chunks with the defaults)."""
    return args.pairs // chunks


if __name__ == "__main__":
    main()
