"""Start the local agent as a child process, or attach to one already listening.

The child is the same executable with the `agent` sub-command (`python -m exotray agent`
from a checkout or a wheel; the bundle's own executable when frozen). If it dies it is
restarted with a growing delay and the state says so; Quit stops it. An agent that was
already running (a service) is attached to and never stopped by us.

The child's standard error is passed through to ours and its last error line is kept:
`problem` (and `problemChanged`) tell the menu, the window and a notification why the
agent stopped. An agent refused by its settings (exit status EXIT_CONFIG) is not
restarted until its config file changes: restarting it could not help.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import re
import sys
import threading
from pathlib import Path

from PySide6.QtCore import QObject, QProcess, QTimer, Signal

from exotray.core import paths
from exotray.core.settings import EXIT_CONFIG
from exotray.ui.client import localhttp

log = logging.getLogger(__name__)

#: a line in settings.LOG_FORMAT: "2026-12-03 01:02:03,456 WARNING exotray.agent…: message"
#: (tests/unit/test_supervisor_log.py keeps the two in step)
_LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d [\d:,]+ (?P<level>[A-Z]+) [\w.]+: (?P<msg>.*)$")
#: how often the config file of an agent refused by its settings is looked at
CONFIG_POLL_MS = 1000


def problem_line(lines: list[str]) -> str | None:
    """The line that says why an agent stopped: its own last word ("exotray agent: …"),
    else the last error or warning it logged, else the last line it wrote."""
    for line in reversed(lines):
        if line.startswith("exotray agent:") or line.startswith("exotray:"):
            return line.split(":", 1)[1].strip()
    for line in reversed(lines):
        m = _LOG_LINE.match(line)
        if m and m["level"] in ("ERROR", "CRITICAL", "WARNING"):
            return m["msg"]
    for line in reversed(lines):
        if line.strip() and not _LOG_LINE.match(line):
            return line.strip()  # e.g. the last line of a traceback
    return None


def config_of(args: list[str]) -> Path:
    """The config file an agent started with these arguments reads."""
    for i, a in enumerate(args):
        if a == "--config" and i + 1 < len(args):
            return Path(args[i + 1])
        if a.startswith("--config="):
            return Path(a.split("=", 1)[1])
    return paths.config_file()


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)



def agent_command(args: list[str]) -> tuple[str, list[str]]:
    """(program, arguments) that run `exotray agent ARGS` with this installation."""
    if getattr(sys, "frozen", False):
        return sys.executable, ["agent", *args]
    return sys.executable, ["-m", "exotray", "agent", *args]


def agent_answers(port: int, host: str = "127.0.0.1", timeout: float = 0.5) -> bool:
    """Whether an exotray agent answers on the port (blocks up to `timeout`: call it off
    the GUI thread)."""
    try:
        status, body = localhttp.get_json(host, port, "/v1/snapshot", timeout)
        return status == 200 and isinstance(body, dict) and body.get("schema") == 1
    except localhttp.Error:
        return False


class AgentSupervisor(QObject):
    """States: starting, running, restarting, config_error (waits for the config file to
    change), failed (cannot be started at all), attached (someone else's agent),
    detached (we quit and left an attached agent running), stopped."""

    stateChanged = Signal(str)
    #: why the agent is not running (one line), or None once it runs again
    problemChanged = Signal(object)
    #: (check token, whether an agent answered), from the checking thread
    _answered = Signal(int, bool)

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
        self.problem: str | None = None
        self._checks = 0
        #: how long the attach check waits for an answer (in its thread, never here)
        self.check_timeout = 0.5
        self._pending: dict[int, object] = {}
        self._answered.connect(self._on_answered)
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._partial = b""
        self.config_file = config_of(self.args)
        self._config_stamp: tuple[int, int, int] | None = None
        self._config_watch = QTimer(self)
        self._config_watch.setInterval(CONFIG_POLL_MS)
        self._config_watch.timeout.connect(self._config_changed)

    def _set(self, state: str) -> None:
        if state != self.state:
            self.state = state
            log.info("agent: %s", state)
            self.stateChanged.emit(state)

    def start(self) -> None:
        """Attach to an agent that answers on our port, else start ours. Nothing here
        waits on the GUI thread: the check runs in a thread, the start is signalled."""
        self._stopping = False
        self._set("starting")
        self._check_then(self._attach_or_spawn)

    def _check_then(self, then) -> None:
        """Ask (off the GUI thread) whether an agent answers; `then(answers)` runs on the
        GUI thread."""
        self._checks += 1
        token = self._checks
        self._pending[token] = then
        timeout = self.check_timeout
        threading.Thread(
            target=lambda: self._answered.emit(token, agent_answers(self.port, timeout=timeout)),
            name="agent-check", daemon=True).start()

    def _on_answered(self, token: int, answers: bool) -> None:
        then = self._pending.pop(token, None)
        if then is not None and not self._stopping:
            then(answers)

    def _attach_or_spawn(self, answers: bool) -> None:
        if answers:
            self._set("attached")
        else:
            self._spawn()

    def _set_problem(self, problem: str | None) -> None:
        if problem != self.problem:
            self.problem = problem
            self.problemChanged.emit(problem)

    def clear_problem(self) -> None:
        """The agent answers again: whatever stopped it before is over."""
        if self.state not in ("config_error", "failed"):
            self._set_problem(None)

    def _spawn(self) -> None:
        program, args = agent_command(["--port", str(self.port), *self.args])
        proc = QProcess(self)
        # Our stdout and the child's stay one terminal; its stderr is read (and passed
        # on) so that its last error line can be shown where the user looks.
        proc.setProcessChannelMode(QProcess.ProcessChannelMode.ForwardedOutputChannel)
        proc.readyReadStandardError.connect(self._read_stderr)
        proc.finished.connect(self._finished)
        proc.errorOccurred.connect(self._error)
        self._stderr_tail.clear()
        self._partial = b""
        self.proc = proc
        proc.started.connect(self._started)
        self._set("starting" if self.restarts == 0 else "restarting")
        proc.start(program, args)  # returns at once: `started` or `errorOccurred` follows

    def _started(self) -> None:
        if self.sender() is self.proc:
            self._set("running")
            self._healthy.start(30_000)  # alive for 30 s: the next crash restarts fast

    def _reset_backoff(self) -> None:
        self._backoff = 1.0

    def _read_stderr(self) -> None:
        proc = self.sender()
        if not isinstance(proc, QProcess):
            return
        data = bytes(proc.readAllStandardError().data())
        if not data:
            return
        # Passing it on must never take the GUI down (e.g. a closed terminal).
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.buffer.write(data)
            sys.stderr.flush()
        text = self._partial + data
        *lines, self._partial = text.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self._stderr_tail.append(line)

    def _error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart:
            why = self.proc.errorString() if self.proc else ""
            log.error("cannot start the agent: %s", why)
            self._set("failed")
            self._set_problem(f"cannot start the agent: {why}")

    def _finished(self, code: int, status: QProcess.ExitStatus) -> None:
        proc = self.sender()
        if isinstance(proc, QProcess) and proc is not self.proc:
            return
        if isinstance(proc, QProcess):
            proc.deleteLater()  # a restart makes a new one: do not keep one per restart
            self.proc = None
        if self._stopping:
            return
        self._healthy.stop()
        if self._partial:
            self._stderr_tail.append(self._partial.decode("utf-8", "replace").rstrip())
            self._partial = b""
        crashed = status == QProcess.ExitStatus.CrashExit
        problem = problem_line(list(self._stderr_tail))
        if not crashed and code == EXIT_CONFIG:
            problem = problem or f"the agent's settings are invalid ({self.config_file})"
            log.error("the agent refuses its settings: %s; not restarting it until %s "
                      "changes", problem, self.config_file)
            self._config_stamp = _stamp(self.config_file)
            self._config_watch.start()
            self._set("config_error")
            self._set_problem(problem)
            return
        why = "crashed" if crashed else f"exit status {code}"
        log.warning("agent exited (%s); restarting in %.0f s", why, self._backoff)
        self._set("restarting")
        self._set_problem(f"the agent stopped ({why}): {problem}" if problem
                          else f"the agent stopped ({why})")
        self.restarts += 1
        QTimer.singleShot(int(self._backoff * 1000), self._respawn)
        self._backoff = min(30.0, self._backoff * 2)

    def _config_changed(self) -> None:
        if self._stopping or self.state != "config_error":
            self._config_watch.stop()
            return
        stamp = _stamp(self.config_file)
        if stamp == self._config_stamp:
            return
        log.info("%s changed: starting the agent again", self.config_file)
        self._config_watch.stop()
        self._backoff = 1.0
        self._set_problem(None)
        self._respawn()

    def _respawn(self) -> None:
        if self._stopping:
            return
        # somebody else may have started one meanwhile: attach to it then
        self._check_then(self._attach_or_spawn)

    def stop(self) -> None:
        """Stop our child (never an agent we attached to)."""
        self._stopping = True
        self._healthy.stop()
        self._config_watch.stop()
        if self.state == "attached":
            self._set("detached")  # it was never ours: it keeps running
            return
        proc = self.proc
        if proc is not None and proc.state() != QProcess.ProcessState.NotRunning:
            proc.terminate()  # SIGTERM: the agent says goodbye on mDNS and exits
            if not proc.waitForFinished(5000):
                proc.kill()
                proc.waitForFinished(2000)
        self._set("stopped")
