"""One tray app per user and agent: a second `exotray` shows the first one's window and
exits, instead of putting a second icon in the tray (and stopping, when it quits, the
agent the first one runs).

The first app listens on a local socket (QLocalServer: a Unix socket in the temporary
dir, readable by this user only); its name comes from the user, the agent's port and its
state dir, so a second app for another agent (a test's, the demo's) is not refused. A
later app connects, says "show", and exits. A socket left by an app that crashed answers
no connection: it is removed and taken over.
"""

from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

log = logging.getLogger(__name__)

#: how long a second app waits for the first to answer (ms): a live one answers at once
CONNECT_MS = 1000
SHOW = b"show\n"


def instance_name(port: int, state_dir: Path) -> str:
    """The local socket's name for the app that watches the agent at `port` with
    `state_dir` (short: a Unix socket's path has a length limit)."""
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "")
    key = f"{uid}:{port}:{Path(state_dir).expanduser().resolve()}"
    return "exotray-" + hashlib.sha256(key.encode()).hexdigest()[:16]


class SingleInstance(QObject):
    """`claim()` once at start: True, this is the first app (it now emits `showRequested`
    when a later one starts); False, another app runs and was asked to show itself."""

    showRequested = Signal()

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._server: QLocalServer | None = None

    def claim(self) -> bool:
        if self._ask_running_app():
            return False
        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.name):
            # a socket file nobody answers on (an app that crashed): take it over
            QLocalServer.removeServer(self.name)
            if not server.listen(self.name):
                # (a race with an app starting at the same moment, or no temp dir):
                # run without the check rather than not at all
                log.warning("cannot check for another exotray (%s): starting anyway",
                            server.errorString())
                return True
        server.newConnection.connect(self._connected)
        self._server = server
        return True

    def release(self) -> None:
        if self._server is not None:
            self._server.close()  # removes the socket file
            self._server = None

    def _ask_running_app(self) -> bool:
        sock = QLocalSocket()
        sock.connectToServer(self.name)
        if not sock.waitForConnected(CONNECT_MS):
            return False
        sock.write(SHOW)
        sock.waitForBytesWritten(CONNECT_MS)
        sock.disconnectFromServer()
        return True

    def _connected(self) -> None:
        # A later app writes its one line as soon as it is connected: read it here, no
        # per-connection slots to outlive the server.
        while self._server is not None and (conn := self._server.nextPendingConnection()):
            said = (conn.bytesAvailable() or conn.waitForReadyRead(CONNECT_MS)) and bytes(
                conn.readAll().data())
            if said and SHOW.strip() in said:
                log.info("another exotray was started: showing this one's window")
                self.showRequested.emit()
            conn.abort()
            conn.deleteLater()
