"""Issue 16.3, the Thunderbolt Bridge case: one network on two interfaces.

A Mac's bridge0 self-assigns 169.254/16 while macOS keeps one route for all of
169.254/16 (usually via Wi-Fi), so asking the route table which interface reaches a
link-local peer gives the wrong one. The same ambiguity here, within LAB.md's range:

    LAN A: h1 xt…1a 10.213.<n>.1/16   h2 10.213.<n>.2/16
    LAN B: h1 xt…1c 10.213.<n+1>.1/16 h3 10.213.<n+1>.3/16

h1 has 10.213.0.0/16 on-link on both interfaces; its route table sends everything in it
out of xt…1a (the route added first), so h3 is unreachable by routing alone. The agent
must find that h3 answers through xt…1c, attribute the link to it and probe through it
(and its reflector must answer h3 through xt…1c too).
"""

from __future__ import annotations

import json
import sys
import time

import pytest
from helpers import wait_for

PORT = 52480


def _link(agent, addr):
    return next((lk for lk in agent.get("/v1/snapshot")["links"]
                 if lk["peer_address"] == addr), None)


def _snapshot_in_ns(host, addr):
    """An agent's snapshot fetched from inside a namespace (LAN B is not reachable from
    the test process's monitor port on LAN A)."""
    code = ("import httpx,sys; print(httpx.get(sys.argv[1], timeout=2, trust_env=False)"
            ".text)")
    out = host.exec(sys.executable, "-c", code, f"http://{addr}:{PORT}/v1/snapshot",
                    check=False, timeout=10)
    return json.loads(out) if out.strip() else None


@pytest.mark.needs("ping")
def test_same_network_on_two_interfaces(lab3):
    lab, agents = lab3
    h1, h2, h3 = lab.hosts
    n = lab.net
    a1 = f"10.213.{n}.1"
    c1, c3 = f"10.213.{n + 1}.1", f"10.213.{n + 1}.3"
    lab.readdress(h1, a1, 16)
    lab.readdress(h2, f"10.213.{n}.2", 16)
    lab.leave_lan(h3)
    if_a = h1.veth
    if_c, if_c3 = lab.add_lan([h1, h3], [c1, c3], prefix=16)
    h3.veth, h3.addr = if_c3, c3
    time.sleep(1.0)

    # The premise: the route table answers xt…1a for h3, which is on LAN B.
    route = h1.exec("ip", "route", "get", c3)
    assert f"dev {if_a}" in route, route
    ping_routed = lab.ping(h1, h3, 2, 0.2)
    assert ping_routed == [], "h3 should not be reachable by the route table alone"

    a = agents.start(h1, name="h1", mdns=False,
                     peers=[f"{h2.addr}:{PORT}", f"{c3}:{PORT}"])
    agents.start(h2, name="h2", mdns=False, peers=[f"{a1}:{PORT}"])
    agents.start(h3, name="h3", mdns=False, peers=[f"{c1}:{PORT}"])
    t0 = time.monotonic()
    ok = wait_for(lambda: (_link(a, h2.addr) or {}).get("state") == "up"
                  and (_link(a, c3) or {}).get("state") == "up", 10)
    took = time.monotonic() - t0
    l2, l3 = _link(a, h2.addr), _link(a, c3)
    assert ok, (f"h1's links: to h2 {l2 and (l2['state'], l2['local_interface'])}, "
                f"to h3 {l3 and (l3['state'], l3['local_interface'])}\n{a.log()}")
    assert l2["local_interface"] == if_a
    assert l3["local_interface"] == if_c

    # h3's side: its link to h1 is up (h1's reflector answered through xt…1c).
    assert wait_for(lambda: (next((lk for lk in (_snapshot_in_ns(h3, c3) or {}).get(
        "links", []) if lk["peer_address"] == c1), {})).get("state") == "up", 5)

    # Probes to h3 leave through xt…1c: over a window, h3 reflects about as many of h1's
    # probes as h1 sent (they can only reach h3 over LAN B), and xt…1c sent at least
    # those datagrams; h1's snapshot fetch from h3 works too (over the bound interface).
    time.sleep(2)
    s3_0 = _snapshot_in_ns(h3, c3)["counters"]
    ca0, cc0 = lab.iface_counters(h1, if_a), lab.iface_counters(h1, if_c)
    window = 6.0
    time.sleep(window)
    s3_1 = _snapshot_in_ns(h3, c3)["counters"]
    ca1, cc1 = lab.iface_counters(h1, if_a), lab.iface_counters(h1, if_c)
    reflected = s3_1["requests_reflected"] - s3_0["requests_reflected"]
    tx_c = cc1["tx_packets"] - cc0["tx_packets"]
    tx_a = ca1["tx_packets"] - ca0["tx_packets"]
    # at least one probe an interval (probe/pacing.py: 4 while in question); h3 counts one when
    # its tick reads it, so one may fall either side of the window's edge
    expected = 1 * window
    assert reflected >= expected - 1, (reflected, expected)
    assert tx_c >= reflected, (tx_c, reflected)
    l3 = _link(a, c3)
    assert l3["local_interface"] == if_c and l3["state"] == "up"
    snap1 = a.get("/v1/snapshot")
    assert snap1["counters"]["replies_sent_pinned"] > 0  # h3's probes answered via xt…1c
    # The snapshot fetch from h3 (HTTP to its on-link address) works as well.
    assert wait_for(lambda: any(p["name"] == "h3" and p["reachable"]
                                for p in a.get("/v1/cluster")["peers"]), 5), \
        a.get("/v1/cluster")["peers"]
    print(f"\nroute table: {c3} via {if_a}; both links up after {took:.2f} s; "
          f"h1->h2 on {l2['local_interface']}, h1->h3 on {l3['local_interface']} "
          f"(rtt {l3['rtt_ms']} ms); in {window:.0f} s h3 reflected {reflected} of h1's "
          f"probes, h1 sent {tx_c} packets on {if_c} and {tx_a} on {if_a}; "
          f"probes_sent_pinned {snap1['counters']['probes_sent_pinned']}, "
          f"replies_sent_pinned {snap1['counters']['replies_sent_pinned']}")
    print("\n".join(line for line in a.log().splitlines() if "link to" in line))
