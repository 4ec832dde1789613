"""The MCP proxy between the official SDK's client and a server built with the official SDK (MCPServer).

Every test runs the real ``reviewer-app mcp-proxy`` process, the real upstream server script and a real SQLite
database; decisions come from the test, as from another Reviewer process, through ``SQLHITLBackend.decide``.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import Decision, DecisionError, DecisionKind
from reviewer_app.domain.hitl import HITLStatus
from reviewer_app.domain.records import RequestQuery
from reviewer_app.domain.timeline import BlockKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.integrations.core import ANSWERED_ELSEWHERE
from reviewer_app.integrations.mcp_proxy.proxy import UPSTREAM_EXITED, WAITING_MESSAGE
from tests.conftest import REPO_ROOT
from tests.integrations.conftest import (
    HOST_SCRIPT,
    connect,
    decide_first,
    notes_upstream,
    pending_request,
    proxy_command,
)
from tests.runtime.test_runner_support import approval, eventually, timeline

asyncio_test = pytest.mark.asyncio


def text_of(result: Any) -> str:
    return "\n".join(item.text for item in result.content if getattr(item, "type", None) == "text")


async def all_requests(backend: SQLHITLBackend) -> list[dict[str, Any]]:
    return await backend.list_records(RequestQuery(statuses=()))


@asyncio_test
async def test_tools_list_through_the_proxy_equals_a_direct_connection(
    db_at_schema_head: Path, env: dict[str, str]
) -> None:
    async with connect(notes_upstream(), env) as direct:
        direct_tools = (await direct.list_tools()).model_dump(by_alias=True)
        direct_init = direct.initialize_result
    async with connect(proxy_command(db_at_schema_head, notes_upstream()), env) as proxied:
        proxied_tools = (await proxied.list_tools()).model_dump(by_alias=True)
        proxied_init = proxied.initialize_result
    assert proxied_tools == direct_tools
    assert [t["annotations"] for t in proxied_tools["tools"]][:3] == [
        {"readOnlyHint": True, "destructiveHint": None, "idempotentHint": None, "openWorldHint": None, "title": None},
        {
            "readOnlyHint": False,
            "destructiveHint": False,
            "idempotentHint": None,
            "openWorldHint": False,
            "title": None,
        },
        {"readOnlyHint": None, "destructiveHint": True, "idempotentHint": None, "openWorldHint": None, "title": None},
    ]
    assert proxied_init is not None and direct_init is not None
    assert proxied_init.model_dump() == direct_init.model_dump()


def _exchange(command: list[str], env: dict[str, str], lines: list[str], answers: int) -> list[bytes]:
    """Raw JSON-RPC lines in, the first ``answers`` lines out (no SDK in between)."""
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=REPO_ROOT, stderr=subprocess.DEVNULL
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        out = []
        for line in lines:
            process.stdin.write(line.encode() + b"\n")
            process.stdin.flush()
            if json.loads(line).get("id") is not None:
                out.append(process.stdout.readline())
        return out[:answers]
    finally:
        process.stdin.close()
        process.wait(timeout=30)


INIT = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    }
)
INITIALIZED = json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})


def test_the_upstreams_bytes_reach_the_host_verbatim(db_at_schema_head: Path, env: dict[str, str]) -> None:
    lines = [INIT, INITIALIZED, json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})]
    direct = _exchange(notes_upstream(), env, lines, 2)
    proxied = _exchange(proxy_command(db_at_schema_head, notes_upstream()), env, lines, 2)
    assert proxied == direct
    assert b'"readOnlyHint":true' in proxied[1]


def test_the_upstream_runs_exactly_what_the_gate_checked(
    db_at_schema_head: Path, env: dict[str, str], notes_file: Path
) -> None:
    """Hostile framing: a tools/call without an id, and duplicate keys that two JSON parsers might read apart."""
    notes_file.write_text("[misc] keep me\n")
    no_id = json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "wipe_notes", "arguments": {}}})
    duplicate = (
        '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wipe_notes","arguments":{}},'
        '"params":{"name":"read_notes","arguments":{}}}'
    )
    answers = _exchange(
        proxy_command(db_at_schema_head, notes_upstream()), env, [INIT, INITIALIZED, no_id, duplicate], 2
    )
    result = json.loads(answers[1])
    assert result["id"] == 3
    assert result["result"]["content"][0]["text"] == "[misc] keep me\n"
    assert notes_file.read_text() == "[misc] keep me\n"


def test_invalid_json_from_the_host_gets_a_parse_error(db_at_schema_head: Path, env: dict[str, str]) -> None:
    process = subprocess.run(
        proxy_command(db_at_schema_head, notes_upstream()),
        input=b'{"jsonrpc": "2.0", "id": 1, "method": \n',
        capture_output=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    answer = json.loads(process.stdout.splitlines()[0])
    assert answer["error"]["code"] == -32700
    assert process.returncode == 0


@asyncio_test
async def test_a_read_only_tool_answers_without_a_request(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    notes_file.write_text("[misc] hello\n")
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        await session.list_tools()
        result = await session.call_tool("read_notes", {})
    assert text_of(result) == "[misc] hello\n"
    assert await all_requests(backend) == []
    (run,) = await backend.list_runs()
    assert run.prompt == "test-host · notes"
    assert run.agent == "test-host" and run.external is True
    blocks = await eventually(lambda: _tool_blocks(backend, run.id, 1), backend)
    assert blocks[0].data["name"] == "mcp__notes__read_notes"
    assert blocks[0].data["status"] == "success"
    assert blocks[0].data["gated"] is False
    assert blocks[0].data["result"] == "[misc] hello\n"
    # the host hung up: the proxy's run is over, not left "running" forever on the runs board
    ended = await eventually(lambda: _run_in(backend, run.id, "done"), backend)
    assert ended.finished_at is not None


async def _run_in(backend: SQLHITLBackend, invocation_id: str, state: str) -> Any:
    run = await backend.get_run(invocation_id)
    return run if run is not None and run.state == state else None


async def _tool_blocks(backend: SQLHITLBackend, invocation_id: str, count: int) -> list[Any] | None:
    blocks = [b for b in await timeline(backend, invocation_id) if b.kind is BlockKind.TOOL_USE]
    finished = [b for b in blocks if b.data.get("status") in ("success", "error")]
    return blocks if len(finished) >= count else None


@asyncio_test
async def test_a_write_waits_and_runs_once_approved(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        await session.list_tools()
        call = asyncio.ensure_future(session.call_tool("add_note", {"text": "buy milk"}))
        (record,) = await pending_request(backend)
        assert not call.done() and not notes_file.exists()
        assert record["tool_name"] == "mcp__notes__add_note"
        assert record["metadata"]["agent"] == "test-host"
        assert record["data"]["arguments"] == {"text": "buy milk"}
        assert record["data"]["description"] == "Append one note to the notes file."
        assert record["data"]["schema"]["required"] == ["text"]
        assert record["data"]["annotations"] == {
            "readOnlyHint": False,
            "destructiveHint": False,
            "openWorldHint": False,
        }
        assert record["data"]["risk"] == ["not idempotent"]
        await backend.decide(record["hitl_id"], approval(record))
        result = await call
    assert text_of(result) == "added note: buy milk"
    assert notes_file.read_text() == "[misc] buy milk\n"
    run = (await backend.list_runs())[0]
    blocks = await eventually(lambda: _tool_blocks(backend, run.id, 1), backend)
    assert blocks[0].data["status"] == "success" and blocks[0].data["gated"] is True
    hitl = [b for b in await timeline(backend, run.id) if b.kind is BlockKind.HITL]
    assert hitl[0].data["decision"] == "approve"


@asyncio_test
async def test_an_edit_runs_the_edited_arguments_checked_against_the_schema(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        call = asyncio.ensure_future(session.call_tool("add_note", {"text": "buy milk"}))
        (record,) = await pending_request(backend)
        with pytest.raises(DecisionError):
            await backend.decide(record["hitl_id"], approval(record, DecisionKind.EDIT, edited_args={"text": 5}))
        edit = approval(record, DecisionKind.EDIT, edited_args={"text": "buy oat milk", "tag": "shop"})
        await backend.decide(record["hitl_id"], edit)
        result = await call
    assert text_of(result) == "added note: buy oat milk"
    assert notes_file.read_text() == "[shop] buy oat milk\n"


@asyncio_test
@pytest.mark.parametrize(
    ("kind", "message", "expected"),
    [
        (DecisionKind.REJECT, "not today", "rejected by reviewer: not today"),
        (DecisionKind.STEER, "use the shopping list tool", "Reviewer guidance: use the shopping list tool"),
    ],
)
async def test_reject_and_steer_answer_with_an_error_result_and_never_call_upstream(
    db_path: Path,
    env: dict[str, str],
    backend: SQLHITLBackend,
    notes_file: Path,
    kind: DecisionKind,
    message: str,
    expected: str,
) -> None:
    notes_file.write_text("[misc] keep\n")
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        call = asyncio.ensure_future(session.call_tool("wipe_notes", {}))
        await decide_first(backend, kind, message=message)
        result = await call
        assert result.is_error is True
        assert text_of(result) == expected
    assert notes_file.read_text() == "[misc] keep\n"


@asyncio_test
async def test_approve_for_session_lets_later_calls_of_that_tool_through(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        first = asyncio.ensure_future(session.call_tool("add_note", {"text": "one"}))
        await decide_first(backend, DecisionKind.APPROVE_FOR_SESSION)
        await first
        await session.call_tool("add_note", {"text": "two"})
    assert notes_file.read_text() == "[misc] one\n[misc] two\n"
    assert len(await all_requests(backend)) == 1


@asyncio_test
async def test_gate_and_allow_patterns_refine_the_annotations(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    command = proxy_command(db_path, notes_upstream(), "--allow", "add_*", "--gate", "mcp__notes__read_notes")
    async with connect(command, env) as session:
        await session.call_tool("add_note", {"text": "free"})
        read = asyncio.ensure_future(session.call_tool("read_notes", {}))
        record = await decide_first(backend, DecisionKind.REJECT, message="no reading")
        assert record["tool_name"] == "mcp__notes__read_notes"
        assert text_of(await read) == "rejected by reviewer: no reading"
    assert notes_file.read_text() == "[misc] free\n"


@asyncio_test
async def test_progress_notifications_reach_a_waiting_host(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend
) -> None:
    seen: list[tuple[float, str | None]] = []
    enough = asyncio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))
        if len(seen) >= 3:
            enough.set()

    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        call = asyncio.ensure_future(session.call_tool("add_note", {"text": "x"}, progress_callback=on_progress))
        await asyncio.wait_for(enough.wait(), 30)
        await decide_first(backend, DecisionKind.APPROVE)
        await call
    assert [p for p, _ in seen[:3]] == [1, 2, 3]
    assert all(m == WAITING_MESSAGE for _, m in seen[:3])


@asyncio_test
async def test_upstream_progress_passes_through(db_at_schema_head: Path, env: dict[str, str]) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with connect(proxy_command(db_at_schema_head, notes_upstream()), env) as session:
        result = await session.call_tool("slow_count", {"steps": 2}, progress_callback=on_progress)
    assert text_of(result) == "counted to 2"
    assert seen == [(1, 2, "step 1"), (2, 2, "step 2")]


@asyncio_test
async def test_a_host_cancel_takes_the_request_out_of_the_inbox(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    from mcp.shared.exceptions import MCPError

    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        with pytest.raises(MCPError):
            await session.call_tool("add_note", {"text": "slow"}, read_timeout_seconds=2.0)
        (record,) = await all_requests(backend)

        async def cancelled() -> dict[str, Any] | None:
            current = await backend.get(record["hitl_id"])
            return current if current and current["status"] == HITLStatus.CANCELLED.value else None

        await eventually(cancelled, backend, timeout=10)
        assert await session.call_tool("read_notes", {})  # the connection still works
    assert not notes_file.exists()
    (entry,) = await backend.audit(record["hitl_id"])
    assert entry.message == ANSWERED_ELSEWHERE


@asyncio_test
async def test_a_killed_host_takes_its_request_out_of_the_inbox_within_10_s(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend
) -> None:
    host = await asyncio.create_subprocess_exec(
        sys.executable,
        str(HOST_SCRIPT),
        "add_note",
        '{"text": "orphan"}',
        "--",
        *proxy_command(db_path, notes_upstream()),
        env=env,
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
    )
    try:
        (record,) = await pending_request(backend)
        assert _proxies_using(db_path)
        host.kill()
        await host.wait()

        async def cancelled() -> dict[str, Any] | None:
            current = await backend.get(record["hitl_id"])
            return current if current and current["status"] == HITLStatus.CANCELLED.value else None

        loop = asyncio.get_running_loop()
        started = loop.time()
        await eventually(cancelled, backend, timeout=10)
        assert loop.time() - started < 10
        assert record["metadata"]["agent"] == "kill-test-host"
        (entry,) = await backend.audit(record["hitl_id"])
        assert entry.message == ANSWERED_ELSEWHERE
        for _ in range(100):  # the orphaned proxy exits too
            if not _proxies_using(db_path):
                break
            await asyncio.sleep(0.1)
        assert not _proxies_using(db_path)
    finally:
        if host.returncode is None:
            host.kill()
            await host.wait()


def _proxies_using(db_path: Path) -> list[int]:
    """Live mcp-proxy processes started with this test's database (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().split(") ")[-1][:1]
        except OSError:
            continue
        if b"mcp-proxy" in cmdline and str(db_path).encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


