"""A small Gemini API on 127.0.0.1 for driving the real Gemini CLI in tests.

The CLI first asks a router model which model to use (``:generateContent``): the answer is a JSON choice. The
main turn (``:streamGenerateContent?alt=sse``) asks for one function call; once a function response arrives it
answers with text quoting it. Function responses the CLI sent back are kept.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeGemini:
    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool = tool
        self.arguments = arguments
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeGemini:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def function_responses(self) -> list[str]:
        """Every function response the CLI sent back, as JSON text."""
        with self._lock:
            bodies = list(self.requests)
        seen: list[str] = []
        for body in bodies:
            for content in body.get("contents") or []:
                for part in content.get("parts") or []:
                    if isinstance(part, dict) and "functionResponse" in part:
                        text = json.dumps(part["functionResponse"].get("response"))
                        if text not in seen:
                            seen.append(text)
        return seen

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        responses = []
        for content in body.get("contents") or []:
            for part in content.get("parts") or []:
                if isinstance(part, dict) and "functionResponse" in part:
                    responses.append(part["functionResponse"])
        if responses:
            part: dict[str, Any] = {"text": f"The tool said: {json.dumps(responses[-1])[:500]}"}
        else:
            part = {"functionCall": {"name": self.tool, "args": self.arguments}}
        return {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-fake",
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, data: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                if ":countTokens" in self.path:
                    self._send(200, b'{"totalTokens": 10}', "application/json")
                    return
                if ":generateContent" in self.path:  # the router's model choice (and any other one-shot call)
                    choice = {
                        "reasoning": "a test",
                        "model_choice": "flash",
                        "complexity_reasoning": "a test",
                        "complexity_score": 1,
                    }
                    answer = {
                        "candidates": [
                            {"content": {"role": "model", "parts": [{"text": json.dumps(choice)}]}, "index": 0}
                        ]
                    }
                    self._send(200, json.dumps(answer).encode(), "application/json")
                    return
                with api._lock:
                    api.requests.append(body)
                event = f"data: {json.dumps(api._answer(body))}\r\n\r\n".encode()
                self._send(200, event, "text/event-stream")

        return Handler
