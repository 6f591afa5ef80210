"""Issue 33, point 1: an agent whose open-files limit is 256 (macOS's default; here the
hard limit too, so it cannot raise it) against sixteen LAN addresses holding sixteen
`/v1/stream` followers each, and then a local process holding a thousand. Before the
budget, the LAN followers took every descriptor: `exotray status` on loopback timed out,
the counters could not open /proc/net/dev, the real peer's copy of the node went stale,
and asyncio logged an accept failure hundreds of thousands of times."""

from __future__ import annotations

import json
import sys
import time

import pytest
from helpers import wait_for
from netlab import SETTLE_S, Agents, Lab

from exotray.agent.share import wire

pytestmark = pytest.mark.needs("prlimit")

PORT = 52480
FILES = 256
#: a peer's copy of a node is as old as the node's last frame: at most a heartbeat (one
#: every HEARTBEAT intervals of 1 s when nothing moves) and a second or two on the way
FRESH_S = wire.HEARTBEAT + 3

#: holds `per` /v1/stream followers from each of the given source addresses (or from
#: loopback: "-") for `hold` seconds, reading what comes; prints what it got
FOLLOWERS = r"""
import json, resource, secrets, selectors, socket, sys, time
sources, target, port = sys.argv[1].split(","), sys.argv[2], int(sys.argv[3])
per, hold = int(sys.argv[4]), float(sys.argv[5])
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
sel, opened = selectors.DefaultSelector(), 0
head = "GET /v1/stream?nonce={}&v=3 HTTP/1.1\r\nHost: {}:{}\r\n\r\n"
for src in sources:
    for _ in range(per):
        s = socket.socket()
        s.settimeout(3)
        try:
            if src != "-":
                s.bind((src, 0))
            s.connect((target, port))
            s.sendall(head.format(secrets.token_hex(8), target, port).encode())
        except OSError:
            s.close()
            continue
        opened += 1
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ, [False])
served, end = 0, time.monotonic() + hold
while time.monotonic() < end and sel.get_map():
    for key, _ in sel.select(0.5):
        try:
            data = key.fileobj.recv(65536)
        except OSError:
            data = b""
        if not data:
            sel.unregister(key.fileobj)
            key.fileobj.close()
        elif data.startswith(b"HTTP/1.1 200") and not key.data[0]:
            key.data[0] = True
            served += 1
print(json.dumps({"opened": opened, "served": served, "held": len(sel.get_map())}))
"""


def _peer_copy_age(agent, name: str) -> float | None:
    node = next((n for n in agent.get("/v1/cluster")["nodes"] if n["node"]["name"] == name), None)
    return None if node is None else node["age_s"]


def _status_answers(host) -> bool:
    out = host.exec(sys.executable, "-m", "exotray", "status", "--json", "--port", str(PORT),
                    check=False, timeout=20)
    try:
        return bool(json.loads(out)["nodes"])
    except (ValueError, KeyError):
        return False


def test_sixteen_lan_hosts_and_a_local_flood_leave_descriptors_for_the_rest(tmp_path):
    with Lab(3) as lab:
        h1, h2, h3 = lab.hosts
        sources = [f"10.213.{lab.net}.{100 + i}" for i in range(16)]
        for a in sources:
            h3.exec("ip", "addr", "add", f"{a}/24", "dev", h3.veth)
        agents = Agents(lab, tmp_path)
        try:
            a1 = agents.start(h1, name="h1", mdns=False, peers=[f"{h2.addr}:{PORT}"],
                              files=FILES)
            a2 = agents.start(h2, name="h2", mdns=False, peers=[f"{h1.addr}:{PORT}"])
            a1.wait_ready()
            a2.wait_ready()
            assert wait_for(lambda: (_peer_copy_age(a2, "h1") or 99) < 3, SETTLE_S)

            hold = 25.0
            lan = h3.popen(sys.executable, "-c", FOLLOWERS, ",".join(sources), h1.addr,
                           str(PORT), "16", str(hold), stdout=-1, text=True)
            time.sleep(6)  # the followers are in and streaming
            ages, status_ok = [], []
            for _ in range(5):
                status_ok.append(_status_answers(h1))
                ages.append(_peer_copy_age(a2, "h1"))
                time.sleep(1)
            got = json.loads(lan.communicate(timeout=hold + 20)[0])
            print(f"\nLAN: {got['opened']} followers opened, {got['served']} served, "
                  f"{got['held']} held to the end; h2's copy of h1 aged {max(ages):.1f} s "
                  f"at most; status answered {sum(status_ok)}/5")
            assert all(status_ok), "exotray status on loopback did not answer"
            assert max(ages) < FRESH_S, ages  # h2's follow of h1 (a LAN connection) went on
            assert 8 <= got["served"] < 256  # a budget, not everyone and not no one

            local = h1.popen(sys.executable, "-c", FOLLOWERS, "-", "127.0.0.1", str(PORT),
                             "1000", str(hold), stdout=-1, text=True)
            time.sleep(6)
            # a LAN peer still gets in while a local process holds all it may
            code = h2.exec(sys.executable, "-c", "import httpx, sys; print(httpx.get("
                           f"'http://{h1.addr}:{PORT}/v1/snapshot', timeout=3, "
                           "trust_env=False).status_code)", check=False).strip()
            ages = [_peer_copy_age(a2, "h1")]
            got = json.loads(local.communicate(timeout=hold + 20)[0])
            print(f"loopback: {got['opened']} opened, {got['served']} served; LAN peer got "
                  f"{code}")
            assert code == "200"
            assert ages[0] is not None and ages[0] < FRESH_S
            assert got["served"] < 1000
        finally:
            agents.close()
        log = a1.log()
        assert "Too many open files" not in log, log[-3000:]
        assert log.count("cannot accept") <= 2
        assert len(log) < 200_000, len(log)
        assert a1.proc.returncode is not None
