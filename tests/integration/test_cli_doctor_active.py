"""`exotray doctor --active` against real agents on loopback: with consent it runs the
capacity test of `exotray measure` on the link whose capacity is unknown and checks
again; without a terminal and without --yes it runs nothing and says so. Exit statuses
are the checks' own either way.

`capacity_unknown` leaves loopback links alone (all of the host's traffic is there), so
agent a is read through a small proxy that calls a's `lo` an Ethernet port: everything
else — the traffic on lo (a bounded paced transfer of ours), a's unknown capacity, the
capacity test, what a then reports — is the agents' own."""

from __future__ import annotations

import http.server
import json
import os
import pty
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers import AgentProc, JsonHandler, ctrl_c_as_at_a_terminal, free_port, wait_for

from exotray.core import doctor

#: the paced transfer that makes lo carry traffic: bytes/s, and its bounds
PUMP_RATE = 2_500_000
PUMP_MAX_S = 120.0
BUSY = 125_000  # core/doctor_view.BUSY_BYTES_PER_S


class _Pump:
    """A paced TCP transfer over loopback, bounded in time and bytes, stopped at close."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._sink, daemon=True),
                        threading.Thread(target=self._send, daemon=True)]
        for t in self.threads:
            t.start()

    def _sink(self) -> None:
        self.server.settimeout(10)
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(1)
            while not self.stop.is_set():
                try:
                    if not conn.recv(1 << 16):
                        return
                except TimeoutError:
                    continue
                except OSError:
                    return

    def _send(self) -> None:
        chunk = bytes(PUMP_RATE // 10)
        with socket.create_connection(self.server.getsockname(), timeout=5) as s:
            started = time.monotonic()
            for _ in range(int(PUMP_MAX_S * 10)):
                if self.stop.is_set() or time.monotonic() - started > PUMP_MAX_S:
                    return
                s.sendall(chunk)
                time.sleep(0.1)

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(10)
        self.server.close()


def _proxy(agent_url: str) -> http.server.ThreadingHTTPServer:
    """Forwards to the agent; in /v1/cluster, this node's loopback is called Ethernet."""

    host, port = agent_url.removeprefix("http://").rsplit(":", 1)

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            headers = {k: v for k, v in self.headers.items() if k.lower() == "authorization"}
            r = httpx.get(agent_url + self.path, headers=headers, timeout=10,
                          trust_env=False)
            data = r.content
            if self.path.startswith("/v1/cluster") and r.status_code == 200:
                view = r.json()
                for it in view["nodes"][0]["interfaces"]:
                    if it["kind"] == "loopback":
                        it["kind"] = "ethernet"
                data = json.dumps(view).encode()
            self.answer(data, r.status_code)

        def do_POST(self) -> None:
            """Relayed as bytes, so that a client that goes away (Ctrl-C) closes the
            agent's connection too, as it would without the proxy."""
            body = self.rfile.read(int(self.headers.get("content-length") or 0))
            head = "".join(f"{k}: {v}\r\n" for k, v in self.headers.items()
                           if k.lower() in ("authorization", "content-type"))
            self.close_connection = True
            with socket.create_connection((host, int(port)), timeout=60) as up:
                up.sendall(f"POST {self.path} HTTP/1.1\r\nhost: {host}\r\n{head}"
                           f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
                           .encode() + body)
                answer = b""
                for _ in range(600):  # (at most 60 s)
                    ready = select.select([self.connection, up], [], [], 0.1)[0]
                    if self.connection in ready and not self.connection.recv(
                            1, socket.MSG_PEEK):
                        return  # the client went: so does our connection to the agent
                    if up in ready:
                        chunk = up.recv(1 << 16)
                        if not chunk:
                            break
                        answer += chunk
                self.wfile.write(answer)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _link(a: AgentProc) -> dict[str, Any]:
    return a.get("/v1/snapshot")["links"][0]


def _lo(a: AgentProc) -> dict[str, Any]:
    return next(i for i in a.get("/v1/snapshot")["interfaces"] if i["name"] == "lo")


@pytest.fixture
def busy_pair(tmp_path) -> Iterator[tuple[AgentProc, int]]:
    """Agents a and b, a's link to b up and carrying traffic over an unknown capacity;
    and the port of the proxy in front of a."""
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "a", pa, [pb])
    b = AgentProc(tmp_path, "b", pb, [pa])
    pump = proxy = None
    try:
        a.wait_ready()
        b.wait_ready()
        assert wait_for(lambda: _link(a)["state"] == "up" and _link(a)["peer_name"], 20), \
            a.log()
        pump = _Pump()
        assert wait_for(lambda: max(_link(a)["rx_bytes_per_s"] or 0,
                                    _link(a)["tx_bytes_per_s"] or 0) >= BUSY, 20), a.log()
        assert _link(a)["capacity_bytes_per_s"] is None
        proxy = _proxy(a.url)
        yield a, proxy.server_address[1]
    finally:
        if proxy is not None:
            proxy.shutdown()
            proxy.server_close()
        if pump is not None:
            pump.close()
        a.close()
        b.close()


