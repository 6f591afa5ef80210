"""A shared carrier that fills (issue 30): one saturation event naming its links and their
own shares, largest first, and its clear once; the words a notification says; the badge.

The real Agent and its parts (agent/ticking.py, hw/flows.py); the edges replaced are the
interface counters (`monitor.read`, as tests/unit/test_ticking.py) and the connection
counters (`Flows.reader`: tests/integration/test_flow_bytes.py reads real ones); the
clock is injected."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from helpers import counted_agent, manual_link

from exotray.agent.hw import sockdiag
from exotray.agent.hw.sampler import NicInfo
from exotray.core import shares

IFACE, ME = "xt0", "10.213.162.1"
NIC = NicInfo(IFACE, True, 1000.0, (ME,), ((ME, 24),), multicast=True)
BUSY, QUIET = "10.213.162.2", "10.213.162.3"


class Connections:
    """The kernel's per-connection counters as FlowBytes sums them, moved by the test."""

    def __init__(self) -> None:
        self.known: frozenset[bytes] = frozenset()
        self.totals: dict[tuple[bytes, bytes], list[int]] = {}
        self.at: float | None = None
        # (Linux's socket diagnostics, whose buffer never overflows here)
        self.source = SimpleNamespace(NAME="sockets", overflows=0)

    def read(self, wanted: frozenset[bytes], now: float) -> None:
        self.known, self.at = wanted, now

    def close(self) -> None:
        self.known = frozenset()

    def send(self, peer: str, n: int) -> None:
        key = (sockdiag.pack_address(ME), sockdiag.pack_address(peer))
        self.totals.setdefault(key, [0, 0])[1] += n


@pytest.fixture
def agent(tmp_path):
    a = counted_agent(tmp_path, IFACE, NIC, capacity_mbit=100.0)  # 12.5 MB/s
    for addr, name in ((BUSY, "studio-2"), (QUIET, "studio-3")):
        link = manual_link(a, addr, IFACE)
        link.last_reply = a.now_[0]
        link.peer.name = name
    a.conns = Connections()
    a.monitor.flows.reader = a.conns
    a.sharing.produce = lambda: None
    a.sharing.tick = lambda: None
    yield a
    a._unlock()


def _seconds(a, n: int, busy: int, quiet: int) -> None:
    """`n` intervals of 1 s: the carrier carries busy + quiet bytes a second, each peer's
    connections theirs."""
    for _ in range(n * 4):
        a.now_[0] += 0.25
        a.counters[1] += (busy + quiet) // 4
        a.conns.send(BUSY, busy // 4)
        a.conns.send(QUIET, quiet // 4)
        full = a.ticker.count % a.ticker.per_interval == 0
        if full:
            for link in a.links.values():
                a.prober.on_reply(link.target, a.now_[0], 0.05)
        a.ticker.sample(full)
        a.ticker.count += 1


def test_a_full_shared_carrier_is_one_event_naming_each_link_and_its_share(agent):
    _seconds(agent, 20, 10_000, 10_000)  # at rest
    _seconds(agent, 10, 9_000_000, 2_500_000)  # 11.5 MB/s of 12.5: 92 %
    saturated = [e for e in agent.events.after(0) if e["type"] == "link_saturated"]
    assert len(saturated) == 1, saturated
    (event,) = saturated
    assert [s["peer_name"] for s in event["shares"]] == ["studio-2", "studio-3"]
    assert [s["bytes_per_s"] for s in event["shares"]] == [9_000_000, 2_500_000]
    assert {s["link_id"] for s in event["shares"]} == {lk.id for lk in agent.links.values()}
    assert shares.full_words(event) == "xt0 is full (92 %): studio-2 72 %, studio-3 20 %"
    # the quiet link is saturated as its path is, and says it is not the one filling it
    by_peer = {lk.target[0]: agent.link_dict(lk, agent.now_[0]) for lk in agent.links.values()}
    assert by_peer[QUIET]["state"] == "saturated" and shares.quiet(by_peer[QUIET])
    assert not shares.quiet(by_peer[BUSY])
    assert shares.badge(by_peer[BUSY]) == "9.0 MB/s of xt0's 11.5 MB/s"

    _seconds(agent, 15, 10_000, 10_000)
    cleared = [e for e in agent.events.after(0) if e["type"] == "link_cleared"]
    assert len(cleared) == 1 and cleared[0]["link_id"] == event["link_id"], cleared


def test_without_own_bytes_each_link_tells_its_own_saturation(agent):
    """Where the connections are not read (macOS today), as before: an event per link,
    no shares."""
    agent.monitor.flows.reader = None
    _seconds(agent, 20, 10_000, 10_000)
    _seconds(agent, 10, 9_000_000, 2_500_000)
    saturated = [e for e in agent.events.after(0) if e["type"] == "link_saturated"]
    assert len(saturated) == 2 and not any("shares" in e for e in saturated)


def _cluster(busy_own: float, quiet_own: float, state: str = "saturated") -> dict:
    def link(i: int, peer: str, own: float) -> dict:
        return {"id": f"L{i}", "peer_id": f"p{i}", "peer_name": peer, "peer_address":
                f"10.213.162.{i + 2}", "peer_port": 52480, "local_interface": "en0",
                "local_label": "Ethernet", "member_interface": None, "state": state,
                "rtt_ms": 0.4, "utilization": 0.92, "rx_bytes_per_s": 1.0e6,
                "tx_bytes_per_s": 1.2e9, "capacity_bytes_per_s": 1.25e9,
                "flow_rx_bytes_per_s": 1.0e5, "flow_tx_bytes_per_s": own,
                "flow_source": "sockets"}
    return {"self": "me", "nodes": [{"node": {"id": "me", "name": "studio-1"}, "links": [
        link(0, "studio-2", busy_own), link(1, "studio-3", quiet_own)]}]}


def test_the_map_draws_a_quiet_link_by_its_own_share_and_the_filling_one_full():
    from exotray.core import topology

    for build in (topology.build, topology.GraphCache().build):  # (both paths of the map)
        _, edges = build(_cluster(1.1e9, 5.0e7))
        by_peer = {e.primary["peer_name"]: e for e in edges}
        assert by_peer["studio-2"].state == "saturated"
        assert by_peer["studio-3"].state == "up"  # its neighbour fills en0, not it
        assert by_peer["studio-3"].utilization == pytest.approx(0.04)
    _, edges = topology.build(_cluster(1.1e9, 5.0e7, state="up"))
    assert {e.state for e in edges} == {"up"}


def test_status_and_a_notification_say_each_link_s_own_bytes():
    from exotray.core.status import status_lines
    from exotray.ui.tray.summary import notification

    lines = status_lines(_cluster(1.1e9, 5.0e7))
    (busy,) = [ln for ln in lines if "studio-2" in ln]
    assert "1.1 GB/s of 1.2 GB/s" in busy and "100 kB/s of 1.0 MB/s" in busy
    event = {"type": "link_saturated", "peer_name": "studio-2", "node": "studio-1",
             "local_interface": "en0", "local_label": "Ethernet", "utilization": 0.92,
             "capacity_bytes_per_s": 1.25e9, "cause": "utilization", "shares": [
                 {"link_id": "L0", "peer_name": "studio-2", "bytes_per_s": 8.875e8},
                 {"link_id": "L1", "peer_name": "studio-3", "bytes_per_s": 2.625e8}]}
    assert notification(event, "studio-1")[1] == "en0 is full (92 %): studio-2 71 %, studio-3 21 %"
