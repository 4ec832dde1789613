"""Store throughput: create + respond pairs per second, SQLHITLBackend against raw ``sqlite3``.

Both sides write the same rows into the same schema (made by the real migrations):
create = one ``BEGIN IMMEDIATE`` transaction inserting the session and the invocation if absent and
the pending request; respond = one ``BEGIN IMMEDIATE`` transaction doing the compare-and-set UPDATE,
the hash-chained audit row and the audit head. Same pragmas (WAL, synchronous=NORMAL, busy_timeout,
foreign_keys=ON), one commit per create and per respond. Ours goes through the public async API
(``await backend.create`` / ``await backend.respond``, each run on the backend's database thread);
the raw side is a plain synchronous loop on one connection, with no thread hop at all.

Rounds alternate the two sides on fresh databases; the goal is the median of the per-round ratios.
After the run both databases are checked to hold the same rows and a valid audit chain.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from common import Goal, clock, new_database, report, settle

from reviewer_app.domain.decisions import args_digest
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.engine import BUSY_TIMEOUT_MS
from reviewer_app.persistence.store import AUDIT_HEAD_KEY, GENESIS_HASH, Store, audit_row_hash, summarize_request

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


def run_ours(path: Path, warmup: list[dict[str, Any]], items: list[dict[str, Any]]) -> float:
    """Seconds for ``items`` through the backend's async API (after a warm-up on the same DB)."""

    async def main() -> float:
        backend = SQLHITLBackend(path, reviewer="bench")
        try:
            await _ours(backend, warmup)
            settle()
            start = clock()
            await _ours(backend, items)
            return clock() - start
        finally:
            await backend.aclose()

    return asyncio.run(main())


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
    " VALUES (?, ?, ?, ?, ?, ?, NULL, 'pending', 'response', NULL, NULL, ?, ?, NULL, NULL, NULL, NULL, ?, ?, ?, ?, ?)"
    " ON CONFLICT (hitl_id) DO NOTHING"
)
DECIDE = (
    "UPDATE hitl_requests SET status = 'completed', user_response = ?, responded_at = ?, updated_at = ?,"
    " updated_at_ms = ?, decision = ?, decided_by = ? WHERE hitl_id = ? AND status = 'pending'"
    " RETURNING hitl_type, data"
)
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


def _raw(connection: sqlite3.Connection, items: list[dict[str, Any]]) -> None:
    execute = connection.execute
    for item in items:
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
            head = execute("SELECT value FROM reviewer_meta WHERE key = ?", (AUDIT_HEAD_KEY,)).fetchone()
            if head is None:
                execute("INSERT INTO reviewer_meta (key, value) VALUES (?, ?)", (AUDIT_HEAD_KEY, f"0:{GENESIS_HASH}"))
                count, prev_hash = 0, GENESIS_HASH
            else:
                count_text, _, prev_hash = head[0].partition(":")
                count = int(count_text)
            shown_sha = args_digest(shown)
            fields = {
                "hitl_id": item["hitl_id"],
                "decision": "approve",
                "reviewer": reviewer,
                "at_ms": ms,
                "shown_args_sha256": shown_sha,
                "edited_args": None,
                "message": None,
            }
            row_hash = audit_row_hash(prev_hash, fields)
            execute(
                INSERT_AUDIT,
                (item["hitl_id"], "approve", reviewer, ms, json.dumps(shown), shown_sha, None, None, prev_hash, row_hash),
            )
            execute("UPDATE reviewer_meta SET value = ? WHERE key = ?", (f"{count + 1}:{row_hash}", AUDIT_HEAD_KEY))
            execute("COMMIT")
        except BaseException:
            execute("ROLLBACK")
            raise


def run_raw(path: Path, warmup: list[dict[str, Any]], items: list[dict[str, Any]]) -> float:
    connection = raw_connect(path)
    try:
        _raw(connection, warmup)
        settle()
        start = clock()
        _raw(connection, items)
        return clock() - start
    finally:
        connection.close()


# -- checks -------------------------------------------------------------------------------------
def table_counts(path: Path) -> dict[str, int]:
    connection = sqlite3.connect(path)
    try:
        return {
            table: connection.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("sessions", "invocations", "hitl_requests", "audit_log")
        }
    finally:
        connection.close()


def check_same_rows(ours: Path, raw: Path) -> None:
    """Both sides must have written the same rows, and both audit chains must verify."""
    if table_counts(ours) != table_counts(raw):
        raise SystemExit(f"row counts differ: ours {table_counts(ours)} raw {table_counts(raw)}")
    for path in (ours, raw):
        store = Store.open(path)
        try:
            verdict = store.verify_audit()
            if not verdict.ok:
                raise SystemExit(f"audit chain of {path.name} does not verify: {verdict}")
            sample = store.get_request("x-h7")
            if sample is None or sample["status"] != "completed" or sample["user_response"]["decision"] != "approve":
                raise SystemExit(f"{path.name}: request x-h7 was not completed as expected: {sample}")
        finally:
            store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000, help="timed create+respond pairs per round and side")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--side", choices=("both", "ours", "raw"), default="both", help="for profiling one side")
    args = parser.parse_args()

    warmup = workload(100, "w")
    items = workload(args.pairs, "x")
    ratios, ours_rates, raw_rates = [], [], []
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-") as tmp:
        base = Path(tmp)
        for round_index in range(args.rounds):
            ours_db = new_database(base / "ours.db")
            raw_db = new_database(base / "raw.db")
            order = ("raw", "ours") if round_index % 2 == 0 else ("ours", "raw")
            seconds: dict[str, float] = {}
            for side in order:
                if args.side not in ("both", side):
                    continue
                seconds[side] = (run_raw if side == "raw" else run_ours)(
                    raw_db if side == "raw" else ours_db, warmup, items
                )
            if args.side != "both":
                side = args.side
                print(f"round {round_index + 1}: {side} {args.pairs / seconds[side]:8.0f} pairs/s")
                continue
            check_same_rows(ours_db, raw_db)
            ours_rate, raw_rate = args.pairs / seconds["ours"], args.pairs / seconds["raw"]
            ours_rates.append(ours_rate)
            raw_rates.append(raw_rate)
            ratios.append(ours_rate / raw_rate)
            print(
                f"round {round_index + 1}: ours {ours_rate:8.0f} pairs/s   raw sqlite3 {raw_rate:8.0f} pairs/s"
                f"   ratio {ours_rate / raw_rate:.2f}",
                flush=True,
            )
    if args.side != "both":
        return
    ratio = statistics.median(ratios)
    details = {
        "pairs_per_round": args.pairs,
        "rounds": args.rounds,
        "ours_pairs_per_s": statistics.median(ours_rates),
        "raw_pairs_per_s": statistics.median(raw_rates),
        "ratio_median": ratio,
    }
    print(
        f"store throughput: ours {details['ours_pairs_per_s']:.0f} pairs/s, raw sqlite3 {details['raw_pairs_per_s']:.0f}"
        f" pairs/s (medians of {args.rounds} rounds x {args.pairs} pairs)"
    )
    report([Goal("store_throughput_vs_raw", ratio, 0.5, "x", at_least=True)], details, bench="store_throughput")


if __name__ == "__main__":
    main()
