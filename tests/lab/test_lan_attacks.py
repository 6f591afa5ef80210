"""Issue 18: what one ordinary host on the LAN can do to an agent, done in the lab, and
what the agent does about it (base/limits.py, http/guard.py). Each test does the attack, bounded
in count and time, and shows the fix; the figures it prints go to docs/benchmarks.md.

- mDNS flood (findings 1, 2, 3): a thousand announced services, one with 100 addresses,
  100 naming a bystander on 100 ports, 50 naming addresses of LAN B (which the victim
  and the newcomer also sit on) from LAN A, by multicast, and one more by unicast to the
  victim's LAN B address. The agent's table, links and probes stay bounded, it never
  fetches from an address that did not answer, takes addresses only on the subnet of the
  interface a record came in on, the API answers in under a second throughout, a real
  peer that starts during the flood is in the cluster within seconds (with its LAN B
  address, heard on LAN B), and errors about other hosts are not shown to the LAN.
- idle connections, DNS rebinding and cross-site posts (findings 6, 7).
- capacity-test abuse (finding 8).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from helpers import JsonHandler, wait_for
from netlab import Agents, Lab

from exotray.agent.base import limits as L

FLOOD = Path(__file__).with_name("mdns_flood.py")
#: services in the flood (the issue saw the agent fall over from 600)
FLOOD_N = int(os.environ.get("XT_FLOOD_N", "1000"))


def _snmp(host) -> dict[str, int]:
    """The host's TCP and UDP counters (/proc/net/snmp inside its namespace)."""
    lines = host.exec("cat", "/proc/net/snmp").splitlines()
    out: dict[str, int] = {}
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        proto = names.split(":")[0]
        for k, v in zip(names.split()[1:], values.split()[1:], strict=False):
            out[f"{proto}.{k}"] = int(v)
    return out


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Watch:
    """GET /v1/cluster every 0.1 s from the LAN side; latencies and failures kept."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run)

    def _run(self) -> None:
        with httpx.Client(timeout=5.0, trust_env=False) as c:
            while not self._stop.is_set():
                t0 = time.monotonic()
                try:
                    r = c.get(self.url + "/v1/cluster")
                    if r.status_code != 200:
                        self.failures.append(f"HTTP {r.status_code}")
                except httpx.HTTPError as e:
                    self.failures.append(repr(e))
                self.latencies.append(time.monotonic() - t0)
                self._stop.wait(0.1)

    def __enter__(self) -> Watch:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join(10)


def _flood_spec(lab: Lab, attacker, n: int) -> dict:
    net = lab.net
    services = []

    def add(name: str, port: int, addresses: list[str]) -> None:
        services.append({"name": name, "id": secrets.token_hex(6), "port": port,
                         "addresses": addresses})

    for i in range(100):  # a scan of a bystander (here: the attacker itself, to count)
        add(f"scan-{i}", 41000 + i, [attacker.addr])
    add("hundred", 52480, [f"10.213.{net}.{i}" for i in range(100, 200)])
    for i in range(50):  # LAN B's subnet, announced on LAN A (its hosts do not exist)
        add(f"off-{i}", 52480, [f"10.213.{net + 1}.{10 + i}"])
    # on LAN A, the newcomer's real LAN B address (its agent answers probes there)
    add("cross", 52480, [f"10.213.{net + 1}.3"])
    for i in range(max(0, n - len(services))):  # on our subnet, hosts that do not exist
        add(f"flood-{i}", 52480, [f"10.213.{net}.{10 + i % 240}"])
    # and by unicast to the victim's LAN B address, through LAN A (SO_BINDTODEVICE)
    unicast = {"to": f"10.213.{net + 1}.1", "services": [
        {"name": "cross-unicast", "id": secrets.token_hex(6), "port": 52480,
         "addresses": [f"10.213.{net + 1}.{200 + i}" for i in range(4)]}]}
    return {"source": attacker.addr, "rounds": 3, "gap_s": 2.0, "services": services,
            "unicast": unicast}


@pytest.fixture
def lab3_flood(tmp_path):
    with Lab(3, net=200) as lab:
        # LAN B (10.213.201.0/24) joins the victim (h1) and the newcomer (h3)
        lab.add_lan([lab.hosts[0], lab.hosts[2]])
        agents = Agents(lab, tmp_path)
        try:
            yield lab, agents, tmp_path
        finally:
            agents.close()


def test_mdns_flood_is_bounded_and_a_real_peer_gets_in(lab3_flood):
    lab, agents, tmp = lab3_flood
    victim, attacker, newcomer = lab.hosts
    lan_b = f"10.213.{lab.net + 1}."
    a1 = agents.start(victim, "--mdns-interface", lan_b + "1", name="victim")
    a1.wait_ready()
    # the attacker reaches the victim's LAN B address through LAN A (weak host model)
    attacker.exec("ip", "route", "add", lan_b + "1/32", "dev", attacker.veth)
    spec = tmp / "flood.json"
    spec.write_text(json.dumps(_flood_spec(lab, attacker, FLOOD_N)))
    before, cpu0 = _snmp(attacker), _cpu_s(a1.proc.pid)
    t0 = time.monotonic()
    with Watch(a1.url) as watch:
        flood = attacker.popen(sys.executable, str(FLOOD), str(spec), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        time.sleep(2.5)  # into the flood: a real agent starts on the LAN
        a3 = agents.start(newcomer, "--mdns-interface", lan_b + "3", name="newcomer")
        out, _ = flood.communicate(timeout=40)
        assert flood.returncode == 0, out
        t_end = time.monotonic()
        flood_cpu = _cpu_s(a1.proc.pid) - cpu0
        a3.wait_ready(30)  # (it started under the flood and the machine's load)
        a3_id = a3.get("/v1/snapshot")["node"]["id"]
        seen = wait_for(lambda: any(n["node"]["id"] == a3_id
                                    for n in a1.get("/v1/cluster")["nodes"]), 20)
        recovered = time.monotonic() - t_end

        def newcomer_addresses() -> set[str]:
            return {a for p in a1.get("/v1/cluster")["peers"] if p["id"] == a3_id
                    for a in p["addresses"]}

        both = {f"{newcomer.addr}:52480", f"{lan_b}3:52480"}
        on_b = wait_for(lambda: newcomer_addresses() == both, 10)
        cluster = a1.get("/v1/cluster")
        cpu1 = _cpu_s(a1.proc.pid)
        time.sleep(2.0)
        after_cpu = (_cpu_s(a1.proc.pid) - cpu1) / 2.0
    after = _snmp(attacker)
    elapsed = time.monotonic() - t0
    sent = json.loads(out.strip().splitlines()[-1])
    peers = cluster["peers"]
    scan = [p for p in peers if any(a.startswith(attacker.addr + ":") for a in p["addresses"])]
    print(f"\nflood: {FLOOD_N} services, {sent['packets']} packets in {t_end - t0:.1f} s; "
          f"victim CPU {flood_cpu:.1f} s over it ({100 * flood_cpu / (t_end - t0):.0f} %); "
          f"API max {1000 * max(watch.latencies):.0f} ms, median "
          f"{1000 * sorted(watch.latencies)[len(watch.latencies) // 2]:.0f} ms over "
          f"{len(watch.latencies)} requests; peers {len(peers)}; newcomer in the cluster "
          f"{f'{recovered:.1f} s after the flood ended' if seen else 'never'}; "
          f"victim CPU {100 * after_cpu:.0f} % in the 2 s after that; "
          f"attacker received TCP {after['Tcp.InSegs'] - before['Tcp.InSegs']} segments, "
          f"UDP to closed ports {after['Udp.NoPorts'] - before['Udp.NoPorts']}")
    assert a1.proc.poll() is None, a1.log()
    assert "Traceback" not in a1.log() and "never retrieved" not in a1.log()
    assert not watch.failures, watch.failures[:5]
    assert max(watch.latencies) < 1.0
    if not seen:
        local = json.loads(_body(victim, "http://127.0.0.1:52480/v1/cluster"))
        snap = json.loads(_body(victim, "http://127.0.0.1:52480/v1/snapshot"))
        print([p for p in local["peers"] if p["id"] == a3_id], snap["counters"],
              [lk for lk in snap["links"] if lk["peer_id"] == a3_id],
              [i for i in local["discovery"]["ignored"] if "newcomer" in i["service"]],
              [line for line in a1.log().splitlines()
               if any(w in line for w in ("newcomer", "unresolvable", "refusal", "forgot"))])
    assert seen, "the real peer never made it into the cluster view"
    assert len(peers) <= L.MAX_PEERS
    assert all(len(p["addresses"]) <= L.MAX_LINKS_PER_PEER for p in peers)
    # LAN B addresses only from the newcomer, heard on LAN B; none of those announced
    # on LAN A (by multicast or unicast), the newcomer's own among them
    assert on_b, newcomer_addresses()
    assert not [(p["name"], a) for p in peers for a in p["addresses"]
                if not a.startswith(f"10.213.{lab.net}.") and p["id"] != a3_id]
    assert "no_address" in a1.log() and f"heard on {victim.veth}" in a1.log()
    assert len(scan) <= L.MAX_MDNS_PEERS_PER_ADDRESS
    assert all(p["last_error"] is None for p in peers)  # not shown to the LAN
    # Nothing fetched from the bystander (it never answered a probe): not one TCP
    # segment; UDP probes to it only from the few peers the per-address cap let in.
    assert after["Tcp.InSegs"] - before["Tcp.InSegs"] == 0
    assert after["Udp.NoPorts"] - before["Udp.NoPorts"] <= (
        L.MAX_MDNS_PEERS_PER_ADDRESS * 4 * (elapsed + 1))
    log = a1.log()
    assert log.count("mDNS: ignoring") < 20, log[-3000:]  # a handful of lines, not 1000


@pytest.fixture
def lab2_pair(tmp_path):
    with Lab(2, net=202) as lab:
        agents = Agents(lab, tmp_path)
        try:
            h1, h2 = lab.hosts
            a1 = agents.start(h1, name="h1", mdns=False, peers=[f"{h2.addr}:52480"])
            a2 = agents.start(h2, name="h2", mdns=False, peers=[f"{h1.addr}:52480"])
            a1.wait_ready()
            a2.wait_ready()
            yield lab, a1, a2
        finally:
            agents.close()


#: GET a URL from inside a lab host, in Python (curl is not among the lab's tools): prints
#: the status ("000" when nothing answered in 3 s) or, with "body", the body
_GET = r"""
import sys, urllib.error, urllib.request
direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # as curl --noproxy
try:
    with direct.open(sys.argv[1], timeout=3) as r:
        print(r.read().decode() if sys.argv[2:] == ["body"] else r.status)
