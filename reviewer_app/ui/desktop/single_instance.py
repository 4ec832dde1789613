"""One window per database: a second ``reviewer-app --db X gui`` brings the first window to the front and exits.

The first window listens on a local socket named from a hash of the resolved database (a Unix socket in the
user's runtime directory, a named pipe on Windows); a launch that can connect to it hands over and exits 0.
A socket left behind by a crashed window refuses connections: it is removed and this launch listens instead.
Another database hashes to another name, so it opens normally.

The standard library does the socket or pipe (QtNetwork would add ~3.4 MB to the installer): on Windows
:mod:`multiprocessing.connection`'s named pipes; elsewhere a plain Unix socket carrying the same length-prefixed
messages (importing ``multiprocessing`` cost every start ~10 ms before its first paint). The blocking ``accept``
runs on a daemon thread and hands each request to the Qt thread through a queued signal. Two launches in the same
instant can still both open a window (no lock spans check and listen).
"""

from __future__ import annotations

import hashlib
import os
import socket
import stat
import struct
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Qt, Signal

from reviewer_app.domain.sanitize import redact_url

if TYPE_CHECKING:
    from multiprocessing.connection import Connection, Listener

SHOW = b"show"
STOP = b"stop"
MESSAGE_BYTES = 64
ACCEPTED_WAIT_S = 2.0  # how long an accepted connection may take to send its message
_WINDOWS = sys.platform == "win32"
_HEADER = struct.Struct("!i")  # multiprocessing's ``send_bytes`` framing: a big-endian length, then the bytes


def database_key(database: str) -> str:
    """The database as one string whatever way it was named: a resolved file path, or the URL without password."""
    text = str(database)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    if "://" not in text:
        return str(Path(text).expanduser().resolve())
    return redact_url(text)


def runtime_dir() -> Path | None:
    """A directory only this user can enter: ``$XDG_RUNTIME_DIR``, else one of ours under the temp directory.

    None when ours exists but someone else owns it or can enter it: another user could then sit on the socket
    and swallow every launch, so the guard is off rather than trusting it.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and Path(xdg).is_dir():
        return Path(xdg)
    uid = os.getuid() if hasattr(os, "getuid") else 0
    base = Path(tempfile.gettempdir()) / f"reviewer-app-{uid}"
    try:
        base.mkdir(mode=0o700, exist_ok=True)
        info = base.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        return None
    return base


def server_name(database: str) -> str | None:
    """Where this database's window listens: ``<runtime dir>/reviewer-<hash>.sock``, or a named pipe on Windows;
    None when there is no private place for the socket (the guard is off then)."""
    digest = hashlib.sha256(database_key(database).encode("utf-8")).hexdigest()[:24]
    name = f"reviewer-{digest}"
    if _WINDOWS:
        return rf"\\.\pipe\{name}"
    directory = runtime_dir()
    return None if directory is None else str(directory / f"{name}.sock")


def _send(address: str, message: bytes) -> bool:
    if _WINDOWS:
        from multiprocessing.connection import Client

        try:
            pipe = Client(address, "AF_PIPE")
        except (OSError, EOFError):  # nobody listens: no window for this database
            return False
        with pipe:
            try:
                pipe.send_bytes(message)
            except (OSError, EOFError):
                return False
        return True
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(address)  # nobody listens (or a stale socket file): OSError, no window for this database
            client.sendall(_HEADER.pack(len(message)) + message)
    except OSError:
        return False
    return True


def _receive(connection: socket.socket) -> bytes:
    """One length-prefixed message of at most ``MESSAGE_BYTES`` (b"" when none comes in time)."""
    connection.settimeout(ACCEPTED_WAIT_S)
    data = b""
    try:
        while len(data) < _HEADER.size + MESSAGE_BYTES:
            chunk = connection.recv(_HEADER.size + MESSAGE_BYTES - len(data))
            if not chunk:
                break
            data += chunk
            if len(data) >= _HEADER.size and len(data) - _HEADER.size >= _HEADER.unpack_from(data)[0]:
                break
    except OSError:
        return b""
    if len(data) < _HEADER.size:
        return b""
    (length,) = _HEADER.unpack_from(data)
    body = data[_HEADER.size :]
    return body if 0 <= length <= MESSAGE_BYTES and len(body) == length else b""


def _receive_from_pipe(pipe: Connection) -> bytes:
    """One message from a named pipe's client (b"" when none comes in time)."""
    try:
        return pipe.recv_bytes(MESSAGE_BYTES) if pipe.poll(ACCEPTED_WAIT_S) else b""
    except (OSError, EOFError):
        return b""


class SingleInstance(QObject):
    """The single-window guard for one database.

    Signals:
        activated(): another launch asked for this database; show the window (emitted on the Qt thread).
    """

    activated = Signal()
    _received = Signal()

    def __init__(self, database: str) -> None:
        super().__init__()
        self.name = server_name(database)
        self._listener: Listener | socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = False
        self._received.connect(self.activated, Qt.ConnectionType.QueuedConnection)

    def hand_over(self) -> bool:
        """True when a window for this database already runs (it was told to come to the front)."""
        return self.name is not None and _send(self.name, SHOW)

    def listen(self) -> bool:
        """Become the window for this database; False when the name cannot be taken (the app still runs)."""
        if self.name is None:
            return False
        try:
            if _WINDOWS:
                from multiprocessing.connection import Listener

                self._listener = Listener(self.name, "AF_PIPE")
            else:
                Path(self.name).unlink(missing_ok=True)  # a stale socket of a window that crashed
                server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    server.bind(self.name)
                    server.listen()
                except OSError:
                    server.close()
                    raise
                self._listener = server
        except OSError:
            return False
        self._thread = threading.Thread(target=self._serve, name="reviewer-single-instance", daemon=True)
        self._thread.start()
        return True

    def _serve(self) -> None:
        listener = self._listener
        assert listener is not None
        while not self._closing:
            try:
                if isinstance(listener, socket.socket):
                    connection, _address = listener.accept()
                    with connection:
                        message = _receive(connection)
                else:
                    with listener.accept() as pipe:
                        message = _receive_from_pipe(pipe)
            except (OSError, EOFError):  # the listener closed under the accept
                return
            if message == SHOW and not self._closing:
                self._received.emit()

    def close(self) -> None:
        """Stop listening (and remove the socket file) so a later launch opens its own window."""
        if self._listener is None or self.name is None:
            return
        self._closing = True
        _send(self.name, STOP)  # wakes the blocking accept
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._listener.close()
        if not _WINDOWS:
            Path(self.name).unlink(missing_ok=True)
        self._listener = None