@asyncio_test
async def test_a_dying_upstream_gives_pending_calls_a_clear_error(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend
) -> None:
    from mcp.shared.exceptions import MCPError

    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        waiting = asyncio.ensure_future(session.call_tool("add_note", {"text": "never"}))
        (record,) = await pending_request(backend)
        with pytest.raises(MCPError) as died:
            await session.call_tool("die", {})
        assert UPSTREAM_EXITED in str(died.value)
        with pytest.raises(MCPError) as held:
            await waiting
        assert UPSTREAM_EXITED in str(held.value)
    current = await backend.get(record["hitl_id"])
    assert current is not None and current["status"] == HITLStatus.CANCELLED.value
    (entry,) = await backend.audit(record["hitl_id"])
    assert entry.message == UPSTREAM_EXITED
    failed = await eventually(lambda: _run_in(backend, record["invocation_id"], "failed"), backend)
    assert UPSTREAM_EXITED in (failed.error or "")


@asyncio_test
async def test_an_elicitation_is_answered_from_reviewer(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend
) -> None:
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        call = asyncio.ensure_future(session.call_tool("pick_colour", {}))
        (record,) = await pending_request(backend)
        assert record["hitl_type"] == "ask_user"
        assert record["data"]["question"] == "Which colour should the notes use?"
        assert set(record["data"]["form"]["properties"]) == {"colour", "shade"}
        assert record["data"]["allowed_decisions"] == ["respond", "reject"]
        await backend.decide(
            record["hitl_id"], Decision(DecisionKind.RESPOND, message='{"colour": "teal", "shade": 2}')
        )
        assert text_of(await call) == "accepted teal shade 2"

        declined = asyncio.ensure_future(session.call_tool("pick_colour", {}))
        await decide_first(backend, DecisionKind.REJECT, message="not now")
        assert text_of(await declined) == "user said decline"

        bad = asyncio.ensure_future(session.call_tool("pick_colour", {}))
        await decide_first(backend, DecisionKind.RESPOND, message='{"shade": "dark"}')
        assert text_of(await bad) == "user said cancel"


