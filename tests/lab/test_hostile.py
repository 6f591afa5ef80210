"""A hostile peer on the lab network: an HTTP server of the test's own that answers
snapshot requests with garbage (malformed, 5 MB, NaN, deeply nested, wrong schema, our
own id, slowloris) and a flood of datagrams at the probe port. The agent must stay up,
answer its API within 1 s throughout, keep all of it out of the cluster view, never
reply with more bytes than it got, and rate-limit what it reflects."""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import threading
import time

import httpx
from helpers import wait_for

from exotray.agent.probe import udp as P

PORT = 52480


def _bodies(own_id: str) -> list[tuple[str, bytes | None]]:
    good = {"schema": 1, "node": {"id": "bbbbbbbbbbbb", "name": "evil", "version": "0"},
            "interval_s": 1.0, "data_age_s": 0.0, "interfaces": [], "links": []}
    return [
        ("malformed", b'{"schema": 1, "node": '),
        ("5 MB", b'{"schema":1,"pad":"' + b"x" * (5 << 20) + b'"}'),
        ("NaN", json.dumps({**good, "interval_s": float("nan")}).encode()),
        ("deep", b"[" * 50_000 + b"]" * 50_000),
        ("wrong schema", json.dumps({**good, "schema": 7}).encode()),
        ("spoofed id", json.dumps({**good, "node": {**good["node"], "id": own_id}}).encode()),
        ("slowloris", None),
    ]


class Hostile(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, addr, own_id: str):
        self.bodies = _bodies(own_id)
        self.served: list[str] = []
        self.stop = threading.Event()
        super().__init__(addr, _Handler)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        srv: Hostile = self.server  # type: ignore[assignment]
        name, body = srv.bodies[len(srv.served) % len(srv.bodies)]
        srv.served.append(name)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        if body is None:  # slowloris: a byte a second, for at most 20 s
            self.send_header("content-length", "100000")
            self.end_headers()
            for _ in range(20):
                if srv.stop.wait(1.0):
                    return
                try:
                    self.wfile.write(b" ")
                    self.wfile.flush()
                except OSError:
                    return
            return
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    def log_message(self, *args):
        pass


def _udp_drops(host, port: int) -> int:
    """Datagrams the kernel dropped at the UDP socket bound to `port` in `host` (its
    receive buffer full: the last column of /proc/net/udp and udp6)."""
    drops = 0
    for table in ("/proc/net/udp", "/proc/net/udp6"):
        for line in host.exec("cat", table).splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port:
                drops += int(fields[-1])
    return drops


def test_hostile_peer_and_datagram_flood(lab2):
    lab, agents = lab2
    h1, _ = lab.hosts
    hport = 52999
    # polling's defences (the hostile peer answers every path with its snapshots)
    a1 = agents.start(h1, "--sharing", "poll", name="h1", mdns=False,
                      peers=[f"{lab.monitor_addr}:{hport}"])
    a1.wait_ready()
    own_id = a1.get("/v1/snapshot")["node"]["id"]
    server = Hostile((lab.monitor_addr, hport), own_id)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    latencies: list[float] = []
    stop = threading.Event()

    def watch():  # the API must answer within 1 s throughout
        while not stop.is_set():
            t0 = time.monotonic()
            r = httpx.get(a1.url + "/v1/cluster", timeout=5.0, trust_env=False)
            assert r.status_code == 200
            latencies.append(time.monotonic() - t0)
            time.sleep(0.1)

    watcher = threading.Thread(target=watch)
    watcher.start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((lab.monitor_addr, 0))
    sock.setblocking(False)
    sent_sizes: dict[int, int] = {}
    replies: list[bytes] = []
    try:
        # 3000 random datagrams of every size, then 2000 well-formed probes in a burst.
        for i in range(3000):
            data = os.urandom(i % 1500)
            sock.sendto(data, (h1.addr, PORT))
            if i % 100 == 0:
                time.sleep(0.01)
        for seq in range(2000):
            sock.sendto(P.encode(P.Probe(P.REQUEST, seq, time.time_ns(), 0, 0)), (h1.addr, PORT))
            sent_sizes[seq] = P.PROBE_LEN
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                replies.append(sock.recv(65536))
            except BlockingIOError:
                time.sleep(0.01)
        # Let every kind of hostile answer be fetched at least once (incl. slowloris).
        assert wait_for(lambda: len(server.served) >= 9, 20), server.served
    finally:
        stop.set()
        watcher.join(10)
        server.stop.set()
        server.shutdown()
        server.server_close()
        sock.close()
    snap = a1.get("/v1/snapshot")
    cluster = a1.get("/v1/cluster")
    c = snap["counters"]
    print(f"\nhostile answers served: {sorted(set(server.served))}; rejected: "
          f"{c['snapshots_rejected']} (+{c['fetch_errors']} fetch errors); datagrams "
          f"malformed {c['datagrams_malformed']}, reflected {c['requests_reflected']}, "
          f"rate-limited {c['requests_rate_limited']}; API max latency "
          f"{max(latencies) * 1000:.0f} ms over {len(latencies)} requests")
    assert a1.proc.poll() is None, a1.log()
    assert max(latencies) < 1.0
    assert len(cluster["nodes"]) == 1  # nothing hostile reached the cluster view
    assert c["snapshots_rejected"] >= 5
    # every random datagram read is counted (a few may be cut short); those the kernel
    # dropped while the flood outran the reader never reached the agent
    dropped = _udp_drops(h1, PORT)
    assert c["datagrams_malformed"] + dropped >= 2900, dropped
    assert all(len(r) == P.PROBE_LEN for r in replies)  # never more than was sent
    assert 0 < len(replies) <= 2000
    assert c["requests_rate_limited"] > 0  # 2000 in a burst: the bucket holds 400
    assert "Traceback" not in a1.log()
