"""A small OpenAI Responses API on 127.0.0.1 for driving the real Codex CLI in tests.

The first turn asks for one shell call (whichever shell tool Codex offers: ``shell_command``, ``exec_command``
or ``shell``); once a function-call output arrives it answers with text quoting it. Requests are kept.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


class FakeResponses:
    def __init__(self, command: str) -> None:
        self.command = command
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeResponses:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def outputs(self) -> list[str]:
        """Every function-call output Codex sent back."""
        with self._lock:
            bodies = list(self.requests)
        seen: dict[str, str] = {}
        for body in bodies:
            for item in body.get("input") or []:
                if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
                    output = item.get("output")
                    seen[str(item.get("call_id"))] = output if isinstance(output, str) else json.dumps(output)
        return list(seen.values())

    def _call(self, body: dict[str, Any]) -> dict[str, Any] | None:
        names = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
        if "shell_command" in names:
            return {"name": "shell_command", "arguments": json.dumps({"command": self.command})}
        if "exec_command" in names:
            # Asking to run outside the sandbox makes Codex ask for approval (and so run PermissionRequest hooks).
            arguments = {"cmd": self.command, "sandbox_permissions": "require_escalated", "justification": "a marker"}
            return {"name": "exec_command", "arguments": json.dumps(arguments)}
        if "shell" in names:
            return {"name": "shell", "arguments": json.dumps({"command": ["bash", "-lc", self.command]})}
        return None

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _json(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                with api._lock:
                    api.paths.append("GET " + self.path)
                if self.path.split("?")[0].endswith("/models"):
                    self._json(200, {"object": "list", "data": [], "models": []})
                else:
                    self._json(404, {"error": {"message": "not here"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length) if length else b"{}"
                try:
                    body = json.loads(raw or b"{}")
                except (json.JSONDecodeError, UnicodeDecodeError):
                    body = {}
                with api._lock:
                    api.paths.append("POST " + self.path)
                if not self.path.split("?")[0].endswith("/responses"):
                    self._json(404, {"error": {"message": self.path}})
                    return
                with api._lock:
                    api.requests.append(body)
                    number = len(api.requests)
                answered = any(
                    isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output")
                    for item in body.get("input") or []
                )
                call = None if answered else api._call(body)
                if call is not None:
                    item = {"type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}", **call}
                else:
                    outputs = api.outputs()
                    text = "Done. The tool said: " + (outputs[-1] if outputs else "nothing")
                    item = {
                        "type": "message",
                        "id": f"msg_{number}",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": text, "annotations": []}],
                    }
                response = {"id": f"resp_{number}", "object": "response", "status": "in_progress", "output": []}
                usage = {
                    "input_tokens": 10,
                    "input_tokens_details": {"cached_tokens": 0},
                    "output_tokens": 5,
                    "output_tokens_details": {"reasoning_tokens": 0},
                    "total_tokens": 15,
                }
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(
                    _event("response.created", {"response": response})
                    + _event("response.output_item.added", {"output_index": 0, "item": item})
                    + _event("response.output_item.done", {"output_index": 0, "item": item})
                    + _event(
                        "response.completed",
                        {"response": {**response, "status": "completed", "output": [item], "usage": usage}},
                    )
                )
                self.wfile.flush()
                self.close_connection = True

        return Handler
