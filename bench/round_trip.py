"""Approval round trip: Reviewer's runtime against LangGraph's ``interrupt()`` / ``Command(resume=...)``.

Both sides run the same agent step: the model (a scripted turn on our side, an ``agent`` node on
LangGraph's) asks for one side-effecting tool call, the call is gated, a reviewer approves it, the
tool runs. Both sides keep their state in a SQLite file with the same pragmas (WAL,
synchronous=NORMAL, busy_timeout, foreign_keys), so a commit costs the same on both.

* suspend: from the gated call to the pending request being durable.
  Ours: the model hands the runtime its tool call -> the transaction holding the request commits.
  Raw sqlite3: the statements of that same transaction (recorded from ours on the driver connection,
  with their parameters: the reads of the ownership check, the waivers and the rules too), replayed on a
  plain ``sqlite3`` connection to its own file with the same pragmas, their JSON columns encoded with
  ``json.dumps`` in the timed transaction: ``BEGIN IMMEDIATE`` -> ``COMMIT`` done. The reference for the
  suspend goal. Also printed: its writes alone with their JSON text ready-made (the reference before).
  LangGraph: the node calls ``interrupt()`` -> ``ainvoke`` returns (``durability="sync"``; the
  interrupt write is committed by then, checked).
* resume: from the decision to the tool starting.
  Ours: the decision's transaction commits -> the tool handler starts. The decision is made through
  ``Runtime.decide_and_resume`` for a run this process drives, so that one transaction also commits the
  call as ``running`` (a crash never runs it twice). Also printed: from the ``decide_and_resume`` call.
  LangGraph: ``ainvoke(Command(resume=...))`` is called -> the tool starts inside the resumed node.
  LangGraph has nothing to commit first: it writes the resume value in the background, and the
  script counts how often the tool started before that write was durable.

The sides alternate in blocks of runs so all meet the same machine load (the raw replay runs right after
each of our runs). Goals (issue #29): resume at least 4x faster than LangGraph at p50; suspend within
1.5x of raw sqlite3 writing the same gate rows at p50.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

from common import (
    WRITE_MODES,
    Goal,
    add_write_mode_option,
    clock,
    describe_ms,
    load_average,
    new_database,
    report,
    settle,
)
from sqlalchemy import event
from sqlalchemy.engine import Engine

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.domain.waivers import ApprovalPolicy
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.persistence.engine import BUSY_TIMEOUT_MS
from reviewer_app.persistence.store import StoreTx
from reviewer_app.persistence.store.requests import RequestWrites
from reviewer_app.runtime.agents import AgentCatalog, AgentSpec
from reviewer_app.runtime.llm_clients import ModelClient, ModelTurn
from reviewer_app.runtime.runner import Runtime
from reviewer_app.runtime.tools import ToolContext, ToolSpec, builtin_tools

TOOL_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
    "required": ["path", "content"],
}


def tool_arguments(i: int) -> dict[str, Any]:
    return {"path": f"notes/note_{i}.txt", "content": f"note {i}\n" * 25}


class Marks(dict[str, float]):
    """Timestamps of the run in flight (runs are sequential on each side)."""


# -- what our transactions run, recorded on the driver connection ------------------------------------
Statement = tuple[str, Any, bool]  # SQL, parameters, executemany
# The replay says BEGIN IMMEDIATE and COMMIT itself; everything else a transaction runs is replayed (its reads too:
# the run's ownership check and the rules read under the write lock are part of the gate's transaction).
WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE")
NOT_REPLAYED = ("BEGIN", "COMMIT", "ROLLBACK", "PRAGMA", "SAVEPOINT", "RELEASE")


class _Recording(threading.local):
    """What the open transaction on this thread appends to: its statements, and the requests it created or decided."""

    statements: list[Statement] | None = None
    seen: list[str] | None = None


_recording = _Recording()


class _NotingWrites:
    """``execute``/``executemany`` that note each statement first (mixed into the driver's own classes).

    As little as possible while ours is timed (one append); :func:`_replayed` sorts the notes out afterwards.
    """

    def execute(self, sql: str, params: Any = (), /) -> sqlite3.Cursor:
        statements = _recording.statements
        if statements is not None:
            statements.append((sql, params, False))
        return super().execute(sql, params)  # type: ignore[misc, no-any-return]

    def executemany(self, sql: str, seq: Any, /) -> sqlite3.Cursor:
        rows = list(seq)
        statements = _recording.statements
        if statements is not None:
            statements.append((sql, rows, True))
        return super().executemany(sql, rows)  # type: ignore[misc, no-any-return]


def _replayed(statements: list[Statement]) -> list[Statement]:
    """The noted statements the replay runs (it says BEGIN and COMMIT itself)."""
    return [
        (sql, params, many) for sql, params, many in statements if not sql.lstrip()[:9].upper().startswith(NOT_REPLAYED)
    ]


class _RecordingCursor(_NotingWrites, sqlite3.Cursor):
    pass


class _RecordingConnection(_NotingWrites, sqlite3.Connection):
    """The app's SQLite connections, noting each write statement with its parameters (the fast path runs
    statements on the connection, SQLAlchemy on cursors: both are seen)."""

    def cursor(self, factory: Any = None) -> Any:
        return super().cursor(factory or _RecordingCursor)


def _record_connections(dialect: Any, record: Any, cargs: Any, cparams: dict[str, Any]) -> None:
    if dialect.name == "sqlite":
        cparams["factory"] = _RecordingConnection


def _json_slots(params: Any) -> tuple[tuple[int, Any], ...]:
    """Each parameter that is JSON text our side encoded (an object or array), with its value."""
    values = []
    for index, param in enumerate(params):
        if isinstance(param, str) and param[:1] in ("{", "["):
            try:
                value = json.loads(param)
            except ValueError:
                continue
            if json.dumps(value) == param:  # encoding it again gives the very text we wrote
                values.append((index, value))
    return tuple(values)


def _encoded(params: Any, values: tuple[tuple[int, Any], ...]) -> Any:
    """``params`` with the JSON values encoded (in the timed transaction, as ours encodes them in its own)."""
    if not values:
        return params
    encoded = list(params)
    for index, value in values:
        encoded[index] = json.dumps(value)
    return encoded


class RawReplay:
    """A plain ``sqlite3`` connection to its own file (same schema and pragmas) replaying our transactions."""

    def __init__(self, path: Path) -> None:
        new_database(path)
        self.connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        for pragma in (
            f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
            "PRAGMA journal_mode = WAL",
            "PRAGMA synchronous = NORMAL",
            "PRAGMA foreign_keys = ON",
        ):
            self.connection.execute(pragma)

    def replay(self, statements: list[Statement], *, whole: bool = True) -> float:
        """One ``BEGIN IMMEDIATE`` transaction of ``statements``; returns how long it took, COMMIT included.

        ``whole``: the transaction as ours ran it, reads included, and with its JSON columns encoded in the
        timed transaction (a program writing these rows holds them as values: ``json.dumps``, as SQLAlchemy's
        JSON type does for ours). Else only the writes, their JSON text given ready-made (the former reference).
        """
        if whole:
            prepared = [
                (sql, [(row, _json_slots(row)) for row in params] if many else (params, _json_slots(params)), many)
                for sql, params, many in statements
            ]
        else:
            prepared = [
                (sql, [(row, ()) for row in params] if many else (params, ()), many)
                for sql, params, many in statements
                if sql.lstrip()[:7].upper().startswith(WRITES)
            ]
        execute, executemany = self.connection.execute, self.connection.executemany
        began = clock()
        execute("BEGIN IMMEDIATE")
        for sql, params, many in prepared:
            if many:
                executemany(sql, [_encoded(row, values) for row, values in params])
            else:
                execute(sql, _encoded(*params)).fetchall()
        execute("COMMIT")
        return clock() - began

    def close(self) -> None:
        self.connection.close()


# -- Reviewer ------------------------------------------------------------------------------------
class _TimedModel:
    """The scripted model, stamping the moment it hands over a tool call (the gated call)."""

    def __init__(self, inner: ModelClient, marks: list[Marks]) -> None:
        self._inner = inner
        self._marks = marks

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, on_delta: Any = None
    ) -> ModelTurn:
        turn = await self._inner.complete(messages, tools, on_delta=on_delta)
        if turn.tool_calls:
            self._marks[0]["gated"] = clock()
        return turn


class _TimedCatalog(AgentCatalog):
    def __init__(self, agents: list[AgentSpec], marks: list[Marks]) -> None:
        super().__init__(agents, include_demo=False)
        self._marks = marks

    def build_model(self, name: str, script_override: Any = None) -> ModelClient:
        return _TimedModel(super().build_model(name, script_override), self._marks)


class ReviewerSide:
    """Reviewer's runtime with a gated ``bench_write`` tool; stamps commits on the database thread."""

    def __init__(self, directory: Path, *, writes_on_loop: bool = False) -> None:
        self.directory = directory
        self.writes_on_loop = writes_on_loop
        self.marks: list[Marks] = [Marks()]
        self.samples: dict[str, list[float]] = {
            "suspend": [],
            "resume": [],
            "resume_from_decide_call": [],
            "raw_gate": [],
            "raw_gate_writes_only": [],
        }
        self.transactions: list[tuple[bool, list[Statement]]] = []  # this run's: (created a request, writes)
        self.committed_on_loop: int | None = None

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        event.listen(Engine, "do_connect", _record_connections)  # removed in stop()
        self.backend = SQLHITLBackend(
            self.directory / "reviewer.db", reviewer="bench", writes_on_loop=self.writes_on_loop
        )
        self.raw = RawReplay(self.directory / "raw.db")
        self.raw_writes = RawReplay(self.directory / "raw_writes.db")
        self._instrument_commits()
        tools = builtin_tools()
        tools.register(
            ToolSpec(
                name="bench_write",
                description="Writes a note (the benchmark only stamps when it starts).",
                parameters=TOOL_SCHEMA,
                handler=self._tool,
                side_effects=True,
            )
        )
        agent = AgentSpec(
            name="bench",
            system_prompt="You write notes.",
            model={"type": "scripted", "script": []},
            tools=["bench_write"],
            policy=ApprovalPolicy(),
        )
        self.runtime = Runtime(
            self.backend, _TimedCatalog([agent], self.marks), workspaces_dir=self.directory / "ws", tools=tools
        )
        await self.runtime.start(recover=False)

    def _instrument_commits(self) -> None:
        """Stamp, right after COMMIT (on the thread that ran it), transactions that created or decided a request."""
        store = self.backend.store
        side = self
        create, decide = RequestWrites.create, RequestWrites.decide

        def create_request(writes: RequestWrites, request: Any, **kwargs: Any) -> None:
            create(writes, request, **kwargs)
            if _recording.seen is not None:
                _recording.seen.append("request_committed")
            side.hitl_id = request.hitl_id

        def decide_request(writes: RequestWrites, *args: Any, **kwargs: Any) -> Any:
            if _recording.seen is not None:
                _recording.seen.append("decision_committed")
            return decide(writes, *args, **kwargs)

        # On the class: the aggregates keep no instance dictionary (restored in stop()).
        RequestWrites.create = create_request  # type: ignore[method-assign]
        RequestWrites.decide = decide_request  # type: ignore[method-assign]
        self._restore = lambda: (setattr(RequestWrites, "create", create), setattr(RequestWrites, "decide", decide))

        def recorded(original: Any) -> Any:
            @contextlib.contextmanager
            def transaction() -> Iterator[StoreTx]:
                seen: list[str] = []
                statements: list[Statement] = []
                _recording.statements, _recording.seen = statements, seen
                try:
                    with original() as tx:
                        yield tx
                finally:
                    _recording.statements = _recording.seen = None
                now = clock()
                side.transactions.append(("request_committed" in seen, _replayed(statements)))
                for name in seen:
                    side.marks[0][name] = now
                    if name == "request_committed":
                        side.loop.call_soon_threadsafe(side.request_ready.set)

            return transaction

        # The database thread's transactions, and (``--mode loop``) those the backend runs on the loop's thread.
        store.transaction = recorded(store.transaction)  # type: ignore[method-assign]
        store.loop_transaction = recorded(store.loop_transaction)  # type: ignore[method-assign]

    async def _tool(self, args: dict[str, Any], ctx: ToolContext) -> str:
        self.marks[0]["tool_start"] = clock()
        self.tool_started.set()
        return f"wrote {args['path']}"

    async def one_run(self, i: int, record: bool) -> None:
        self.marks[0] = Marks()
        self.transactions = []
        self.request_ready = asyncio.Event()
        self.tool_started = asyncio.Event()
        arguments = tool_arguments(i)
        script = [{"tool_calls": [{"name": "bench_write", "args": arguments}]}]
        invocation = await self.runtime.start_run("bench", f"write note {i}", script=script)
        await asyncio.wait_for(self.request_ready.wait(), 30)
        # As when a human decides, the run waits by then (it reaches its wait a loop turn or two after the commit).
        while not self.runtime.driver.waits_for(self.hitl_id):  # noqa: ASYNC110 - our own task's state, no event
            await asyncio.sleep(0)
        marks = self.marks[0]
        marks["decide_called"] = clock()
        await self.runtime.decide_and_resume(
            self.hitl_id, Decision(DecisionKind.APPROVE, args_sha256=args_digest(arguments))
        )
        await asyncio.wait_for(self.tool_started.wait(), 30)
        finished = await self.runtime.wait_for_run(invocation, timeout=30)
        if finished.state != "done":
            raise SystemExit(f"reviewer run {invocation} ended {finished.state}: {finished.error}")
        for whole, raw, sample in ((True, self.raw, "raw_gate"), (False, self.raw_writes, "raw_gate_writes_only")):
            seconds = [raw.replay(statements, whole=whole) for _, statements in self.transactions]
            (gate,) = [took for (created, _), took in zip(self.transactions, seconds, strict=True) if created]
            if record:
                self.samples[sample].append(gate)
        if record:
            self.samples["suspend"].append(marks["request_committed"] - marks["gated"])
            self.samples["resume"].append(marks["tool_start"] - marks["decision_committed"])
            self.samples["resume_from_decide_call"].append(marks["tool_start"] - marks["decide_called"])

    async def stop(self) -> None:
        await self.runtime.stop()
        self.committed_on_loop = self.backend.writes_committed_on_loop
        await self.backend.aclose()
        self._restore()
        self.raw.close()
        self.raw_writes.close()
        event.remove(Engine, "do_connect", _record_connections)


