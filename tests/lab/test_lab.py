"""Multi-host behaviour on a virtual LAN of network namespaces: discovery, RTT against
ping, saturation under a real shaped bottleneck, liveness, and interoperability with an
independent mDNS implementation (avahi).

Figures are printed (run with -s) so the closing notes can quote them; the assertions
are the contract of issue 3, not benchmarks.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import threading
import time

import httpx
import netlab
import pytest
from helpers import wait_for

PORT = 52480


def up_peer_names(agent) -> set[str]:
    snap = agent.get("/v1/snapshot")
    return {lk["peer_name"] for lk in snap["links"] if lk["state"] == "up"}


def links_to(agent, addr: str) -> list[dict]:
    return [lk for lk in agent.get("/v1/snapshot")["links"] if lk["peer_address"] == addr]


def events(agent, type_: str | None = None) -> list[dict]:
    evs = agent.get("/v1/events")["events"]
    return [e for e in evs if type_ is None or e["type"] == type_]


# -- 1. discovery ---------------------------------------------------------------------
def test_mdns_three_agents_see_each_other(lab3):
    lab, agents = lab3
    names = ["h1", "h2", "h3"]
    started = [agents.start(h, name=n) for h, n in zip(lab.hosts, names, strict=True)]
    last_start = time.monotonic()
    times = {}
    for a in started:
        others = set(names) - {a.name}
        # a bound for the test, not the figure: how fast discovery is (~0.6-1.7 s) is
        # measured by bench/lab_scale.py; a loaded CI machine starts agents slower
        ok = wait_for(lambda a=a, o=others: up_peer_names(a) == o,
                      15.0 - (time.monotonic() - last_start))
        assert ok, f"{a.name} did not see {others} within 15 s:\n{a.log()}"
        times[a.name] = time.monotonic() - last_start
    print(f"\nmDNS discovery, from the last agent's start: {times}")
    for a, h in zip(started, lab.hosts, strict=True):
        snap = a.get("/v1/snapshot")
        assert len(snap["links"]) == 2
        for lk in snap["links"]:
            assert lk["local_interface"] == h.veth  # attributed to the lab interface
            assert lk["peer_port"] == PORT
        cluster = a.get("/v1/cluster")
        assert cluster["discovery"]["addresses"] == [h.addr]
        assert cluster["discovery"]["ignored"] == []  # its own record is not "ignored"
        assert all(p["sources"] == ["mdns"] for p in cluster["peers"])


# -- 2. RTT against ping ----------------------------------------------------------------
def _rtt_side_by_side(lab, agent, src, dst, count: int, interval: float):
    """ping and the agent's per-probe RTT over the same seconds."""
    result: dict[str, list[float]] = {}

    def pinger():
        result["ping"] = lab.ping(src, dst, count, interval)

    t = threading.Thread(target=pinger)
    t.start()
    ours: list[float] = []
    while t.is_alive():
        lk = links_to(agent, dst.addr)[0]
        if lk["rtt_last_ms"] is not None:
            ours.append(lk["rtt_last_ms"])
        time.sleep(0.05)
    t.join()
    assert len(result["ping"]) >= count * 0.9, "ping lost replies"
    q1, _, q3 = statistics.quantiles(result["ping"], n=4)
    return statistics.median(result["ping"]), statistics.median(ours), (q1, q3)