@asyncio_test
async def test_sigterm_ends_the_session_and_takes_the_request_back(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    proxy = await asyncio.create_subprocess_exec(
        *proxy_command(db_path, notes_upstream()),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        cwd=REPO_ROOT,
    )
    assert proxy.stdin is not None and proxy.stdout is not None
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "wipe_notes", "arguments": {}}}
    for line in (INIT, INITIALIZED, json.dumps(call)):
        proxy.stdin.write(line.encode() + b"\n")
    await proxy.stdin.drain()
    assert json.loads(await proxy.stdout.readline())["id"] == 1
    (record,) = await pending_request(backend)
    proxy.terminate()
    assert await asyncio.wait_for(proxy.wait(), 20) == 0
    current = await backend.get(record["hitl_id"])
    assert current is not None and current["status"] == HITLStatus.CANCELLED.value
    assert not notes_file.exists()


def _proxy_session(
    db: Path, upstream: list[str], env: dict[str, str], stdin: Any
) -> subprocess.CompletedProcess[bytes]:
    """The proxy run to its end with ``stdin`` as the host's side (a file, ``/dev/null``), its output captured."""
    return subprocess.run(
        proxy_command(db, upstream), stdin=stdin, capture_output=True, env=env, cwd=REPO_ROOT, timeout=60, check=False
    )


