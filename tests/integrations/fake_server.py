"""The plumbing every fake model API of the end-to-end tests shares (Anthropic, OpenAI chat and Responses,
Gemini): a threaded HTTP server on 127.0.0.1 that keeps the JSON bodies it was sent, started and stopped as a
context manager. Each API is a subclass that answers one POST (and, if it must, one GET)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    body: bytes
    content_type: str = "application/json"
    status: int = 200
    stream: bool = False
    """Server-sent events written whole without a length: the connection closes after them."""


def json_reply(payload: Any, status: int = 200) -> Reply:
    return Reply(json.dumps(payload).encode(), status=status)


def sse(event: str, data: dict[str, Any]) -> bytes:
    """One server-sent event with a name (Anthropic's and the Responses API's streams)."""
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class FakeServer:
    """Subclasses implement :meth:`answer` for a POST; :meth:`answer_get` lists one model by default."""

    url_path = ""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}{self.url_path}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def bodies(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.requests)

    def keep(self, body: dict[str, Any]) -> int:
        """Keep one request's body; returns how many are kept now (a number for the reply's ids)."""
        with self._lock:
            self.requests.append(body)
            return len(self.requests)

    def answer(self, path: str, body: dict[str, Any]) -> Reply:
        raise NotImplementedError

    def answer_get(self, path: str) -> Reply:
        return json_reply({"data": [{"id": "fake-model", "object": "model"}]})

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("content-type", reply.content_type)
                if reply.stream:
                    self.send_header("cache-control", "no-cache")
                    self.send_header("connection", "close")
                else:
                    self.send_header("content-length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
                if reply.stream:
                    self.wfile.flush()
                    self.close_connection = True

            def do_GET(self) -> None:
                self._send(fake.answer_get(self.path))

            def do_HEAD(self) -> None:
                self._send(Reply(b""))

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except (json.JSONDecodeError, UnicodeDecodeError):
                    body = {}
                self._send(fake.answer(self.path, body if isinstance(body, dict) else {}))

        return Handler