@pytest.mark.needs("ping", "iperf3", "tc", "ss")
def test_rtt_tracks_ping_idle_and_under_load(lab2, tmp_path):
    lab, agents = lab2
    h1, h2 = lab.hosts
    a1 = agents.start(h1, name="h1", mdns=False, peers=[f"{h2.addr}:{PORT}"])
    agents.start(h2, name="h2", mdns=False, peers=[f"{h1.addr}:{PORT}"])
    assert wait_for(lambda: up_peer_names(a1) == {"h2"}, 10), a1.log()
    time.sleep(1.0)

    ping_idle, ours_idle, _ = _rtt_side_by_side(lab, a1, h1, h2, 50, 0.1)
    print(f"\nidle RTT: ping median {ping_idle * 1000:.0f} us, exotray {ours_idle * 1000:.0f} us")
    assert abs(ours_idle - ping_idle) <= 0.1

    lab.shape(h2, "50mbit")
    lab.iperf_server(h2)
    client = lab.iperf_client(h1, h2, 14, log=tmp_path / "iperf.json")
    try:
        time.sleep(4.0)  # the queue fills
        ping_load, ours_load, (q1, q3) = _rtt_side_by_side(lab, a1, h1, h2, 60, 0.1)
    finally:
        client.wait(30)
    print(f"loaded RTT: ping median {ping_load:.1f} ms (quartiles {q1:.1f}-{q3:.1f}), "
          f"exotray {ours_load:.1f} ms")
    assert ping_load > 20 * ping_idle, "the shaped hop did not queue: is tbf in place?"
    # Two samplings (ping 10 a second, our probes 4) of a queue that TCP fills and
    # drains: their medians agree within 10 %, or, while the queue still swings (a CI
    # run with the other worker beside it: ping 56 ms, quartiles wide, ours 50 ms),
    # within ping's own middle half. A hold not subtracted (up to 250 ms) fails both.
    assert abs(ours_load - ping_load) <= 0.10 * ping_load or q1 <= ours_load <= q3


# -- 3. saturation ----------------------------------------------------------------------
@pytest.mark.needs("iperf3", "tc", "ss")
def test_saturation_raised_and_cleared_with_true_rates(lab2, tmp_path):
    lab, agents = lab2
    h1, h2 = lab.hosts
    lab.shape(h2, "50mbit")
    a1 = agents.start(h1, "--capacity", f"{h1.veth}=50", name="h1", mdns=False,
                      peers=[f"{h2.addr}:{PORT}"])
    a2 = agents.start(h2, name="h2", mdns=False, peers=[f"{h1.addr}:{PORT}"])
    assert wait_for(lambda: up_peer_names(a1) == {"h2"}, 10), a1.log()

    def h1_saturated_on_h2() -> bool:  # h1's link as h1's stream tells h2
        nodes = a2.get("/v1/cluster")["nodes"]
        return any(lk["state"] == "saturated" for n in nodes if n["node"]["name"] == "h1"
                   for lk in n["links"])

    # Ten idle seconds: no saturation event.
    time.sleep(10.0)
    assert [e for e in events(a1) if e["type"].startswith("link_")] == []

    lab.iperf_server(h2)
    onset = time.monotonic()
    # The rates below are read for 8 s from onset + 4 s, or from when h2 had the raise,
    # at most 8 + 3 s after onset: the transfer lasts 22 s, so they end inside it.
    client = lab.iperf_client(h1, h2, 22, log=tmp_path / "iperf.json")
    try:
        sat = wait_for(lambda: events(a1, "link_saturated"), 8.0, every=0.05)
        raised_after = time.monotonic() - onset
        assert sat, f"no link_saturated:\n{a1.log()}"
        # a prompt change: h2 has it with h1's next frame, not at a heartbeat
        assert wait_for(h1_saturated_on_h2, 3.0, every=0.05), a2.log()
        shared_after = time.monotonic() - onset - raised_after
        # Rates while saturated: the agent's, and the interface counters over 8 s.
        time.sleep(max(0.0, 4.0 - (time.monotonic() - onset)))
        _rx0, tx0 = lab.counters(h1)
        c0 = time.monotonic()
        ours: list[float] = []
        while time.monotonic() - c0 < 8.0:
            ours.append(links_to(a1, h2.addr)[0]["tx_bytes_per_s"])
            time.sleep(0.5)
        _rx1, tx1 = lab.counters(h1)
        wire_tx = (tx1 - tx0) / (time.monotonic() - c0)
    finally:
        client.wait(30)
    ended = time.monotonic()
    clr = wait_for(lambda: events(a1, "link_cleared"), netlab.SETTLE_S, every=0.05)
    cleared_after = time.monotonic() - ended
    assert clr, f"no link_cleared:\n{a1.log()}"

    report = json.loads((tmp_path / "iperf.json").read_text())
    sent, received = report["end"]["sum_sent"], report["end"]["sum_received"]
    # The on-wire rate through the bottleneck, from iperf3's delivered goodput: each
    # 1448-byte segment carries 66 bytes of Ethernet, IP and TCP (timestamps) headers.
    # (The sender also retransmits what tbf dropped: ~1 % more than this.)
    goodput = received["bytes"] / received["seconds"]
    iperf_wire = goodput * (1448 + 66) / 1448
    ours_tx = statistics.median(ours)
    print(
        f"\nsaturation raised {raised_after:.2f} s after onset (on h2 {shared_after:.2f} s "
        f"later), cleared {cleared_after:.2f} s "
        f"after the end; tx: exotray {ours_tx / 1e6:.3f} MB/s, interface counters "
        f"{wire_tx / 1e6:.3f} MB/s, iperf3 on-wire {iperf_wire / 1e6:.3f} MB/s "
        f"(retransmits {sent.get('retransmits')}); cause {sat[0]['cause']}, utilization "
        f"{sat[0]['utilization']}, queueing {sat[0]['queue_delay_ms']} ms"
    )
    assert len(events(a1, "link_saturated")) == 1 and len(events(a1, "link_cleared")) == 1
    ev = sat[0]
    assert ev["local_interface"] == h1.veth, ev
    # raised by the cause whose run of high samples began first (core/saturation.py): the
    # link at 90 % of its capacity, or the queue tbf builds in front of it while TCP's
    # rate is still climbing (a CI run raised it by queueing at 88 %)
    if ev["cause"] == "utilization":
        assert ev["utilization"] >= 0.9, ev
    else:
        assert ev["cause"] == "queueing" and ev["queue_delay_ms"] >= 1.0, ev
    # against the interface counters over the same 8 s: within 3 %; against iperf3's
    # average over the whole transfer (its start and each backoff included, so a few %
    # under a steady window; a run measured 3.8 %): within 6 %. bench/lab_throughput.py
    # compares both over one steady window (+0.8 % and +1.1 %, docs/benchmarks.md).
    assert abs(ours_tx - wire_tx) <= 0.03 * wire_tx
    assert abs(ours_tx - iperf_wire) <= 0.06 * iperf_wire


