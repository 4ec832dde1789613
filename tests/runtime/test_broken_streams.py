"""A streamed answer that breaks keeps everything said so far, and the run's error says what broke.

A real HTTP server on 127.0.0.1 speaks the OpenAI chat format (FakeOpenAI from test_openai_client); the
timeline is checked through the backend's events and the pure fold, as the window and CLI read it.
"""

from __future__ import annotations

import email.utils
import json
import math
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from reviewer_app.domain.sanitize import REDACTED
from reviewer_app.domain.timeline import BlockKind
from reviewer_app.hitl import SQLHITLBackend
from reviewer_app.runtime.llm_clients import ModelError
from reviewer_app.runtime.openai_client import OpenAICompatibleModel
from tests.runtime.test_openai_client import MESSAGES, FakeOpenAI, completion, delta, json_reply
from tests.runtime.test_runner_support import agent, started_runtime, timeline

pytestmark = pytest.mark.asyncio

API_KEY = "sk-test-SECRET-4242"
TEXT_PIECES = ["The plan: ", "first read ", "the notes, ", "then write ", "the summary."]
THINKING_PIECES = ["Let me ", "think."]


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.stalls = threading.Event()  # type: ignore[attr-defined]
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.stalls.set()  # type: ignore[attr-defined]
        fake.server.shutdown()
        fake.server.server_close()
        fake.thread.join(timeout=5)