def _doctor(port: int, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exotray", "doctor", "--json",
                           "--port", str(port), *args], stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=90,
                          env={**os.environ, "NO_COLOR": "1"})


def _checks(r: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    return {c["id"]: c for c in json.loads(r.stdout)["checks"]}


def _exit_status(got: dict[str, dict[str, Any]]) -> int:
    return doctor.exit_status([doctor.Check(c["id"], c["status"], c["summary"])
                               for c in got.values()])


def test_active_with_consent_measures_the_unknown_capacity_and_checks_again(busy_pair):
    a, port = busy_pair
    link_id = _link(a)["id"]
    before = _checks(_doctor(port))["capacity_unknown"]
    assert before["status"] == "warn" and link_id in before["links"], before
    assert "of an unknown capacity" in before["summary"]

    r = _doctor(port, "--active", "--yes", "--state-dir", str(a.state))
    got = _checks(r)
    assert r.returncode == _exit_status(got), r.stderr
    assert r.stderr.count("measuring ") == 1, r.stderr
    assert "measuring a → b via lo for about 10 s" in r.stderr
    assert "now the capacity of lo" in r.stderr, r.stderr
    # the checks ran again over what was learned: a's link has its capacity
    assert got["capacity_unknown"]["status"] == "pass", got["capacity_unknown"]
    assert _lo(a)["capacity_source"] == "measured"
    assert _link(a)["capacity_bytes_per_s"]


def test_active_without_consent_and_without_a_terminal_runs_nothing(busy_pair):
    a, port = busy_pair
    link_id = _link(a)["id"]
    r = _doctor(port, "--active", "--state-dir", str(a.state))
    # (the checks' own status: a new link's first seconds may count lost probes, so
    # another run's `loss` may differ)
    assert r.returncode == _exit_status(_checks(r)), r.stderr
    assert "would run 1 capacity test" in r.stderr and "a → b via lo" in r.stderr
    assert "not run: there is no terminal to ask on (give --yes" in r.stderr
    assert "measuring" not in r.stderr
    got = _checks(r)["capacity_unknown"]
    assert got["status"] == "warn" and link_id in got["links"]
    # on a terminal, asked: "n" runs nothing either
    r = _on_a_terminal(port, "n\n", "--active", "--state-dir", str(a.state))
    assert r.returncode == _exit_status(_checks(r)), r.stderr
    assert "[y/N]" in r.stderr and "a → b via lo" in r.stderr
    assert "exotray doctor --active: not run" in r.stderr and "measuring" not in r.stderr
    assert _lo(a)["capacity_source"] == "unknown"
    assert "capacity_test" not in a.log() and "capacity of the link" not in a.log()


def _on_a_terminal(port: int, answer: str, *args: str) -> subprocess.CompletedProcess[str]:
    """doctor with its stdin and stderr on a terminal (a pty) that types `answer` once it
    asks; stdout (the JSON) a pipe."""
    master, slave = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "exotray", "doctor", "--json", "--port",
                          str(port), *args], stdin=slave, stderr=slave,
                         stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "NO_COLOR": "1"})
    os.close(slave)
    said = b""
    try:
        deadline = time.monotonic() + 30
        while b"[y/N]" not in said and time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                said += os.read(master, 4096)
        os.write(master, answer.encode())
        out, _ = p.communicate(timeout=60)
        while select.select([master], [], [], 0.2)[0]:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # (the terminal's other end closed)
                break
            if not chunk:
                break
            said += chunk
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
    return subprocess.CompletedProcess(p.args, p.returncode, out,
                                       said.decode(errors="replace").replace("\r\n", "\n"))


def test_a_test_interrupted_is_cancelled_exit_130(busy_pair):
    a, port = busy_pair
    cli = subprocess.Popen([sys.executable, "-m", "exotray", "doctor", "--active", "--yes",
                            "--port", str(port), "--state-dir", str(a.state)],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_as_at_a_terminal)
    try:
        assert cli.stderr is not None
        assert "measuring a → b via lo" in cli.stderr.readline()
        time.sleep(1.5)  # the test is transferring (it runs 2 x 5 s)
        cli.send_signal(signal.SIGINT)  # Ctrl-C
        _, err = cli.communicate(timeout=20)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 130, err
    assert "interrupted; the test is cancelled" in err and "Traceback" not in err
    assert wait_for(lambda: "capacity test with 127.0.0.1 cancelled" in a.log(), 5), a.log()