# -- 4. liveness ------------------------------------------------------------------------
def test_sigkill_down_then_restart_up(lab3):
    lab, agents = lab3
    h1, h2, h3 = lab.hosts
    a1 = agents.start(h1, name="h1")
    a2 = agents.start(h2, name="h2")
    a3 = agents.start(h3, name="h3")
    for a in (a1, a2, a3):
        assert wait_for(lambda a=a: len(up_peer_names(a)) == 2, netlab.SETTLE_S), a.log()

    # (how soon: ≤ 3 s is the target, measured by bench/lab_liveness.py; printed here)
    a3.kill()
    killed = time.monotonic()
    for a in (a1, a2):
        ok = wait_for(lambda a=a: links_to(a, h3.addr)[0]["state"] == "down",
                      netlab.SETTLE_S - (time.monotonic() - killed))
        assert ok, f"{a.name} still has h3 up {netlab.SETTLE_S} s after SIGKILL"
    down_after = time.monotonic() - killed

    restarted = time.monotonic()
    agents.start(h3, name="h3")
    for a in (a1, a2):
        ok = wait_for(lambda a=a: links_to(a, h3.addr)[0]["state"] == "up",
                      netlab.SETTLE_S - (time.monotonic() - restarted))
        assert ok, f"{a.name} did not see h3 up within {netlab.SETTLE_S} s of its restart"
    up_after = time.monotonic() - restarted
    print(f"\nSIGKILL noticed after {down_after:.2f} s; restart seen up after {up_after:.2f} s")
    for a in (a1, a2):
        kinds = [e["type"] for e in events(a) if e["peer_name"] == "h3"]
        assert kinds == ["peer_up", "peer_down", "peer_up"]


