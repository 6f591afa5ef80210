"""Shared test helpers: free ports, agents as real subprocesses, polling without sleeps
that outlast their purpose."""

from __future__ import annotations

import contextlib
import http.server
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx


def free_port() -> int:
    """A port number free for both TCP and UDP on 127.0.0.1 right now."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
            t.bind(("127.0.0.1", 0))
            port = t.getsockname()[1]
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                try:
                    u.bind(("127.0.0.1", port))
                except OSError:
                    continue
            return port
    raise RuntimeError("no free port")


def manual_link(agent: Any, address: str, iface: str, port: int = 52480) -> Any:
    """A manual peer of an in-process Agent at `address`, as the resolver leaves it, and
    its one link up through `iface`, as the route lookup would have it."""
    peer = agent.table.add_manual(address, port)
    peer.manual_targets = [(address, port)]
    agent.table.set_targets(peer)
    link = agent.links[(address, port)]
    link.up = True
    link.path.update([iface], iface)
    link.local_interface = iface
    return link


def counted_agent(tmp_path: Any, iface: str, nic: Any, capacity_mbit: float = 100.0) -> Any:
    """An in-process Agent (no sockets) on one interface whose counters the test moves
    (`agent.counters`: [rx, tx]) and whose clock it sets (`agent.now_[0]`); its
    interface list and counters are the edge replaced (`monitor.read`)."""
    from exotray.agent.runtime import Agent
    from exotray.core.settings import Settings

    now = [5000.0]
    s = Settings(name="a", bind="127.0.0.1", port=0, mdns=False, interval=1.0,
                 state_dir=str(tmp_path), history_days=0, capacity={iface: capacity_mbit},
                 exo_url="")
    a = Agent(s, clock=lambda: now[0])
    a.counters = [1_000_000, 1_000_000]
    a.monitor.carriers.sysfs = None  # (counters given: every tick reads them)
    a.monitor.read = lambda full: ({iface: tuple(a.counters)}, {iface: nic})
    a.now_ = now
    return a


def held_prober(port: int, *, timeout_s: float, down_after_s: float,
                on_peer_event: Callable[..., None] | None = None) -> tuple[Any, Any, Any]:
    """(table, prober, link): the agent's own PeerTable with one manual peer at
    127.0.0.1:`port`, and its Prober on a fresh loopback UDP socket whose datagrams wait
    for the 0.25 s ticks (probe/udp.py read_at_ticks), as in an agent. Call in a running
    event loop; close the prober."""
    from types import SimpleNamespace

    from exotray.agent.hw import onlink
    from exotray.agent.peers import links
    from exotray.agent.peers.table import PeerTable
    from exotray.agent.probe.prober import Prober
    from exotray.core.saturation import SaturationParams

    kw = {"on_peer_event": on_peer_event} if on_peer_event is not None else {}
    table = PeerTable(time.monotonic, lambda peer, target: links.new_link(
        "me", peer, target, 1.0, SaturationParams()), down_after_s=down_after_s, **kw)
    peer = table.add_manual("127.0.0.1", port)
    peer.manual_targets = [("127.0.0.1", port)]
    table.set_targets(peer)
    prober = Prober(table, SimpleNamespace(nics={}), onlink.IfIndex(), time.monotonic)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    prober.open("127.0.0.1", 0, udp, timeout_s=timeout_s, key=None)
    prober.socket.read_at_ticks(0.25)
    (link,) = table.links.values()
    return table, prober, link


async def reflected(reflector: Any, n: int = 1, timeout: float = 5.0) -> int:
    """Let the event loop run until a ProbeSocket `reflector` has answered `n` requests
    (the reply is then in our socket: loopback); how many it has answered."""
    import asyncio

    deadline = time.monotonic() + timeout
    while reflector.counters["requests_reflected"] < n and time.monotonic() < deadline:
        await asyncio.sleep(0.001)
    return reflector.counters["requests_reflected"]


def wait_for(pred: Callable[[], Any], timeout: float, every: float = 0.05) -> Any:
    """Poll pred until it returns something truthy; return it, or None at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = pred()
        except (httpx.HTTPError, OSError):
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        time.sleep(every)