except urllib.error.HTTPError as e:
    print(e.code)
except OSError:
    print("000")
"""


def _http_code(host, url: str) -> str:
    return host.exec(sys.executable, "-c", _GET, url, check=False).strip()


def _body(host, url: str) -> str:
    return host.exec(sys.executable, "-c", _GET, url, "body")


def test_idle_connections_rebinding_and_cross_site_posts(lab2_pair):
    lab, a1, _a2 = lab2_pair
    h1, h2 = lab.hosts
    idle = []
    try:
        for _ in range(130):  # connect, never send a byte
            s = socket.create_connection((h1.addr, 52480), timeout=2)
            idle.append(s)
        # the local tray, and another LAN host, still get answers
        assert _http_code(h1, "http://127.0.0.1:52480/v1/cluster") == "200"
        assert _http_code(h2, f"http://{h1.addr}:52480/v1/snapshot") == "200"

        def closed(s: socket.socket) -> bool:
            s.settimeout(0.01)
            try:
                return s.recv(1) == b""
            except TimeoutError:
                return False
            except OSError:
                return True

        refused = sum(closed(s) for s in idle)
        assert refused >= 130 - L.MAX_CONNECTIONS_PER_SOURCE
        # the ones let in are closed by the head timeout, not held for minutes
        assert wait_for(lambda: all(closed(s) for s in idle), L.HEADER_TIMEOUT_S + 5)
        print(f"\nidle: {refused} of 130 refused at once, the rest closed within "
              f"{L.HEADER_TIMEOUT_S:g} s; loopback and another LAN host answered throughout")
    finally:
        for s in idle:
            s.close()
    url = a1.url
    with httpx.Client(trust_env=False, timeout=3) as c:
        # DNS rebinding: a page's own name in Host
        r = c.get(url + "/v1/cluster", headers={"host": "rebound.example:52480"})
        assert r.status_code == 421
        # a cross-site form post (text/plain) cannot start a capacity test
        r = c.post(url + "/v1/capacity/session", content=b'{"seconds": 1, "streams": 1}',
                   headers={"content-type": "text/plain"})
        assert r.status_code == 415
        r = c.post(url + "/v1/capacity/session", json={"seconds": 1, "streams": 1},
                   headers={"origin": "http://evil.example"})
        assert r.status_code == 403
        assert c.get(url + "/v1/cluster").status_code == 200
    assert "Traceback" not in a1.log()


ABUSE = r"""
import json, socket, sys, time
import httpx
url, host = sys.argv[1], sys.argv[2]
out = {"codes": []}
with httpx.Client(trust_env=False, timeout=5) as c:
    for i in range(5):
        r = c.post(url + "/v1/capacity/session", json={"seconds": 1, "streams": 1})
        out["codes"].append(r.status_code)
        if r.status_code != 200:
            continue
        g = r.json()
        if i == 0:  # a grant for one stream: ask for eight
            hdr = (json.dumps({"token": g["token"], "dir": "down"}) + "\n").encode()
            got = []
            socks = [socket.create_connection((host, g["port"]), timeout=5) for _ in range(8)]
            for s in socks:
                s.sendall(hdr)
            for s in socks:
                s.settimeout(3)
                try:
                    got.append(len(s.recv(65536)) > 0)
                except OSError:
                    got.append(False)
                s.close()
            out["streams_served"] = sum(got)
            big = socket.create_connection((host, g["port"]), timeout=5)
            try:
                big.sendall(b"x" * 100_000)
                big.settimeout(5)
                out["big_line"] = big.recv(10)
            except OSError as e:
                out["big_line"] = repr(e)
            big.close()
        c.post(url + "/v1/capacity/finish", json={"token": g["token"]})