# -- LangGraph -----------------------------------------------------------------------------------
class _State(TypedDict, total=False):
    run: int
    call: dict[str, Any]
    result: str


class LangGraphSide:
    """A two-node graph (agent -> tools); the tools node gates the call with ``interrupt()``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.marks = Marks()
        self.samples: dict[str, list[float]] = {"suspend": [], "resume": []}
        self.tool_before_resume_durable = 0

    async def start(self) -> None:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
        from langgraph.graph import END, START, StateGraph

        side = self

        class Saver(AsyncSqliteSaver):
            """The stock saver; only notes when the resume value's write is durable."""

            async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
                await super().aput_writes(config, writes, task_id, task_path)
                if any(channel == "__resume__" for channel, _ in writes):
                    side.marks.setdefault("resume_committed", clock())
                if any(channel == "__interrupt__" for channel, _ in writes):
                    side.marks["interrupt_committed"] = clock()

        self.connection = await aiosqlite.connect(self.directory / "langgraph.db")
        for pragma in (
            f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}",
            "PRAGMA journal_mode = WAL",
            "PRAGMA synchronous = NORMAL",
            "PRAGMA foreign_keys = ON",
        ):
            await self.connection.execute(pragma)
        saver = Saver(self.connection)
        await saver.setup()

        async def agent(state: _State) -> _State:
            return {"call": {"name": "bench_write", "args": tool_arguments(state["run"])}}

        async def tools(state: _State) -> _State:
            from langgraph.types import interrupt

            if "gated" not in side.marks:  # the node re-runs from the top on resume
                side.marks["gated"] = clock()
            decision = interrupt({"tool_call": state["call"]})
            side.marks["tool_start"] = clock()
            return {"result": f"wrote {state['call']['args']['path']} ({decision['decision']})"}

        builder = StateGraph(_State)
        builder.add_node("agent", agent)
        builder.add_node("tools", tools)
        builder.add_edge(START, "agent")
        builder.add_edge("agent", "tools")
        builder.add_edge("tools", END)
        self.graph = builder.compile(checkpointer=saver)

    async def one_run(self, i: int, record: bool) -> None:
        from langgraph.types import Command

        self.marks = marks = Marks()
        config = {"configurable": {"thread_id": f"run-{i}"}}
        out = await self.graph.ainvoke({"run": i}, config, durability="sync")
        returned = clock()
        if "__interrupt__" not in out or "interrupt_committed" not in marks:
            raise SystemExit(f"langgraph run {i} did not suspend durably: {out}")
        arguments = out["__interrupt__"][0].value["tool_call"]["args"]
        decision = {"decision": "approve", "args_sha256": args_digest(arguments)}
        marks["resume_called"] = clock()
        out = await self.graph.ainvoke(Command(resume=decision), config, durability="sync")
        if not str(out.get("result", "")).startswith("wrote"):
            raise SystemExit(f"langgraph run {i} did not finish: {out}")
        if record:
            self.samples["suspend"].append(returned - marks["gated"])
            self.samples["resume"].append(marks["tool_start"] - marks["resume_called"])
            if marks.get("resume_committed", float("inf")) > marks["tool_start"]:
                self.tool_before_resume_durable += 1

    async def stop(self) -> None:
        await self.connection.close()


