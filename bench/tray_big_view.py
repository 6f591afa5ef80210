"""The tray app (dashboard open) under the largest cluster view an agent serves (issue 18).

What it measures
    An HTTP server of this script's own on 127.0.0.1 plays the local agent and serves the
    largest /v1/cluster the agent's limits allow (exotray/agent/base/limits.py): this node and
    MAX_PEERS peers, each peer node with MAX_CLUSTER_LINKS_PER_NODE links and
    MAX_CLUSTER_IFACES_PER_NODE interfaces, and MAX_PEERS rows in the peer table; the
    numbers change on every request, as a live cluster's do. Built from the recorded
    view in tests/qt/fixtures/cluster.json (its first node and link as templates).
    Then it runs the tray app attached to it with the dashboard open
    (`exotray --port P --no-mdns --state-dir TMP --dashboard`, offscreen Qt), and samples
    the app's process every second for --seconds: RSS (MiB, median and max), CPU % of
    one core, and how many views the app fetched (it polls every second; a GUI that
    falls behind still fetches, and keeps only the latest view).
    Responsiveness, from inside the app (PROBE below, wrapped around the same `main`):
    how long the GUI thread spends on each view (App._cluster: menu, window, topology,
    table), and how late a 50 ms timer on the GUI thread fires (the longest a click or a
    repaint waits), median / p99 / max over the measured seconds.

    It measures and prints; it asserts nothing. Loopback only, no agent, no mDNS.

How to run (from the repository root)
    python bench/tray_big_view.py [--seconds 30] [--peers 128]

Output: a Markdown table on stdout.
"""

from __future__ import annotations

import argparse
import copy
import http.server
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from exotray.agent.base import limits as L  # noqa: E402

FIXTURE = ROOT / "tests/qt/fixtures/cluster.json"

#: the tray app, with a 50 ms timer measuring the GUI thread's lateness and the time each
#: cluster view takes on it; both written to a file every second (argv: file, then the
#: tray's own arguments)
PROBE = r"""
import json, sys, time
from pathlib import Path
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication
from exotray.cli.main import main
from exotray.ui import app as A
out = Path(sys.argv[1])
qapp = QApplication(sys.argv[:1])
lags, handle, last = [], [], [time.monotonic()]
def tick():
    now = time.monotonic()
    lags.append(now - last[0] - 0.05)
    last[0] = now
tick_timer = QTimer(); tick_timer.setInterval(50); tick_timer.timeout.connect(tick)
tick_timer.start()
orig = A.App._cluster
def timed(self, cluster):
    t0 = time.monotonic()
    orig(self, cluster)
    handle.append((t0, time.monotonic() - t0))
A.App._cluster = timed
def dump():
    out.write_text(json.dumps({"lags": [(time.monotonic(), x) for x in lags[-400:]],
                               "handle": handle[-200:]}))
dump_timer = QTimer(); dump_timer.setInterval(1000); dump_timer.timeout.connect(dump)
dump_timer.start()
sys.exit(main(sys.argv[2:]))
"""


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def build_view(peers: int) -> dict:
    base = json.loads(FIXTURE.read_text())
    node0, link0 = base["nodes"][0], base["nodes"][0]["links"][0]
    iface0 = node0["interfaces"][0]
    ids = [f"{i:012x}" for i in range(peers + 1)]
    nodes = []
    for n, nid in enumerate(ids):
        node = copy.deepcopy(node0)
        node["node"] = {"id": nid, "name": f"node-{n}", "version": "0.1.0"}
        node["interfaces"] = [{**iface0, "name": f"en{k}", "kind": "ethernet",
                               "label": "Ethernet", "addresses": [f"10.{n % 250}.{k}.1"]}
                              for k in range(L.MAX_CLUSTER_IFACES_PER_NODE)]
        node["links"] = [{**link0, "id": f"{n:06x}{k:010x}",
                          "peer_id": ids[(n + 1 + k) % len(ids)],
                          "peer_name": f"node-{(n + 1 + k) % len(ids)}",
                          "local_interface": f"en{k % L.MAX_CLUSTER_IFACES_PER_NODE}",
                          "peer_address": f"10.{(n + 1 + k) % 250}.0.1", "state": "up"}
                         for k in range(min(L.MAX_CLUSTER_LINKS_PER_NODE, peers))]
        node["age_s"], node["reachable"], node["authenticated"] = 0.1, True, False
        nodes.append(node)
    table = [{"key": f"mdns:{nid}", "id": nid, "name": f"node-{i + 1}", "sources": ["mdns"],
              "addresses": [f"10.{(i + 1) % 250}.0.1:52480"], "up": True, "reachable": True,
              "authenticated": False, "last_error": None, "sharing": "poll"}
             for i, nid in enumerate(ids[1:])]
    return {"self": ids[0], "sharing": "poll", "nodes": nodes, "peers": table,
            "discovery": {"mdns": True, "addresses": [], "problem": None, "ignored": []}}