# -- 5. an independent mDNS implementation -----------------------------------------------
@pytest.mark.needs(*netlab.Avahi.TOOLS)
def test_avahi_sees_agents_and_bogus_records_are_ignored(lab3, tmp_path):
    lab, agents = lab3
    h1, h2, h3 = lab.hosts
    a1 = agents.start(h1, name="h1")
    a2 = agents.start(h2, name="h2")
    for a, other in ((a1, "h2"), (a2, "h1")):
        assert wait_for(lambda a=a, o=other: up_peer_names(a) == {o}, netlab.SETTLE_S), \
            a.log()
    node_ids = {a.name: a.get("/v1/snapshot")["node"]["id"] for a in (a1, a2)}

    with netlab.Avahi(h3, tmp_path) as avahi:
        t0 = time.monotonic()
        found = wait_for(lambda: (rows := avahi.browse("_exotray._tcp")) and len(rows) >= 2
                         and rows, 10, every=0.2)
        print(f"\navahi-browse listed the agents after {time.monotonic() - t0:.2f} s")
        assert found, "avahi-browse did not list the agents"
        by_addr = {r["address"]: r for r in found}
        for a, h in ((a1, h1), (a2, h2)):
            row = by_addr[h.addr]
            assert row["port"] == PORT
            assert row["txt"]["id"] == node_ids[a.name]
            assert row["txt"]["name"] == a.name and row["txt"]["proto"] == "1"

        # Records that are not exotray agents, or lie: all ignored, none disturbs.
        avahi.publish("not-an-agent", "_exotray._tcp", PORT)  # no TXT at all
        avahi.publish("old-version", "_exotray._tcp", PORT, "id=abc123", "name=old",
                      "version=0.0.1", "proto=99")
        avahi.publish("impostor", "_exotray._tcp", PORT, f"id={node_ids['h1']}", "name=evil",
                      "version=0.1.0", "proto=1")
        avahi.publish("bad-port", "_exotray._tcp", 0, "id=def456", "name=zero", "proto=1")

        def ignored(a):
            return {i["reason"] for i in a.get("/v1/cluster")["discovery"]["ignored"]}

        want = {"no_txt", "version_mismatch", "spoofed_id", "bad_port"}
        assert wait_for(lambda: want <= ignored(a1), 10, every=0.2), (ignored(a1), a1.log())
        time.sleep(2.0)
        for a, other in ((a1, "h2"), (a2, "h1")):
            assert up_peer_names(a) == {other}
            cluster = a.get("/v1/cluster")
            assert len(cluster["peers"]) == 1 and len(cluster["nodes"]) == 2
            assert a.proc.poll() is None
        print(f"ignored by h1: {sorted(ignored(a1))}")


# -- run-time changes and goodbyes --------------------------------------------------------
def test_new_interface_adds_a_link_without_restart(lab2):
    """A second cable between two nodes: each announces its new address, and the other
    gets a second link attributed to its own new interface."""
    lab, agents = lab2
    h1, h2 = lab.hosts
    # No --mdns-interface: all (lab-only) interfaces of the namespace, as by default.
    a1 = agents.start(h1, name="h1", all_interfaces=True)
    a2 = agents.start(h2, name="h2", all_interfaces=True)
    for a in (a1, a2):
        assert wait_for(lambda a=a: len(up_peer_names(a)) == 1, netlab.SETTLE_S), a.log()

    new = lab.add_lan([h1, h2])
    added = time.monotonic()
    second = f"10.213.{lab.net + 1}.2"

    def two_links():
        lks = a1.get("/v1/snapshot")["links"]
        return len(lks) == 2 and all(lk["state"] == "up" for lk in lks) and lks

    lks = wait_for(two_links, 10)
    assert lks, a1.log() + "\n---- h2 ----\n" + a2.log()
    print(f"\nnew interface picked up, second link up after {time.monotonic() - added:.2f} s")
    by_addr = {lk["peer_address"]: lk for lk in lks}
    assert by_addr[second]["local_interface"] == new[0]
    assert by_addr[h2.addr]["local_interface"] == h1.veth
    assert by_addr[second]["id"] != by_addr[h2.addr]["id"]
    # Moving to the new interface did not take the first link down on either side.
    for a in (a1, a2):
        assert [e["type"] for e in events(a)] == ["peer_up"], events(a)