print(json.dumps(out, default=str))
"""


def test_capacity_test_abuse_is_refused(lab2_pair):
    lab, a1, _a2 = lab2_pair
    h1, h2 = lab.hosts
    # a LAN host that is no peer of h1 (the monitor) may not start one
    r = httpx.post(a1.url + "/v1/capacity/session", json={"seconds": 1, "streams": 1},
                   timeout=5, trust_env=False)
    assert r.status_code == 403 and "not a peer" in r.json()["error"], r.text
    # a peer (h2 answers h1's probes) may, but only as granted and a few times a minute
    assert wait_for(lambda: any(lk["state"] == "up" for lk in a1.get("/v1/snapshot")["links"]),
                    10)
    out = json.loads(h2.exec(sys.executable, "-c", ABUSE, a1.url, h1.addr, timeout=60)
                     .strip().splitlines()[-1])
    print(f"\ncapacity abuse from a peer: session answers {out['codes']}, streams served "
          f"for a 1-stream grant: {out['streams_served']} of 8")
    assert out["codes"][:L.CAPTEST_SESSIONS_PER_SOURCE] == [200] * L.CAPTEST_SESSIONS_PER_SOURCE
    assert set(out["codes"][L.CAPTEST_SESSIONS_PER_SOURCE:]) == {429}
    assert out["streams_served"] == 1
    log = a1.log()
    assert log.count("first line over") == 1 and "Traceback" not in log, log[-3000:]


def test_a_stalled_agent_does_not_cry_wolf(lab2_pair):
    """Finding 10: the agent's own loop does not run for 4 s (SIGSTOP, as a saturated CPU
    does to it), longer than down_after: that is not its peer going silent. No peer_down
    from it, and the peer stays up in its view."""
    import signal

    _lab, a1, _a2 = lab2_pair
    assert wait_for(lambda: any(lk["state"] == "up" for lk in a1.get("/v1/snapshot")["links"]),
                    10)
    for _ in range(2):  # twice, a few seconds apart
        os.kill(a1.proc.pid, signal.SIGSTOP)
        try:
            time.sleep(4.0)
        finally:
            os.kill(a1.proc.pid, signal.SIGCONT)
        time.sleep(2.0)
    events = [json.loads(line) for line in a1.events_path.read_text().splitlines()]
    downs = [e for e in events if e["type"] == "peer_down"]
    print(f"\nstalled twice for 4 s: {len(downs)} peer_down events from the stalled agent")
    assert not downs, downs
    assert all(lk["state"] == "up" for lk in a1.get("/v1/snapshot")["links"])


SLOW = r"""
import json, socket, sys, time
host, port, n, wait_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
sources = sys.argv[5].split(",")
socks = []
for i in range(n):  # ask for the cluster view, then do not read it
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind((sources[i % len(sources)], 0))
    s.connect((host, port))
    s.sendall(f"GET /v1/cluster HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    socks.append(s)
print("asked", flush=True)
time.sleep(wait_s)
got, ended = [], 0
for s in socks:  # now read: what the agent still sends, and whether it hung up
    s.settimeout(1.0)
    total = 0
    try:
        while b := s.recv(65536):
            total += len(b)
        ended += 1
    except ConnectionResetError:
        ended += 1
    except TimeoutError:
        pass  # still open: the agent kept it, and what it had not sent yet
    got.append(total)
    s.close()
print(json.dumps({"n": n, "ended": ended, "max_bytes": max(got)}))
"""


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _slow_readers_are_cut_off(lab: Lab, agent, view_bytes: int, n: int = 100) -> None:
    """Finding 4's slow readers: 100 clients on the LAN (from 7 addresses of h2, 15 each:
    under the per-source limit) ask for the big cluster view and do not read it. The
    agent holds a piece of it for each, not a copy, and ends each connection at
    SEND_TIMEOUT_S (before: 100 readers of a 6 MB view held 360 MB for as long as they
    liked). Over the LAN, not loopback: loopback's 64 KB MSS gives every connection a
    send buffer of megabytes, which would swallow the whole view."""
    target, readers_host = lab.hosts
    sources = [f"10.213.{lab.net}.{100 + k}" for k in range(-(-n // 15))]
    for a in sources:
        readers_host.exec("ip", "addr", "add", f"{a}/24", "dev", readers_host.veth)
    rss0 = _rss_mib(agent.proc.pid)
    readers = readers_host.popen(sys.executable, "-c", SLOW, target.addr, "52480", str(n),
                                 str(L.SEND_TIMEOUT_S + 3), ",".join(sources),
                                 stdout=subprocess.PIPE, text=True)
    assert readers.stdout.readline().strip() == "asked"
    time.sleep(2.0)
    rss_held = _rss_mib(agent.proc.pid)
    out, _ = readers.communicate(timeout=L.SEND_TIMEOUT_S + 3 + n * 1.0 + 10)
    rss_after = _rss_mib(agent.proc.pid)
    res = json.loads(out.strip().splitlines()[-1])
    print(f"{n} slow readers of a {view_bytes / 1e6:.2f} MB view: agent RSS {rss0:.0f} MiB "
          f"before, {rss_held:.0f} MiB while they were not reading, {rss_after:.0f} MiB "
          f"after; {res['ended']} of {n} connections ended by the agent within "
          f"{L.SEND_TIMEOUT_S + 3:g} s, each reader got at most {res['max_bytes']} bytes")
    assert res["ended"] == n
    assert res["max_bytes"] < view_bytes  # cut off, not sent in full
    assert agent.get("/v1/snapshot")["node"]["name"] == "h1b"  # and it still answers


def _huge_snapshot(node_id: str, links: int = 1024, name: str | None = None) -> bytes:
    link = {"id": "x", "peer_id": "p", "peer_name": "p", "local_interface": "eth0",
            "local_label": None, "peer_address": "10.213.0.1", "peer_port": 1,
            "state": "up", "rtt_ms": 0.1, "rtt_min_ms": 0.1, "rtt_max_ms": 0.2,
            "rtt_p90_ms": 0.2, "rtt_last_ms": 0.1, "jitter_ms": 0.01, "loss": 0.0,
            "rx_bytes_per_s": 1.0, "tx_bytes_per_s": 1.0, "capacity_bytes_per_s": None,
            "capacity_source": "unknown", "utilization": None}
    return json.dumps({"schema": 1, "node": {"id": node_id, "name": name or f"big-{node_id}",
                                             "version": "0"},
                       "interval_s": 1.0, "data_age_s": 0.0, "interfaces": [],
                       "links": [{**link, "id": f"l{i}"} for i in range(links)]}).encode()


def test_huge_valid_snapshots_make_a_bounded_cluster_view(lab2_pair):
    """Finding 4: peers whose snapshots carry 1024 links each (valid, under 1 MiB). The
    cluster view shows at most 64 links of each and says how many it left out."""
    import http.server

    lab, a1, _a2 = lab2_pair
    servers = []

    class Big(JsonHandler):
        def do_GET(self):
            body = self.server.body  # type: ignore[attr-defined]
            self.answer(body)

    try:
        for i in range(10):
            srv = http.server.ThreadingHTTPServer((lab.monitor_addr, 0), Big)
            srv.daemon_threads = True
            srv.body = _huge_snapshot(f"big{i:09d}")  # type: ignore[attr-defined]
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            servers.append(srv)
        # given to a new agent on h1 as manual peers (fetched without probes: the user
        # named them)
        big_peers = [f"{lab.monitor_addr}:{s.server_address[1]}" for s in servers]
        a1.close()
        a1b = Agents(lab, a1.state.parent).start(  # polled: the stand-ins have no stream
            lab.hosts[0], "--sharing", "poll", name="h1b", mdns=False,
            peers=[*big_peers, f"{lab.hosts[1].addr}:52480"])
        try:
            a1b.wait_ready()

            def bigs() -> list:
                return [n for n in a1b.get("/v1/cluster")["nodes"]
                        if n["node"]["id"].startswith("big")]

            # (all ten: the first one fetched is not the last; each is a 1 MiB
            # snapshot to fetch and validate)
            wait_for(lambda: len(bigs()) == 10, 15)
            big = bigs()
            assert len(big) == 10, a1b.log()[-2000:]
            t0 = time.monotonic()
            raw = httpx.get(a1b.url + "/v1/cluster", timeout=5, trust_env=False).content
            took = time.monotonic() - t0
            nodes = json.loads(raw)["nodes"]
            print(f"\n10 peers of 1024 links: /v1/cluster {len(raw) / 1e6:.2f} MB in "
                  f"{1000 * took:.0f} ms (before: 26.6 MB and 3 s at 40 such peers)")
            for n in nodes[1:]:
                if n["node"]["id"].startswith("big"):
                    assert len(n["links"]) == L.MAX_CLUSTER_LINKS_PER_NODE
                    assert n["truncated"] == 1024 - L.MAX_CLUSTER_LINKS_PER_NODE
            assert len(raw) < 1_500_000
            _slow_readers_are_cut_off(lab, a1b, len(raw))
        finally:
            a1b.close()
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()


MARKUP = '<img src="/dev/zero"><a href="http://e.x/">update</a> & co'
RLO = "invoice\u202egnp.exe"  # shows as "invoiceexe.png"


def test_markup_from_a_lan_peer_stays_plain_text_in_the_window(lab2_pair, qtbot, tmp_path):
    """Finding 5 over the LAN: a host answers as a peer named with markup (an image of
    /dev/zero, a hidden link, "&"), and another with a right-to-left override. The agent
    refuses the second (a format character) and passes the first on as text; the tray's
    window, fed the agent's real /v1/cluster, shows it literally (before: the title's
    QLabel rendered it as rich text and read /dev/zero until it aborted at 2.2 GB)."""
    import http.server

    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QLabel

    from exotray.ui.window.dashboard import MainWindow

    lab, a1, _a2 = lab2_pair

    class Peer(JsonHandler):
        def do_GET(self):
            self.answer(self.server.body)  # type: ignore[attr-defined]

    servers = []
    try:
        for i, name in enumerate((MARKUP, RLO)):
            srv = http.server.ThreadingHTTPServer((lab.monitor_addr, 0), Peer)
            srv.daemon_threads = True
            srv.body = _huge_snapshot(f"evil{i:08d}", links=1, name=name)  # type: ignore[attr-defined]
            threading.Thread(target=srv.serve_forever, daemon=True).start()
            servers.append(srv)
        a1.close()
        a1b = Agents(lab, a1.state.parent).start(  # polled: the stand-ins have no stream
            lab.hosts[0], "--sharing", "poll", name="h1b", mdns=False,
            peers=[f"{lab.monitor_addr}:{s.server_address[1]}" for s in servers])
        try:
            a1b.wait_ready()
            def with_markup() -> dict | None:
                c = a1b.get("/v1/cluster")
                return c if any(n["node"]["name"] == MARKUP for n in c["nodes"]) else None

            cluster = wait_for(with_markup, 15)
            assert cluster, a1b.log()[-2000:]
            assert wait_for(lambda: "format character" in a1b.log(), 10), a1b.log()[-2000:]
            assert not any("\u202e" in n["node"]["name"] for n in cluster["nodes"])
            w = MainWindow(None)
            qtbot.addWidget(w)
            w.resize(1280, 820)
            w.show()
            qtbot.waitExposed(w)
            w.set_cluster(cluster)
            evil = next(n for n in cluster["nodes"] if n["node"]["name"] == MARKUP)
            w.select_link(evil["links"][0]["id"])  # the details' title names the peer
            w.repaint()  # it renders (a rich-text title would have read /dev/zero here)
            labels = [lb for lb in w.findChildren(QLabel) if MARKUP in lb.text()]
            assert labels, "the hostile name is shown nowhere"
            for lb in labels:
                assert lb.textFormat() == Qt.TextFormat.PlainText, lb.objectName()
                assert lb.sizeHint().height() < 100  # one line of text, not an image
        finally:
            a1b.close()
    finally:
        for s in servers:
            s.shutdown()
            s.server_close()
