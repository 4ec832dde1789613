"""Inbox at scale: 100,000 pending requests across 2,000 sessions and 10,000 invocations.

Measures, in a fresh process started the way a user starts the app (``reviewer-app --db DB gui``):

* start: from spawning the process to the first paint of the inbox with its rows (goal <= 0.5 s, and <= 2x the
  bare window below);
  a window that shows the oldest requests first and loads the rest in the background is also timed
  until every request is in ("all loaded", printed next to it, not a goal);
* RSS: resident memory once the inbox is painted and after the interactions below (goal <= 300 MB);
* a filter keystroke, once all requests are in the inbox (a keystroke over a partly loaded inbox
  would filter fewer rows): a key typed into the search box until the inbox model is rebuilt and
  the view repainted; several keystrokes (typing and erasing), the slowest one counts (goal <= 50 ms);
* selecting the request with 1 MB of arguments until its detail view is painted (goal <= 50 ms, and <= 2x
  selecting a small request just before it, the reference; and no slower than a plain QPlainTextEdit given the same
  1 MB with setPlainText until painted, in the same process: what showing the text at all costs in Qt here).

The app's own modules are compiled to bytecode first, as an installed app's are.
Reference, in the same run: a bare PySide6 window (a QTreeView over 100 rows) started the same way,
so the start-up and memory figures can be read against what Python + Qt alone cost on this machine.
The database is seeded with one bulk insert per table in one transaction (real schema, real summaries).
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import REPO_ROOT, Goal, Profile, describe_ms, report

BIG_MARKER = "bench-1mb-arguments"
SMALL_INDEX = 40_002  # a write_file request of ~150 bytes, selected first as the reference for the 1 MB one
SMALL_ID = f"hitl_{SMALL_INDEX:06d}"
RESULT_PREFIX = "BENCH_RESULT "
TARGET_FIRST_PAINT_S = 0.5
TARGET_FIRST_PAINT_RATIO = 2.0
TARGET_DETAIL_MS = 50.0
TARGET_DETAIL_RATIO = 2.0
TARGET_DETAIL_VS_PLAIN_TEXT = 1.0
BIG_BYTES = 2**20


# -- seeding -------------------------------------------------------------------------------------
def big_content(big_bytes: int) -> str:
    """The big request's file content: ~``big_bytes`` of text lines."""
    line = "a line of generated text that an agent wants to write into a file.....\n"
    return line * (big_bytes // len(line))


def seed(path: Path, *, sessions: int, invocations: int, requests: int, big_bytes: int) -> str:
    """Fill a fresh database; returns the id of the request with ``big_bytes`` of arguments.

    The requests come from external agents (other processes using the HITL backend), as an inbox
    this size would: their runs are ``external``, so the app's runtime leaves them alone.
    """
    from sqlalchemy import insert

    from reviewer_app.persistence.store import Store
    from reviewer_app.persistence.store.records import now_ms, summarize_request
    from reviewer_app.persistence.tables import invocations_t, requests_t, sessions_t

    schema = {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["path", "content"],
    }
    now = now_ms()
    agents = ("coder", "researcher", "ops", "writer")
    store = Store.open(path)
    try:
        with store.transaction() as tx:
            tx.connection.execute(
                insert(sessions_t),
                [
                    {
                        "id": f"ses_{i:05d}",
                        "agent": agents[i % len(agents)],
                        "workspace": None,
                        "external": True,
                        "created_at": (now // 1000) - 86_400,
                        "updated_at": now // 1000,
                    }
                    for i in range(sessions)
                ],
            )
            tx.connection.execute(
                insert(invocations_t),
                [
                    {
                        "id": f"inv_{i:06d}",
                        "session_id": f"ses_{i % sessions:05d}",
                        "agent": agents[(i % sessions) % len(agents)],
                        "prompt": f"task {i}",
                        "state": "running",
                        "external": True,
                        "created_at": (now // 1000) - 86_400 + i,
                        "started_at": (now // 1000) - 86_400 + i,
                        "updated_at_ms": now,
                        "active_ms": 0,
                    }
                    for i in range(invocations)
                ],
            )
            rows = []
            for i in range(requests):
                invocation = i % invocations
                tool = ("write_file", "run_shell", "ask_user")[i % 3]
                if tool == "write_file":
                    hitl_type, data = (
                        "tool_approval",
                        {"arguments": {"path": f"src/module_{i}.py", "content": f"print({i})\n" * 12}},
                    )
                    data["schema"] = schema
                elif tool == "run_shell":
                    hitl_type, data = "tool_approval", {"arguments": {"command": f"pytest -k case_{i} tests/"}}
                else:
                    hitl_type, data = "ask_user", {"question": f"Which branch should change {i} go to?"}
                created_ms = now - (requests - i) * 50
                rows.append(
                    {
                        "hitl_id": f"hitl_{i:06d}",
                        "hitl_type": hitl_type,
                        "session_id": f"ses_{invocation % sessions:05d}",
                        "invocation_id": f"inv_{invocation:06d}",
                        "data": data,
                        "metadata": {"agent": agents[(invocation % sessions) % len(agents)]},
                        "block_id": None,
                        "status": "pending",
                        "resume_mode": "response",
                        "tool_state": None,
                        "checkpoint_id": None,
                        "tool_name": tool,
                        "tool_call_id": f"call_{i}",
                        "node_id": None,
                        "expires_at": None,
                        "user_response": None,
                        "responded_at": None,
                        "created_at": created_ms // 1000,
                        "updated_at": created_ms // 1000,
                        "updated_at_ms": created_ms,
                        "summary": summarize_request(hitl_type, data, tool),
                        "agent": agents[(invocation % sessions) % len(agents)],
                        "external": True,
                    }
                )
            # The big one: a file write whose content is ~1 MB of text, in the middle of the inbox.
            content = big_content(big_bytes)
            big = dict(rows[requests // 2])
            big.update(
                hitl_id="hitl_big_arguments",
                tool_name="write_file",
                hitl_type="tool_approval",
                data={"arguments": {"path": f"data/{BIG_MARKER}.txt", "content": content}, "schema": schema},
            )
            big["summary"] = summarize_request("tool_approval", big["data"], "write_file")
            rows[requests // 2] = big
            tx.connection.execute(insert(requests_t), rows)
    finally:
        store.close()
    return "hitl_big_arguments"


# -- the measured process ------------------------------------------------------------------------
def child(args: argparse.Namespace) -> None:
    """Runs inside the spawned process: the app's own start path, watched through a Qt event filter."""
    import psutil
    from PySide6.QtCore import QEvent, QObject, Qt, QTimer
    from PySide6.QtWidgets import QAbstractItemView, QApplication, QWidget

    profile = Profile()
    app = QApplication.instance() or QApplication([sys.argv[0]])
    process = psutil.Process()
    results: dict[str, Any] = {}

    def finish(problem: str | None = None) -> None:
        profile.save()
        if problem:
            results["problem"] = problem
        results["rss_mb_end"] = process.memory_info().rss / 2**20
        print(RESULT_PREFIX + json.dumps(results), flush=True)
        os._exit(0)  # the figures are out; skip teardown (it is not what is measured)

    if args.mode == "bare":
        from PySide6.QtGui import QStandardItem, QStandardItemModel
        from PySide6.QtWidgets import QMainWindow, QTreeView

        class BarePaint(QObject):
            def eventFilter(self, watched: QObject, event: QEvent) -> bool:
                if event.type() == QEvent.Type.Paint and watched is view.viewport() and "first_paint" not in results:
                    QTimer.singleShot(0, painted)
                return False

        def painted() -> None:
            results["first_paint"] = time.monotonic()
            results["rss_mb_paint"] = process.memory_info().rss / 2**20
            finish()

        window = QMainWindow()
        model = QStandardItemModel()
        for i in range(100):
            model.appendRow([QStandardItem(f"request {i}"), QStandardItem("summary")])
        view = QTreeView()
        view.setModel(model)
        window.setCentralWidget(view)
        window.resize(1100, 700)
        watcher = BarePaint()
        app.installEventFilter(watcher)
        window.show()
        app.exec()
        return

    from PySide6.QtTest import QTest

    from reviewer_app import cli
    from reviewer_app.ui.inbox.model import InboxModel

    state: dict[str, Any] = {"view": None, "waiting": None}

    def inbox_view_of(viewport: QObject) -> QAbstractItemView | None:
        """The inbox view whose viewport this is (O(1): paints are frequent, the harness must stay cheap)."""
        view = viewport.parent()
        if isinstance(view, QAbstractItemView) and isinstance(view.model(), InboxModel):
            return view
        return None

    class Watcher(QObject):
        """Calls the pending waiter after the paint it waits for has been delivered."""

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if event.type() == QEvent.Type.Paint:
                waiter = state["waiting"]
                if waiter is not None and waiter(watched):
                    state["waiting"] = None
                    QTimer.singleShot(0, state.pop("then"))
            return False

    def wait_for_paint(predicate: Any, then: Any) -> None:
        state["waiting"], state["then"] = predicate, then

    def first_inbox_paint(watched: QObject) -> bool:
        view = inbox_view_of(watched)
        if view is None or watched is not view.viewport() or view.model().rowCount() == 0:
            return False
        state["view"] = view
        return True

    def painted_inbox() -> None:
        results["first_paint"] = time.monotonic()
        results["rss_mb_paint"] = process.memory_info().rss / 2**20
        results["visible_requests"] = state["view"].model().visible_count
        all_loaded()

    def main_inbox_view() -> QAbstractItemView | None:
        """The inbox view of the shown window with the most requests: the main window's once it took the first
        screen's place (the first screen's window shows the first page only, then closes)."""
        views = [
            w
            for w in app.allWidgets()
            if isinstance(w, QAbstractItemView) and isinstance(w.model(), InboxModel) and w.window().isVisible()
        ]
        return max(views, key=lambda v: v.model().source_count, default=None)

    def all_loaded() -> None:
        """Keystrokes are measured over the whole inbox: wait until every seeded request is in the model."""
        state["view"] = main_inbox_view() or state["view"]
        if "full_window" not in results and hasattr(state["view"].window(), "detail"):
            results["full_window"] = time.monotonic()  # the main window is up: decisions possible from here
        if state["view"].model().source_count < args.requests:
            QTimer.singleShot(5, all_loaded)
            return
        results["all_loaded"] = time.monotonic()
        results["rss_mb_loaded"] = process.memory_info().rss / 2**20
        QTimer.singleShot(50, keystrokes)

    keys = [*"write", *["\b"] * 5]  # typing narrows 100,000 rows; erasing brings them all back
    timings: list[float] = []

    def keystrokes() -> None:
        from PySide6.QtWidgets import QLineEdit

        search = app.activeWindow().findChild(QLineEdit, "searchBox") if app.activeWindow() else None
        if search is None:
            search = next((w for w in app.allWidgets() if w.objectName() == "searchBox"), None)
        if search is None:
            finish("no QLineEdit named 'searchBox' in the window")
            return
        model = state["view"].model()
        applied: list[int] = []
        model.filterApplied.connect(applied.append)

        def one(i: int) -> None:
            if i == len(keys):
                results["keystroke_ms"] = timings
                model.filterApplied.disconnect(applied.append)
                QTimer.singleShot(50, select_big)
                return
            applied.clear()
            started = time.monotonic()
            key = keys[i]

            def repainted(watched: QObject) -> bool:
                return bool(applied) and watched is state["view"].viewport()

            def done() -> None:
                timings.append((time.monotonic() - started) * 1000)
                QTimer.singleShot(30, lambda: one(i + 1))

            wait_for_paint(repainted, done)
            if key == "\b":
                QTest.keyClick(search, Qt.Key.Key_Backspace)
            else:
                QTest.keyClicks(search, key)

        search.setFocus()
        one(0)

    def search_text() -> str:
        return next((w.text() for w in app.allWidgets() if w.objectName() == "searchBox"), "")

    def select_big() -> None:
        select(SMALL_ID, "select_small_ms", lambda: select(args.big_id, "select_big_ms", plain_text_reference))

    def plain_text_reference() -> None:
        """The same 1 MB given to a plain QPlainTextEdit with setPlainText, until it is painted."""
        from PySide6.QtWidgets import QPlainTextEdit

        content = big_content(BIG_BYTES)
        editor = QPlainTextEdit()
        editor.resize(800, 500)
        state["plain"] = editor
        started: list[float] = []

        def fill() -> None:
            def repainted(watched: QObject) -> bool:
                return bool(started) and watched is editor.viewport()

            def done() -> None:
                results["plain_text_1mb_ms"] = (time.monotonic() - started[0]) * 1000
                editor.close()
                QTimer.singleShot(50, finish)

            wait_for_paint(repainted, done)
            started.append(time.monotonic())
            editor.setPlainText(content)

        editor.show()
        QTimer.singleShot(200, fill)  # shown and painted empty first: only the text is timed

    def select(hitl_id: str, key: str, then: Any) -> None:
        view = state["view"]
        model = view.model()
        index = model.index_for(hitl_id)
        if not index.isValid():
            finish(f"request {hitl_id} is not in the inbox (search box: {search_text()!r})")
            return
        results["search_text_at_select"] = search_text()
        view.scrollTo(index, QAbstractItemView.ScrollHint.EnsureVisible)
        # let the scroll settle: only selecting is timed
        QTimer.singleShot(100, lambda: select_now(view, index, hitl_id, key, then))

    def select_now(view: QAbstractItemView, index: Any, hitl_id: str, key: str, then: Any) -> None:
        started = time.monotonic()
        window = view.window()
        detail = getattr(window, "detail", None)
        shown_signal = getattr(window, "requestShown", None)  # MainWindow: the detail has the full record
        loaded: list[str] = []
        if shown_signal is not None:
            shown_signal.connect(loaded.append)

        def detail_painted(watched: QObject) -> bool:
            """After the window says the request is shown, the first paint inside its detail pane."""
            if shown_signal is not None and detail is not None:
                return hitl_id in loaded and isinstance(watched, QWidget) and detail.isAncestorOf(watched)
            for target in (watched, watched.parent()):  # no such signal: a text view showing the request
                document = getattr(target, "document", None)
                if callable(document):
                    block = document().begin()
                    for _ in range(60):
                        if not block.isValid():
                            break
                        if block.length() < 10_000 and marker in block.text():
                            return True
                        block = block.next()
            return False

        marker = BIG_MARKER if hitl_id == args.big_id else f"module_{SMALL_INDEX}.py"

        def done() -> None:
            results[key] = (time.monotonic() - started) * 1000
            results["rss_mb_detail"] = process.memory_info().rss / 2**20
            QTimer.singleShot(100, then)

        wait_for_paint(detail_painted, done)
        state["debug"] = lambda: {
            "loaded": loaded[-3:],
            "detail_shows": getattr(detail, "hitl_id", None),
            "current_is_big": view.currentIndex().siblingAtColumn(0) == index,
        }
        view.setCurrentIndex(index)

    watcher = Watcher()
    app.installEventFilter(watcher)
    wait_for_paint(first_inbox_paint, painted_inbox)

    def timed_out() -> None:
        debug = state["debug"]() if "debug" in state else {}
        finish(f"timed out after {args.timeout} s: {sorted(results)} {debug}")

    QTimer.singleShot(int(args.timeout * 1000), timed_out)
    cli.main(["--db", str(args.db), "--reviewer", "bench", "gui"])
    finish("the window closed before the measurements ended")


def spawn(
    mode: str, db: Path | None, big_id: str | None, timeout: float, home: Path, requests: int = 0
) -> dict[str, Any]:
    """Start the measured process; 'start' is counted from just before the spawn."""
    command = [sys.executable, str(Path(__file__).resolve()), "--child", "--mode", mode, "--timeout", str(timeout)]
    if db is not None:
        command += ["--db", str(db), "--big-id", str(big_id), "--requests", str(requests)]
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    env["XDG_DATA_HOME"] = str(home / "data")  # whatever the app keeps stays in the temp dir
    env["XDG_CONFIG_HOME"] = str(home / "config")
    started = time.monotonic()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout + 30, check=False)
    for line in done.stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            result: dict[str, Any] = json.loads(line[len(RESULT_PREFIX) :])
            if "first_paint" in result:
                result["start_s"] = result["first_paint"] - started
            if "all_loaded" in result:
                result["loaded_s"] = result["all_loaded"] - started
            if "full_window" in result:
                result["full_window_s"] = result["full_window"] - started
            return result
    return {"problem": f"no result (exit {done.returncode}): {done.stderr[-2000:]}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--mode", choices=("app", "bare"), default="app", help=argparse.SUPPRESS)
    parser.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--big-id", help=argparse.SUPPRESS)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per measured process")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=2_000)
    parser.add_argument("--invocations", type=int, default=10_000)
    parser.add_argument("--starts", type=int, default=3, help="measured app starts (the median counts)")
    args = parser.parse_args()
    if args.child:
        child(args)
        return

    with tempfile.TemporaryDirectory(prefix="reviewer-bench-") as tmp:
        db = Path(tmp) / "inbox.db"
        began = time.monotonic()
        big_id = seed(
            db, sessions=args.sessions, invocations=args.invocations, requests=args.requests, big_bytes=BIG_BYTES
        )
        print(
            f"seeded {args.requests:,} pending requests, {args.invocations:,} invocations, {args.sessions:,} sessions"
            f" in {time.monotonic() - began:.1f} s"
        )
        home = Path(tmp)
        # The measured processes import compiled bytecode, as an installed app does (installing a wheel compiles
        # it); with PYTHONDONTWRITEBYTECODE set, a checkout would otherwise compile every module on every start.
        compileall.compile_dir(REPO_ROOT / "reviewer_app", quiet=1)
        # Warm the OS file cache once, as a second start would be.
        spawn("app", db, big_id, args.timeout, home, args.requests)
        apps, bares = [], []
        for _ in range(args.starts):
            bares.append(spawn("bare", None, None, args.timeout, home))
            apps.append(spawn("app", db, big_id, args.timeout, home, args.requests))

    problems = [r["problem"] for r in apps + bares if "problem" in r]
    if problems:
        print("problems:", *problems, sep="\n  ")
    good = [r for r in apps if "problem" not in r]
    good_bare = [r for r in bares if "problem" not in r]
    inf = float("inf")
    start = describe_ms([r["start_s"] for r in good]) if good else None
    bare_start = describe_ms([r["start_s"] for r in good_bare]) if good_bare else None
    rss_keys = ("rss_mb_paint", "rss_mb_loaded", "rss_mb_detail", "rss_mb_end")
    rss = max((max(r.get(key, 0.0) for key in rss_keys) for r in good), default=inf)
    loaded = [r["loaded_s"] for r in good if "loaded_s" in r]
    keystrokes = [ms for r in good for ms in r.get("keystroke_ms", [])]
    selects = [r["select_big_ms"] for r in good if "select_big_ms" in r]
    small_selects = [r["select_small_ms"] for r in good if "select_small_ms" in r]
    details: dict[str, Any] = {"apps": apps, "bare": bares}
    print(f"inbox at scale ({args.requests:,} pending), {len(good)} of {args.starts} starts measured:")
    if start:
        print(f"  start -> first painted inbox  p50 {start['p50_ms']:7.0f} ms  max {start['max_ms']:7.0f} ms")
    full = sorted(r["full_window_s"] for r in good if "full_window_s" in r)
    if full:
        median_full_ms = full[len(full) // 2] * 1000
        print(f"  start -> full window shown     p50 {median_full_ms:7.0f} ms  (decisions from here; not a goal)")
    if loaded:
        print(f"  start -> all {args.requests:,} loaded p50 {sorted(loaded)[len(loaded) // 2] * 1000:7.0f} ms", end="")
        print(f"  max {max(loaded) * 1000:7.0f} ms  (not a goal: the window is usable from its first paint)")
    if bare_start:
        print(f"  reference: bare PySide6 window p50 {bare_start['p50_ms']:7.0f} ms", end="")
        print(f"  (RSS {max(r['rss_mb_paint'] for r in good_bare):.0f} MB)")
    if good:
        print(f"  resident memory (max)          {rss:7.0f} MB")
    if keystrokes:
        ks = describe_ms([k / 1000 for k in keystrokes])
        print(f"  filter keystroke               p50 {ks['p50_ms']:7.1f} ms  max {ks['max_ms']:7.1f} ms", end="")
        print(f"  ({len(keystrokes)} keystrokes)")
    if selects:
        median = sorted(selects)[len(selects) // 2]
        print(f"  select 1 MB request -> painted p50 {median:7.1f} ms  max {max(selects):7.1f} ms")
    big_ms = sorted(selects)[len(selects) // 2] if selects else inf
    small_ms = sorted(small_selects)[len(small_selects) // 2] if small_selects else inf
    if small_selects:
        print(f"  reference: select a small request -> painted p50 {small_ms:7.1f} ms")
    plains = [r["plain_text_1mb_ms"] for r in good if "plain_text_1mb_ms" in r]
    plain_ms = sorted(plains)[len(plains) // 2] if plains else inf
    if plains:
        print(f"  reference: plain QPlainTextEdit, the same 1 MB -> painted p50 {plain_ms:7.1f} ms")
    bare_s = bare_start["p50_ms"] / 1000 if bare_start else inf
    start_s = start["p50_ms"] / 1000 if start else inf
    # Issue 29 item 6: first paint <= 0.5 s and a 1 MB detail <= 50 ms. Each also as a ratio to its reference in
    # this run, which a loaded machine slows alike: 0.5 s against a bare PySide6 window's ~0.25 s on a quiet
    # machine (2x), and 50 ms against a small request's detail (~25 ms quiet: 2x).
    goals = [
        Goal("inbox_start_to_first_paint", start_s, TARGET_FIRST_PAINT_S, "s", at_least=False),
        Goal("inbox_first_paint_vs_bare_window", start_s / bare_s, TARGET_FIRST_PAINT_RATIO, "x", at_least=False),
        Goal("inbox_rss", rss, 300, "MB", at_least=False),
        Goal("inbox_filter_keystroke_max", max(keystrokes, default=inf), 50, "ms", at_least=False),
        Goal("inbox_select_1mb_detail", big_ms, TARGET_DETAIL_MS, "ms", at_least=False),
        Goal("inbox_select_1mb_vs_small", big_ms / small_ms, TARGET_DETAIL_RATIO, "x", at_least=False),
        Goal("inbox_select_1mb_vs_plain_text", big_ms / plain_ms, TARGET_DETAIL_VS_PLAIN_TEXT, "x", at_least=False),
    ]
    report(goals, details, bench="ui_inbox")


if __name__ == "__main__":
    main()
