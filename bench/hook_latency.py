"""The Claude Code hook's cost per tool call, next to the cheapest hooks possible, in the same run.

Goals (issue 29): a rule-settled or waived call answers in at most 1.5x a bare ``python -c pass`` timed in the
same run (call by call, so both meet the same load); a waiting request is visible in at most 2x. The load average
is printed with the figures.

- rule-settled: ``python -m reviewer_app hook claude-code`` answering a PreToolUse call that this session's
  approve-for-session rule waives (sqlite3 only: reads the rules, writes the request and its audit row);
  references: a ``/bin/sh -c true`` hook and a bare ``python -c pass``; also the ``reviewer-app`` console script.
- rule-settled by persistent rules: the same hook where ``Bash(...)`` rules are in force (an exact one settles
  the call): the lean path reads the rules and settles the plain command itself (``domain/lean_rules.py``), without
  the rules engine or the shell parser. Printed beside it, no goal: ``parsed``, the same rule settling
  ``'echo' rules``, which only the parser (bashlex) can read, so the lean path hands it to the full path.
- session event: ``hook claude-code --event PostToolUse`` recording a tool's result (after every tool call, and
  Claude Code waits for it), its transcript one line longer each time (the new line copied in): sqlite3 only.
- request visible: from starting the hook on a call that must wait to the pending request being readable by
  another process (what an open window's poll sees), p50 over several hooks.
- every other host (Gemini CLI, Copilot CLI, Qwen Code, Factory, Cursor, OpenCode): ``hook <host>`` answering
  its own payload that the default ``--allow-tools`` rule settles (the same lean path, in that host's format), and
  its waiting request visible, as above.

Sides alternate call by call so they meet the same machine load. The package is byte-compiled first, as an
installed copy is (pip compiles at install, the frozen app ships bytecode): a checkout run with
``PYTHONDONTWRITEBYTECODE`` would otherwise compile every module each hook imports on every call (~70 ms here).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import Goal, describe_ms, report

from reviewer_app.domain.decisions import Decision, DecisionKind, args_digest
from reviewer_app.hitl import SQLHITLBackend

SESSION = "bench-session"


def payload(index: int, command: str = "echo bench") -> bytes:
    return json.dumps(
        {
            "session_id": SESSION,
            "transcript_path": "/nonexistent/transcript.jsonl",
            "cwd": "/tmp",
            "prompt_id": "bench-prompt",
            "permission_mode": "default",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command, "description": "bench"},
            "tool_use_id": f"toolu_bench_{index}_{time.time_ns()}",
        }
    ).encode()


SHELL = {"command": "echo bench", "description": "bench"}
HOST_CALLS: dict[str, tuple[str, dict[str, object]]] = {
    "gemini": (
        "run_shell_command",
        {"session_id": SESSION, "cwd": "/tmp", "hook_event_name": "BeforeTool", "tool_name": "run_shell_command"},
    ),
    "qwen": (
        "run_shell_command",
        {"session_id": SESSION, "cwd": "/tmp", "hook_event_name": "PreToolUse", "tool_name": "run_shell_command"},
    ),
    "factory": (
        "Execute",
        {"session_id": SESSION, "cwd": "/tmp", "hook_event_name": "PreToolUse", "tool_name": "Execute"},
    ),
    "copilot": ("bash", {"sessionId": SESSION, "timestamp": 1, "cwd": "/tmp", "toolName": "bash"}),
    "cursor": (
        "Shell",
        {"conversation_id": SESSION, "hook_event_name": "beforeShellExecution", "command": "echo bench", "cwd": "/tmp"},
    ),
    "opencode": (  # the plugin sends its directory as cwd
        "bash",
        {"hook_event_name": "tool.execute.before", "session_id": SESSION, "tool": "bash", "cwd": "/tmp"},
    ),
}


def tool_result(index: int, transcript: Path) -> bytes:
    """A PostToolUse of call ``index``, its call appended to ``transcript`` first (as Claude Code writes it)."""
    call_id = f"toolu_result_{index}"
    line = {"type": "assistant", "uuid": f"u-{index}", "message": {"role": "assistant", "content": [{"type": "tool_use",
            "id": call_id, "name": "Bash", "input": {"command": f"echo {index}"}}]}}  # fmt: skip
    with transcript.open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
    event = {"session_id": SESSION, "transcript_path": str(transcript), "cwd": "/tmp", "prompt_id": "bench-prompt"}
    event.update(hook_event_name="PostToolUse", tool_name="Bash", tool_input={"command": f"echo {index}"})
    event.update(tool_use_id=call_id, tool_response={"stdout": str(index), "stderr": "", "interrupted": False})
    return json.dumps(event).encode()


def host_payload(host: str, index: int, command: str = "echo bench") -> bytes:
    """One shell call in ``host``'s own event format, with a fresh call id where the host sends one."""
    _, event = HOST_CALLS[host]
    call = dict(event)
    shell = {**SHELL, "command": command}
    if host in ("gemini", "qwen", "factory"):
        call["tool_input"] = shell
    elif host == "copilot":
        call["toolArgs"] = json.dumps(shell)
    elif host == "opencode":
        call.update(args=shell, call_id=f"call_{index}_{time.time_ns()}")
    elif host == "cursor":
        call["command"] = command
    if host in ("qwen", "factory"):
        call["tool_use_id"] = f"toolu_{index}_{time.time_ns()}"
    return json.dumps(call).encode()