def test_stdin_that_is_a_file_is_read_by_a_thread(db_at_schema_head: Path, env: dict[str, str], tmp_path: Path) -> None:
    """Where the loop cannot watch stdin (a regular file here, Windows' proactor there), threads carry the bytes.

    The upstream is an echo, so every line the proxy forwards comes back to the host; it exits at end of input
    and the proxy still passes on what it wrote after the host's stdin ended.
    """
    script = tmp_path / "session.jsonl"
    listing = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}})
    script.write_text("\n".join([INIT, INITIALIZED, listing]) + "\n")
    echo = [sys.executable, "-c", "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()"]
    with script.open("rb") as stdin:
        done = _proxy_session(db_at_schema_head, echo, env, stdin)
    assert done.returncode == 0, done.stderr
    echoed = [json.loads(line) for line in done.stdout.splitlines()]
    assert [m.get("method") for m in echoed] == ["initialize", "notifications/initialized", "tools/list"]
    assert echoed[2] == json.loads(listing)
    assert echoed[0]["params"]["capabilities"] == {"elicitation": {"form": {}}}


def test_stdin_the_loop_cannot_watch_ends_the_session_at_once(db_at_schema_head: Path, env: dict[str, str]) -> None:
    """A host that gives the proxy ``/dev/null`` (a character device epoll refuses) has said everything: the proxy
    ends as at any end of input. It used to take it for a pipe, fail to watch it in a callback of its own, and
    wait for input forever."""
    done = _proxy_session(db_at_schema_head, ["cat"], env, subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b""
    assert b"Traceback" not in done.stderr, done.stderr


@asyncio_test
async def test_server_requests_and_logging_pass_through_to_the_host(
    db_at_schema_head: Path, env: dict[str, str]
) -> None:
    from mcp.types import ListRootsResult, Root

    logs: list[Any] = []

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri="file:///work/project", name="project")])

    async def on_log(params: Any) -> None:
        logs.append(params.data)

    command = proxy_command(db_at_schema_head, notes_upstream())
    async with connect(command, env, list_roots_callback=roots, logging_callback=on_log) as session:
        result = await session.call_tool("show_roots", {})
    assert text_of(result) == "file:///work/project"
    assert "roots: file:///work/project" in logs