def test_goodbye_removes_links_at_once_and_stop_is_clean(lab2):
    lab, agents = lab2
    h1, h2 = lab.hosts
    a1 = agents.start(h1, name="h1")
    a2 = agents.start(h2, name="h2")
    for a in (a1, a2):
        assert wait_for(lambda a=a: len(up_peer_names(a)) == 1, netlab.SETTLE_S), a.log()
    threads = len(list((__import__("pathlib").Path(f"/proc/{a2.proc.pid}/task")).iterdir()))
    a2.proc.terminate()  # SIGTERM: a clean stop sends an mDNS goodbye
    stopped = time.monotonic()
    assert wait_for(lambda: a1.get("/v1/snapshot")["links"] == [], netlab.GOODBYE_S,
                    every=0.02), a1.log()
    gone_after = time.monotonic() - stopped
    assert a2.proc.wait(5) == 0
    print(f"\ngoodbye removed the peer's links after {gone_after * 1000:.0f} ms; "
          f"the stopped agent ran {threads} thread(s)")
    # Well under the 2.5 intervals that probes need to call it down.
    assert gone_after < 1.5
    assert "Traceback" not in a2.log()
    assert [e["type"] for e in events(a1)] == ["peer_up", "peer_down"]


def test_control_endpoints_refuse_other_hosts_even_with_the_token(lab2):
    lab, agents = lab2
    h1, _ = lab.hosts
    a1 = agents.start(h1, name="h1", mdns=False)
    a1.wait_ready()
    token = (a1.state / "control_token").read_text().strip()
    # The test process reaches the agent from the lab's monitor address, not loopback.
    r = httpx.get(a1.url + "/v1/control/settings", trust_env=False,
                  headers={"authorization": f"Bearer {token}"})
    assert r.status_code == 403
    r = httpx.post(a1.url + "/v1/control/pause", trust_env=False, json={"paused": True},
                   headers={"authorization": f"Bearer {token}"})
    assert r.status_code == 403
    assert a1.get("/v1/snapshot")["paused"] is False


@pytest.mark.needs("tc")
def test_capacity_measured_through_a_200mbit_bottleneck(lab2):
    """tbf 200 Mbit/s on the forwarding hop, both ways; `exotray measure` from h1."""
    lab, agents = lab2
    h1, h2 = lab.hosts
    lab.shape(h1, "200mbit", burst="256kbit")
    lab.shape(h2, "200mbit", burst="256kbit")
    a1 = agents.start(h1, name="h1", mdns=False, peers=[f"{h2.addr}:{PORT}"])
    a2 = agents.start(h2, name="h2", mdns=False, peers=[f"{h1.addr}:{PORT}"])
    # Both ways: h2 grants a test only to an address whose link answers *its* probes, and
    # on a busy runner h2 may not have heard h1 yet when h1 already hears h2 (the likely
    # cause of a CI run where `measure` exited 1; netlab.run now shows a command's stderr).
    assert wait_for(lambda: up_peer_names(a1) == {"h2"}, 10), a1.log()
    assert wait_for(lambda: up_peer_names(a2) == {"h1"}, 10), a2.log()
    out = h1.exec(sys.executable, "-m", "exotray", "measure", "h2", "--seconds", "4",
                  "--units", "bits", "--state-dir", str(a1.state), timeout=60)
    r = httpx.get(a1.url + "/v1/snapshot", trust_env=False).json()
    iface = next(i for i in r["interfaces"] if i["name"] == h1.veth)
    print(f"\n{out.strip()}")
    up, down = (float(x) for x in re.findall(r"([\d.]+) Mbit/s (?:up|down)", out))
    for rate in (up, down):
        assert abs(rate - 200) <= 20, out  # within 10 % of the shaped 200 Mbit/s
    def source():
        snap = a1.get("/v1/snapshot")
        return next(i for i in snap["interfaces"] if i["name"] == h1.veth)["capacity_source"]

    assert wait_for(lambda: source() == "measured", netlab.SETTLE_S), iface