def measure_hosts(db: Path, calls: int) -> dict[str, dict[str, float]]:
    """Each host's rule-settled answer (the default --allow-tools rule), interleaved host by host, each call
    followed by a ``python -c pass`` (under "python": this section's own floor, met at the same load)."""
    sides: dict[str, list[float]] = {host: [] for host in (*HOST_CALLS, "python")}
    for index in range(calls):
        for host, (tool, _) in HOST_CALLS.items():
            command = [sys.executable, "-m", "reviewer_app", "hook", host, "--db", str(db), "--allow-tools", tool]
            took, out = timed(command, host_payload(host, index))
            assert b"allow" in out and b"--allow-tools" in out, (host, out)
            sides[host].append(took)
            sides["python"].append(timed([sys.executable, "-c", "pass"], b"")[0])
    return {host: describe_ms(values) for host, values in sides.items()}


def measure_visible(db: Path, command: list[str], payload: bytes, summary: str) -> float:
    """From starting a hook on a call that must wait to its pending request being readable by another process;
    then the hook is stopped (answered elsewhere) and its request withdrawn before the next one starts."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [*command, "--timeout", "30"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdin is not None
    process.stdin.write(payload)
    process.stdin.close()
    process.stdin = None
    try:
        wait_visible(db, summary, started + 30)
    except TimeoutError:
        process.kill()
        raise SystemExit(f"the waiting hook's request never appeared: {process.communicate()}") from None
    took = time.perf_counter() - started
    os.kill(process.pid, 15)  # answered elsewhere: the hook (or its watchdog) withdraws its request
    process.communicate(timeout=30)
    wait_withdrawn(db, summary, time.perf_counter() + 30)  # the next hook starts on a quiet machine
    return took


def measure_hosts_visible(db: Path, waits: int) -> dict[str, dict[str, float]]:
    """Each host's waiting request (a call nothing settles), visible to another process, host by host, each
    followed by a ``python -c pass`` (this section's own floor, under "python")."""
    sides: dict[str, list[float]] = {host: [] for host in (*HOST_CALLS, "python")}
    for index in range(waits):
        for host in HOST_CALLS:
            command = [sys.executable, "-m", "reviewer_app", "hook", host, "--db", str(db)]
            summary = f"touch {host}-{index}"
            sides[host].append(measure_visible(db, command, host_payload(host, index, summary), summary))
            sides["python"].append(timed([sys.executable, "-c", "pass"], b"")[0])
    return {host: describe_ms(values) for host, values in sides.items()}


async def seed_rule(db: Path) -> None:
    """An approve-for-session decision on ``echo bench``: the rule (that exact command) the measured calls are
    settled by; each call has its own tool-use id, so each is a new request settled by the rule."""
    async with SQLHITLBackend(db, reviewer="bench") as backend:
        await backend.create(
            hitl_id="seed",
            hitl_type="tool_approval",
            session_id=SESSION,
            invocation_id="bench-prompt",
            data={"arguments": {"command": "echo bench"}},
            metadata={"agent": "claude-code", "external": True},
            tool_name="Bash",
        )
        args = {"command": "echo bench"}
        await backend.decide("seed", Decision(DecisionKind.APPROVE_FOR_SESSION, args_sha256=args_digest(args)))


async def seed_persistent_rules(db: Path) -> None:
    """Persistent Bash rules as an operator writes them: the measured ``echo rules`` call is settled by the exact
    one, after the parser has read the command and every pattern."""
    from reviewer_app.domain.rules import Rule

    async with SQLHITLBackend(db, reviewer="bench") as backend:
        now = time.time()
        for effect, pattern in (
            ("allow", "Bash(echo rules)"),
            ("allow", "Bash(npm run test:*)"),
            ("deny", "Bash(git push:*)"),
        ):
            await backend.add_rule(Rule.create(effect, pattern, now=now))


def timed(command: list[str], stdin: bytes) -> tuple[float, bytes]:
    started = time.perf_counter()
    result = subprocess.run(command, input=stdin, capture_output=True, check=False)
    return time.perf_counter() - started, result.stdout


def wait_visible(db: Path, summary: str, deadline: float) -> None:
    """Poll as an open window does, for this hook's request (an earlier one may be withdrawn meanwhile)."""
    connection = sqlite3.connect(db)
    try:
        while time.perf_counter() < deadline:
            query = "SELECT count(*) FROM hitl_requests WHERE status = 'pending' AND summary = ?"
            [(count,)] = connection.execute(query, (summary,)).fetchall()
            if count:
                return
            time.sleep(0.002)
        raise TimeoutError("the request never became visible")
    finally:
        connection.close()


def wait_withdrawn(db: Path, summary: str, deadline: float) -> None:
    connection = sqlite3.connect(db)
    try:
        query = "SELECT count(*) FROM hitl_requests WHERE status = 'pending' AND summary = ?"
        while time.perf_counter() < deadline and connection.execute(query, (summary,)).fetchall()[0][0]:
            time.sleep(0.01)
    finally:
        connection.close()
    time.sleep(0.3)  # the watchdog process exits after withdrawing


def wal_kib(db: Path) -> int:
    """The size of the database's write-ahead log: with hooks alone on it (no window open), a log that only grows
    makes every later call slower, so the figures say how long it was."""
    try:
        return os.path.getsize(f"{db}-wal") // 1024
    except OSError:
        return 0


def byte_compile() -> None:
    """The package's bytecode, as an installed copy has it (read even under ``PYTHONDONTWRITEBYTECODE``)."""
    import compileall

    import reviewer_app

    package = Path(reviewer_app.__file__).resolve().parent
    if not compileall.compile_dir(package, quiet=1):
        raise SystemExit(f"could not byte-compile {package}")
    print(f"byte-compiled {package} (as an install does)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--waits", type=int, default=12)
    parser.add_argument("--host-calls", type=int, default=15, help="calls per other host (0: skip them)")
    parser.add_argument("--host-waits", type=int, default=3, help="waiting requests per other host (0: skip)")
    options = parser.parse_args()
    byte_compile()
    env_python = sys.executable
    script = Path(env_python).with_name("reviewer-app")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.db"
        asyncio.run(seed_rule(db))
        rules_db = Path(tmp) / "rules.db"
        asyncio.run(seed_persistent_rules(rules_db))
        hook = [env_python, "-m", "reviewer_app", "hook", "claude-code", "--db", str(db), "--no-transcript"]
        ruled = [env_python, "-m", "reviewer_app", "hook", "claude-code", "--db", str(rules_db), "--no-transcript"]
        session = [env_python, "-m", "reviewer_app", "hook", "claude-code", "--db", str(db), "--event", "PostToolUse"]
        transcript = Path(tmp) / "transcript.jsonl"
        sides: dict[str, list[float]] = {"hook": [], "rules": [], "parsed": [], "session": [], "script": []}
        sides.update(python=[], true=[])
        for index in range(options.calls):
            took, out = timed(hook, payload(index))
            answer = json.loads(out)["hookSpecificOutput"]
            assert answer["permissionDecision"] == "allow" and "rule" in answer["permissionDecisionReason"], answer
            sides["hook"].append(took)
            took, out = timed(ruled, payload(index, command="echo rules"))
            answer = json.loads(out)["hookSpecificOutput"]
            assert answer["permissionDecision"] == "allow" and "by rule" in answer["permissionDecisionReason"], answer
            sides["rules"].append(took)
            took, out = timed(ruled, payload(index, command="'echo' rules"))  # quoted: the full path's parser
            answer = json.loads(out)["hookSpecificOutput"]
            assert answer["permissionDecision"] == "allow" and "by rule" in answer["permissionDecisionReason"], answer
            sides["parsed"].append(took)
            took, out = timed(session, tool_result(index, transcript))
            assert out == b"", out
            sides["session"].append(took)
            if script.exists():
                sides["script"].append(timed([str(script), *hook[3:]], payload(10_000 + index))[0])
            sides["python"].append(timed([env_python, "-c", "pass"], b"")[0])
            sides["true"].append(timed(["/bin/sh", "-c", "true"], payload(index))[0])
        check = sqlite3.connect(db)  # every tool result is on the run's timeline
        try:
            results = check.execute("SELECT count(*) FROM block_events WHERE kind = 'tool_use' AND op = 'patch'")
            assert results.fetchone()[0] == options.calls
        finally:
            check.close()
        stats = {name: describe_ms(values) for name, values in sides.items() if values}
        for name, figures in stats.items():
            print(
                f"{name:>7}: p50 {figures['p50_ms']:.1f} ms  p90 {figures['p90_ms']:.1f} ms"
                f"  max {figures['max_ms']:.1f} ms"
            )

        visible = [
            measure_visible(db, hook, payload(index, command=f"touch {index}"), f"touch {index}")
            for index in range(options.waits)
        ]
        shown = describe_ms(visible)
        print(f"visible: p50 {shown['p50_ms']:.1f} ms  p90 {shown['p90_ms']:.1f} ms  max {shown['max_ms']:.1f} ms")
        logs = {"after Claude Code's calls": wal_kib(db)}
        hosts = measure_hosts(db, options.host_calls) if options.host_calls > 0 else {}
        logs["after the other hosts' calls"] = wal_kib(db)
        hosts_visible = measure_hosts_visible(db, options.host_waits) if options.host_waits > 0 else {}
        logs["at the end"] = wal_kib(db)
        print("write-ahead log (every hook process reads it whole when it opens the database):")
        print("  " + ", ".join(f"{size} KiB {when}" for when, size in logs.items()))
        for label, found in (("", hosts), (" visible", hosts_visible)):
            for host, figures in found.items():
                print(
                    f"{host + label:>16}: p50 {figures['p50_ms']:.1f} ms  p90 {figures['p90_ms']:.1f} ms"
                    f"  max {figures['max_ms']:.1f} ms"
                )
    floor = stats["python"]["p50_ms"]  # a bare interpreter, timed call by call in this same run
    print(f"python -c pass p50 {floor:.1f} ms: the floor of the Claude Code ratios below; the other hosts' ratios")
    print("are measured against the python -c pass timed between their own calls (the lines above)")
    goals = [
        Goal("hook_rule_settled_vs_python", stats["hook"]["p50_ms"] / floor, 1.5, "x", at_least=False),
        Goal("hook_persistent_rules_vs_python", stats["rules"]["p50_ms"] / floor, 1.5, "x", at_least=False),
        Goal("hook_request_visible_vs_python", shown["p50_ms"] / floor, 2.0, "x", at_least=False),
        Goal("hook_session_event_vs_python", stats["session"]["p50_ms"] / floor, 1.5, "x", at_least=False),
    ]
    goals += [
        Goal(f"hook_{host}_rule_settled_vs_python", figures["p50_ms"] / hosts["python"]["p50_ms"], 1.5, "x", False)
        for host, figures in hosts.items()
        if host != "python"
    ]
    goals += [
        Goal(
            f"hook_{host}_request_visible_vs_python",
            figures["p50_ms"] / hosts_visible["python"]["p50_ms"],
            2.0,
            "x",
            False,
        )
        for host, figures in hosts_visible.items()
        if host != "python"
    ]
    details = {"sides": stats, "visible": shown, "hosts": hosts, "hosts_visible": hosts_visible, "wal_kib": logs}
    report(goals, details, bench="hook_latency")


if __name__ == "__main__":
    main()