async def measure(directory: Path, runs: int, warmup: int, block: int, mode: str) -> tuple[ReviewerSide, LangGraphSide]:
    ours, theirs = ReviewerSide(directory, writes_on_loop=mode == "loop"), LangGraphSide(directory)
    await ours.start()
    await theirs.start()
    try:
        for i in range(warmup):
            await ours.one_run(i, record=False)
            await theirs.one_run(i, record=False)
        for start in range(warmup, warmup + runs, block):
            settle()
            stop = min(start + block, warmup + runs)
            sides = (ours, theirs) if (start // block) % 2 == 0 else (theirs, ours)
            for side in sides:
                for i in range(start, stop):
                    await side.one_run(i, record=True)
    finally:
        await ours.stop()
        await theirs.stop()
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=400, help="timed runs per side (at least 300 for the goal)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--block", type=int, default=20, help="runs per alternation between the sides")
    add_write_mode_option(parser)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="reviewer-bench-") as tmp:
        ours, theirs = asyncio.run(measure(Path(tmp), args.runs, args.warmup, args.block, args.mode))

    figures: dict[str, Any] = {"runs": args.runs, "mode": args.mode}
    print(
        f"approval round trip, {args.runs} runs per side (ms), ours writing {WRITE_MODES[args.mode]}, {load_average()}:"
    )
    print(f"  {'':34s} {'p50':>8s} {'p90':>8s} {'p99':>8s} {'max':>8s}")
    for label, samples in (
        ("reviewer suspend", ours.samples["suspend"]),
        ("raw sqlite3, the same transaction", ours.samples["raw_gate"]),
        ("  its writes only, JSON ready-made", ours.samples["raw_gate_writes_only"]),
        ("langgraph suspend", theirs.samples["suspend"]),
        ("reviewer resume (commit -> tool)", ours.samples["resume"]),
        ("reviewer resume (decide() -> tool)", ours.samples["resume_from_decide_call"]),
        ("langgraph resume", theirs.samples["resume"]),
    ):
        stats = describe_ms(samples)
        figures[label] = stats
        print(
            f"  {label:34s} {stats['p50_ms']:8.3f} {stats['p90_ms']:8.3f} {stats['p99_ms']:8.3f} {stats['max_ms']:8.3f}"
        )
    print(
        f"  langgraph started the tool before its resume value was durable in "
        f"{theirs.tool_before_resume_durable} of {args.runs} runs"
    )
    figures["langgraph_tool_before_resume_durable"] = theirs.tool_before_resume_durable
    if ours.committed_on_loop is not None:
        figures["writes_committed_on_loop"] = ours.committed_on_loop
        print(f"  ours: {ours.committed_on_loop} write transactions committed on the loop's thread")
    p50 = {name: describe_ms(samples)["p50_ms"] for name, samples in ours.samples.items()}
    langgraph = {half: describe_ms(theirs.samples[half])["p50_ms"] for half in ("suspend", "resume")}
    print(
        f"  p50 speed-ups over langgraph: suspend {langgraph['suspend'] / p50['suspend']:.2f}x, resume from the"
        f" commit {langgraph['resume'] / p50['resume']:.2f}x, resume from the decide() call"
        f" {langgraph['resume'] / p50['resume_from_decide_call']:.2f}x"
    )
    goals = [
        Goal("round_trip_resume_speedup_p50", langgraph["resume"] / p50["resume"], 4.0, "x", at_least=True),
        Goal("round_trip_suspend_vs_raw_p50", p50["suspend"] / p50["raw_gate"], 1.5, "x", at_least=False),
    ]
    report(goals, figures, bench="round_trip")


if __name__ == "__main__":
    main()