def until(cond: Callable[[], Any], timeout: float = 10.0, every: float = 0.01) -> Any:
    """Poll `cond` until it returns something truthy, and return it; AssertionError at
    the deadline. Unlike wait_for, an error from `cond` is the test's, not retried."""
    deadline = time.monotonic() + timeout
    while not (got := cond()):
        if time.monotonic() >= deadline:
            raise AssertionError(f"not within {timeout:g} s")
        time.sleep(every)
    return got


class AgentProc:
    """`exotray agent` as a subprocess: on loopback with mDNS off unless told otherwise
    (mDNS only ever inside a lab namespace)."""

    def __init__(self, tmp: Path, name: str, port: int, peers: list[int | str], *extra: str,
                 netns: str | None = None, bind: str = "127.0.0.1", host: str | None = None,
                 mdns: bool = False, runner: str | None = None,
                 env: dict[str, str] | None = None, files: int | None = None,
                 wrap: list[str] | None = None) -> None:
        """`runner`: a script run instead of `-m exotray` that runs exotray's CLI (bench
        wrappers such as bench/_mem_probe.py); `env`: variables added for this agent;
        `files`: its open-files limit, soft and hard (prlimit, from util-linux); `wrap`:
        a command that runs the rest (one that execs it, so the process is the agent)."""
        self.name = name
        self.port = port
        self.host = host or bind
        self.state = tmp / f"state-{name}"
        self.log_path = tmp / f"{name}.log"
        self.events_path = tmp / f"{name}.events"
        args = [
            sys.executable, *([runner] if runner else ["-m", "exotray"]), "agent",
            "--name", name, "--bind", bind, "--port", str(port),
            *([] if mdns else ["--no-mdns"]),
            "--state-dir", str(self.state), "--events", str(self.events_path),
            *(x for p in peers for x in ("--peer", f"127.0.0.1:{p}" if isinstance(p, int) else p)),
            *extra,
        ]
        if files is not None:
            args = ["prlimit", f"--nofile={files}:{files}", "--", *args]
        if netns:
            args = ["ip", "netns", "exec", netns, *args]
        if wrap:
            args = [*wrap, *args]
        self._log = open(self.log_path, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(args, stdout=self._log, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def get(self, path: str, **params: Any) -> Any:
        r = httpx.get(self.url + path, params=params, timeout=2.0, trust_env=False)
        r.raise_for_status()
        return r.json()

    def wait_ready(self, timeout: float = 10.0) -> None:
        if not wait_for(lambda: self.get("/v1/snapshot"), timeout):
            raise AssertionError(f"agent {self.name} did not start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


class JsonHandler(http.server.BaseHTTPRequestHandler):
    """A stand-in server's request handler: `answer(body)` sends a JSON reply (body, its
    length, the status), and requests are not logged. Subclasses write do_GET."""

    def answer(self, body: bytes, status: int = 200,
               headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class TcpServer:
    """A listener at `address` that, per connection, reads all it is sent, or sends
    `send` bytes and closes."""

    def __init__(self, address: str, send: int = 0) -> None:
        self.sock = socket.create_server((address, 0), backlog=64)
        self.address = self.sock.getsockname()
        self.send = send
        self.received = 0
        self.threads: list[threading.Thread] = []
        self._accept = threading.Thread(target=self._run, daemon=True)
        self._accept.start()

    def _run(self) -> None:
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(c,), daemon=True)
            t.start()
            self.threads.append(t)

    def _serve(self, c: socket.socket) -> None:
        with c, contextlib.suppress(OSError):
            c.settimeout(10)
            if self.send:
                c.sendall(b"y" * self.send)
                c.shutdown(socket.SHUT_WR)
            while (b := c.recv(1 << 16)):
                self.received += len(b)

    def close(self) -> None:
        with contextlib.suppress(OSError):  # (wakes accept(); close() alone does not)
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()
        self._accept.join(5)
        for t in self.threads:
            t.join(10)


def ctrl_c_as_at_a_terminal() -> None:
    """preexec_fn for a command a test interrupts with SIGINT (Ctrl-C): SIGINT back to its
    default in the child. A shell without job control (a CI script, `cmd &`) starts its
    background commands with SIGINT ignored, the child inherits that, and Python then
    never raises KeyboardInterrupt: the test would see a Ctrl-C no terminal user sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
