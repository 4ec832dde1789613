"""History at a million: search while typing, ``audit verify``, and ``audit --json`` memory over 1,000,000 decisions.

Goals (issue 18, items 4 and 5):

* ``history_search_keystroke_p50_ms`` / ``_p95_ms``: in the GUI process (``reviewer-app --db DB gui`` under
  ``QT_QPA_PLATFORM=offscreen``), a character typed into the History tab's search box until the History view
  has painted the new results (the query runs on the database thread; the clock stops at the view's paint
  after its model took the page); p50 and p95 over the keystrokes of a few words (goal <= 100 ms);
* ``audit_verify_1m_s``: ``reviewer-app --db DB audit verify`` on the whole chain (goal <= 10 s);
* ``audit_json_peak_rss_mb`` / ``audit_export_peak_rss_mb``: peak RSS of ``reviewer-app --db DB audit --json``
  and of ``audit export`` (JSONL, then the chain's verification) writing all 1,000,000 rows (goal <= 150 MB, flat:
  they stream).

The database (1,000,000 decided requests with a valid keyed audit chain, anchored, and the search index that
migration 0009 keeps) is built once with bulk inserts in one transaction and cached in the temp directory under
a name keyed by :data:`BUILD_VERSION` and the row count; later runs reuse it (``--rebuild`` forces a new one).
Each figure is printed with the machine's load average at the time.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from common import REPO_ROOT, Goal, describe_ms, load_average_text, percentile, report

BUILD_VERSION = 2  # bump when the seeded data or the schema it needs changes
RESULT_PREFIX = "BENCH_RESULT "
CHUNK = 50_000
TARGET_KEYSTROKE_MS = 100.0
TARGET_VERIFY_S = 10.0
TARGET_EXPORT_MB = 150.0
SEARCH_WORDS = ("deploy", "photos", "quokka")  # typed a character at a time, erased between words

TOOLS = ("run_shell", "write_file", "read_file", "Bash", "Edit", "mcp__github__create_issue")
AGENTS = ("coder", "planner", "cleaner", "claude-code", "codex")
REVIEWERS = ("dana", "erin", "alex", "sam")
WORDS = (
    "build",
    "test",
    "deploy",
    "release",
    "photos",
    "backup",
    "cache",
    "docs",
    "notes",
    "report",
    "config",
    "migrate",
    "server",
    "client",
    "index",
    "search",
    "token",
    "secret",
    "staging",
    "production",
    "invoice",
    "quokka",
    "kangaroo",
    "wombat",
    "lambda",
    "vector",
    "matrix",
    "kernel",
    "module",
    "package",
)
REASONS = ("too broad", "never touch production", "use the staging bucket", "not on a Friday", "wrong directory")


# -- the cached database -------------------------------------------------------------------------------
def cache_dir(rows: int) -> Path:
    return Path(tempfile.gettempdir()) / f"reviewer-bench-history-v{BUILD_VERSION}-{rows}"


def seal_env(directory: Path) -> dict[str, str]:
    """The audit key and anchors of the cached database live beside it (never the user's own)."""
    return {
        "REVIEWER_AUDIT_KEY_FILE": str(directory / "audit.key"),
        "REVIEWER_AUDIT_ANCHOR_DIR": str(directory / "anchors"),
    }


def _arguments(tool: str, rng: random.Random, i: int) -> dict[str, Any]:
    words = " ".join(rng.choice(WORDS) for _ in range(3))
    if tool in ("run_shell", "Bash"):
        return {"command": f"make {words.replace(' ', '-')} && echo {i}"}
    if tool in ("write_file", "Edit"):
        return {"path": f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}_{i}.py", "content": f"# {words}\n"}
    if tool == "read_file":
        return {"path": f"docs/{rng.choice(WORDS)}.md"}
    return {"title": f"{words} #{i}", "body": f"Found while working on {rng.choice(WORDS)}."}


@dataclass(frozen=True)
class SyntheticDecision:
    """One decided request of the generated history: what was shown, what was decided, by whom."""

    tool: str
    shown: dict[str, Any]
    kind: str
    edited: dict[str, Any] | None
    message: str | None
    reviewer: str

    @property
    def data(self) -> dict[str, Any]:
        return {"arguments": self.shown}

    def response(self) -> dict[str, Any]:
        response: dict[str, Any] = {"decision": self.kind, "reviewer": self.reviewer}
        if self.edited is not None:
            response["args"] = self.edited
        if self.message is not None:
            response["message"] = self.message
        return response


def synthetic_decision(i: int, rng: random.Random, reviewers: Sequence[str], expiry_reviewer: str) -> SyntheticDecision:
    """Request ``i``: 60 % approved, 10 % edited, 20 % rejected with a reason, 10 % expired (the SQLite and the
    PostgreSQL benches draw the same history from the same seed)."""
    tool = TOOLS[i % len(TOOLS)]
    shown = _arguments(tool, rng, i)
    roll = rng.random()
    edited: dict[str, Any] | None = None
    message: str | None = None
    if roll < 0.6:
        kind = "approve"
    elif roll < 0.7:
        kind = "edit"
        edited = {name: f"{value} --dry-run" for name, value in shown.items()}
    elif roll < 0.9:
        kind, message = "reject", rng.choice(REASONS)
    else:
        kind = "expire"
    reviewer = expiry_reviewer if kind == "expire" else reviewers[i % len(reviewers)]
    return SyntheticDecision(tool, shown, kind, edited, message, reviewer)


def build(path: Path, rows: int) -> None:
    """1,000,000 decided requests with their keyed, anchored audit chain; one transaction per table kind."""
    from reviewer_app.domain.audit import AUDIT_HEAD_KEY, DATABASE_ID_KEY, audit_fields, audit_row_hash
    from reviewer_app.domain.decisions import args_digest
    from reviewer_app.domain.records import NewRequest
    from reviewer_app.persistence.audit_seal import AuditSeal
    from reviewer_app.persistence.store import Store, summarize_request

    directory = path.parent
    seal = AuditSeal(directory / "audit.key", directory / "anchors")
    store = Store.open(path, seal=seal)
    with store.transaction() as tx:  # one decision through the store: the chain's meta rows and its key id
        tx.requests.create(
            NewRequest("h0", "tool_approval", "s0", "i0", data={"arguments": {"command": "true"}}, tool_name="Bash")
        )
        tx.requests.decide(
            "h0", {"decision": "approve", "args_sha256": args_digest({"command": "true"})}, reviewer="dana"
        )
    store.close()

    rng = random.Random(18)
    raw = sqlite3.connect(path)
    raw.execute("PRAGMA journal_mode=WAL")
    meta = dict(raw.execute("SELECT key, value FROM reviewer_meta").fetchall())
    count_text, _, head = meta[AUDIT_HEAD_KEY].partition(":")
    position = int(count_text)
    key = seal.key
    now_ms = int(time.time() * 1000) - rows * 1000
    sessions = max(1, rows // 1000)
    invocations = max(1, rows // 100)
    with raw:
        raw.executemany(
            "INSERT OR IGNORE INTO sessions (id, agent, external, created_at, updated_at) VALUES (?, ?, 1, ?, ?)",
            ((f"s{i}", AGENTS[i % len(AGENTS)], now_ms // 1000, now_ms // 1000) for i in range(sessions)),
        )
        raw.executemany(
            "INSERT OR IGNORE INTO invocations (id, session_id, agent, prompt, state, external, created_at,"
            " updated_at_ms, active_ms) VALUES (?, ?, ?, ?, 'done', 1, ?, ?, 0)",
            (
                (f"i{i}", f"s{i % sessions}", AGENTS[i % len(AGENTS)], "bench run", now_ms // 1000, now_ms)
                for i in range(invocations)
            ),
        )

        for first in range(1, rows, CHUNK):  # requests before their audit rows: the index trigger joins them
            requests, audit = [], []
            for i in range(first, min(rows, first + CHUNK)):
                drawn = synthetic_decision(i, rng, REVIEWERS, "system:expiry")
                tool, shown, data, kind = drawn.tool, drawn.shown, drawn.data, drawn.kind
                edited, message, reviewer = drawn.edited, drawn.message, drawn.reviewer
                created = now_ms + i * 1000
                at = created + 500
                shown_sha = args_digest(shown)
                fields = audit_fields(f"h{i}", kind, reviewer, at, shown_sha, edited, message)
                row_hash = audit_row_hash(head, fields, key)
                response = drawn.response()
                requests.append(
                    (
                        f"h{i}",
                        f"s{i % sessions}",
                        f"i{i % invocations}",
                        json.dumps(data),
                        "expired" if kind == "expire" else "completed",
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
                    )
                )
                audit.append(
                    (
                        f"h{i}",
                        kind,
                        reviewer,
                        at,
                        json.dumps(shown),
                        shown_sha,
                        json.dumps(edited),
                        message,
                        head,
                        row_hash,
                    )
                )
                head = row_hash
                position += 1
            raw.executemany(
                "INSERT INTO hitl_requests (hitl_id, hitl_type, session_id, invocation_id, data, metadata, status,"
                " resume_mode, tool_name, user_response, responded_at, created_at, updated_at, updated_at_ms,"
                " summary, agent, decision, decided_by, external)"
                " VALUES (?, 'tool_approval', ?, ?, ?, '{}', ?, 'response', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)",
                requests,
            )
            raw.executemany(  # migration 0009's trigger indexes each row for search, as in use
                "INSERT INTO audit_log (hitl_id, decision, reviewer, at_ms, shown_args, shown_args_sha256,"
                " edited_args, message, prev_hash, row_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                audit,
            )
        raw.execute("UPDATE reviewer_meta SET value = ? WHERE key = ?", (f"{position}:{head}", AUDIT_HEAD_KEY))
    raw.execute("PRAGMA optimize")
    raw.close()
    store = Store.open(path, seal=seal)
    seal.anchor(meta[DATABASE_ID_KEY], position, head, store.identity_url)
    store.close()


def cached_database(rows: int, rebuild: bool) -> Path:
    directory = cache_dir(rows)
    path = directory / "history.db"
    done = directory / "complete"
    if rebuild or not done.exists():
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        began = time.monotonic()
        build(path, rows)
        done.write_text(str(BUILD_VERSION), encoding="utf-8")
        print(f"built {rows:,} decided requests in {time.monotonic() - began:.1f} s at {path}", flush=True)
    else:
        print(f"reusing {rows:,} decided requests at {path}", flush=True)
    return path


# -- the CLI figures -------------------------------------------------------------------------------
MEASURE_RSS = """
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def cli_env(directory: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(seal_env(directory))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["XDG_DATA_HOME"] = str(directory / "xdg-data")
    env["XDG_CONFIG_HOME"] = str(directory / "xdg-config")
    return env


MEASURE_TIMES = """
import resource, subprocess, sys, time
began = time.monotonic()
done = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=False)
wall = time.monotonic() - began
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
last = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
print(wall, usage.ru_utime + usage.ru_stime, last[0])
"""


def verify_seconds(db: Path) -> tuple[float, float, str]:
    """Wall and CPU seconds of ``reviewer-app audit verify`` (CPU: what it costs on a machine of its own)."""
    command = [sys.executable, "-c", MEASURE_TIMES, sys.executable, "-m", "reviewer_app", "--db", str(db)]
    out = subprocess.run(
        [*command, "audit", "verify"], env=cli_env(db.parent), capture_output=True, text=True, check=True
    ).stdout
    wall, cpu, verdict = out.strip().split(" ", 2)
    return float(wall), float(cpu), verdict


def export_peak_mb(db: Path, *args: str) -> float:
    """Peak RSS of ``reviewer-app --db DB audit ARGS`` writing the whole log to a pipe it drains."""
    command = [sys.executable, "-c", MEASURE_RSS, sys.executable, "-m", "reviewer_app", "--db", str(db)]
    out = subprocess.run(
        [*command, "audit", *args], env=cli_env(db.parent), capture_output=True, text=True, check=True
    ).stdout
    return int(out.strip()) / 1024  # KiB on Linux


# -- the measured GUI process ----------------------------------------------------------------------------
def child(args: argparse.Namespace) -> None:
    """Inside the spawned app: type into the History search box, time each key until the view repaints."""
    from PySide6.QtCore import QEvent, QObject, Qt, QTimer
    from PySide6.QtTest import QTest
    from PySide6.QtWidgets import QApplication

    from reviewer_app import cli

    app = QApplication.instance() or QApplication([sys.argv[0]])
    results: dict[str, Any] = {"keystrokes": []}
    state: dict[str, Any] = {"waiting": None}

    def finish(problem: str | None = None) -> None:
        if problem:
            results["problem"] = problem
        print(RESULT_PREFIX + json.dumps(results), flush=True)
        os._exit(0)

    class Watcher(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint and state["waiting"] is not None and state["waiting"](watched):
                state["waiting"] = None
                QTimer.singleShot(0, state.pop("then"))
            return False

    keys: list[str] = []
    for word in SEARCH_WORDS:
        keys += [*word, *["\b"] * len(word)]

    def window_ready() -> None:
        window = next((w for w in app.topLevelWidgets() if w.objectName() == "mainWindow"), None)
        history = getattr(window, "history", None)
        if window is None or history is None or not window.isVisible():
            QTimer.singleShot(20, window_ready)
            return
        window.show_tab(2)  # Ctrl+3: the History tab reads its first page
        first_page(window, history)

    def first_page(window: Any, history: Any) -> None:
        if not history.model.loaded_once:
            QTimer.singleShot(20, lambda: first_page(window, history))
            return
        history.search_box.setFocus()
        QTimer.singleShot(300, lambda: one(history, 0))

    def one(history: Any, i: int) -> None:
        if i == len(keys):
            finish()
            return
        key = keys[i]
        generation = history.model.generation
        started = time.monotonic()

        def painted(watched: QObject) -> bool:
            return history.model.generation > generation and watched is history.view.viewport()

        def done() -> None:
            results["keystrokes"].append(
                {
                    "ms": (time.monotonic() - started) * 1000,
                    "text": history.search_box.text(),
                    "rows": history.model.rowCount(),
                }
            )
            QTimer.singleShot(30, lambda: one(history, i + 1))

        state["waiting"], state["then"] = painted, done
        if key == "\b":
            QTest.keyClick(history.search_box, Qt.Key.Key_Backspace)
        else:
            QTest.keyClicks(history.search_box, key)

    watcher = Watcher()
    app.installEventFilter(watcher)
    QTimer.singleShot(0, window_ready)
    QTimer.singleShot(int(args.timeout * 1000), lambda: finish(f"timed out after {args.timeout} s"))
    cli.main(["--db", str(args.db), "--reviewer", "bench", "gui"])
    finish("the window closed before the measurements ended")


def keystrokes(db: Path, timeout: float) -> dict[str, Any]:
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--db", str(db), "--timeout", str(timeout)]
    env = cli_env(db.parent)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout + 30, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
            return result
    return {"problem": f"no result (exit {done.returncode}): {done.stderr[-2000:]}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=int, default=1_000_000, help="decided requests in the database")
    parser.add_argument("--rebuild", action="store_true", help="build the cached database again")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed for the GUI process")
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    db = cached_database(args.rows, args.rebuild)
    goals: list[Goal] = []
    details: dict[str, Any] = {"rows": args.rows}

    typed = keystrokes(db, args.timeout)
    load = load_average_text()
    if "problem" in typed or not typed.get("keystrokes"):
        print(f"history search: {typed.get('problem', 'no keystrokes measured')}")
        p50 = p95 = float("nan")
    else:
        timings = [k["ms"] for k in typed["keystrokes"]]
        p50, p95 = percentile(timings, 50), percentile(timings, 95)
        stats = describe_ms([t / 1000 for t in timings])
        print(
            f"history search keystroke -> painted over {args.rows:,} decisions: p50 {p50:.1f} ms, p95 {p95:.1f} ms,"
            f" max {stats['max_ms']:.1f} ms (n={len(timings)}; {load})"
        )
        for k in typed["keystrokes"]:
            print(f"    {k['text']!r:12} {k['ms']:7.1f} ms  {k['rows']} rows shown")
        details["keystrokes"] = typed["keystrokes"]
    goals.append(Goal("history_search_keystroke_p50_ms", p50, TARGET_KEYSTROKE_MS, "ms", at_least=False))
    goals.append(Goal("history_search_keystroke_p95_ms", p95, TARGET_KEYSTROKE_MS, "ms", at_least=False))

    seconds, cpu, verdict = verify_seconds(db)
    print(
        f"audit verify over {args.rows:,} rows: {seconds:.2f} s wall, {cpu:.2f} s CPU"
        f" ({verdict}; {load_average_text()})"
    )
    details["verify_cpu_s"] = cpu
    goals.append(Goal("audit_verify_1m_s", seconds, TARGET_VERIFY_S, "s", at_least=False))

    peak = export_peak_mb(db, "--json")
    print(f"audit --json over {args.rows:,} rows: peak RSS {peak:.0f} MB ({load_average_text()})")
    goals.append(Goal("audit_json_peak_rss_mb", peak, TARGET_EXPORT_MB, "MB", at_least=False))
    export_peak = export_peak_mb(db, "export")
    print(f"audit export (JSONL) over {args.rows:,} rows: peak RSS {export_peak:.0f} MB ({load_average_text()})")
    goals.append(Goal("audit_export_peak_rss_mb", export_peak, TARGET_EXPORT_MB, "MB", at_least=False))
    details.update(verify_s=seconds, export_peak_mb=peak, export_jsonl_peak_mb=export_peak)
    report(goals, details, bench="history")


if __name__ == "__main__":
    main()