def sse_start(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.end_headers()


def send(h: BaseHTTPRequestHandler, payload: Any) -> None:
    h.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
    h.wfile.flush()


def said_so_far(h: BaseHTTPRequestHandler, pause_s: float = 0.0) -> None:
    for piece in THINKING_PIECES:
        send(h, delta(reasoning_content=piece))
    for piece in TEXT_PIECES:
        send(h, delta(content=piece))
        time.sleep(pause_s)  # > 0: pieces cross the runner's flush interval, some are written mid-stream


def error_event_mid_text(h: BaseHTTPRequestHandler) -> None:
    sse_start(h)
    said_so_far(h)
    send(h, {"error": {"message": f"upstream overloaded (key {API_KEY})", "type": "server_error", "code": 529}})


def dropped_mid_text(pause_s: float):  # type: ignore[no-untyped-def]
    def reply(h: BaseHTTPRequestHandler) -> None:
        sse_start(h)
        said_so_far(h, pause_s)
        h.connection.shutdown(socket.SHUT_RDWR)  # the connection dies: no finish_reason, no [DONE]

    return reply


def dropped_mid_tool_call(h: BaseHTTPRequestHandler) -> None:
    sse_start(h)
    said_so_far(h)
    send(h, delta(tool_calls=[{"index": 0, "id": "call_w", "function": {"name": "write_file"}}]))
    send(h, delta(tool_calls=[{"index": 0, "function": {"arguments": '{"path": "summ'}}]))
    h.connection.shutdown(socket.SHUT_RDWR)


def stalls_mid_text(server: FakeOpenAI):  # type: ignore[no-untyped-def]
    def reply(h: BaseHTTPRequestHandler) -> None:
        sse_start(h)
        said_so_far(h)
        server.stalls.wait(30)  # type: ignore[attr-defined]  # never finishes while the run waits

    return reply


def http_agent(server: FakeOpenAI, *, base_url: str | None = None, **extra: Any):  # type: ignore[no-untyped-def]
    spec = agent()
    model = {
        "type": "openai",
        "base_url": base_url or server.base_url,
        "model": "m",
        "api_key": API_KEY,
        "stream": True,
        "max_retries": 2,
        "backoff_s": 0.01,
    }
    return type(spec)(**{**spec.__dict__, "model": model, **extra})


async def failed_run(backend: SQLHITLBackend, tmp_path: Path, spec: Any) -> tuple[Any, dict[BlockKind, Any]]:
    async with started_runtime(backend, tmp_path, spec) as runtime:
        inv = await runtime.start_run("tester", "summarise the notes")
        record = await runtime.wait_for_run(inv, timeout=30)
    blocks = {}
    for block in await timeline(backend, inv):
        blocks.setdefault(block.kind, block)
    return record, blocks


def assert_everything_said_is_kept(blocks: dict[BlockKind, Any]) -> None:
    assert blocks[BlockKind.TEXT].data["text"] == "".join(TEXT_PIECES)
    assert blocks[BlockKind.THINKING].data["text"] == "".join(THINKING_PIECES)


async def test_an_error_event_mid_text_keeps_the_text_and_names_the_error(
    backend: SQLHITLBackend, tmp_path: Path, server: FakeOpenAI
) -> None:
    server.plan.append(error_event_mid_text)
    port = server.base_url.split(":")[2].split("/")[0]
    spec = http_agent(server, base_url=f"http://operator:hunter2@127.0.0.1:{port}/v1")
    record, blocks = await failed_run(backend, tmp_path, spec)
    assert record.state == "failed"
    assert_everything_said_is_kept(blocks)
    error = blocks[BlockKind.ERROR].data["message"]
    assert record.error == error
    assert "upstream overloaded" in error and "529" in error and "server_error" in error
    assert API_KEY not in error and "hunter2" not in error
    assert REDACTED in error
    assert server.attempts == 1  # output had been delivered: never asked again


@pytest.mark.parametrize("pause_s", [0.0, 0.1])
async def test_a_dropped_connection_mid_text_keeps_the_text(
    backend: SQLHITLBackend, tmp_path: Path, server: FakeOpenAI, pause_s: float
) -> None:
    server.plan.append(dropped_mid_text(pause_s))
    record, blocks = await failed_run(backend, tmp_path, http_agent(server))
    assert record.state == "failed"
    assert_everything_said_is_kept(blocks)
    assert "stream broke after output was delivered" in record.error
    assert "ended before the answer was complete" in record.error or "connection" in record.error
    assert server.attempts == 1


async def test_the_time_budget_running_out_mid_stream_keeps_the_text(
    backend: SQLHITLBackend, tmp_path: Path, server: FakeOpenAI
) -> None:
    server.plan.append(stalls_mid_text(server))
    record, blocks = await failed_run(backend, tmp_path, http_agent(server, time_budget_s=2))
    assert record.state == "failed"
    assert "wall-time budget of 2 s used up" in record.error
    assert_everything_said_is_kept(blocks)


async def test_tool_call_fragments_before_a_break_reach_the_timeline_and_are_not_asked_again(
    backend: SQLHITLBackend, tmp_path: Path, server: FakeOpenAI
) -> None:
    server.plan.append(dropped_mid_tool_call)
    record, blocks = await failed_run(backend, tmp_path, http_agent(server))
    assert record.state == "failed"
    assert_everything_said_is_kept(blocks)
    tool = blocks[BlockKind.TOOL_USE].data
    assert tool["name"] == "write_file" and tool["call_id"] == "call_w"
    assert tool["partial_arguments"] == '{"path": "summ'
    assert tool["status"] == "error"
    assert server.attempts == 1  # the turn's calls are on record: the turn is not repeated


def timed(server: FakeOpenAI, reply: Any) -> Any:
    def wrapper(h: BaseHTTPRequestHandler) -> None:
        server.times.append(time.monotonic())  # type: ignore[attr-defined]
        reply(h)

    return wrapper


def model_for(server: FakeOpenAI, **options: Any) -> OpenAICompatibleModel:
    settings: dict[str, Any] = {"stream": False, "max_retries": 2, "timeout": 10.0, "backoff_s": 0.01}
    settings.update(options)
    return OpenAICompatibleModel(server.base_url, "m", api_key=API_KEY, **settings)


@pytest.mark.parametrize("form", ["seconds", "http-date"])
async def test_retries_wait_as_long_as_retry_after_says(server: FakeOpenAI, form: str) -> None:
    server.times = []  # type: ignore[attr-defined]
    # An HTTP date has whole seconds: a whole second 2 s ahead, so the truncation cannot eat into the wait.
    wait = "1" if form == "seconds" else email.utils.formatdate(math.ceil(time.time()) + 2, usegmt=True)
    server.plan.append(timed(server, json_reply(429, {"error": {"message": "slow down"}}, {"Retry-After": wait})))
    server.plan.append(timed(server, json_reply(200, completion("done"))))
    model = model_for(server)
    try:
        assert (await model.complete(MESSAGES, [])).text == "done"
    finally:
        await model.aclose()
    gap = server.times[1] - server.times[0]  # type: ignore[attr-defined]
    assert gap >= 0.95, f"retried {gap:.2f} s after a Retry-After of {wait}"


async def test_a_retry_after_beyond_the_limit_is_not_cut_short(server: FakeOpenAI) -> None:
    server.plan.append(json_reply(503, {"error": {"message": "maintenance"}}, {"Retry-After": "3600"}))
    model = model_for(server)
    try:
        with pytest.raises(ModelError, match=r"HTTP 503.*maintenance.*retry after 3600 s") as caught:
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert server.attempts == 1
    assert API_KEY not in str(caught.value)


async def test_an_error_echoing_the_key_is_redacted(server: FakeOpenAI) -> None:
    server.plan.append(json_reply(401, {"error": {"message": f"Incorrect API key provided: {API_KEY}"}}))
    model = model_for(server)
    try:
        with pytest.raises(ModelError, match="HTTP 401") as caught:
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert API_KEY not in str(caught.value) and f"Incorrect API key provided: {REDACTED}" in str(caught.value)


async def test_authorization_values_and_tokens_in_a_message_are_redacted(server: FakeOpenAI) -> None:
    message = (
        "bad header 'Authorization: Bearer abc.DEF-123456' for url ?access_token=tok987654&x=1; api_key: 'zzzz9999'"
    )
    server.plan.append(json_reply(400, {"error": {"message": message}}))
    model = model_for(server)
    try:
        with pytest.raises(ModelError, match="HTTP 400") as caught:
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    text = str(caught.value)
    for secret in ("abc.DEF-123456", "tok987654", "zzzz9999"):
        assert secret not in text
    assert f"Bearer {REDACTED}" in text and f"access_token={REDACTED}" in text
