"""PostgreSQL at team scale (issue 29, item 7): a million decisions, and 20 reviewers x 200 agents on one server.

Part 1, history at scale: ``--decisions`` (default 1,000,000) decided requests with their keyed audit chain are
bulk-loaded with ``COPY`` (the history-search trigger indexes each audit row, as in use), then timed through the
app's own functions, each next to a reference doing the same work with raw psycopg in the same run:

* ``pg_history_search_p50_ms``: ``SQLHITLBackend.history_page`` for a typed word (prefix search, one page of 100);
  reference: the same SQL text executed with psycopg;
* ``pg_audit_verify_s``: ``reviewer-app --db URL audit verify`` (a fresh process, the whole chain, with its worker
  processes; printed beside it: in one process, ``REVIEWER_AUDIT_WORKERS=0``); reference: reading every audit row
  with a psycopg server-side cursor (the I/O floor of any verification);
* ``pg_stats_all_ms``: ``SQLHITLBackend.decision_stats`` over the whole history (and, printed, the last 24 hours,
  whose partial edge hours are read from the requests); reference: a raw ``GROUP BY`` over every request.

Part 2, a team on one server: ``--reviewers`` (20) reviewer processes decide the requests raised by ``--agents``
(200) agent tasks spread over ``--agent-processes`` (4) processes, each agent raising ``--rounds`` requests one
after the other and waiting for each decision (``wait_for_response``, LISTEN/NOTIFY). Reviewers list the queue
(``summary_page``) when the feed wakes them and decide one request of it at a time, picked at random
(compare-and-set). Measured: wake-up p50/p99
(request committed -> first seen by a reviewer; decision committed -> seen by its agent), CAS conflicts counted;
asserted: every request decided exactly once (one audit row, the agent's outcome is the winner's), none lost.

With ``BENCH_STAMPS=1`` each agent process also stamps its wake path (NOTIFY received, loop woken, look-up
submitted, its query begun and done, back on the loop) and the run prints where a decision's time went.

The server is a throw-away cluster from ``tests/pg_server.py`` (``fsync`` off). Prints the load average with
each figure. ``--decisions 200000`` keeps the load to about a minute on 2 loaded cores.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from common import REPO_ROOT, Goal, describe_ms, load_average_text, percentile, report
from history import AGENTS, SEARCH_WORDS, synthetic_decision

CHUNK = 50_000
TARGET_SEARCH_MS = 100.0
TARGET_VERIFY_S = 10.0  # per million decisions (scaled by --decisions)
TARGET_STATS_MS = 1000.0
TARGET_WAKE_P50_MS = 50.0
TARGET_WAKE_P99_MS = 250.0
RESULT_PREFIX = "BENCH_RESULT "


# -- part 1: the million ------------------------------------------------------------------------------------
def _copy_text(rows: list[tuple[Any, ...]]) -> str:
    """Rows in COPY's text format (tab separated, ``\\N`` for NULL, backslash escapes)."""
    out = io.StringIO()
    for row in rows:
        cells = []
        for value in row:
            if value is None:
                cells.append("\\N")
                continue
            text = str(value).lower() if isinstance(value, bool) else str(value)
            cells.append(text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r"))
        out.write("\t".join(cells) + "\n")
    return out.getvalue()


def load(url: str, seal: Any, rows: int) -> float:
    """``rows`` decided requests with their audit chain, by COPY; returns the seconds it took."""
    import psycopg

    from reviewer_app.domain.audit import AUDIT_HEAD_KEY, DATABASE_ID_KEY, audit_fields, audit_row_hash
    from reviewer_app.domain.decisions import args_digest
    from reviewer_app.domain.records import NewRequest
    from reviewer_app.persistence.store import Store, summarize_request

    began = time.monotonic()
    store = Store.open(url, seal=seal)
    login = store.database_login() or "postgres"
    with store.transaction() as tx:  # one decision through the store: the chain's meta rows and its key id
        tx.requests.create(
            NewRequest("h0", "tool_approval", "s0", "i0", data={"arguments": {"command": "true"}}, tool_name="Bash")
        )
        tx.requests.decide(
            "h0", {"decision": "approve", "args_sha256": args_digest({"command": "true"})}, reviewer=login
        )
    store.close()

    reviewers = tuple(f"{login} ({name})" for name in ("Dana", "Erin", "Alex", "Sam"))
    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    rng = random.Random(29)
    with psycopg.connect(conninfo) as raw:
        meta = dict(raw.execute("SELECT key, value FROM reviewer_meta").fetchall())
        count_text, _, head = meta[AUDIT_HEAD_KEY].partition(":")
        position = int(count_text)
        now_ms = int(time.time() * 1000) - rows * 1000
        sessions, invocations = max(1, rows // 1000), max(1, rows // 100)
        with raw.cursor() as cur:
            with cur.copy("COPY sessions (id, agent, external, created_at, updated_at) FROM STDIN") as copy:
                copy.write(
                    _copy_text(
                        [(f"bs{i}", AGENTS[i % 5], True, now_ms // 1000, now_ms // 1000) for i in range(sessions)]
                    )
                )
            with cur.copy(
                "COPY invocations (id, session_id, agent, prompt, state, external, created_at, updated_at_ms,"
                " active_ms) FROM STDIN"
            ) as copy:
                copy.write(
                    _copy_text(
                        [
                            (
                                f"bi{i}",
                                f"bs{i % sessions}",
                                AGENTS[i % 5],
                                "bench run",
                                "done",
                                True,
                                now_ms // 1000,
                                now_ms,
                                0,
                            )
                            for i in range(invocations)
                        ]
                    )
                )
            for first in range(1, rows, CHUNK):  # requests before their audit rows: the index trigger joins them
                requests, audit = [], []
                for i in range(first, min(rows, first + CHUNK)):
                    drawn = synthetic_decision(i, rng, reviewers, f"{login}/system:expiry")
                    tool, shown, data, kind = drawn.tool, drawn.shown, drawn.data, drawn.kind
                    edited, message, reviewer = drawn.edited, drawn.message, drawn.reviewer
                    created = now_ms + i * 1000
                    at = created + 500
                    shown_sha = args_digest(shown)
                    row_hash = audit_row_hash(
                        head, audit_fields(f"h{i}", kind, reviewer, at, shown_sha, edited, message), seal.key
                    )
                    response = drawn.response()
                    requests.append(
                        (
                            f"h{i}",
                            "tool_approval",
                            f"bs{i % sessions}",
                            f"bi{i % invocations}",
                            json.dumps(data),
                            "{}",
                            "expired" if kind == "expire" else "completed",
                            "response",
                            tool,
                            json.dumps(response),
                            at // 1000,
                            created // 1000,
                            at // 1000,
                            at,
                            summarize_request("tool_approval", data, tool),
                            AGENTS[i % len(AGENTS)],
                            kind,
                            reviewer,
                            True,
                        )
                    )
                    shown_text, edited_text = json.dumps(shown), json.dumps(edited)
                    audit.append(
                        (f"h{i}", kind, reviewer, at, shown_text, shown_sha, edited_text, message, head, row_hash)
                    )
                    head = row_hash
                    position += 1
                with cur.copy(
                    "COPY hitl_requests (hitl_id, hitl_type, session_id, invocation_id, data, metadata, status,"
                    " resume_mode, tool_name, user_response, responded_at, created_at, updated_at, updated_at_ms,"
                    " summary, agent, decision, decided_by, external) FROM STDIN"
                ) as copy:
                    copy.write(_copy_text(requests))
                with cur.copy(
                    "COPY audit_log (hitl_id, decision, reviewer, at_ms, shown_args, shown_args_sha256, edited_args,"
                    " message, prev_hash, row_hash) FROM STDIN"
                ) as copy:
                    copy.write(_copy_text(audit))
                raw.commit()
                print(f"  loaded {min(rows, first + CHUNK):,} decisions ({load_average_text()})", flush=True)
            cur.execute("UPDATE reviewer_meta SET value = %s WHERE key = %s", (f"{position}:{head}", AUDIT_HEAD_KEY))
        raw.commit()
        raw.execute("ANALYZE")
        raw.commit()
    store = Store.open(url, seal=seal)
    seal.anchor(meta[DATABASE_ID_KEY], position, head, store.identity_url)
    store.close()
    return time.monotonic() - began


def _pyformat(sql: str) -> str:
    """SQLAlchemy ``:name`` parameters as psycopg's ``%(name)s``."""
    import re

    return re.sub(r"(?<![:\w]):(\w+)", r"%(\1)s", sql.replace("%", "%%"))


async def history_figures(url: str, seal: Any) -> dict[str, Any]:
    """Search, statistics and verification through the app, each beside its raw psycopg reference."""
    import psycopg

    from reviewer_app.domain.history import HistoryQuery, search_terms
    from reviewer_app.hitl import SQLHITLBackend
    from reviewer_app.persistence.store import Store
    from reviewer_app.persistence.store.history import page_sql

    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    typed = [word[:n] for word in SEARCH_WORDS for n in range(2, len(word) + 1)]
    app_ms, raw_ms = [], []
    store = Store.open(url, seal=seal)
    async with SQLHITLBackend(store=store) as backend:
        with psycopg.connect(conninfo, autocommit=True) as raw:
            for text in typed * 2:  # alternate app and reference, text by text
                began = time.perf_counter()
                page = await backend.history_page(HistoryQuery(text=text), limit=100)
                app_ms.append((time.perf_counter() - began) * 1000)
                sql, params = page_sql("postgresql", HistoryQuery(text=text), search_terms(text), False)
                from reviewer_app.persistence.store.history import tsquery_text

                params.update(match=tsquery_text(search_terms(text)), limit=101)
                began = time.perf_counter()
                rows = raw.execute(_pyformat(sql), params).fetchall()
                raw_ms.append((time.perf_counter() - began) * 1000)
                assert len(page.entries) == min(100, len(rows)), (text, len(page.entries), len(rows))
            stats_app, stats_day, stats_raw = [], [], []
            for _ in range(3):
                began = time.perf_counter()
                stats = await backend.decision_stats(since_s=None)
                stats_app.append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()  # the last 24 hours: whole hours counted, the partial edges from rows
                await backend.decision_stats(since_s=int(time.time()) - 86_400)
                stats_day.append((time.perf_counter() - began) * 1000)
                began = time.perf_counter()
                raw.execute(
                    "SELECT decision, agent, tool_name, count(*), avg(responded_at - created_at) FROM hitl_requests"
                    " WHERE status <> 'pending' GROUP BY decision, agent, tool_name"
                ).fetchall()
                stats_raw.append((time.perf_counter() - began) * 1000)
            began = time.perf_counter()
            with raw.transaction(), raw.cursor(name="floor") as cur:
                cur.itersize = 10_000
                cur.execute("SELECT * FROM audit_log ORDER BY id")
                read = sum(1 for _ in cur)
            floor_s = time.perf_counter() - began
    store.close()
    print(f"  decisions in the statistics: {stats.decided + stats.expired:,}; audit rows read raw: {read:,}")
    return {
        "search_p50_ms": percentile(app_ms, 50),
        "search_p95_ms": percentile(app_ms, 95),
        "search_raw_p50_ms": percentile(raw_ms, 50),
        "stats_ms": min(stats_app),
        "stats_24h_ms": min(stats_day),
        "stats_raw_ms": min(stats_raw),
        "verify_floor_s": floor_s,
    }


def verify_seconds(url: str, directory: Path, workers: int | None = None) -> tuple[float, str]:
    """``audit verify`` in a fresh process; ``workers``: ``REVIEWER_AUDIT_WORKERS`` (None: the app's choice)."""
    env = dict(os.environ)
    if workers is not None:
        env["REVIEWER_AUDIT_WORKERS"] = str(workers)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["REVIEWER_AUDIT_KEY_FILE"] = str(directory / "audit.key")
    env["REVIEWER_AUDIT_ANCHOR_DIR"] = str(directory / "anchors")
    began = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "reviewer_app", "--db", url, "audit", "verify"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - began
    last = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
    return wall, f"exit {done.returncode}: {last[0]}"


# -- part 2: the team -----------------------------------------------------------------------------------------
def _shown(hitl_id: str) -> dict[str, str]:
    return {"command": f"make test && echo {hitl_id}"}


async def agent_process(url: str, first: int, tasks: int, rounds: int) -> None:
    """``tasks`` agents, each raising ``rounds`` requests in turn and waiting for each decision."""
    from reviewer_app.hitl import SQLHITLBackend

    seen: dict[str, Any] = {}
    async with SQLHITLBackend(url) as backend:
        stamps = _stamp_wake_path(backend) if os.environ.get("BENCH_STAMPS") else None

        async def agent(index: int) -> None:
            for round_ in range(rounds):
                hitl_id = f"a{index:03d}-{round_:03d}"
                await backend.create(
                    hitl_id=hitl_id,
                    hitl_type="tool_approval",
                    session_id=f"team-s{index}",
                    invocation_id=f"team-i{index}",
                    data={"arguments": _shown(hitl_id)},
                    metadata={"agent": f"agent{index}", "external": True},
                    tool_name="run_shell",
                )
                committed = time.time()
                record = await backend.wait_for_response(hitl_id, timeout=300)
                seen[hitl_id] = {
                    "committed": committed,
                    "answered": time.time(),
                    "decision": (record.get("user_response") or {}).get("decision"),
                    "by": (record.get("user_response") or {}).get("bench_reviewer"),
                }

        await asyncio.gather(*(agent(first + i) for i in range(tasks)))
    if stamps is not None:
        seen["__stamps__"] = stamps
    print(RESULT_PREFIX + json.dumps(seen), flush=True)


def _stamp_wake_path(backend: Any) -> dict[str, list[Any]]:
    """``BENCH_STAMPS=1``: wall-clock stamps along an agent process's wake path, to see where a decision's time
    goes: NOTIFY received on the listener thread, the loop woken, each look-up's one statement begun and done (on
    the listener thread or the look-up thread, with the ids it found), the waiters resolved back on the loop."""
    stamps: dict[str, list[Any]] = {"notified": [], "woken": [], "queries": [], "resolved": []}
    feed, lookups = backend.feed, backend._decided_lookups
    remote_change, looked_up_here, wake = feed._remote_change, feed._looked_up_here, feed._wake
    resolve = lookups._resolve

    def stamped_looked_up_here(*args: Any, **kwargs: Any) -> Any:
        stamps["notified"].append(time.time())
        return looked_up_here(*args, **kwargs)

    def stamped_remote_change(*args: Any, **kwargs: Any) -> Any:
        stamps["notified"].append(time.time())
        return remote_change(*args, **kwargs)

    def stamped_wake(*args: Any, **kwargs: Any) -> Any:
        stamps["woken"].append(time.time())
        return wake(*args, **kwargs)

    def stamped_resolve(records: Any, problems: Any) -> Any:
        stamps["resolved"].append([time.time(), [str(r["hitl_id"]) for r in records]])
        return resolve(records, problems)

    feed._remote_change, feed._looked_up_here, feed._wake = stamped_remote_change, stamped_looked_up_here, stamped_wake
    lookups._resolve = stamped_resolve
    reads = backend.store.audit
    decided_among = reads.signed_decided_among

    class StampedReads:
        def __getattr__(self, name: str) -> Any:
            return stamped_decided_among if name == "signed_decided_among" else getattr(reads, name)

    def stamped_decided_among(ids: Any) -> Any:
        began = time.time()
        records, problems = decided_among(ids)
        on_listener = threading.current_thread().name == "reviewer-pg-listen"
        stamps["queries"].append([began, time.time(), on_listener, [str(r["hitl_id"]) for r in records]])
        return records, problems

    backend.store.audit = StampedReads()
    return stamps


async def reviewer_process(url: str, index: int, stop_file: Path) -> None:
    """List the queue whenever the feed wakes, decide one request of it (compare-and-set), count conflicts."""
    from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
    from reviewer_app.domain.hitl import HITLConflict, HITLStatus
    from reviewer_app.hitl import SQLHITLBackend

    first_seen: dict[str, float] = {}
    decided: dict[str, float] = {}
    conflicts = 0
    rng = random.Random(index)
    async with SQLHITLBackend(url, reviewer=f"r{index:02d}") as backend:
        while not stop_file.exists():  # noqa: ASYNC240 - one stat per look, the bench's own stop signal
            token = backend.feed.token()
            page = await backend.summary_page((HITLStatus.PENDING.value,), limit=200)
            now = time.time()
            for summary in page:
                first_seen.setdefault(summary.hitl_id, now)
            if not page:
                await backend.feed.wait(token, 0.5)
                continue
            # One decision per look, as a person takes one request at a time: picked at random from the queue,
            # so two reviewers sometimes take the same one and one of them loses the compare-and-set.
            hitl_id = rng.choice(page).hitl_id
            kind = DecisionKind.APPROVE if rng.random() < 0.75 else DecisionKind.REJECT
            decision = Decision(
                kind,
                message="not now" if kind is DecisionKind.REJECT else None,
                args_sha256=args_digest(_shown(hitl_id)) if kind is DecisionKind.APPROVE else None,
                extra={"bench_reviewer": index},
            )
            try:
                await backend.decide(hitl_id, decision)
            except HITLConflict:
                conflicts += 1
                continue
            decided[hitl_id] = time.time()
    print(RESULT_PREFIX + json.dumps({"seen": first_seen, "decided": decided, "conflicts": conflicts}), flush=True)


def _spawn(*args: str) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    command = [sys.executable, str(Path(__file__).resolve()), *args]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(process: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    out, err = process.communicate(timeout=timeout)
    for line in out.splitlines():
        if line.startswith(RESULT_PREFIX):
            found: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
            return found
    raise RuntimeError(f"no result (exit {process.returncode}): {err[-3000:]}")


def team(url: str, directory: Path, reviewers: int, agents: int, agent_processes: int, rounds: int) -> dict[str, Any]:
    """The team run; asserts nothing was lost or decided twice and returns its figures."""
    import psycopg

    from reviewer_app.persistence.store import Store

    Store.open(url).close()  # migrated before twenty processes open it
    stop_file = directory / "stop"
    began = time.monotonic()
    reviewer_procs = [_spawn("--reviewer", url, str(i), str(stop_file)) for i in range(reviewers)]
    per = agents // agent_processes
    agent_procs = [
        _spawn("--agent", url, str(p * per), str(per if p < agent_processes - 1 else agents - p * per), str(rounds))
        for p in range(agent_processes)
    ]
    raised: dict[str, Any] = {}
    stamps: list[tuple[set[str], dict[str, list[Any]]]] = []
    for process in agent_procs:
        found = _result(process, timeout=900)
        if "__stamps__" in found:
            stamps.append((set(found) - {"__stamps__"}, found.pop("__stamps__")))
        raised.update(found)
    elapsed = time.monotonic() - began
    stop_file.write_text("stop")
    reviewed = [_result(process, timeout=120) for process in reviewer_procs]

    expected = agents * rounds
    winners: dict[str, list[int]] = {}
    for index, side in enumerate(reviewed):
        for hitl_id in side["decided"]:
            winners.setdefault(hitl_id, []).append(index)
    doubled = sorted(h for h, who in winners.items() if len(who) > 1)
    lost = sorted(set(raised) ^ {f"a{i:03d}-{r:03d}" for i in range(agents) for r in range(rounds)})
    undecided = sorted(h for h in raised if h not in winners)
    wrong = sorted(h for h, seen in raised.items() if winners.get(h, [None])[0] != seen["by"])
    with psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://")) as raw:
        audit_doubles = raw.execute(
            "SELECT count(*) FROM (SELECT hitl_id FROM audit_log WHERE hitl_id LIKE 'a%%' GROUP BY hitl_id"
            " HAVING count(*) > 1) AS d"
        ).fetchone()
        audit_rows = raw.execute("SELECT count(*) FROM audit_log WHERE hitl_id LIKE 'a%%'").fetchone()
        still_pending = raw.execute("SELECT count(*) FROM hitl_requests WHERE status = 'pending'").fetchone()
    problems = {
        "lost": lost,
        "undecided": undecided,
        "doubled": doubled,
        "outcome_not_the_winner": wrong,
        "audit_doubles": audit_doubles[0] if audit_doubles else None,
        "audit_rows": audit_rows[0] if audit_rows else None,
        "still_pending": still_pending[0] if still_pending else None,
    }
    ok = not (lost or undecided or doubled or wrong) and problems["audit_rows"] == expected
    ok = ok and problems["audit_doubles"] == 0 and problems["still_pending"] == 0
    to_reviewer = [
        min(side["seen"][h] for side in reviewed if h in side["seen"]) - seen["committed"]
        for h, seen in raised.items()
        if any(h in side["seen"] for side in reviewed)
    ]
    decided_at = {h: min(side["decided"][h] for side in reviewed if h in side["decided"]) for h in winners}
    to_agent = [seen["answered"] - decided_at[h] for h, seen in raised.items() if h in decided_at]
    if stamps:
        _print_wake_path(stamps, decided_at, raised)
    return {
        "requests": expected,
        "elapsed_s": elapsed,
        "conflicts": sum(side["conflicts"] for side in reviewed),
        "to_reviewer": describe_ms([max(0.0, s) for s in to_reviewer]),
        "to_agent": describe_ms([max(0.0, s) for s in to_agent]),
        "problems": problems,
        "ok": ok,
    }


def _print_wake_path(
    stamps: list[tuple[set[str], dict[str, list[Any]]]], decided_at: dict[str, float], raised: dict[str, Any]
) -> None:
    """Where each decision's time went in its agent's process (``BENCH_STAMPS=1``), as p50 / p90 / p99 from the
    reviewer's return from ``decide`` (after the commit) to each step."""
    import bisect

    steps: dict[str, list[float]] = {}
    queued: list[int] = []
    on_listener = 0
    for ids, stamp in stamps:
        notified, woken = sorted(stamp["notified"]), sorted(stamp["woken"])
        first_query: dict[str, list[Any]] = {}
        for query in stamp["queries"]:
            for hitl_id in query[3]:
                first_query.setdefault(hitl_id, query)
        first_resolved: dict[str, float] = {}
        for at, found in stamp["resolved"]:
            for hitl_id in found:
                first_resolved.setdefault(hitl_id, at)
        starts = sorted(query[0] for query in stamp["queries"])
        for hitl_id in ids:
            if hitl_id not in decided_at or hitl_id not in first_query or hitl_id not in first_resolved:
                continue
            decided = decided_at[hitl_id]
            query_began, query_done, listener, _ = first_query[hitl_id]
            on_listener += bool(listener)
            after = {
                "notified": notified[min(bisect.bisect_left(notified, decided), len(notified) - 1)],
                "woken": woken[min(bisect.bisect_left(woken, decided), len(woken) - 1)],
                "query began": query_began,
                "query done": query_done,
                "back on loop": first_resolved[hitl_id],
                "agent resumed": raised[hitl_id]["answered"],
            }
            for name, at in after.items():
                steps.setdefault(name, []).append(at - decided)
            queued.append(bisect.bisect_left(starts, query_began) - bisect.bisect_left(starts, decided))
    print("  wake path in the agent processes, from the reviewer's decide() returning (p50 / p90 / p99 ms):")
    for name, values in steps.items():
        described = [percentile([v * 1000 for v in values], p) for p in (50, 90, 99)]
        print(f"    {name:22} " + " / ".join(f"{v:7.1f}" for v in described))
    print(
        f"    found by the listener thread's own look-up: {on_listener} of {len(queued)};"
        f" look-ups begun after the decision before the one that found it: p50 {percentile(queued, 50):.0f},"
        f" p99 {percentile(queued, 99):.0f}, max {max(queued, default=0)}"
    )


# -- the run --------------------------------------------------------------------------------------------------
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=1_000_000, help="decided requests bulk-loaded (part 1)")
    parser.add_argument("--reviewers", type=int, default=20)
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--agent-processes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=5, help="requests each agent raises in turn")
    parser.add_argument("--skip-history", action="store_true", help="part 2 only")
    parser.add_argument("--skip-team", action="store_true", help="part 1 only")
    parser.add_argument("--agent", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--reviewer", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.agent:
        url, first, tasks, rounds = args.agent
        asyncio.run(agent_process(url, int(first), int(tasks), int(rounds)))
        return
    if args.reviewer:
        url, index, stop = args.reviewer
        asyncio.run(reviewer_process(url, int(index), Path(stop)))
        return

    sys.path.insert(0, str(REPO_ROOT))
    from reviewer_app.persistence.audit_seal import AuditSeal
    from tests.pg_server import PgServer, find_bindir

    bindir = find_bindir()
    if bindir is None:
        print("postgresql: not measured (no initdb/pg_ctl; apt-get install postgresql)")
        return
    goals: list[Goal] = []
    figures: dict[str, Any] = {"args": vars(args)}
    with tempfile.TemporaryDirectory(prefix="reviewer-bench-pg-") as tmp, ExitStack() as stack:
        directory = Path(tmp)
        server = PgServer(bindir)
        stack.callback(server.stop)
        server.start()
        if not args.skip_history:
            url = server.url(server.create_database())
            seal = AuditSeal(directory / "audit.key", directory / "anchors")
            seconds = load(url, seal, args.decisions)
            print(
                f"loaded {args.decisions:,} decisions with their audit chain in {seconds:.1f} s ({load_average_text()})"
            )
            found = asyncio.run(history_figures(url, seal))
            verify_wall, verdict = verify_seconds(url, directory)
            one_process_s, one_verdict = verify_seconds(url, directory, workers=0)
            found.update(verify_s=verify_wall, verify_verdict=verdict, load_s=seconds)
            found.update(verify_one_process_s=one_process_s, verify_one_process_verdict=one_verdict)
            figures["history"] = found
            print(f"at {args.decisions:,} decisions ({load_average_text()}):")
            print(
                f"  history search p50 {found['search_p50_ms']:.1f} ms, p95 {found['search_p95_ms']:.1f} ms"
                f" (raw psycopg, same SQL: p50 {found['search_raw_p50_ms']:.1f} ms)"
            )
            print(
                f"  statistics, all time {found['stats_ms']:.0f} ms, last 24 h {found['stats_24h_ms']:.0f} ms"
                f" (raw GROUP BY of every request {found['stats_raw_ms']:.0f} ms)"
            )
            print(
                f"  audit verify {verify_wall:.1f} s, {verdict} (raw read of every row {found['verify_floor_s']:.1f} s;"
                f" in one process {one_process_s:.1f} s, {one_verdict})"
            )
            scale = args.decisions / 1_000_000
            goals += [
                Goal("pg_history_search_p50_ms", found["search_p50_ms"], TARGET_SEARCH_MS, "ms", at_least=False),
                Goal(
                    "pg_history_search_vs_raw",
                    found["search_p50_ms"] / max(found["search_raw_p50_ms"], 0.01),
                    3.0,
                    "x",
                    at_least=False,
                ),
                Goal("pg_stats_all_ms", found["stats_ms"], TARGET_STATS_MS, "ms", at_least=False),
                Goal("pg_audit_verify_s", verify_wall, TARGET_VERIFY_S * max(scale, 0.1), "s", at_least=False),
                Goal(
                    "pg_audit_verify_vs_raw_read",
                    verify_wall / max(found["verify_floor_s"], 0.01),
                    5.0,
                    "x",
                    at_least=False,
                ),
            ]
        if args.skip_team:
            report(goals, figures, bench="postgres_scale")
            return
        url = server.url(server.create_database())
        result = team(url, directory, args.reviewers, args.agents, args.agent_processes, args.rounds)
        figures["team"] = result
        print(
            f"team: {args.reviewers} reviewer processes, {args.agents} agents in {args.agent_processes} processes,"
            f" {result['requests']:,} requests in {result['elapsed_s']:.1f} s ({load_average_text()}):"
        )
        labels = {
            "to_reviewer": "request committed -> seen by a reviewer",
            "to_agent": "decision committed -> seen by its agent",
        }
        for key, label in labels.items():
            stats = result[key]
            print(
                f"  {label}: p50 {stats['p50_ms']:.1f} ms, p99 {stats['p99_ms']:.1f} ms, max {stats['max_ms']:.1f} ms"
            )
        print(f"  CAS conflicts: {result['conflicts']:,}; problems: {result['problems']}")
        goals += [
            Goal(
                "pg_team_request_wake_p50_ms", result["to_reviewer"]["p50_ms"], TARGET_WAKE_P50_MS, "ms", at_least=False
            ),
            Goal(
                "pg_team_request_wake_p99_ms", result["to_reviewer"]["p99_ms"], TARGET_WAKE_P99_MS, "ms", at_least=False
            ),
            Goal(
                "pg_team_decision_wake_p50_ms", result["to_agent"]["p50_ms"], TARGET_WAKE_P50_MS, "ms", at_least=False
            ),
            Goal(
                "pg_team_decision_wake_p99_ms", result["to_agent"]["p99_ms"], TARGET_WAKE_P99_MS, "ms", at_least=False
            ),
            Goal("pg_team_lost_or_doubled", 0.0 if result["ok"] else 1.0, 0.0, "", at_least=False),
        ]
    report(goals, figures, bench="postgres_scale")


if __name__ == "__main__":
    main()
