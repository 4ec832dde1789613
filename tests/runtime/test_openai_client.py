"""OpenAICompatibleModel against a real HTTP server on 127.0.0.1 that speaks /v1/chat/completions."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from reviewer_app.runtime.llm_clients import ModelError, ModelTurn, ToolCall
from reviewer_app.runtime.openai_client import OpenAICompatibleModel

Reply = Callable[[BaseHTTPRequestHandler], None]

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a file",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        },
    }
]
MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Write notes/todo.txt"},
]


class FakeOpenAI:
    """Plays planned replies in order and records every request it received."""

    def __init__(self) -> None:
        self.plan: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                with owner._lock:
                    owner.requests.append(
                        {
                            "path": self.path,
                            "headers": {k.lower(): v for k, v in self.headers.items()},
                            "json": json.loads(body),
                        }
                    )
                    reply = owner.plan.popleft() if owner.plan else None
                if self.path != "/v1/chat/completions":
                    json_reply(404, {"error": {"message": f"no route {self.path}"}})(self)
                elif reply is None:
                    json_reply(500, {"error": {"message": "test server: no reply planned"}})(self)
                else:
                    reply(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def attempts(self) -> int:
        return len(self.requests)


def json_reply(status: int, obj: Any, headers: dict[str, str] | None = None) -> Reply:
    def reply(h: BaseHTTPRequestHandler) -> None:
        body = json.dumps(obj).encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    return reply


def sse_reply(chunks: list[dict[str, Any]], *, done: bool = True) -> Reply:
    """Streams each chunk as one SSE event, each event written in two pieces to split lines across reads."""

    def reply(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.end_headers()
        h.wfile.write(b": keep-alive comment\n\n")
        events = [json.dumps(c).encode() for c in chunks] + ([b"[DONE]"] if done else [])
        for event in events:
            raw = b"data: " + event + b"\n\n"
            half = len(raw) // 2
            h.wfile.write(raw[:half])
            h.wfile.flush()
            time.sleep(0.003)
            h.wfile.write(raw[half:])
            h.wfile.flush()

    return reply


def slow_reply(seconds: float) -> Reply:
    def reply(h: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        try:
            json_reply(200, completion("too late"))(h)
        except OSError:
            pass  # the client gave up and closed the connection

    return reply


def completion(content: str | None, tool_calls: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content, **extra}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if tool_calls else "stop"}],
    }


def delta(finish: str | None = None, **fields: Any) -> dict[str, Any]:
    return {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": fields, "finish_reason": finish}]}


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI()
    fake.thread.start()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()
        fake.thread.join(timeout=5)


def client(server: FakeOpenAI, **kwargs: Any) -> OpenAICompatibleModel:
    options: dict[str, Any] = {"stream": False, "max_retries": 2, "timeout": 5.0, "backoff_s": 0.01}
    options.update(kwargs)
    return OpenAICompatibleModel(server.base_url, "test-model", **options)


@pytest.mark.asyncio
async def test_plain_text(server: FakeOpenAI) -> None:
    server.plan.append(json_reply(200, completion("Hello!", reasoning_content="Say hello.")))
    model = client(server, temperature=0.2)
    try:
        turn = await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert turn == ModelTurn(text="Hello!", thinking="Say hello.")
    sent = server.requests[0]
    assert sent["path"] == "/v1/chat/completions"
    assert sent["json"] == {"model": "test-model", "messages": MESSAGES, "stream": False, "temperature": 0.2}
    assert "authorization" not in sent["headers"], "no key configured, none sent (Ollama, llama.cpp)"


@pytest.mark.asyncio
async def test_tool_calls_and_wire_format(server: FakeOpenAI) -> None:
    server.plan.append(
        json_reply(
            200,
            completion(
                None,
                [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {
                            "name": "write_file",
                            "arguments": json.dumps({"path": "notes/todo.txt", "content": 'a "quoted"\nline'}),
                        },
                    },
                    {"id": "call_def", "type": "function", "function": {"name": "write_file", "arguments": ""}},
                ],
            ),
        )
    )
    history = [
        *MESSAGES,
        {
            "role": "assistant",
            "content": None,
            "thinking": "private chain of thought",
            "tool_calls": [
                {"id": "call_0_0", "type": "function", "function": {"name": "write_file", "arguments": {"path": "a"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_0_0", "content": "error: write_file: missing required field 'content'"},
    ]
    model = client(server)
    try:
        turn = await model.complete(history, TOOLS)
    finally:
        await model.aclose()
    assert turn.text is None
    assert turn.tool_calls == (
        ToolCall(id="call_abc", name="write_file", arguments={"path": "notes/todo.txt", "content": 'a "quoted"\nline'}),
        ToolCall(id="call_def", name="write_file", arguments={}),
    )
    sent = server.requests[0]["json"]
    assert sent["tools"] == TOOLS
    assistant = sent["messages"][2]
    assert "thinking" not in assistant, "thinking is ours; servers reject unknown keys"
    assert assistant["tool_calls"][0]["function"]["arguments"] == '{"path": "a"}'
    assert history[2]["thinking"] == "private chain of thought", "the caller's messages are not modified"


@pytest.mark.asyncio
async def test_invalid_tool_arguments_are_a_clear_error(server: FakeOpenAI) -> None:
    bad = [{"id": "c", "type": "function", "function": {"name": "write_file", "arguments": '{"path": '}}]
    server.plan.append(json_reply(200, completion(None, bad)))
    model = client(server)
    try:
        with pytest.raises(ModelError, match="invalid JSON arguments for tool 'write_file'"):
            await model.complete(MESSAGES, TOOLS)
    finally:
        await model.aclose()
    assert server.attempts == 1


@pytest.mark.asyncio
async def test_streaming_deltas_in_order_and_tool_calls_assembled(server: FakeOpenAI) -> None:
    args_0 = json.dumps({"path": "notes/todo.txt", "content": "buy milk"})
    args_1 = json.dumps({"path": "b.txt", "content": 'ünï "q"'}, ensure_ascii=False)
    cut_0, cut_1 = args_0.index("todo") + 2, args_1.index("ünï") + 1  # split inside string values
    chunks = [
        delta(role="assistant", content=""),
        delta(reasoning_content="Plan: "),
        delta(reasoning="write two files."),  # Ollama/OpenRouter spelling
        delta(content="Writing "),
        delta(content="them now."),
        delta(tool_calls=[{"index": 0, "id": "call_x", "type": "function", "function": {"name": "write_file"}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": args_0[:cut_0]}}]),
        delta(tool_calls=[{"index": 1, "id": "call_y", "function": {"name": "write_file", "arguments": ""}}]),
        delta(tool_calls=[{"index": 0, "function": {"arguments": args_0[cut_0:]}}]),
        delta(tool_calls=[{"index": 1, "function": {"arguments": args_1[:cut_1]}}]),
        delta(tool_calls=[{"index": 1, "function": {"arguments": args_1[cut_1:]}}]),
        delta(finish="tool_calls"),
        {"object": "chat.completion.chunk", "choices": [], "usage": {"total_tokens": 12}},
    ]
    server.plan.append(sse_reply(chunks))
    seen: list[tuple[str, str]] = []

    async def on_delta(kind: str, text: str) -> None:
        seen.append((kind, text))

    model = client(server, stream=True)
    try:
        turn = await model.complete(MESSAGES, TOOLS, on_delta=on_delta)
    finally:
        await model.aclose()
    assert seen == [
        ("thinking", "Plan: "),
        ("thinking", "write two files."),
        ("text", "Writing "),
        ("text", "them now."),
    ]
    assert turn == ModelTurn(
        text="Writing them now.",
        thinking="Plan: write two files.",
        tool_calls=(
            ToolCall(id="call_x", name="write_file", arguments={"path": "notes/todo.txt", "content": "buy milk"}),
            ToolCall(id="call_y", name="write_file", arguments={"path": "b.txt", "content": 'ünï "q"'}),
        ),
    )
    sent = server.requests[0]
    assert sent["json"]["stream"] is True
    assert sent["headers"]["accept"] == "text/event-stream"


@pytest.mark.asyncio
async def test_stream_retries_before_output_but_not_after(server: FakeOpenAI) -> None:
    server.plan.append(json_reply(500, {"error": {"message": "overloaded"}}))
    server.plan.append(sse_reply([delta(content="ok"), delta(finish="stop")]))
    model = client(server, stream=True)
    try:
        assert (await model.complete(MESSAGES, [])).text == "ok"
        assert server.attempts == 2

        # The connection drops after some text reached the caller: retrying would repeat it, so it is an error.
        server.plan.append(sse_reply([delta(content="partial ")], done=False))
        seen: list[str] = []
        with pytest.raises(ModelError, match=r"stream broke after output was delivered.*ended before"):
            await model.complete(MESSAGES, [], on_delta=lambda kind, text: seen.append(text))
        assert seen == ["partial "]
        assert server.attempts == 3
    finally:
        await model.aclose()


@pytest.mark.asyncio
async def test_streaming_server_that_answers_json(server: FakeOpenAI) -> None:
    server.plan.append(json_reply(200, completion("whole answer")))
    model = client(server, stream=True)
    try:
        assert await model.complete(MESSAGES, []) == ModelTurn(text="whole answer")
    finally:
        await model.aclose()


@pytest.mark.asyncio
async def test_retry_after_503_then_success(server: FakeOpenAI) -> None:
    server.plan.append(json_reply(503, {"error": {"message": "busy"}}, {"Retry-After": "0"}))
    server.plan.append(json_reply(429, {"error": {"message": "slow down"}}))
    server.plan.append(json_reply(200, completion("finally")))
    model = client(server, max_retries=3)
    try:
        turn = await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert turn.text == "finally"
    assert server.attempts == 3
    assert model.attempts == 3
    assert all(r["json"] == server.requests[0]["json"] for r in server.requests), "the same request is replayed"


@pytest.mark.asyncio
async def test_gives_up_after_max_retries(server: FakeOpenAI) -> None:
    for _ in range(3):
        server.plan.append(json_reply(502, {"error": {"message": "bad gateway"}}))
    model = client(server, max_retries=2)
    try:
        with pytest.raises(ModelError, match=r"HTTP 502: bad gateway \(gave up after 3 attempts\)"):
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert server.attempts == 3


@pytest.mark.asyncio
async def test_401_is_not_retried(server: FakeOpenAI) -> None:
    server.plan.append(json_reply(401, {"error": {"message": "Incorrect API key provided"}}))
    model = client(server, api_key="sk-wrong", max_retries=3)
    try:
        with pytest.raises(ModelError, match=r"HTTP 401 \(check the API key\): Incorrect API key provided"):
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert server.attempts == 1
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-wrong"


@pytest.mark.asyncio
async def test_api_key_from_env_var(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REVIEWER_TEST_MODEL_KEY", "sk-from-env-123")
    server.plan.append(json_reply(200, completion("hi")))
    model = client(server, api_key_env="REVIEWER_TEST_MODEL_KEY")
    try:
        await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert server.requests[0]["headers"]["authorization"] == "Bearer sk-from-env-123"


@pytest.mark.asyncio
async def test_missing_env_key_fails_before_any_request(server: FakeOpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REVIEWER_TEST_MISSING_KEY", raising=False)
    model = client(server, api_key_env="REVIEWER_TEST_MISSING_KEY")
    try:
        with pytest.raises(ModelError, match="set environment variable REVIEWER_TEST_MISSING_KEY"):
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert server.attempts == 0


@pytest.mark.skipif(importlib.util.find_spec("keyring") is not None, reason="keyring is installed")
@pytest.mark.asyncio
async def test_keyring_without_the_package_is_a_clear_error(server: FakeOpenAI) -> None:
    model = client(server, keyring_service="reviewer-test")
    try:
        with pytest.raises(ModelError, match="'keyring' package is not installed"):
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()


@pytest.mark.asyncio
async def test_timeout_gives_model_error_after_retries(server: FakeOpenAI) -> None:
    server.plan.extend([slow_reply(1.0), slow_reply(1.0)])
    model = client(server, timeout=0.2, max_retries=1)
    try:
        with pytest.raises(ModelError, match=r"timed out after 0.2s.*gave up after 2 attempts"):
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert server.attempts == 2


@pytest.mark.asyncio
async def test_connection_refused_is_retried_then_reported() -> None:
    probe = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = probe.server_address[1]
    probe.server_close()  # nothing listens on this port now
    model = OpenAICompatibleModel(f"http://127.0.0.1:{port}/v1", "m", stream=False, max_retries=2, backoff_s=0.01)
    try:
        with pytest.raises(ModelError, match=r"connection failed.*gave up after 3 attempts"):
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
    assert model.attempts == 3


@pytest.mark.asyncio
async def test_malformed_response_is_a_clear_error(server: FakeOpenAI) -> None:
    server.plan.append(json_reply(200, {"unexpected": True}))
    model = client(server)
    try:
        with pytest.raises(ModelError, match="unexpected response"):
            await model.complete(MESSAGES, [])
    finally:
        await model.aclose()
