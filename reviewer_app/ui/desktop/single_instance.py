"""One window per database: a second ``reviewer-app --db X gui`` brings the first window to the front and exits.

The first window listens on a local socket named from a hash of the resolved database (a Unix socket in the
user's runtime directory, a named pipe on Windows); a launch that can connect to it hands over and exits 0.
A socket left behind by a crashed window refuses connections: it is removed and this launch listens instead.
Another database hashes to another name, so it opens normally.

The standard library's :mod:`multiprocessing.connection` does the socket or pipe (QtNetwork would add ~3.4 MB to
the installer); its blocking ``accept`` runs on a daemon thread and hands each request to the Qt thread through a
queued signal. Two launches in the same instant can still both open a window (no lock spans check and listen).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import threading
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal

from reviewer_app.domain.sanitize import redact_url

SHOW = b"show"
STOP = b"stop"
_WINDOWS = sys.platform == "win32"
_FAMILY = "AF_PIPE" if _WINDOWS else "AF_UNIX"


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
    try:
        connection: Connection = Client(address, _FAMILY)
    except (OSError, EOFError):  # nobody listens (or a stale socket file): no window for this database
        return False
    with connection:
        try:
            connection.send_bytes(message)
        except (OSError, EOFError):
            return False
    return True


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
        self._listener: Listener | None = None
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
        if not _WINDOWS:
            Path(self.name).unlink(missing_ok=True)  # a stale socket of a window that crashed
        try:
            self._listener = Listener(self.name, _FAMILY)
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
                connection = listener.accept()
            except (OSError, EOFError):
                return
            with connection:
                try:
                    message = connection.recv_bytes(64) if connection.poll(2.0) else b""
                except (OSError, EOFError):
                    continue
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
        self._listener.close()  # also unlinks the Unix socket file
        self._listener = None
