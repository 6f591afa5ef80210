"""Which peer fills a shared interface (issue 30), in the lab: h1 reaches h2 and h3 through
one interface (its veth to the lab's bridge). iperf3 (TCP) to h2 at 40 Mbit/s and to h3
at 8 Mbit/s at once: h1's links show 5 MB/s and 1 MB/s of their own, each within 10 % of
iperf3's bytes over the same window, and the interface the sum. Then 20 short
connections of 1 MB to h2, each on its own: counted within 10 %. h1's interface has a
capacity below the sum (--capacity 30 Mbit/s): one link_saturated names both links with
their shares, the busy one first, and the quiet link is not drawn as full.
Figures are printed (-s)."""

from __future__ import annotations

import json
import secrets
import sys
import time

import netlab
import pytest
from helpers import wait_for

from exotray.core import shares, topology

PORT = 52480
MB = 1_000_000
#: a sink on h2 that reads 20 connections, and a sender on h1 that makes them: 1 MB each,
#: paced over 0.25 s, so the 20 take ~5 s of the agent's reads
SINK = """
import socket, sys
s = socket.create_server((sys.argv[1], 5301))
s.settimeout(60)
for _ in range(20):
    c, _ = s.accept()
    with c:
        while c.recv(1 << 16):
            pass
"""
SEND = """
import socket, sys, time
for _ in range(20):
    with socket.create_connection((sys.argv[1], 5301), timeout=10) as c:
        for _ in range(10):
            c.sendall(b"x" * 100_000)
            time.sleep(0.025)
"""


@pytest.fixture
def flab(tmp_path):
    # this suite's own addresses: 10.213.150.0/24 .. 10.213.159.0/24
    with netlab.lab_with_agents(tmp_path, 3, net=150 + 2 * secrets.randbelow(5)) as both:
        yield both


def _links(agent) -> dict[str, dict]:
    return {lk["peer_address"]: lk for lk in agent.get("/v1/snapshot")["links"]}


def _iface(agent, name: str) -> dict:
    return next(i for i in agent.get("/v1/snapshot")["interfaces"] if i["name"] == name)


def _sent(path) -> float:
    """iperf3's bytes a second over its run (sender side, -J)."""
    end = json.loads(path.read_text())["end"]
    return end["sum_sent"]["bytes"] / end["sum_sent"]["seconds"]


@pytest.mark.needs("iperf3")
def test_each_link_shows_its_own_bytes_through_one_interface(flab, tmp_path):
    lab, agents = flab
    h1, h2, h3 = lab.hosts
    a1 = agents.start(h1, "--capacity", f"{h1.veth}=30", name="h1", mdns=False,
                      peers=[f"{h2.addr}:{PORT}", f"{h3.addr}:{PORT}"])
    agents.start(h2, name="h2", mdns=False, peers=[f"{h1.addr}:{PORT}"])
    agents.start(h3, name="h3", mdns=False, peers=[f"{h1.addr}:{PORT}"])
    assert wait_for(lambda: len(lk := _links(a1)) == 2 and all(
        x["state"] == "up" and x["peer_name"] for x in lk.values()), netlab.SETTLE_S), (
        _links(a1), a1.log())
    ids = {addr: lk["id"] for addr, lk in _links(a1).items()}

    # -- iperf3 at 40 and 8 Mbit/s at once ---------------------------------------------
    lab.iperf_server(h2)
    lab.iperf_server(h3)
    seconds = 14
    logs = tmp_path / "to-h2.json", tmp_path / "to-h3.json"
    clients = [lab.iperf_client(h1, h2, seconds, "-b", "40M", log=logs[0]),
               lab.iperf_client(h1, h3, seconds, "-b", "8M", log=logs[1])]
    time.sleep(4)  # the rate windows full of the transfer, the counters read
    samples: list[tuple[float, float, float]] = []
    for _ in range(8):  # one a second: the links' own and the interface's tx
        lk = _links(a1)
        samples.append((lk[h2.addr]["flow_tx_bytes_per_s"] or 0.0,
                        lk[h3.addr]["flow_tx_bytes_per_s"] or 0.0,
                        _iface(a1, h1.veth)["tx_bytes_per_s"] or 0.0))
        time.sleep(1)
    # drawn: the busy link full, the quiet one (saturated as its path is) by its own share
    view = a1.get("/v1/cluster")
    drawn = {e.primary["peer_address"]: e.state for e in topology.build(view)[1]
             if e.primary["peer_address"] in ids}
    mine = {lk["peer_address"]: lk["state"] for lk in view["nodes"][0]["links"]}
    for c in clients:
        c.wait(seconds + 20)
    want = _sent(logs[0]), _sent(logs[1])
    got = [sum(s[i] for s in samples) / len(samples) for i in range(3)]
    print(f"\nh2: own {got[0] / MB:.2f} MB/s, iperf3 {want[0] / MB:.2f}; h3: own "
          f"{got[1] / MB:.2f}, iperf3 {want[1] / MB:.2f}; {h1.veth} {got[2] / MB:.2f} MB/s",
          file=sys.stderr)
    assert abs(got[0] - want[0]) <= 0.10 * want[0]
    assert abs(got[1] - want[1]) <= 0.10 * want[1]
    assert abs(got[2] - (got[0] + got[1])) <= 0.10 * (got[0] + got[1])  # headers: ~4 %

    # -- one saturation of the shared interface, naming both ---------------------------
    events = [e for e in a1.get("/v1/events")["events"] if e["type"] == "link_saturated"]
    assert len(events) == 1, events
    (event,) = events
    assert [s["link_id"] for s in event["shares"]] == [ids[h2.addr], ids[h3.addr]]
    print(shares.full_words(event), file=sys.stderr)
    assert mine == {h2.addr: "saturated", h3.addr: "saturated"}, mine
    assert drawn == {h2.addr: "saturated", h3.addr: "up"}, drawn

    # -- 20 short connections to h2, the interface kept busy by 8 Mbit/s to h3 ----------
    lab.iperf_server(h3)
    busy = lab.iperf_client(h1, h3, 20, "-b", "8M")
    sink = h2.popen(sys.executable, "-c", SINK, h2.addr)
    time.sleep(3)  # (h3's link read again: the carrier carries traffic)
    since = time.time()
    h1.exec(sys.executable, "-c", SEND, h2.addr, timeout=60)
    sink.wait(30)
    time.sleep(3)  # the last reads' rows
    until = time.time()
    busy.wait(40)
    hist = a1.get("/v1/history", link=ids[h2.addr], since=since - 1, until=until)
    interval = a1.get("/v1/snapshot")["interval_s"]
    counted = sum((v or 0.0) * interval for v in hist["flow_tx_bytes_per_s"])
    print(f"20 connections of 1 MB: {counted / MB:.2f} MB counted", file=sys.stderr)
    assert abs(counted - 20 * MB) <= 0.10 * 20 * MB

