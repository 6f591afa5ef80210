"""`exotray demo`: three real agents on loopback and the window on them.

    demo-a, demo-b, demo-c: each peers with the other two (mDNS off, loopback only)

All three read the same loopback counters, so each gets its own demo capacity for `lo`:
demo-a a small one (40 Mbit/s), the others a large one. With --saturate a paced UDP
stream on loopback (to a sink socket of the demo's own, 97 % of demo-a's capacity, on
for 20 s and off for 20 s) saturates demo-a's interface, so its links go red and come
back, and the notification, the edges and the charts can be seen working on one
machine. (On loopback every link of a node shares one interface; on a real cluster
each link is carried by its own Thunderbolt, Ethernet or Wi-Fi interface.)
"""

from __future__ import annotations

import logging
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from exotray.ui.client.supervisor import agent_command

log = logging.getLogger(__name__)

SMALL_MBIT = 40.0
LARGE_MBIT = 100_000.0


def _free_port() -> int:
    for _ in range(50):
        with socket.socket() as t:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                try:
                    u.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise OSError("no free port on 127.0.0.1")


class PacedStream(threading.Thread):
    """UDP on loopback at a fixed rate, in on/off cycles, until stopped."""

    def __init__(self, bytes_per_s: float, on_s: float = 20.0, off_s: float = 20.0) -> None:
        super().__init__(name="demo-stream", daemon=True)
        self.rate = bytes_per_s
        self.on_s, self.off_s = on_s, off_s
        self.stop_event = threading.Event()

    def run(self) -> None:
        sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sink.bind(("127.0.0.1", 0))
        sink.setblocking(False)
        out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        chunk = b"\0" * 16_000
        try:
            while not self.stop_event.is_set():
                start = time.monotonic()
                sent = 0
                while not self.stop_event.is_set() and time.monotonic() - start < self.on_s:
                    due = (time.monotonic() - start) * self.rate
                    while sent < due:
                        out.sendto(chunk, sink.getsockname())
                        sent += len(chunk)
                    try:
                        while sink.recv(65536):
                            pass
                    except BlockingIOError:
                        pass
                    time.sleep(0.005)
                self.stop_event.wait(self.off_s)
        finally:
            sink.close()
            out.close()


class Relay(threading.Thread):
    """One agent's log, line by line, into the demo's stderr with the agent's name in
    front ("[demo-a] … link_saturated: link to demo-b via lo"): three agents share one
    terminal. Once that terminal is gone (SIGHUP) it keeps reading, so that an agent
    never blocks on a full pipe, and drops the lines."""

    def __init__(self, name: str, proc: subprocess.Popen, out=None) -> None:
        super().__init__(name=f"demo-log-{name}", daemon=True)
        self.agent, self.proc = name, proc
        self.out = out if out is not None else sys.stderr
        #: set while the demo stops its agents: an exit then is no news
        self.stopping = threading.Event()

    def run(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                self.out.write(f"[{self.agent}] {line}\n")
                self.out.flush()
            except (OSError, ValueError):  # the terminal hung up, or stderr is closed
                pass
        status = self.proc.wait()
        if status and not self.stopping.is_set():
            log.warning("demo: %s exited with status %s; the demo goes on without it",
                        self.agent, status)


Agents = list[tuple[subprocess.Popen, int, Path]]


def start_agents(tmp: Path, verbose: bool = False) -> Agents:
    """The three agents, each in its own session: a Ctrl-C in the terminal reaches the
    demo only, which then stops them in order (goodbyes first, then its files). Their
    logs come through the demo, each line with its agent's name (`Relay`)."""
    ports = [_free_port() for _ in range(3)]
    names = ["demo-a", "demo-b", "demo-c"]
    peers = {0: [1, 2], 1: [0, 2], 2: [0, 1]}
    agents = []
    for i, name in enumerate(names):
        state = tmp / name
        (tmp / f"{name}.toml").write_text("# the demo's Preferences are saved here\n")
        cap = SMALL_MBIT if i == 0 else LARGE_MBIT
        extra = ["--name", name, "--bind", "127.0.0.1", "--port", str(ports[i]), "--no-mdns",
                 "--state-dir", str(state), "--config", str(tmp / f"{name}.toml"),
                 "--capacity", f"lo={cap:g}"]
        for j in peers[i]:
            extra += ["--peer", f"127.0.0.1:{ports[j]}"]
        if verbose:
            extra.append("--verbose")
        program, rest = agent_command(extra)  # works frozen in a bundle too
        args = [program, *rest]
        proc = subprocess.Popen(args, start_new_session=True, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        relay = Relay(name, proc)
        relay.start()
        _relays[proc.pid] = relay
        agents.append((proc, ports[i], state))
    return agents


#: each agent's Relay, by its pid
_relays: dict[int, Relay] = {}


def stop_agents(agents: Agents) -> None:
    relays = [r for proc, _, _ in agents if (r := _relays.pop(proc.pid, None)) is not None]
    for relay in relays:
        relay.stopping.set()
    for proc, _, _ in agents:
        if proc.poll() is None:
            proc.terminate()
    for proc, _, _ in agents:
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(2)
    for relay in relays:  # their last lines ("exotray agent stopped") before the demo's
        relay.join(2)


def main(saturate: bool = False, seconds: float = 0, verbose: bool = False) -> int:
    from exotray.ui.app import App, setup_logging

    setup_logging(verbose)
    qapp = QApplication.instance() or QApplication(sys.argv[:1])
    qapp.setApplicationName("exotray demo")
    # SIGINT (Ctrl-C), SIGTERM and SIGHUP (its terminal closed) end the demo like
    # closing its window: the agents, in sessions of their own, are stopped and the
    # temporary directory removed. Python sees a signal only when it runs, so a timer
    # wakes it while Qt's loop waits.
    for sig in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None:
            signal.signal(sig, lambda *_: QTimer.singleShot(0, qapp.quit))
    wake = QTimer()
    wake.timeout.connect(lambda: None)
    wake.start(200)
    with tempfile.TemporaryDirectory(prefix="exotray-demo-") as tmpdir:
        agents: Agents = []
        stream = None
        app = None
        try:
            agents = start_agents(Path(tmpdir), verbose)
            log.info("demo: agents %s (pids %s), their files in %s",
                     ", ".join(f"127.0.0.1:{port}" for _, port, _ in agents),
                     ", ".join(str(p.pid) for p, _, _ in agents), tmpdir)
            _, port, state = agents[0]
            app = App(port=port, state_dir=state, manage_agent=False)
            app.start()
            app.open_window()
            app.window.setWindowTitle("exotray demo — three agents on loopback")
            app.window.destroyed.connect(qapp.quit)
            app.tray.quitRequested.connect(qapp.quit)
            if saturate:
                stream = PacedStream(0.97 * SMALL_MBIT * 1e6 / 8)
                stream.start()
            if seconds:
                QTimer.singleShot(int(seconds * 1000), app.quit)
            qapp.setQuitOnLastWindowClosed(True)
            return qapp.exec()
        finally:
            wake.stop()
            if app is not None:
                app.client.stop()
                app.tray.hide()
                if app.window is not None:
                    app.window.close()
            if stream is not None:
                stream.stop_event.set()
                stream.join(2)
            stop_agents(agents)
            log.info("demo: stopped its agents and removed %s", tmpdir)
