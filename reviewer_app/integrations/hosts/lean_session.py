"""Session events (tool results, prompts, turn and session ends) recorded on the hook's lean path.

Why: a host runs its session hooks after every tool call (Claude Code's ``PostToolUse``) and at every turn's end,
and waits for them; the full path (:mod:`.session`) loads SQLAlchemy and the backend for each (~0.35 s of CPU)
to write a few rows. This module writes the same rows with ``sqlite3`` alone, in one transaction, through the
same reader (:mod:`.lifecycle_wire`) and Claude's transcript copier (:mod:`reviewer_app.integrations.claude_code.
transcript`, its cursor moved only once the rows are committed; a large field stored once as a blob, as the store
stores it). Whatever it cannot write *for certain* is the full path's, with nothing written here: a database that
is not SQLite at the bundled revision, an event the reader refuses (the full path says why on stderr), a run in a
state only the backend's state machine moves on (interrupted, failed), a write lock held longer than
:data:`LOCK_WAIT_MS`, any error. Tests compare the rows of the two paths.

Standard library only at import, no dataclasses, enums or ``typing``.
"""

from __future__ import annotations

import time
from pathlib import Path

from reviewer_app.domain.lean_json import dumps
from reviewer_app.integrations.claude_code.lean_store import SMALL_VALUE_BYTES, LeanStore, sqlite_file
from reviewer_app.integrations.hosts.lifecycle_wire import PROMPT, RUN_END, TOOL_RESULT, lifecycle_fields

TYPE_CHECKING = False  # no ``typing`` at run time (see the module docstring)
if TYPE_CHECKING:
    from typing import Any

    from reviewer_app.integrations.claude_code.transcript import TranscriptChunk

LOCK_WAIT_MS = 250
"""How long the lean path waits for SQLite's write lock before it leaves the event to the full path (which rides
a longer lock out with the one retry policy)."""
OPEN_RUN_STATES = ("queued", "running", "waiting")
"""``RunState``'s open states: a session's end finishes its runs in these (``session.record``)."""
RUNS_LISTED = 500
"""``RunWrites.list``'s default limit, which the full path's session end reads the open runs through."""
_ENDED = ("done", "cancelled")


class _LeaveIt(Exception):
    """Something this path cannot write for certain: nothing is committed, the full path records the event."""


def record(options: dict[str, Any], database: str, payload: bytes) -> bool:
    """Record the session event ``options["--event"]`` of ``options["host"]``; True once its rows are committed,
    False when the full path must record it (then nothing was written and the transcript's cursor did not move)."""
    try:
        event = lifecycle_fields(options["host"], options["--event"], payload)
    except Exception:  # refused or unreadable: the full path reads it again and says why
        return False
    store = LeanStore.open(database)
    if store is None:
        return False
    try:
        store.connection.execute(f"PRAGMA busy_timeout = {LOCK_WAIT_MS}")
        writes = SessionWrites(store, options["host"], event)
        transcript = event["transcript_path"]
        if transcript and event["kind"] != PROMPT and not options.get("--no-transcript"):
            from reviewer_app.integrations.claude_code.transcript import read_new

            with read_new(Path(transcript), event["session_id"], _state_dir(options, database)) as chunk:
                store.transaction(lambda: writes.write(chunk))  # raises (the cursor stays) unless committed
        else:
            store.transaction(lambda: writes.write(None))
    except Exception:  # _LeaveIt, a busy database, an unreadable transcript…: the full path's
        store.close(checkpoint=False)
        return False
    try:
        store.committed()
    except Exception:  # recorded all the same: an open window shows it at its next poll instead
        pass
    store.close(checkpoint=False)
    return True