class FakeAgent(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, view: dict) -> None:
        self.view = view
        self.served = 0
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        srv: FakeAgent = self.server  # type: ignore[assignment]
        path = self.path.split("?")[0]
        if path == "/v1/cluster":
            srv.served += 1
            for node in srv.view["nodes"]:  # live numbers
                for lk in node["links"]:
                    lk["rtt_ms"] = round(random.uniform(0.05, 2.0), 4)
                    lk["tx_bytes_per_s"] = round(random.uniform(0, 1e8), 1)
            body = json.dumps(srv.view).encode()
        elif path == "/v1/snapshot":
            body = json.dumps(srv.view["nodes"][0]).encode()
        elif path == "/v1/events":
            body = b'{"last_seq": 0, "events": []}'
        elif path == "/v1/history":
            body = json.dumps({"t": [], "rtt_ms": []}).encode()
        else:
            body, code = b'{"error": "no"}', 404
            self.send_response(code)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=10.0)
    ap.add_argument("--peers", type=int, default=L.MAX_PEERS)
    args = ap.parse_args()
    view = build_view(args.peers)
    size = len(json.dumps(view))
    server = FakeAgent(view)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
        probe = Path(tmp) / "probe.json"
        app = subprocess.Popen([sys.executable, "-c", PROBE, str(probe), "--port", str(port),
                                "--no-mdns", "--state-dir", tmp, "--dashboard"],
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            proc = psutil.Process(app.pid)
            time.sleep(args.settle)
            served0, cpu0, t0 = server.served, sum(proc.cpu_times()[:2]), time.monotonic()
            rss = []
            while time.monotonic() - t0 < args.seconds:
                rss.append(proc.memory_info().rss / 2**20)
                time.sleep(1.0)
            cpu = (sum(proc.cpu_times()[:2]) - cpu0) / (time.monotonic() - t0)
            fetched = server.served - served0
            alive = app.poll() is None
            time.sleep(1.2)  # its last dump
            seen = json.loads(probe.read_text()) if probe.exists() else {}
            lags = [x for t, x in seen.get("lags", []) if t >= t0]
            handle = [x for t, x in seen.get("handle", []) if t >= t0]
        finally:
            app.terminate()
            try:
                app.wait(10)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait(5)
            server.shutdown()
    links = sum(len(n["links"]) for n in view["nodes"])
    ms = 1000
    print("| nodes | links | view bytes | app RSS median / max (MiB) | app CPU (% of a core) "
          "| views fetched per s | GUI time per view median / max (ms) "
          "| GUI timer late median / p99 / max (ms) | app alive |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| {len(view['nodes'])} | {links} | {size / 1e6:.1f} MB | "
          f"{statistics.median(rss):.0f} / {max(rss):.0f} | {100 * cpu:.0f} | "
          f"{fetched / args.seconds:.2f} | {ms * _pct(handle, 0.5):.0f} / "
          f"{ms * max(handle, default=float('nan')):.0f} | {ms * _pct(lags, 0.5):.0f} / "
          f"{ms * _pct(lags, 0.99):.0f} / {ms * max(lags, default=float('nan')):.0f} | "
          f"{alive} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