@asyncio_test
async def test_concurrent_gated_calls_are_decided_independently(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        first = asyncio.ensure_future(session.call_tool("add_note", {"text": "first"}))
        second = asyncio.ensure_future(session.call_tool("add_note", {"text": "second"}))
        records = await pending_request(backend, count=2)
        by_text = {r["data"]["arguments"]["text"]: r for r in records}
        await backend.decide(by_text["second"]["hitl_id"], approval(by_text["second"]))
        assert text_of(await second) == "added note: second"
        assert not first.done()
        await backend.decide(by_text["first"]["hitl_id"], approval(by_text["first"], DecisionKind.REJECT))
        assert (await first).is_error is True
    assert notes_file.read_text() == "[misc] second\n"


@asyncio_test
async def test_reviewer_answers_form_elicitations_and_the_host_gets_url_ones(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend
) -> None:
    from mcp.types import ElicitResult

    asked: list[Any] = []

    async def host_elicitation(context: Any, params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept")

    command = proxy_command(db_path, notes_upstream())
    async with connect(command, env, elicitation_callback=host_elicitation) as session:
        form = asyncio.ensure_future(session.call_tool("pick_colour", {}))
        await decide_first(backend, DecisionKind.RESPOND, message='{"colour": "red"}')
        assert text_of(await form) == "accepted red shade 1"
        assert asked == []
        assert text_of(await session.call_tool("sign_in", {})) == "url elicitation: accept"
    assert [(p.mode, p.url) for p in asked] == [("url", "https://notes.invalid/auth")]
    assert len(await all_requests(backend)) == 1


def test_an_unusable_database_refuses_to_serve(env: dict[str, str], tmp_path: Path) -> None:
    not_a_db = tmp_path / "garbage.db"
    not_a_db.write_bytes(b"this is not SQLite" * 100)
    done = subprocess.run(
        proxy_command(not_a_db, notes_upstream()),
        input=(INIT + "\n").encode(),
        capture_output=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert b"cannot open the Reviewer database" in done.stderr
    assert done.stdout == b""


@asyncio_test
async def test_the_stateless_2026_protocol_passes_through_and_is_gated(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    """No initialize, no tools/list: the proxy asks for the tools with the call's own _meta envelope."""
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import Implementation

    command = proxy_command(db_path, notes_upstream())
    params = StdioServerParameters(command=command[0], args=command[1:], env=env, cwd=str(REPO_ROOT))
    info = Implementation(name="stateless-host", version="2")
    async with stdio_client(params) as (read, write), ClientSession(read, write, client_info=info) as session:
        await session.discover()
        assert session.protocol_version == "2026-07-28"
        assert text_of(await session.call_tool("read_notes", {})) == ""
        assert await all_requests(backend) == []
        call = asyncio.ensure_future(session.call_tool("add_note", {"text": "stateless"}))
        (record,) = await pending_request(backend)
        assert record["metadata"]["agent"] == "stateless-host"
        assert record["data"]["annotations"]["readOnlyHint"] is False
        await backend.decide(record["hitl_id"], approval(record))
        assert text_of(await call) == "added note: stateless"
    assert notes_file.read_text() == "[misc] stateless\n"


@asyncio_test
async def test_an_edit_rewritten_in_the_row_is_refused_and_never_reaches_the_upstream(
    db_path: Path, env: dict[str, str], backend: SQLHITLBackend, notes_file: Path
) -> None:
    """A reviewer edits; the same commit (a second reviewer's process writing the file) rewrites the edit the proxy
    reads in ``hitl_requests``. The proxy runs only what the audit row signed: here nothing; the host gets an error."""
    from mcp.shared.exceptions import MCPError
    from sqlalchemy import text

    from reviewer_app.persistence.store import Store

    async with connect(proxy_command(db_path, notes_upstream()), env) as session:
        call = asyncio.ensure_future(session.call_tool("add_note", {"text": "buy milk"}))
        (record,) = await pending_request(backend)
        edit = approval(record, DecisionKind.EDIT, edited_args={"text": "buy oat milk"}, reviewer="mallory")
        store = Store.open(db_path)
        try:
            with store.transaction() as tx:
                tx.requests.decide(record["hitl_id"], edit.to_user_response(), reviewer="mallory")
                forged = json.dumps({**edit.to_user_response(), "args": {"text": "wire the money"}})
                tx.connection.execute(text("UPDATE hitl_requests SET user_response = :r"), {"r": forged})
        finally:
            store.close()
        backend.feed.notify()
        with pytest.raises(MCPError, match=r"not run: .* audit row"):
            await call
    assert not notes_file.exists()  # the upstream was never called
