"""One window per database: a second ``reviewer-app --db X gui`` brings the first window to the front and exits.

The first window listens on a local socket named from a hash of the resolved database (a Unix socket in the
user's runtime directory, a named pipe on Windows); a launch that can connect to it hands over and exits 0.
A socket left behind by a crashed window accepts no connection: it is removed and this launch listens instead.
Another database hashes to another name, so it opens normally.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from PySide6.QtCore import QObject, QStandardPaths, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

from reviewer_app.domain.sanitize import redact_url

CONNECT_MS = 500
MESSAGE = b"show\n"


def database_key(database: str) -> str:
    """The database as one string whatever way it was named: a resolved file path, or the URL without password."""
    text = str(database)
    if text.startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    if "://" not in text:
        return str(Path(text).expanduser().resolve())
    return redact_url(text)


def server_name(database: str) -> str:
    digest = hashlib.sha256(database_key(database).encode("utf-8")).hexdigest()[:24]
    name = f"reviewer-{digest}"
    if sys.platform == "win32":
        return name
    runtime = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.RuntimeLocation)
    return str(Path(runtime) / f"{name}.sock") if runtime else name


class SingleInstance(QObject):
    """The single-window guard for one database.

    Signals:
        activated(): another launch asked for this database; show the window.
    """

    activated = Signal()

    def __init__(self, database: str) -> None:
        super().__init__()
        self.name = server_name(database)
        self.server: QLocalServer | None = None

    def hand_over(self) -> bool:
        """True when a window for this database already runs (it was told to come to the front)."""
        socket = QLocalSocket()
        socket.connectToServer(self.name)
        if not socket.waitForConnected(CONNECT_MS):
            return False
        socket.write(MESSAGE)
        socket.flush()
        socket.waitForBytesWritten(CONNECT_MS)
        socket.disconnectFromServer()
        return True

    def listen(self) -> bool:
        """Become the window for this database; False when the name cannot be taken (the app still runs)."""
        QLocalServer.removeServer(self.name)  # a stale socket of a window that crashed
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        server.newConnection.connect(self._on_connection)
        if not server.listen(self.name):
            return False
        self.server = server
        return True

    def _on_connection(self) -> None:
        assert self.server is not None
        while (socket := self.server.nextPendingConnection()) is not None:
            socket.readyRead.connect(lambda s=socket: self._on_message(s))
            socket.disconnected.connect(socket.deleteLater)
            if socket.bytesAvailable():
                self._on_message(socket)

    def _on_message(self, socket: QLocalSocket) -> None:
        if bytes(socket.readAll().data()).startswith(MESSAGE.strip()):
            self.activated.emit()

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