def _state_dir(options: dict[str, Any], database: str) -> Path:
    """Where the transcript cursors are (``command._state_dir``: beside the database unless told)."""
    if options.get("--state-dir"):
        return Path(options["--state-dir"])
    path = sqlite_file(database)
    if path is None:  # LeanStore.open took it for a SQLite file: cannot happen
        raise _LeaveIt("not a SQLite file")
    return path.parent / "hook-state"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class SessionWrites:
    """One event's rows, written as ``session.record`` writes them through the backend (``register_run``,
    ``append_blocks``, ``narrate_transcript``, ``set_run_state``, ``finish_run``), inside one transaction."""

    __slots__ = ("connection", "event", "host", "store")

    def __init__(self, store: LeanStore, host: str, event: dict[str, Any]) -> None:
        self.store = store
        self.connection = store.connection
        self.host = host
        self.event = event

    def write(self, chunk: TranscriptChunk | None) -> bool:
        event, session = self.event, self.event["session_id"]
        kind = event["kind"]
        if kind == PROMPT:  # without a prompt id there is no run to name (the calls will name theirs)
            if event["run_id"] is not None:
                self.register_run(event["run_id"], event["prompt"], event["cwd"])
            return True
        run = event["run_id"] or session
        if self.host == "claude-code":
            if kind == TOOL_RESULT:  # a turn's end names no run of its own: it must not make one
                self.register_run(run, None, event["cwd"])
            if chunk is not None:
                self.copy_transcript(chunk)
            if kind == TOOL_RESULT:
                self.claude_result(run)
                return True
        if kind == TOOL_RESULT:
            self.register_run(run, None, event["cwd"])
            self.narrate_result(run)
            return True
        runs = ([event["run_id"]] if event["run_id"] else []) if kind == RUN_END else self.open_runs()
        for run_id in runs:
            self.finish(run_id)
        return True

    # -- as the backend's register_run and append_blocks --------------------------------------------------------
    def register_run(self, run: str, prompt: str | None, workspace: str | None) -> None:
        """The run and its session unless they exist; a run that existed gets the prompt, and its session the
        workspace, it lacked (``TimelineWrites.register_run`` → ``RunWrites.fill_in``)."""
        session = self.event["session_id"]
        self.store.ensure_session(session, self.host, workspace)
        if self.store.ensure_invocation(run, session, self.host, prompt):
            return
        if prompt:
            self.connection.execute(
                "UPDATE invocations SET prompt = ?, updated_at_ms = ? WHERE id = ? AND prompt IS NULL",
                (prompt, _now_ms(), run),
            )
        if workspace:
            filled = self.connection.execute(
                "UPDATE sessions SET workspace = ? WHERE id = ? AND workspace IS NULL", (workspace, session)
            )
            if filled.rowcount:
                self.connection.execute(
                    "UPDATE invocations SET updated_at_ms = ? WHERE session_id = ?", (_now_ms(), session)
                )

    def append(self, run: str, block_id: str, kind: str, op: str, data: dict[str, Any]) -> None:
        """One timeline event (``TimelineWrites.append``): its large top-level fields stored once as blobs and named
        in ``blob_refs``, as the store's ``externalize`` does."""
        text, refs = dumps(data), "null"
        if len(text) >= SMALL_VALUE_BYTES:  # blobs.small_json's None: large fields become blobs
            from reviewer_app.persistence.blobs import externalize

            rest, named = externalize(data, self.store.put_blob)
            text, refs = dumps(rest), (dumps(named) if named else "null")
        self.connection.execute(
            "INSERT INTO block_events (block_id, parent_id, kind, op, data, ts_ms, session_id, invocation_id, "
            "blob_refs) VALUES (?, NULL, ?, ?, ?, ?, ?, ?, ?)",
            (block_id, kind, op, text, _now_ms(), self.event["session_id"], run, refs),
        )

    def has_block(self, run: str, block_id: str, op: str) -> bool:
        return (
            self.connection.execute(
                "SELECT 1 FROM block_events WHERE invocation_id = ? AND block_id = ? AND op = ? LIMIT 1",
                (run, block_id, op),
            ).fetchone()
            is not None
        )

    # -- the events -----------------------------------------------------------------------------------------------
    def copy_transcript(self, chunk: TranscriptChunk) -> None:
        """``timeline.copy_transcript``: the transcript's new runs (titled by their first prompt), then its blocks."""
        for run, title in chunk.run_titles.items():
            self.register_run(run, title, None)
        for block in chunk.blocks:
            self.append(block.invocation_id, block.block_id, block.kind, block.op, block.data)

    def claude_result(self, run: str) -> None:
        """``session._claude_result``: the call's block (unless the transcript made it) and its result."""
        from reviewer_app.integrations.claude_code.transcript import tool_block_id

        event = self.event
        block_id = tool_block_id(event["session_id"], event["call_id"])
        if not self.has_block(run, block_id, "apply"):
            called = {"name": event["tool_name"], "call_id": event["call_id"], "arguments": event["arguments"]}
            self.append(run, block_id, "tool_use", "apply", {**called, "status": "pending"})
        self.append(run, block_id, "tool_use", "patch", self._result())

    def narrate_result(self, run: str) -> None:
        """``ReviewClient.narrate_transcript`` of the call and its result, each written once."""
        from reviewer_app.integrations.claude_code.lean import stable_id

        event = self.event
        block_id = "blk_" + stable_id(run, event["call_id"])[4:28]  # core.block_id_for: uuid5(…).hex[:24]
        if not self.has_block(run, block_id, "apply"):
            called = {
                "name": event["tool_name"] or "tool",
                "call_id": event["call_id"],
                "arguments": event["arguments"],
            }
            self.append(run, block_id, "tool_use", "apply", {**called, "status": "pending"})
        if not self.has_block(run, block_id, "patch"):
            self.append(run, block_id, "tool_use", "patch", self._result())

    def _result(self) -> dict[str, Any]:
        return {"status": "success" if self.event["ok"] else "error", "result": self.event["result"]}

    def open_runs(self) -> list[str]:
        """The session's open runs, as the full path finds them (``list_runs(states=…)``, newest first)."""
        marks = ", ".join("?" * len(OPEN_RUN_STATES))
        found = self.connection.execute(
            "SELECT invocations.id, invocations.session_id FROM invocations JOIN sessions "
            f"ON sessions.id = invocations.session_id WHERE invocations.state IN ({marks}) "
            "ORDER BY invocations.created_at DESC, invocations.updated_at_ms DESC LIMIT ?",
            (*OPEN_RUN_STATES, RUNS_LISTED),
        ).fetchall()
        return [run for run, session in found if session == self.event["session_id"]]

    def finish(self, run: str) -> None:
        """``ReviewClient.set_run_state(RUNNING)`` then ``finish_run``: its ``end`` block and state ``done``."""
        row = self.connection.execute("SELECT state FROM invocations WHERE id = ?", (run,)).fetchone()
        if row is None or row[0] in _ENDED:
            return
        if row[0] not in OPEN_RUN_STATES:  # interrupted, failed: the backend's state machine says what may follow
            raise _LeaveIt(f"run {run} is {row[0]}")
        self._set_state(run, row[0], "running")
        self.append(run, f"{run}:end", "end", "apply", {"state": "done"})
        self._set_state(run, "running", "done")

    def _set_state(self, run: str, current: str, state: str) -> None:
        """``RunWrites.set_state`` for the steps :meth:`finish` takes (each legal from where the run is)."""
        ms = _now_ms()
        columns = "state = ?, updated_at_ms = ?, active_ms = active_ms + 0"
        values: list[Any] = [state, ms]
        if state == "running":
            columns += ", error = NULL"
            if current == "queued":
                columns += ", started_at = ?"
                values.append(ms // 1000)
        else:  # done
            columns += ", finished_at = ?"
            values.append(ms // 1000)
        cursor = self.connection.execute(
            f"UPDATE invocations SET {columns} WHERE id = ? AND state = ?", (*values, run, current)
        )
        if cursor.rowcount != 1:  # read in this very transaction: cannot happen
            raise _LeaveIt(f"run {run} changed meanwhile")


__all__ = ["SessionWrites", "record"]
