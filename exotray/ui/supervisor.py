"""Start the local agent as a child process, or attach to one already listening.

The child is the same executable with the `agent` sub-command (`python -m exotray agent`
from a checkout or a wheel; the bundle's own executable when frozen). If it dies it is
restarted with a growing delay and the state says so; Quit stops it. An agent that was
already running (a service) is attached to and never stopped by us.
"""

from __future__ import annotations

import logging
import sys

import httpx
from PySide6.QtCore import QObject, QProcess, QTimer, Signal

log = logging.getLogger(__name__)



def agent_command(args: list[str]) -> tuple[str, list[str]]:
    """(program, arguments) that run `exotray agent ARGS` with this installation."""
    if getattr(sys, "frozen", False):
        return sys.executable, ["agent", *args]
    return sys.executable, ["-m", "exotray", "agent", *args]


def agent_answers(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    try:
        r = httpx.get(f"http://{host}:{port}/v1/snapshot", timeout=timeout, trust_env=False)
        return r.status_code == 200 and r.json().get("schema") == 1
    except (httpx.HTTPError, ValueError):
        return False


class AgentSupervisor(QObject):
    stateChanged = Signal(str)

    def __init__(self, port: int, args: list[str] | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.port = port
        self.args = list(args or [])
        self.state = "stopped"
        self.proc: QProcess | None = None
        self.restarts = 0
        self._stopping = False
        self._backoff = 1.0
        self._healthy = QTimer(self)
        self._healthy.setSingleShot(True)
        self._healthy.timeout.connect(self._reset_backoff)

    def _set(self, state: str) -> None:
        if state != self.state:
            self.state = state
            log.info("agent: %s", state)
            self.stateChanged.emit(state)

    def start(self) -> None:
        self._stopping = False
        if agent_answers(self.port):
            self._set("attached")
            return
        self._spawn()

    def _spawn(self) -> None:
        program, args = agent_command(["--port", str(self.port), *self.args])
        proc = QProcess(self)
        proc.setProcessChannelMode(QProcess.ProcessChannelMode.ForwardedChannels)
        proc.finished.connect(self._finished)
        proc.errorOccurred.connect(self._error)
        self.proc = proc
        self._set("starting" if self.restarts == 0 else "restarting")
        proc.start(program, args)
        if proc.waitForStarted(5000):
            self._set("running")
            self._healthy.start(30_000)  # alive for 30 s: the next crash restarts fast

    def _reset_backoff(self) -> None:
        self._backoff = 1.0

    def _error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            log.error("cannot start the agent: %s", self.proc.errorString() if self.proc else "")
            self._set("failed")

    def _finished(self, code: int, status: QProcess.ExitStatus) -> None:
        if self._stopping:
            return
        self._healthy.stop()
        log.warning("agent exited (code %s, %s); restarting in %.0f s", code,
                    "crashed" if status == QProcess.ExitStatus.CrashExit else "normal",
                    self._backoff)
        self._set("restarting")
        self.restarts += 1
        QTimer.singleShot(int(self._backoff * 1000), self._respawn)
        self._backoff = min(30.0, self._backoff * 2)

    def _respawn(self) -> None:
        if self._stopping:
            return
        if agent_answers(self.port):  # somebody else started one meanwhile
            self._set("attached")
            return
        self._spawn()

    def stop(self) -> None:
        """Stop our child (never an agent we attached to)."""
        self._stopping = True
        self._healthy.stop()
        proc = self.proc
        if proc is not None and proc.state() != QProcess.ProcessState.NotRunning:
            proc.terminate()  # SIGTERM: the agent says goodbye on mDNS and exits
            if not proc.waitForFinished(5000):
                proc.kill()
                proc.waitForFinished(2000)
        self._set("stopped")
