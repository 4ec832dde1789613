"""The hook's lean path: a call the session's exact waiver, the persistent rules or ``--allow-tools`` settle,
answered near the interpreter's own start; a call nothing settles, shown in the inbox as early. Every host, in its
own format.

Why: an agent's permission hook runs before every tool call, so most of its calls meet a command a reviewer
already approved for the session, an operator's rule names, or a tool the hook command allows. Answering those
needs the stored rows and ``sqlite3``, not argparse, the typed event, dataclasses, the rules engine or the shell
parser. ``python -m reviewer_app hook …`` tries this path first (:mod:`reviewer_app.__main__`); whatever it cannot
settle *for certain* goes on, with the stdin bytes it read, to the hook's full command (:mod:`.command`), which
decides exactly as before: an option it does not know, an event or field its host's reader refuses
(:mod:`reviewer_app.integrations.hosts.lean_wire`, the same reader the full path's profiles use), rules the lean
rules cannot judge for certain (:mod:`reviewer_app.domain.lean_rules`: a command that is not plain, a wildcard
allow, which needs the risk module…), ``--allow-tools`` naming a call that may be high risk
(:mod:`reviewer_app.domain.lean_risk` tells only the plainly harmless ones), a waiver it cannot judge without the
parser (:mod:`reviewer_app.domain.lean_settlement`), a database that is not SQLite at the bundled revision, any
error. It never fails open: it answers only after committing the decision of the waiver, rule or
``--allow-tools`` (allow, or a deny rule's deny); anything else is the full path's to answer. A call that
certainly nothing settles (an ask rule sends it to a person; or no rule applies, no waiver row could cover it and
it is not in ``--allow-tools``) is written as the waiting request here, after its watchdog is up, exactly as
:func:`.hook.answer_fast` writes it (a file write's or edit's with the diff :mod:`.diffs` makes for both); this
process then waits for its decision with ``sqlite3`` alone (:mod:`.lean_wait`), or, where that waiter is unsure,
the full path waits (:class:`Handover`).

A session event (``--event``: a tool's result, a prompt, a turn's or session's end) is recorded here too, by
:mod:`reviewer_app.integrations.hosts.lean_session`, which writes the full path's rows or leaves the event to it.

What it writes is what :mod:`.fast` writes, through the same statements (:mod:`.lean_store`), the same audit step
(:mod:`reviewer_app.domain.audit_chain`) and the same limits (``limits.check_request``); tests compare the rows
and answers of the two paths.

Standard library only at import, no dataclasses, enums or ``typing``.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path

from reviewer_app.integrations.claude_code.lean_store import LeanStore
from reviewer_app.integrations.claude_code.wire import (
    ALL_DECISIONS,
    MAX_STDIN_BYTES,
    WITHOUT_EDIT,
    HookInputError,
    load_object,
)
from reviewer_app.integrations.hosts.host_tables import HOST_TABLES
from reviewer_app.integrations.hosts.lean_wire import event_fields, render

TYPE_CHECKING = False  # no ``typing`` at run time (see the module docstring)
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from reviewer_app.integrations.claude_code.host_watch import StdoutWatch

LEAN_HOSTS = tuple(HOST_TABLES)
"""Hosts whose events the lean path reads: every host, each in its own format (:mod:`reviewer_app.integrations.
hosts.lean_wire`, which the full path's profiles read and write through too)."""
DEFAULT_TIMEOUT_S = 55.0
"""The hook's default budget (``hook.DEFAULT_TIMEOUT_S``, which a test holds this to)."""
LOCK_WAIT_MS = 250
"""How long the lean path waits for SQLite's write lock before it leaves the call to the full path."""
EXPIRY_GRACE_S = 3
"""``hook.EXPIRY_GRACE_S`` (a test holds the two equal)."""
DIFF_TOOLS = frozenset({"Write", "write_file", "create", "Create", "write", "Edit", "MultiEdit", "replace", "edit"})
"""``diffs.WRITE_TOOLS | diffs.EDIT_TOOLS``: a waiting request of these carries a diff of the file (:mod:`.diffs`,
imported for them only: ``difflib``)."""
_FLAGS = frozenset({"--no-transcript", "--no-watchdog"})
_VALUED = frozenset({"--db", "--timeout", "--on-error", "--on-timeout", "--allow-tools", "--state-dir", "--event"})


# -- the lean path ---------------------------------------------------------------------------------------------
def hook_options(argv: list[str]) -> dict[str, Any] | None:
    """``<host> [options]`` as ``hook <host>``'s parser reads them, when every option is one of its own (spelled
    out); None for anything else (``--event``, ``-h``, an abbreviation…): the full command reads it then."""
    if not argv or argv[0] not in LEAN_HOSTS:
        return None
    options: dict[str, Any] = {"host": argv[0]}
    index = 1
    while index < len(argv):
        word = argv[index]
        name, equals, value = word.partition("=")
        if word in _FLAGS:
            options[word] = True
        elif name in _VALUED and equals:
            options[name] = value
        elif word in _VALUED and index + 1 < len(argv) and not argv[index + 1].startswith("-"):
            index += 1
            options[word] = argv[index]
        else:
            return None
        index += 1
    if options.get("--on-error", "ask") not in ("ask", "deny") or options.get("--on-timeout", "ask") not in (
        "ask",
        "deny",
    ):
        return None
    try:
        timeout = float(options.get("--timeout", "0"))
    except ValueError:
        return None
    options["timeout"] = timeout if timeout > 0 else DEFAULT_TIMEOUT_S
    return options


class Handover:
    """A waiting request the lean path created (its watchdog started first), for the full path to wait on: what
    ``request_fields`` needs to describe the same row."""

    __slots__ = (
        "created",
        "database",
        "deadline",
        "event",
        "expires_at",
        "hitl_id",
        "metadata",
        "options",
        "row",
        "stdout_watch",
        "title",
        "watcher",
    )

    def __init__(
        self,
        hitl_id: str,
        title: str | None,
        metadata: dict[str, Any],
        expires_at: int,
        watcher: Any,
        stdout_watch: StdoutWatch | None = None,
        *,
        options: dict[str, Any] | None = None,
        database: str = "",
        event: dict[str, Any] | None = None,
        row: dict[str, Any] | None = None,
        deadline: float = 0.0,
        created: bool = False,
    ) -> None:
        self.hitl_id = hitl_id
        self.title = title
        self.metadata = metadata
        self.expires_at = expires_at
        self.watcher = watcher
        self.stdout_watch = stdout_watch
        """Armed once the request is written: the host leaving before the full path waits ends this process."""
        self.options = options
        """The hook's options as :func:`hook_options` read them; with :attr:`event` (``event_fields``), :attr:`row`
        (:func:`request_row`), :attr:`database` and :attr:`deadline` (``time.monotonic()``: the budget counted from
        the process's start), what the lean waiter (:mod:`.lean_wait`) waits with."""
        self.database = database
        self.event = event
        self.row = row
        self.deadline = deadline
        self.created = created
        """This process wrote the request (else its id existed already: the full path finds out what it holds)."""


def answer(argv: list[str], stdin: BinaryIO) -> tuple[str | Handover | None, bytes | None]:
    """The hook's answer when the lean path settles the call (its decision committed), a :class:`Handover` when it
    created the call's waiting request, ``""`` when it recorded a session event (``--event``), else None; with the
    stdin bytes read so far (None: stdin untouched) for the full command. Never raises."""
    options = hook_options(argv)
    database = (options or {}).get("--db") or os.environ.get("REVIEWER_DB")
    if options is None or not database:
        return None, None
    try:
        payload = bytes(stdin.read(MAX_STDIN_BYTES + 1))
    except BaseException:  # unreadable: the full path reads the same nothing and answers its fallback
        return None, b""
    if len(payload) > MAX_STDIN_BYTES:  # the full path refuses it for its size, and says so
        return None, payload
    try:
        if "--event" in options:  # a session event: recorded here ("": print nothing), or left to the full path
            from reviewer_app.integrations.hosts.lean_session import record

            return ("" if record(options, database, payload) else None), payload
        outcome = _settle(options, database, payload)
    except BaseException:  # anything at all: the full path decides, from the same bytes
        outcome = None
    return outcome, payload


def _settle(options: dict[str, Any], database: str, payload: bytes) -> str | Handover | None:
    """The answer's text once a rule's, ``--allow-tools``' or the waiver's decision is committed, the handover of a
    created waiting request, or None when the full path must decide."""
    from reviewer_app.domain.lean_settlement import RULE_COLUMNS, UNSURE, settle_by_stored_waivers

    host = options["host"]
    try:
        event = event_fields(host, load_object(payload))
    except HookInputError:
        return None
    tool_name, arguments = event["tool_name"], event["tool_input"]
    allow_tools = {name.strip() for name in str(options.get("--allow-tools", "")).split(",")}
    allowed = tool_name in allow_tools
    if allowed:
        from reviewer_app.domain.lean_risk import wildcard_surely_settles

        if not wildcard_surely_settles(tool_name, arguments, event["cwd"]):
            return None  # high risk, or unsure: the full path's check (then a waiver may settle it)
    from reviewer_app.domain.hook_lease import process_age_s

    deadline = time.monotonic() - process_age_s() + options["timeout"]
    store = LeanStore.open(database)
    if store is None:
        return None
    try:
        rules = [row for row in store.rule_rows(RULE_COLUMNS, time.time()) if _concerns(row, tool_name)]
        if rules:  # settled here only when the lean rules are certain of the engine's verdict
            from reviewer_app.domain.lean_rules import rules_verdict

            verdict = rules_verdict(tool_name, arguments, rules, agent=host, session_id=event["session_id"])
            if verdict == UNSURE:
                return None
            if isinstance(verdict, tuple):  # an ask rule stops the search too: no waiver overrides it
                effect, rule_id, message = verdict
                if effect == "ask":
                    return _create_waiting(store, options, database, event, deadline)
                decided_by = f"rule:{rule_id}"  # Settlement.by_rule's, its hit counted as FastStore.settle counts it
                return _record_settlement(store, options, event, effect, decided_by, message, deadline, rule_id=rule_id)
        if allowed:  # after the rules, before the waivers, as settlement_for orders them
            from reviewer_app.domain.lean_settlement import allow_tools_settlement

            return _record_settlement(store, options, event, "allow", *allow_tools_settlement(tool_name), deadline)
        rows = store.waiver_rows(event["session_id"], tool_name)
        waiver = settle_by_stored_waivers(tool_name, arguments, ((row_id, scope) for row_id, _, scope in rows))
        if waiver is None:
            return _create_waiting(store, options, database, event, deadline)
        if not isinstance(waiver, tuple):  # UNSURE
            return None
        waiver_id, description = waiver
        return _settle_by_waiver(store, options, event, waiver_id, description, deadline)
    finally:
        store.close(checkpoint=False)  # the process ends (os._exit) or the backend opens its own: no checkpoint


def _concerns(row: tuple[Any, ...], tool_name: str) -> bool:
    """Whether a stored rule (``RULE_COLUMNS``) could match a call of this tool (:func:`may_concern`)."""
    from reviewer_app.domain.lean_settlement import RULE_COLUMNS, may_concern

    pattern = row[RULE_COLUMNS.index("pattern")]
    return isinstance(pattern, str) and may_concern(pattern, tool_name)


def _settle_by_waiver(
    store: LeanStore, options: dict[str, Any], event: dict[str, Any], waiver_id: int, description: str, deadline: float
) -> str | None:
    from reviewer_app.domain.lean_settlement import waiver_settlement

    decided_by, message = waiver_settlement(waiver_id, description)
    return _record_settlement(store, options, event, "allow", decided_by, message, deadline)


def _record_settlement(
    store: LeanStore,
    options: dict[str, Any],
    event: dict[str, Any],
    verdict: str,
    decided_by: str,
    message: str,
    deadline: float,
    *,
    rule_id: str | None = None,
) -> str | None:
    """The call's request and its automatic decision (``verdict`` allow: approve, deny: reject) committed as
    ``FastStore.settle`` commits them; the answer's text, or None when the full path must decide."""
    from reviewer_app.domain.audit_chain import args_digest
    from reviewer_app.domain.limits import check_json_value, check_request

    host = options["host"]
    title = None if store.run_exists(event["run_id"]) else _title(options, event)
    row = request_row(host, event, title)
    check_request({key: row[key] for key in _CHECKED})
    check_json_value({"message": message, "edited_args": None, "extra": {}}, "the decision")
    arguments = event["tool_input"]
    kind = "approve" if verdict == "allow" else "reject"
    response = {"decision": kind, "message": message, "args_sha256": args_digest(arguments)}
    response["reviewer"] = decided_by
    _lock_wait_within(store, deadline)

    def write() -> bool:
        store.ensure_session(event["session_id"], host, event["cwd"])
        store.ensure_invocation(event["run_id"], event["session_id"], host, title)
        if not store.create_request(row):
            return False  # asked before under this id: the full path reports what became of it
        store.decide(row["hitl_id"], arguments, kind, response, decided_by, message)
        if rule_id is not None:
            store.record_hit(rule_id)
        return True

    if not store.transaction(write):
        return None
    try:
        store.committed()
    except Exception:
        pass
    return render(host, verdict, message, None, event["event"])


def _lock_wait_within(store: LeanStore, deadline: float) -> None:
    """One short wait for the write lock (within the hook's budget): a lock held longer is the full path's to ride
    out, with the one retry policy, which tells the operator why the hook waits."""
    left_ms = int(max(deadline - time.monotonic(), 0.05) * 1000)
    store.connection.execute(f"PRAGMA busy_timeout = {min(LOCK_WAIT_MS, left_ms)}")


def _create_waiting(
    store: LeanStore, options: dict[str, Any], database: str, event: dict[str, Any], deadline: float
) -> Handover | None:
    """The call's waiting request, written after its watchdog is up (``hook.answer_fast``'s order and rows)."""
    from reviewer_app.domain.hook_lease import hook_process_metadata
    from reviewer_app.domain.limits import check_request

    host = options["host"]
    title = None if store.run_exists(event["run_id"]) else _title(options, event)
    diff = None
    if event["tool_name"] in DIFF_TOOLS:  # the file as it is now against what the call writes (``_waiting_fields``)
        from reviewer_app.integrations.claude_code.diffs import diff_for

        diff = diff_for(event["tool_name"], event["tool_input"], event["cwd"])
    expires_at = int(time.time() + (deadline - time.monotonic())) + EXPIRY_GRACE_S
    metadata = hook_process_metadata()
    row = request_row(host, event, title, metadata=metadata, expires_at=expires_at, diff=diff)
    check_request({key: row[key] for key in _CHECKED})
    watcher = None
    created = False
    if not options.get("--no-watchdog"):  # up before the request exists: a SIGKILL from here on is noticed
        command = watchdog_command(reviewer_command(), database, row["hitl_id"], host, expires_at + 60)
        watcher = spawn_watchdog(command)
    try:
        _lock_wait_within(store, deadline)

        def write() -> bool | None:
            store.ensure_session(event["session_id"], host, event["cwd"])
            store.ensure_invocation(event["run_id"], event["session_id"], host, title)
            return store.create_request(row) or None  # an existing id: the full path finds it

        if store.transaction(write) is True:
            created = True
            store.committed()
    except BaseException:
        if watcher is not None:
            stop_watchdog(watcher)
        raise
    stdout_watch = None
    if watcher is not None:  # the watchdog withdraws the request for a host that left while the full path loads
        from reviewer_app.integrations.claude_code.host_watch import StdoutWatch

        stdout_watch = StdoutWatch.start(_host_left_early)
    return Handover(
        row["hitl_id"],
        title,
        metadata,
        expires_at,
        watcher,
        stdout_watch,
        options=options,
        database=database,
        event=event,
        row=row,
        deadline=deadline,
        created=created,
    )


HOST_STOPPED_READING = "the host stopped reading the answer"


def _host_left_early() -> None:
    """The host stopped reading before the full path took the watch over: end now, and let the watchdog (its
    code loaded, reading this process's reason) withdraw the request as answered elsewhere."""
    try:
        sys.stderr.write(
            f"reviewer-app hook: {HOST_STOPPED_READING}: the request leaves the inbox (answered elsewhere)\n"
        )
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    tell_watchdog(HOST_STOPPED_READING)
    os._exit(0)  # nobody reads an answer now; the exit itself is the watchdog's signal


_reason_fd: int | None = None
"""The write end of the watchdog's stdin: a reason written there is what its withdrawal says; this process
exiting closes it, which the watchdog notices at once (a SIGKILL included)."""


def tell_watchdog(why: str) -> None:
    """Say why this process is about to end without an answer (one short line; best effort)."""
    if _reason_fd is None:
        return
    try:
        os.write(_reason_fd, why.encode("utf-8")[:REASON_MAX_BYTES] + b"\n")
    except OSError:
        pass


REASON_MAX_BYTES = 200


def stop_watchdog(process: Any) -> None:
    """Stop the watchdog once the hook has its answer (``SIGTERM``, then its exit awaited for up to 2 s)."""
    try:
        process.send_signal(15)  # SIGTERM, without importing ``signal``'s enums
        process.wait(timeout=2)
    except (OSError, TimeoutError):
        pass
    except Exception as exc:  # ``subprocess.TimeoutExpired``, told by name: ``subprocess`` is not imported here
        if type(exc).__name__ != "TimeoutExpired":
            raise


def reviewer_command() -> list[str]:
    """How to run ``reviewer-app`` again from this process (a frozen bundle is its own executable): what hooks are
    installed as and watchdogs started with.

    ``-P``: hosts run their hooks in the project, where the agent writes files, and ``python -m`` would put that
    directory first on the module path (a ``json.py`` written there would run as the hook)."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-P", "-m", "reviewer_app"]


def watchdog_command(reviewer: list[str], database: str, hitl_id: str, agent: str, deadline: float) -> list[str]:
    """The command line of the watchdog that withdraws ``hitl_id`` if this process dies before answering."""
    from reviewer_app.domain.hook_lease import process_start_ticks

    pid = os.getpid()
    command = [*reviewer, "hook", "_watch", "--db", database, "--hitl-id", hitl_id, "--pid", str(pid)]
    command += ["--until", str(int(deadline)), "--agent", agent]
    ticks = process_start_ticks(pid)
    if ticks is not None:
        command += ["--start-ticks", str(ticks)]
    return command


class SpawnedProcess:
    """A child started with ``os.posix_spawn``, with what the hook does to its watchdog under ``Popen``'s names."""

    __slots__ = ("pid",)

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def send_signal(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait(self, timeout: float) -> int:
        """Its exit status, reaped; ``TimeoutError`` when it is still running after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return status
            if time.monotonic() > deadline:
                raise TimeoutError(f"process {self.pid} still running after {timeout:g} s")
            time.sleep(0.01)


def spawn_watchdog(command: list[str]) -> Any:
    """The watchdog's process, in a session of its own, its stdin the read end of a pipe this process holds the
    write end of (:func:`tell_watchdog`), its stdout and stderr on ``/dev/null``, and no other descriptor of this
    process (``Popen(start_new_session=True, close_fds=True)``); None when it cannot start (the hook still
    abandons its request on every signal it can catch).

    On Linux with ``os.posix_spawn``: importing ``subprocess`` (signal's enums, selectors, threading) costs the
    waiting request's first appearance in the inbox more than the spawn itself."""
    global _reason_fd
    try:
        reason_read, reason_write = os.pipe()  # neither end inheritable: no other child of this process holds one
    except OSError:
        return None
    try:
        process = _spawn(command, reason_read)
    finally:
        os.close(reason_read)
    if process is None:
        os.close(reason_write)
    else:
        if _reason_fd is not None:
            os.close(_reason_fd)
        _reason_fd = reason_write
    return process


def _spawn(command: list[str], stdin_fd: int) -> Any:
    if sys.platform == "linux" and hasattr(os, "posix_spawn") and os.path.isabs(command[0]):
        try:
            return SpawnedProcess(os.posix_spawn(command[0], command, os.environ, **_spawn_options(stdin_fd)))
        except OSError:
            return None
    import subprocess

    try:
        return subprocess.Popen(
            command,
            stdin=stdin_fd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return None


def _spawn_options(stdin_fd: int) -> dict[str, Any]:
    """``posix_spawn``'s options for a detached child: ``stdin_fd`` as its stdin, stdout and stderr on
    ``/dev/null``, every other inheritable descriptor closed (Python's own are not inheritable; the host may have
    passed some), a new session."""
    actions: list[tuple[Any, ...]] = [
        (os.POSIX_SPAWN_DUP2, stdin_fd, 0),
        (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
        (os.POSIX_SPAWN_OPEN, 2, os.devnull, os.O_WRONLY, 0),
    ]
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and os.get_inheritable(fd):
                actions.append((os.POSIX_SPAWN_CLOSE, fd))
        except OSError:  # the directory's own descriptor, closed by now
            continue
    return {"file_actions": actions, "setsid": True}


_CHECKED = ("hitl_id", "hitl_type", "session_id", "invocation_id", "data", "metadata", "tool_name", "tool_call_id")


def request_row(
    host: str,
    event: dict[str, Any],
    title: str | None,
    *,
    metadata: dict[str, Any] | None = None,
    expires_at: int | None = None,
    diff: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The request ``host``'s event becomes: ``request.request_fields`` (a test holds the two to each other), as
    the values :meth:`LeanStore.create_request` writes; ``diff``: a file write's (:func:`.diffs.diff_for`)."""
    tables = HOST_TABLES[host]
    name = event["event"]
    data: dict[str, Any] = {"hook_event": name, "shell_tools": list(tables["shell_tools"])}
    for key in ("permission_mode", "transcript_path", "model"):
        if event[key]:
            data[key] = event[key]
    data.update(event["extra"])
    if diff is not None:  # ``request_fields(extra={"diff": …})``: after the host's own keys
        data["diff"] = diff
    arguments = event["tool_input"]
    data["arguments"] = arguments
    description = arguments.get("description")
    if isinstance(description, str) and description:
        data["description"] = description
    schema = tables["schemas"].get(event["tool_name"])
    if schema is not None:
        data["schema"] = schema
    data["allowed_decisions"] = list(ALL_DECISIONS if name in tables["edit_events"] else WITHOUT_EDIT)
    if event["cwd"]:
        data["cwd"] = event["cwd"]
    tool_use_id = event["tool_use_id"]
    return {
        "hitl_id": stable_id(host, name, event["session_id"], tool_use_id)
        if tool_use_id
        else f"ext_{os.urandom(16).hex()}",
        "hitl_type": "tool_approval",
        "session_id": event["session_id"],
        "invocation_id": event["run_id"],
        "data": data,
        "metadata": {**(metadata or {}), "agent": host, "external": True},
        "tool_name": event["tool_name"],
        "tool_call_id": tool_use_id,
        "expires_at": expires_at,
        "agent": host,
        "title": title,
    }


_NAMESPACE_URL = bytes.fromhex("6ba7b8119dad11d180b400c04fd430c8")  # uuid.NAMESPACE_URL


def stable_id(*parts: str) -> str:
    """Same as :func:`reviewer_app.integrations.core.stable_id`: ``uuid5(NAMESPACE_URL, …)``, computed here
    without importing ``uuid`` (and ``platform`` with it) or the backend."""
    from reviewer_app.domain.sha import new

    digest = bytearray(new("sha1", _NAMESPACE_URL + "\x1f".join(parts).encode("utf-8")).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    return "ext_" + digest.hex()


def _title(options: dict[str, Any], event: dict[str, Any]) -> str | None:
    """The run's first prompt from Claude's transcript (only a new run needs it), as the full path reads it."""
    if options.get("--no-transcript") or not event["transcript_path"] or options["host"] != "claude-code":
        return None
    from reviewer_app.integrations.claude_code.transcript import first_prompt

    return first_prompt(Path(event["transcript_path"]), event["run_id"])


def run(argv: list[str]) -> tuple[bytes | None, Handover | None]:
    """``python -m reviewer_app hook …``: answer and end the process here when the lean path settles the call;
    else the stdin bytes read (None: none) and the waiting request created, for the full command."""
    gc.disable()  # a call settled here ends within milliseconds: collecting its few objects is time lost
    text, payload = answer(argv, sys.stdin.buffer)
    if isinstance(text, Handover):  # a waiting request: waited on here unless the lean waiter is unsure
        try:
            from reviewer_app.integrations.claude_code.lean_wait import wait_here

            text = wait_here(text)
        except Exception as exc:  # before it waited (it answers every failure of its own): the full path waits
            sys.stderr.write(f"reviewer-app hook: lean waiter: {type(exc).__name__}: {exc}\n")
    if not isinstance(text, str):
        gc.enable()  # the full path may wait for minutes
        return payload, text
    try:
        if text:  # a recorded session event answers nothing
            sys.stdout.write(text + "\n")
            sys.stdout.flush()
    except (BrokenPipeError, OSError):  # the host stopped listening: nothing left to tell it
        pass
    os._exit(0)  # answered and flushed: skip interpreter teardown (and the WAL checkpoint on close)


__all__ = ["Handover", "answer", "hook_options", "request_row", "run"]
