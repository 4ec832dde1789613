"""Newline-delimited JSON-RPC over asyncio streams (MCP's stdio transport), and the few messages the proxy makes."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

log = logging.getLogger("reviewer_app.mcp_proxy")

LINE_LIMIT = 64 * 1024 * 1024
"""The longest message accepted (a tool result with an embedded image can be megabytes)."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UPSTREAM_GONE = -32000
"""Implementation-defined server error: the upstream server exited before answering."""


def id_key(request_id: Any) -> str:
    """A dictionary key for a JSON-RPC id that keeps 1 and "1" apart."""
    return json.dumps(request_id, sort_keys=True)


def encode(message: Any) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def result(request_id: Any, value: Any) -> bytes:
    return encode({"jsonrpc": "2.0", "id": request_id, "result": value})


def error(request_id: Any, code: int, message: str, data: Any = None) -> bytes:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return encode({"jsonrpc": "2.0", "id": request_id, "error": body})


def notification(method: str, params: dict[str, Any]) -> bytes:
    return encode({"jsonrpc": "2.0", "method": method, "params": params})


class LineWriter:
    """Writes whole lines to one stream; every writer of a direction goes through one of these."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self.closed = False

    async def send(self, line: bytes) -> None:
        if self.closed or self._writer.is_closing():
            return
        try:
            self._writer.write(line + b"\n")
            await self._writer.drain()
        except (ConnectionError, BrokenPipeError):
            self.closed = True

    def close(self) -> None:
        self.closed = True
        if not self._writer.is_closing():
            self._writer.close()


async def read_line(reader: asyncio.StreamReader) -> bytes | None:
    """The next non-empty line without its newline; None at end of stream.

    A line longer than :data:`LINE_LIMIT` is skipped whole (its owner gets no answer, the stream survives).
    """
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
            if not line.strip():
                return None
        except asyncio.LimitOverrunError as exc:
            await _skip_overlong(reader, exc.consumed)
            continue
        stripped = line.strip()
        if stripped:
            return stripped


async def _skip_overlong(reader: asyncio.StreamReader, consumed: int) -> None:
    log.warning(f"mcp-proxy: skipped a message longer than {LINE_LIMIT} bytes")
    await reader.readexactly(consumed)
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


async def open_stdio() -> tuple[asyncio.StreamReader, LineWriter]:
    """This process's stdin and stdout as asyncio streams (the host's end of the stdio transport)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), sys.stdout.buffer
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, LineWriter(writer)
