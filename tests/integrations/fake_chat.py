"""A small OpenAI chat-completions API on 127.0.0.1 for driving real agent CLIs (Qwen Code, …) in tests.

The first turn asks for one tool call; once a tool message arrives it answers with text quoting it. Streaming
(``stream: true``) and plain answers are both served. Tool results the CLI sent back are kept.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeChat:
    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool = tool
        self.arguments = arguments
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeChat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def tool_results(self) -> list[str]:
        with self._lock:
            bodies = list(self.requests)
        seen: list[str] = []
        for body in bodies:
            for message in body.get("messages") or []:
                if isinstance(message, dict) and message.get("role") == "tool":
                    content = message.get("content")
                    text = content if isinstance(content, str) else json.dumps(content)
                    if text not in seen:
                        seen.append(text)
        return seen

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        results = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "tool"]
        if results:
            return {"role": "assistant", "content": f"The tool said: {json.dumps(results[-1].get('content'))[:500]}"}
        call = {
            "id": f"call_{len(self.requests)}",
            "type": "function",
            "function": {"name": self.tool, "arguments": json.dumps(self.arguments)},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, data: bytes, content_type: str) -> None:
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send(json.dumps({"data": [{"id": "fake-model", "object": "model"}]}).encode(), "application/json")

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                with api._lock:
                    api.requests.append(body)
                message = api._message(body)
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": body.get("model", "fake-model")}
                usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
                if not body.get("stream"):
                    answer = {
                        **base,
                        "object": "chat.completion",
                        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                        "usage": usage,
                    }
                    self._send(json.dumps(answer).encode(), "application/json")
                    return
                delta = dict(message)
                if delta.get("tool_calls"):
                    delta["tool_calls"] = [{"index": 0, **call} for call in delta["tool_calls"]]
                chunks = [
                    {**base, "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]},
                    {
                        **base,
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": {}, "finish_reason": finish}],
                        "usage": usage,
                    },
                ]
                data = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks) + b"data: [DONE]\n\n"
                self._send(data, "text/event-stream")

        return Handler
