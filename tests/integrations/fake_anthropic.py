"""A small Anthropic Messages API on 127.0.0.1 for driving the real Claude Code CLI in tests.

The main agent's first turn asks for one tool call (``Bash`` with the command given); once a tool result
arrives it answers with text quoting that result (or, given ``repeat_input``, asks once more under the same
``tool_use`` id with other input, as a hostile endpoint might, and answers after that one). Side requests (titles, topic
checks: those without the tool) get a short text. Every request is kept in ``requests`` for the test to inspect.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    results = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            results.extend(block for block in content if isinstance(block, dict) and block.get("type") == "tool_result")
    return results


def _result_text(result: dict[str, Any]) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class FakeAnthropic:
    """``with FakeAnthropic(tool_name, tool_input) as api: ... api.url``."""

    def __init__(
        self,
        tool_name: str = "Bash",
        tool_input: dict[str, Any] | None = None,
        *,
        thinking: str = "",
        repeat_input: dict[str, Any] | None = None,
    ) -> None:
        self.tool_name = tool_name
        self.tool_input = tool_input or {"command": "echo hello", "description": "say hello"}
        self.thinking = thinking
        self.repeat_input = repeat_input
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def tool_results(self) -> list[str]:
        """The text of every tool result the CLI sent back (last request first seen)."""
        with self._lock:
            bodies = list(self.requests)
        seen: dict[str, str] = {}
        for body in bodies:
            for result in _tool_results(body):
                seen[str(result.get("tool_use_id"))] = _result_text(result)
        return list(seen.values())

    def _reply(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        """Content blocks and stop reason for one request."""
        tools = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
        results = _tool_results(body)
        if self.repeat_input is not None and results and self.tool_name in tools:
            self.repeat_input, repeated_input = None, self.repeat_input  # once
            repeated = {"type": "tool_use", "id": "toolu_fake_0001", "name": self.tool_name, "input": repeated_input}
            return [{"type": "text", "text": "Once more."}, repeated], "tool_use"
        if results:
            text = "Done. The tool said: " + _result_text(results[-1])
            return [{"type": "text", "text": text}], "end_turn"
        if self.tool_name in tools:
            blocks: list[dict[str, Any]] = []
            if self.thinking:
                blocks.append({"type": "thinking", "thinking": self.thinking, "signature": "sig"})
            blocks.append({"type": "text", "text": "I will run the tool now."})
            blocks.append(
                {"type": "tool_use", "id": "toolu_fake_0001", "name": self.tool_name, "input": self.tool_input}
            )
            return blocks, "tool_use"
        return [{"type": "text", "text": "Reviewer test"}], "end_turn"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send_json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with api._lock:
                    api.paths.append("GET " + self.path)
                self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not here"}})

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    body = {}
                path = self.path.split("?", 1)[0]
                with api._lock:
                    api.paths.append("POST " + self.path)
                if path.endswith("/count_tokens"):
                    self._send_json(200, {"input_tokens": 42})
                    return
                if not path.endswith("/v1/messages"):
                    self._send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": path}})
                    return
                with api._lock:
                    api.requests.append(body)
                blocks, stop = api._reply(body)
                model = body.get("model") or "claude-test"
                message = {
                    "id": f"msg_fake_{len(api.requests)}",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [],
                    "stop_reason": None,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 12, "output_tokens": 1},
                }
                if not body.get("stream"):
                    self._send_json(200, {**message, "content": blocks, "stop_reason": stop})
                    return
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                out = [_sse("message_start", {"type": "message_start", "message": message})]
                for index, block in enumerate(blocks):
                    if block["type"] == "text":
                        start = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    elif block["type"] == "thinking":
                        start = {"type": "thinking", "thinking": ""}
                        delta = {"type": "thinking_delta", "thinking": block["thinking"]}
                    else:
                        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
                        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                    out.append(
                        _sse(
                            "content_block_start",
                            {"type": "content_block_start", "index": index, "content_block": start},
                        )
                    )
                    out.append(
                        _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
                    )
                    if block["type"] == "thinking":
                        sig = {"type": "signature_delta", "signature": block["signature"]}
                        out.append(
                            _sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": sig})
                        )
                    out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
                out.append(
                    _sse(
                        "message_delta",
                        {
                            "type": "message_delta",
                            "delta": {"stop_reason": stop, "stop_sequence": None},
                            "usage": {"output_tokens": 20},
                        },
                    )
                )
                out.append(_sse("message_stop", {"type": "message_stop"}))
                self.wfile.write(b"".join(out))
                self.wfile.flush()
                self.close_connection = True

        return Handler
