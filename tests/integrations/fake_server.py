"""The plumbing every fake model API of the end-to-end tests shares: a threaded HTTP server on 127.0.0.1 that
keeps the JSON bodies it was sent, started and stopped as a context manager."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class FakeServer:
    """Subclasses implement :meth:`answer`: the status, content type and body for one POST."""

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

    def keep(self, body: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(body)

    def answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, content_type: str, data: bytes) -> None:
                self.send_response(200)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                self._send("application/json", json.dumps({"data": [{"id": "fake-model", "object": "model"}]}).encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except json.JSONDecodeError:
                    body = {}
                self._send(*fake.answer(self.path, body if isinstance(body, dict) else {}))

        return Handler
