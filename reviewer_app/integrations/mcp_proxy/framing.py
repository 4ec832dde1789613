"""Newline-delimited JSON-RPC over asyncio streams (MCP's stdio transport), and the few messages the proxy makes."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import selectors
import sys
import threading
from typing import Any, BinaryIO

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

    def __init__(self, writer: asyncio.StreamWriter | _ThreadWriter) -> None:
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
    """This process's stdin and stdout as asyncio streams (the host's end of the stdio transport).

    Pipes go through the loop; where it cannot watch them (Windows' proactor, a regular file, a character device
    such as ``/dev/null``, which epoll refuses) two daemon threads carry the bytes instead.
    """
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    try:
        if not _selector_watches(sys.stdin.fileno()):
            raise ValueError("the loop cannot watch stdin")
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
        transport, protocol = await loop.connect_write_pipe(
            lambda: asyncio.StreamReaderProtocol(asyncio.StreamReader()), sys.stdout.buffer
        )
    except (NotImplementedError, ValueError, OSError):
        threading.Thread(target=_feed_from_thread, args=(reader, loop), name="mcp-proxy stdin", daemon=True).start()
        return reader, LineWriter(_ThreadWriter(sys.stdout.buffer))
    return reader, LineWriter(asyncio.StreamWriter(transport, protocol, None, loop))


def _selector_watches(descriptor: int) -> bool:
    """Whether the loop's kind of selector can watch ``descriptor``: asyncio accepts any character device as a pipe,
    then fails to watch ``/dev/null`` in a callback of its own (epoll: EPERM) and never reads it."""
    try:
        with selectors.DefaultSelector() as probe:
            probe.register(descriptor, selectors.EVENT_READ)
    except (OSError, ValueError):
        return False
    return True


def _feed_from_thread(reader: asyncio.StreamReader, loop: asyncio.AbstractEventLoop) -> None:
    try:
        descriptor = sys.stdin.fileno()
        while chunk := os.read(descriptor, 65536):
            loop.call_soon_threadsafe(reader.feed_data, chunk)
    except (OSError, ValueError):
        pass
    finally:  # whatever happened, the proxy must learn the host is gone
        with contextlib.suppress(RuntimeError):  # the loop is already closed
            loop.call_soon_threadsafe(reader.feed_eof)


class _ThreadWriter:
    """The few StreamWriter methods LineWriter uses, over a blocking binary stream written in a thread."""

    def __init__(self, target: BinaryIO) -> None:
        self._target = target
        self._pending: list[bytes] = []
        self._closing = False
        self._order = asyncio.Lock()

    def is_closing(self) -> bool:
        return self._closing

    def write(self, data: bytes) -> None:
        self._pending.append(data)

    async def drain(self) -> None:
        async with self._order:  # one write at a time, in the order the lines were queued
            data, self._pending = b"".join(self._pending), []
            if data:
                await asyncio.to_thread(self._write_now, data)

    def _write_now(self, data: bytes) -> None:
        self._target.write(data)
        self._target.flush()

    def close(self) -> None:
        self._closing = True
