"""The proxy in front of the reference filesystem MCP server from npm (written by others, in TypeScript)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.decisions import DecisionKind
from reviewer_app.domain.records import RequestQuery
from reviewer_app.hitl import SQLHITLBackend
from tests.integrations.conftest import connect, decide_first, pending_request, proxy_command
from tests.runtime.test_runner_support import approval

pytestmark = pytest.mark.asyncio


def text_of(result: Any) -> str:
    return "\n".join(item.text for item in result.content if getattr(item, "type", None) == "text")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "hello.txt").write_text("hello from disk\n")
    return folder.resolve()


async def test_tools_list_equals_a_direct_connection(
    filesystem_server: list[str], root: Path, db_at_schema_head: Path, subprocess_env: dict[str, str]
) -> None:
    upstream = [*filesystem_server, str(root)]
    async with connect(upstream, subprocess_env) as direct:
        direct_tools = (await direct.list_tools()).model_dump(by_alias=True)
    async with connect(proxy_command(db_at_schema_head, upstream, name="fs"), subprocess_env) as proxied:
        proxied_tools = (await proxied.list_tools()).model_dump(by_alias=True)
    assert proxied_tools == direct_tools
    assert len(proxied_tools["tools"]) > 5


async def test_reads_pass_and_writes_wait(
    filesystem_server: list[str], root: Path, db_path: Path, subprocess_env: dict[str, str], backend: SQLHITLBackend
) -> None:
    upstream = [*filesystem_server, str(root)]
    async with connect(proxy_command(db_path, upstream, name="fs"), subprocess_env) as session:
        # no tools/list first: the proxy asks the upstream for the annotations itself
        read = await session.call_tool("read_text_file", {"path": str(root / "hello.txt")})
        assert text_of(read) == "hello from disk\n"
        assert await backend.list_records(RequestQuery(statuses=())) == []

        target = root / "new.txt"
        write = asyncio.ensure_future(session.call_tool("write_file", {"path": str(target), "content": "approved"}))
        (record,) = await pending_request(backend)
        assert record["tool_name"] == "mcp__fs__write_file"
        assert record["data"]["annotations"]["destructiveHint"] is True
        assert "destructive" in record["data"]["risk"]
        assert record["data"]["schema"]["required"] == ["path", "content"]
        await backend.decide(record["hitl_id"], approval(record))
        assert (await write).is_error is not True
        assert target.read_text() == "approved"

        edited = asyncio.ensure_future(session.call_tool("write_file", {"path": str(target), "content": "draft"}))
        await decide_first(
            backend, DecisionKind.EDIT, edited_args={"path": str(target), "content": "edited by reviewer"}
        )
        await edited
        assert target.read_text() == "edited by reviewer"

        rejected = asyncio.ensure_future(session.call_tool("write_file", {"path": str(target), "content": "evil"}))
        await decide_first(backend, DecisionKind.REJECT, message="keep the file")
        result = await rejected
        assert result.is_error is True
        assert text_of(result) == "rejected by reviewer: keep the file"
        assert target.read_text() == "edited by reviewer"


async def test_a_read_only_tool_never_reads_a_sensitive_target_unreviewed(
    filesystem_server: list[str], root: Path, db_path: Path, subprocess_env: dict[str, str], backend: SQLHITLBackend
) -> None:
    """``readOnlyHint`` is a default the operator never wrote: it does not settle reading a key or ``.env`` (issue 23),
    and neither does approve-for-session of that tool."""
    (root / ".env").write_text("API_TOKEN=secret\n")
    upstream = [*filesystem_server, str(root)]
    async with connect(proxy_command(db_path, upstream, name="fs"), subprocess_env) as session:
        read = await session.call_tool("read_text_file", {"path": str(root / "hello.txt")})
        assert text_of(read) == "hello from disk\n"  # an ordinary file: the annotation still lets it through
        secret = asyncio.ensure_future(session.call_tool("read_text_file", {"path": str(root / ".env")}))
        (record,) = await pending_request(backend)
        assert not secret.done() and record["tool_name"] == "mcp__fs__read_text_file"
        await decide_first(backend, DecisionKind.APPROVE_FOR_SESSION)
        assert "API_TOKEN" in text_of(await secret)
        again = asyncio.ensure_future(session.call_tool("read_text_file", {"path": str(root / ".env")}))
        await pending_request(backend)  # the waiver for the tool does not cover a sensitive target
        assert not again.done()
        again.cancel()
