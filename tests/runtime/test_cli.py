"""The headless CLI on real databases: outputs, JSON shapes and error exits."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reviewer_app.cli import main
from reviewer_app.cli.errors import EXIT_CONFLICT, EXIT_FAILED, EXIT_NOT_FOUND, EXIT_USAGE
from reviewer_app.domain.decisions import args_digest
from reviewer_app.domain.hitl import RECORD_KEYS
from reviewer_app.domain.records import NewRequest
from reviewer_app.persistence.store import Store
from reviewer_app.runtime.tools import builtin_tools

REPO_ROOT = Path(__file__).resolve().parents[2]
WRITE_ARGS = {"path": "notes.txt", "content": "hi"}


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def seed(store: Store) -> None:
    schema = builtin_tools().get("write_file").parameters
    with store.transaction() as tx:
        tx.requests.create(
            NewRequest(
                hitl_id="h-write",
                hitl_type="tool_approval",
                session_id="s1",
                invocation_id="i1",
                data={"arguments": WRITE_ARGS, "schema": schema},
                metadata={"agent": "demo"},
                tool_name="write_file",
            )
        )
        tx.requests.create(
            NewRequest(
                hitl_id="h-ask",
                hitl_type="ask_user",
                session_id="s1",
                invocation_id="i1",
                data={"question": "Proceed?"},
                tool_name="ask_user",
            )
        )


def test_empty_database_listings(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(db_path)
    assert run_cli(capsys, "pending", "--json", "--db", db) == (0, "[]\n", "")
    assert run_cli(capsys, "--db", db, "runs", "--json") == (0, "[]\n", "")
    assert run_cli(capsys, "audit", "--json", "--db", db) == (0, "[]\n", "")
    assert run_cli(capsys, "audit", "verify", "--db", db) == (0, "audit chain ok: 0 rows\n", "")
    code, out, _ = run_cli(capsys, "pending", "--db", db)
    assert code == 0 and out == "no pending requests\n"


def test_decide_from_the_cli_and_its_error_exits(store: Store, db_path: Path, capsys) -> None:
    seed(store)
    db = str(db_path)
    code, out, _ = run_cli(capsys, "pending", "--json", "--db", db)
    records = json.loads(out)
    assert code == 0 and {r["hitl_id"] for r in records} == {"h-write", "h-ask"}
    assert records == sorted(records, key=lambda r: r["created_at"])  # oldest first
    # the protocol's record, plus the SHA-256 of the arguments shown (what `decide --sha256` names)
    assert all(tuple(r) == (*RECORD_KEYS, "args_sha256") for r in records)
    write = next(r for r in records if r["hitl_id"] == "h-write")
    assert write["args_sha256"] == args_digest(WRITE_ARGS)

    code, _, err = run_cli(capsys, "decide", "nope", "approve", "--db", db)
    assert code == EXIT_NOT_FOUND and "no HITL request with id 'nope'" in err
    code, _, err = run_cli(capsys, "decide", "h-write", "edit", "--args", "{bad json", "--db", db)
    assert code == EXIT_USAGE and "--args is not valid JSON" in err
    code, _, err = run_cli(capsys, "decide", "h-write", "edit", "--args", "[1, 2]", "--db", db)
    assert code == EXIT_USAGE and "JSON object" in err
    code, _, err = run_cli(capsys, "decide", "h-write", "edit", "--db", db)
    assert code == EXIT_USAGE and "--args" in err
    code, _, err = run_cli(capsys, "decide", "h-write", "edit", "--args", '{"path": "x"}', "--db", db)
    assert code == EXIT_USAGE and "content" in err  # validated against the tool's schema
    code, _, err = run_cli(capsys, "decide", "h-write", "steer", "--db", db)
    assert code == EXIT_USAGE and "guidance" in err
    code, _, err = run_cli(capsys, "decide", "h-write", "respond", "--message", "x", "--db", db)
    assert code == EXIT_USAGE and "not answered" in err
    code, _, err = run_cli(capsys, "decide", "h-ask", "approve", "--db", db)
    assert code == EXIT_USAGE and "answered" in err
    assert store.requests.count_pending() == 2  # nothing was lost or half-applied

    code, out, err = run_cli(capsys, "--reviewer", "alice", "decide", "h-write", "approve", "--db", db)
    assert code == 0 and out == "h-write: approve (by alice)\n"
    assert json.dumps(WRITE_ARGS) in err  # it shows the arguments it approved
    code, _, err = run_cli(capsys, "decide", "h-write", "reject", "--db", db, "--reviewer", "bob")
    assert code == EXIT_CONFLICT and "already completed (approve) by alice" in err

    code, out, _ = run_cli(capsys, "decide", "h-ask", "respond", "--message", "yes", "--json", "--db", db)
    assert code == 0 and json.loads(out)["user_response"]["message"] == "yes"

    code, out, _ = run_cli(capsys, "audit", "--json", "--db", db)
    entries = json.loads(out)
    assert [(e["hitl_id"], e["decision"], e["reviewer"]) for e in entries] == [
        ("h-write", "approve", "alice"),
        ("h-ask", "respond", store.audit.entries()[1].reviewer),
    ]
    assert entries[0]["shown_args_sha256"] == args_digest(WRITE_ARGS) and isinstance(entries[0]["time"], float)
    code, out, _ = run_cli(capsys, "audit", "--db", db)
    first = out.splitlines()[0]  # the log in words: decision, tool and target, who, request
    assert code == 0 and "Approved" in first and "write_file “notes.txt”" in first and "by alice  [h-write]" in first


def test_audit_verify_reports_a_tampered_log(store: Store, db_path: Path, capsys) -> None:
    seed(store)
    db = str(db_path)
    assert run_cli(capsys, "decide", "h-write", "approve", "--db", db)[0] == 0
    assert run_cli(capsys, "audit", "verify", "--db", db)[0] == 0
    with sqlite3.connect(db_path) as connection:
        connection.execute("UPDATE audit_log SET reviewer = 'mallory'")
    code, out, _ = run_cli(capsys, "audit", "verify", "--db", db)
    assert code == EXIT_FAILED and "BROKEN at row 1" in out and "edited" in out
    code, out, _ = run_cli(capsys, "audit", "verify", "--json", "--db", db)
    assert code == EXIT_FAILED and json.loads(out)["first_bad_id"] == 1


def test_run_in_process_then_runs_and_timeline(db_path: Path, tmp_path: Path, capsys) -> None:
    db, ws = str(db_path), str(tmp_path / "ws")
    script = tmp_path / "script.yaml"
    script.write_text("- text: Looking.\n  tool_calls:\n    - name: list_dir\n      args: {}\n- text: All good.\n")
    code, out, err = run_cli(
        capsys, "run", "demo", "look around", "--db", db, "--workspaces", ws, "--script", str(script)
    )
    assert code == 0, err
    assert out == "All good.\n"
    assert "tool call list_dir" in err and "run done" in err
    time.sleep(0.01)
    assert run_cli(capsys, "run", "demo", "again", "--db", db, "--workspaces", ws, "--script", str(script))[0] == 0

    code, out, _ = run_cli(capsys, "runs", "--json", "--db", db)
    runs = json.loads(out)
    assert [r["prompt"] for r in runs] == ["again", "look around"]  # newest first
    for run in runs:
        assert {"id", "invocation_id", "session_id", "agent", "state", "created_at", "finished_at"} <= set(run)
        assert run["state"] == "done" and run["agent"] == "demo" and run["finished_at"] >= run["created_at"]
    code, out, _ = run_cli(capsys, "runs", "--db", db)
    assert code == 0 and out.count("done") == 2

    inv = runs[1]["invocation_id"]
    code, out, _ = run_cli(capsys, "timeline", inv, "--json", "--db", db)
    blocks = json.loads(out)
    assert [b["kind"] for b in blocks] == ["text", "tool_use", "text", "end"]
    assert blocks[1]["data"]["status"] == "success" and blocks[0]["data"]["text"] == "Looking."
    code, out, _ = run_cli(capsys, "timeline", inv, "--db", db)
    assert code == 0 and "assistant: Looking." in out and "list_dir ok" in out
    code, _, err = run_cli(capsys, "timeline", "inv_missing", "--db", db)
    assert code == EXIT_NOT_FOUND and "no run" in err


def test_run_refuses_bad_input_clearly(db_path: Path, tmp_path: Path, capsys) -> None:
    db = str(db_path)
    code, _, err = run_cli(capsys, "run", "nobody", "x", "--db", db)
    assert code == EXIT_USAGE and "unknown agent 'nobody'" in err and "demo" in err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"tool_calls": [{"name": "write_file", "args": "not an object"}]}]))
    code, _, err = run_cli(capsys, "run", "demo", "x", "--db", db, "--script", str(bad))
    assert code == EXIT_USAGE and "script turn 0" in err
    code, _, err = run_cli(capsys, "run", "demo", "x", "--db", db, "--script", str(tmp_path / "missing.json"))
    assert code == EXIT_USAGE and "cannot read script" in err
    code, _, err = run_cli(capsys, "--agents", str(tmp_path / "none.toml"), "run", "demo", "x", "--db", db)
    assert code == EXIT_USAGE and "does not exist" in err
    assert run_cli(capsys, "runs", "--json", "--db", db)[1] == "[]\n"  # nothing was started


def test_run_with_an_agents_file(db_path: Path, tmp_path: Path, capsys) -> None:
    (tmp_path / "turns.json").write_text(
        json.dumps([{"tool_calls": [{"name": "run_shell", "args": {"command": "echo hi > hi.txt"}}]}])
    )
    agents = tmp_path / "agents.toml"
    agents.write_text(
        '[agents.shell]\nsystem_prompt = "Run things."\ntools = ["run_shell"]\n'
        'model = { type = "scripted", script = "turns.json", final_text = "shell done" }\n'
        '[agents.shell.policy]\nungated = ["run_shell"]\n'
    )
    ws = tmp_path / "ws"
    code, out, err = run_cli(
        capsys, "run", "shell", "go", "--agents", str(agents), "--db", str(db_path), "--workspaces", str(ws)
    )
    assert code == 0, err
    assert out == "shell done\n"
    assert [p.read_text() for p in ws.glob("*/hi.txt")] == ["hi\n"]
    store = Store.open(db_path)
    assert store.requests.count_pending() == 0 and store.audit.entries() == []  # ungated: nobody was asked
    store.close()


@pytest.mark.slow
def test_cancelling_a_run_from_another_process_ends_it_with_a_failure_exit(
    db_path: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    store = Store.open(db_path)
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"tool_calls": [{"name": "write_file", "args": WRITE_ARGS}]}]))
    base = [sys.executable, "-m", "reviewer_app"]
    proc = subprocess.Popen(
        [
            *base,
            "run",
            "demo",
            "x",
            "--db",
            str(db_path),
            "--workspaces",
            str(tmp_path / "ws"),
            "--script",
            str(script),
        ],
        env=subprocess_env,
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while not store.requests.pending() and time.monotonic() < deadline:
            time.sleep(0.02)
        (request,) = store.requests.pending()
        cancel = subprocess.run(
            [*base, "cancel", request["invocation_id"], "--db", str(db_path)],
            env=subprocess_env,
            cwd=REPO_ROOT,
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert cancel.returncode == 0, cancel.stderr
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == EXIT_FAILED
    assert f"run {request['invocation_id']} cancelled" in err
    assert store.runs.get(request["invocation_id"]).state == "cancelled"
    assert store.requests.get(request["hitl_id"])["status"] == "cancelled"
    store.close()


def test_self_test_and_headless_commands_never_import_qt(subprocess_env: dict[str, str], db_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "reviewer_app", "--self-test"],
        env=subprocess_env,
        cwd=REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("self-test ok") and result.stdout.count("\n") == 1
    probe = (
        "import sys; from reviewer_app.cli import main; "
        f"code = main(['runs', '--json', '--db', {str(db_path)!r}]); "
        "print('QT' if any(m.startswith('PySide6') for m in sys.modules) else 'NO-QT', code)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe],
        env=subprocess_env,
        cwd=REPO_ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().endswith("NO-QT 0")


def test_version_is_looked_up_only_when_asked(subprocess_env: dict[str, str]) -> None:
    """``--version`` answers, and building the parser (every start, the window's too) skips importlib.metadata."""
    import reviewer_app

    def python(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], env=subprocess_env, capture_output=True, text=True, check=True)

    assert python("-m", "reviewer_app", "--version").stdout.strip() == f"reviewer-app {reviewer_app.__version__}"
    parsed = python(
        "-c", "import sys, reviewer_app.cli.command as c; c.build_parser(); print('importlib.metadata' in sys.modules)"
    )
    assert parsed.stdout.strip() == "False", parsed.stderr


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["gui"],
        ["--db", "x.db", "--reviewer", "ann", "gui"],
        ["gui", "--db", "x.db", "--demo"],
        ["--demo", "--agents", "a.toml", "--workspaces", "w"],
        ["--db", "pending", "gui"],  # an option's value that is also a command's name
    ],
)
def test_the_window_parses_its_command_line_as_the_full_parser_does(argv: list[str]) -> None:
    from reviewer_app.cli.command import build_parser, window_args

    assert window_args(argv) == build_parser().parse_args(argv)


