"""Slow readers of the largest /v1/cluster view (issue 18 finding 4).

What it measures
    The agent's HTTP server as the agent builds it (api.create_app behind serve.make_server:
    uvicorn h11 with http/guard.py's limits and send timeout) in a process of its own, on
    127.0.0.1, serving the largest cluster view the limits allow (bench/tray_big_view.py's
    build_view: 129 nodes, 64 links and 32 interfaces each, ~5 MB) from a stub agent.
    N clients (default 100) each ask for /v1/cluster with a 4 KB receive buffer and do
    not read. Sampled every 0.25 s until the send timeout has cut them off: the server's
    RSS (MiB, before / highest / after), its CPU seconds over the burst, and how many
    bytes a reader could read afterwards.
    Two servers: "whole" renders the view for every request and writes it whole (the
    code before share/cluster_view.py: starlette's JSONResponse), "shared" is the agent's
    /v1/cluster today (one rendering per quarter second, sent in 64 KiB pieces).
    Loopback only; no agent, no mDNS, nothing leaves this machine.

How to run (from the repository root)
    flock /tmp/exotray-bench.lock python bench/slow_readers.py [--readers 100]

Output: a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exotray.agent.base import limits as L  # noqa: E402

SERVER = r"""
import asyncio, socket, sys
sys.path.insert(0, sys.argv[3])
from prometheus_client import CollectorRegistry
from starlette.responses import JSONResponse
from starlette.routing import Route
from exotray.agent.http.api import create_app
from exotray.agent.http.serve import make_server
from tray_big_view import build_view
mode, port = sys.argv[1], int(sys.argv[2])
view = build_view(128)

class Stub:
    key = None
    def cluster(self, local=True):
        return view
    def now(self):
        return 0.0

app = create_app(Stub(), CollectorRegistry)
if mode == "whole":  # as before share/cluster_view.py
    async def cluster(request):
        return JSONResponse(Stub().cluster())
    app.router.routes[:] = [Route("/v1/cluster", cluster)]
sock = socket.socket()
sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
sock.bind(("127.0.0.1", port))
print("ready", flush=True)
asyncio.run(make_server(app).serve(sockets=[sock]))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(mode: str, readers: int) -> dict:
    port = _free_port()
    srv = subprocess.Popen([sys.executable, "-c", SERVER, mode, str(port),
                            str(ROOT / "bench")], stdout=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().strip() == "ready"
        time.sleep(1.0)
        proc = psutil.Process(srv.pid)
        # one full read first: the view's size, and the server warmed up
        with socket.create_connection(("127.0.0.1", port)) as c:
            c.sendall(f"GET /v1/cluster HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      "Connection: close\r\n\r\n".encode())
            size = 0
            while b := c.recv(1 << 16):
                size += len(b)
        rss0 = proc.memory_info().rss / 2**20
        cpu0 = sum(proc.cpu_times()[:2])
        socks = []
        for _ in range(readers):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", port))
            s.sendall(f"GET /v1/cluster HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            socks.append(s)
        t0, peak = time.monotonic(), rss0
        while time.monotonic() - t0 < L.SEND_TIMEOUT_S + 3:
            peak = max(peak, proc.memory_info().rss / 2**20)
            time.sleep(0.25)
        cpu = sum(proc.cpu_times()[:2]) - cpu0
        rss1 = proc.memory_info().rss / 2**20
        got, ended = [], 0
        for s in socks:
            s.settimeout(1.0)
            total = 0
            try:
                while b := s.recv(1 << 16):
                    total += len(b)
                ended += 1
            except ConnectionResetError:
                ended += 1
            except TimeoutError:
                pass
            got.append(total)
            s.close()
        return {"mode": mode, "size": size, "rss0": rss0, "peak": peak, "rss1": rss1,
                "cpu": cpu, "ended": ended, "max_read": max(got)}
    finally:
        srv.terminate()
        srv.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--readers", type=int, default=100)
    args = ap.parse_args()
    rows = [run(mode, args.readers) for mode in ("whole", "shared")]
    print("| /v1/cluster | view | readers | server RSS before / highest / after (MiB) "
          "| server CPU over the burst | cut off by the send timeout | most a reader "
          "got |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['mode']} | {r['size'] / 1e6:.1f} MB | {args.readers} | "
              f"{r['rss0']:.0f} / {r['peak']:.0f} / {r['rss1']:.0f} | {r['cpu']:.1f} s | "
              f"{r['ended']} of {args.readers} | {r['max_read'] / 1e6:.2f} MB |")
    print(json.dumps(rows), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