@pytest.mark.parametrize(
    "argv",
    [["pending"], ["--db", "x.db", "runs", "--json"], ["--help"], ["gui", "-h"], ["--version"], ["gui", "extra"]],
)
def test_anything_but_the_window_goes_to_the_full_parser(argv: list[str]) -> None:
    from reviewer_app.cli.command import window_args

    assert window_args(argv) is None


OTHER_COMMANDS = (
    "reviewer_app.cli.audit",
    "reviewer_app.cli.decide",
    "reviewer_app.cli.pending",
    "reviewer_app.cli.runs",
    "reviewer_app.cli.rules",
    "reviewer_app.cli.why",
    "reviewer_app.cli.habits",
    "reviewer_app.integrations.claude_code.command",
)


def _loaded_after(call: str, modules: tuple[str, ...], env: dict[str, str]) -> tuple[str, list[str]]:
    """What ``reviewer_app.cli.command``'s ``call`` printed, and which of ``modules`` a new process loaded for it."""
    probe = (
        f"import json, sys, reviewer_app.cli.command as c; print(repr(c.{call})); "
        f"print(json.dumps(sorted(m for m in {modules!r} if m in sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    printed, loaded = result.stdout.strip().rsplit("\n", 1)
    return printed, json.loads(loaded)


def test_starting_the_window_imports_no_other_command(subprocess_env: dict[str, str]) -> None:
    """The window's start parses its options without building (importing) the other commands' parsers."""
    printed, loaded = _loaded_after("window_args(['--db', 'x.db', 'gui'])", OTHER_COMMANDS, subprocess_env)
    assert "command='gui'" in printed
    assert loaded == []


@pytest.mark.parametrize(
    "argv",
    [
        ["decide", "h1", "approve"],
        ["--db", "x.db", "decide", "h1", "edit", "--args", "{}", "--sha256", "ab", "--json"],
        ["pending", "--json", "--db", "x.db"],
        ["--reviewer", "ann", "runs", "--limit", "3"],
        ["audit", "export", "--format", "csv", "-o", "out.csv"],
        ["resolve", "i1", "abort", "--message", "--help is text here"],
        ["run", "demo", "do it", "--timeout", "5"],
        ["worker", "--exit-when-idle"],
        ["timeline", "i1"],
        ["cancel", "i1"],
        ["rules", "list", "--json"],
        ["why", "h1", "--json"],
        ["stats", "--json"],
        ["--db", "pending", "decide", "h1", "reject"],  # an option's value that is also a command's name
        ["pending", "--jso"],  # an abbreviation of the command's own option
        ["--db", "decide", "pending"],  # the first command's name is an option's value
    ],
)
def test_a_command_parses_its_command_line_as_the_full_parser_does(argv: list[str]) -> None:
    from reviewer_app.cli.command import build_parser, command_args

    assert command_args(argv) == build_parser().parse_args(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["gui"],
        ["--help"],
        ["--version"],
        ["decide", "-h"],
        ["decide", "--help"],
        ["decide", "h1"],  # missing its decision: the full parser says so
        ["decide", "h1", "maybe"],
        ["rules"],
        ["nonsense"],
    ],
)
def test_help_mistakes_and_the_window_go_to_the_full_parser(argv: list[str]) -> None:
    from reviewer_app.cli.command import command_args

    assert command_args(argv) is None


def test_a_command_builds_no_other_commands_parser(subprocess_env: dict[str, str]) -> None:
    """``decide`` (one per decision an agent's CLI waits for) imports no other command's module to parse."""
    call = "command_args(['--db', 'x.db', 'decide', 'h1', 'approve'])"
    printed, loaded = _loaded_after(call, OTHER_COMMANDS, subprocess_env)
    assert "command='decide'" in printed
    assert loaded == []
