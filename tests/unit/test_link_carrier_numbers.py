"""Which interface's counters and capacity a link's numbers come from (review of the path
OS -> monitor -> exo watch -> snapshot): a reported speed that is not a port's limit
never drops real traffic as "impossible"; exo's instances over a bridge follow the
cable that reaches the peer, as its rates do.

Real InterfaceMonitor, Hardware cache, classifier (on a small fake sysfs tree) and
ExoWatch; the counters and the hardware readers' answers are given (no traffic of that
size here). No clock: times are passed in."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import manual_link

from exotray.agent.exo import state as exo
from exotray.agent.exo.watch import ExoWatch
from exotray.agent.hw.hardware import Hardware
from exotray.agent.hw.kinds import InterfaceClassifier
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.hw.read import HwLink, NoReader
from exotray.agent.hw.sampler import NicInfo
from exotray.core.settings import Settings


def _sysfs(root: Path) -> Path:
    """br0 (a Linux bridge of eth1 and eth2), two physical NICs and tun0."""
    for name, arp_type in (("br0", 1), ("eth1", 1), ("eth2", 1), ("tun0", 65534)):
        (root / name).mkdir(parents=True)
        (root / name / "type").write_text(f"{arp_type}\n")
    (root / "br0" / "bridge").mkdir()
    for name in ("eth1", "eth2"):
        (root / name / "device").mkdir()
    (root / "tun0" / "tun_flags").write_text("0x1001\n")  # IFF_TUN | IFF_NO_PI
    return root


def _nic(name: str, speed: float | None, addr: str) -> NicInfo:
    return NicInfo(name, True, speed, (addr,), ((addr, 24),))


def _bridge_monitor(tmp_path: Path, addrs: tuple[str, str, str],
                    ) -> tuple[InterfaceMonitor, Hardware]:
    """bridge0 (a Mac's Thunderbolt Bridge: en2, en3; no speeds) and its two cables up,
    with these addresses."""
    hw = Hardware(NoReader())
    hw.links = {"bridge0": HwLink("bridge0", None, members=("en2", "en3"), bridge=True)}
    classifier = InterfaceClassifier(platform="linux", sysfs_root=tmp_path / "none")
    m = InterfaceMonitor(Settings(), classifier, 1.0, hw, tmp_path / "state")
    m.update({n: _nic(n, None, a) for n, a in zip(("bridge0", "en2", "en3"), addrs,
                                                   strict=True)}, 0.0)
    return m, hw


def _monitor(tmp_path: Path) -> InterfaceMonitor:
    hw = Hardware(NoReader())
    hw.links = {"br0": HwLink("br0", 10000.0, members=("eth1", "eth2"), bridge=True,
                              source="bridge members"),
                "eth1": HwLink("eth1", 10000.0, source="sysfs"),
                "eth2": HwLink("eth2", 10000.0, source="sysfs")}
    classifier = InterfaceClassifier(platform="linux", sysfs_root=_sysfs(tmp_path / "sys"))
    return InterfaceMonitor(Settings(), classifier, 1.0, hw, tmp_path / "state")


def test_traffic_above_a_virtual_interfaces_reported_speed_is_not_impossible(tmp_path):
    """Linux reports a bridge's speed as its fastest up port's (br_get_link_ksettings,
    net/bridge/br_device.c) while the bridge's own counters sum what the host exchanges
    over all its ports; a tun says 10 Mbit/s (drivers/net/tun.c) whatever it carries.
    Traffic above 1.5x those is real: it must be shown, never dropped as "impossible"
    while the interface keeps showing the idle rate it had before."""
    m = _monitor(tmp_path)
    # psutil's speeds, as the kernel reports them through ethtool
    nics = {"br0": _nic("br0", 10000.0, "10.213.60.1"),
            "eth1": _nic("eth1", 10000.0, "10.213.61.1"),
            "eth2": _nic("eth2", 10000.0, "10.213.62.1"),
            "tun0": _nic("tun0", 10.0, "10.213.63.1")}
    m.update(nics, 0.0)
    assert (m.ifaces["br0"].kind, m.ifaces["tun0"].kind) == ("virtual", "vpn")
    # per second: two peers each send 1.2 GB/s to this host, one through each port of
    # the bridge; 5 MB/s (40 Mbit/s) go through the VPN
    per_s = {"br0": 2.4e9, "eth1": 1.2e9, "eth2": 1.2e9, "tun0": 5e6}
    rx = dict.fromkeys(per_s, 0)
    t = 0.0
    for step in range(12):
        if step >= 4:  # idle for a second, then busy
            rx = {n: int(rx[n] + per_s[n] * 0.25) for n in rx}
        m.update_rates(t, {n: (v, 0) for n, v in rx.items()}, nics)
        t += 0.25
    assert m.rates.rejected["absurd"] == 0
    rate, _, _ = m.numbers("br0", "10.213.60.9")  # a peer whose port is not known yet
    assert rate is not None and rate.rx_bytes_per_s == pytest.approx(2.4e9, rel=1e-3)
    assert m.ifaces["tun0"].rate.rx_bytes_per_s == pytest.approx(5e6, rel=1e-3)
    # a physical port's speed still bounds what it can carry
    assert m.ifaces["eth1"].rate.rx_bytes_per_s == pytest.approx(1.2e9, rel=1e-3)


def test_jaccl_over_another_bridge_cable_is_not_this_links(tmp_path):
    """bridge0's en2 reaches peer A, en3 peer B. exo's JACCL instance runs over rdma_en2
    (to A) only. Once the hardware readers know that B is behind en3, the link to B takes
    en3's counters and capacity; it must not also take the instance (nor, on macOS, the
    "IP only: RDMA not counted" note) of the cable to A — as rdma_for already does for
    RDMA counters."""
    hw = Hardware(NoReader())
    hw.links = {"bridge0": HwLink("bridge0", None, members=("en2", "en3"), bridge=True)}
    classifier = InterfaceClassifier(platform="linux", sysfs_root=tmp_path / "none")
    m = InterfaceMonitor(Settings(), classifier, 1.0, hw, tmp_path / "state")
    nics = {n: _nic(n, None, a) for n, a in (("bridge0", "169.254.1.1"),
                                             ("en2", "10.213.64.1"), ("en3", "10.213.65.1"))}
    m.update(nics, 0.0)
    peer_a, peer_b = "169.254.2.2", "169.254.3.3"
    hw._members[("bridge0", peer_a)] = "en2"
    hw._members[("bridge0", peer_b)] = "en3"
    w = ExoWatch("http://127.0.0.1:9", monitor=m, links=lambda: [], emit=lambda t, f: None,
                 clock=lambda: 0.0, platform="darwin")
    inst = exo.ExoInstance("j1", "mlx-community/Llama-3.3-70B-Instruct-4bit", "jaccl",
                           devices=("rdma_en2",), mine=True)
    w.state = exo.ExoState("me", (inst,))

    def link(peer: str):
        from types import SimpleNamespace
        return SimpleNamespace(id=peer, target=(peer, 52480), local_interface="bridge0")

    assert w.numbers(link(peer_a)).instances == [inst]
    assert w.numbers(link(peer_a)).rdma == "not_counted"
    to_b = w.numbers(link(peer_b))
    assert (to_b.instances, to_b.rdma) == ([], None)
    # while B's cable is not known, the bridge's totals, and every cable's instances
    del hw._members[("bridge0", peer_b)]
    assert w.numbers(link(peer_b)).instances == [inst]


def test_an_instance_over_two_cables_lists_only_this_cables_rdma_port(tmp_path):
    """A JACCL ring through bridge0 uses rdma_en2 (to A) and rdma_en3 (to B). On macOS
    (no RDMA counters) the link to A names the state of A's port only; while a peer's
    cable is not known, every port of the bridge."""
    m, hw = _bridge_monitor(tmp_path, ("169.254.1.1", "10.213.64.1", "10.213.65.1"))
    peer_a = "169.254.2.2"
    hw._members[("bridge0", peer_a)] = "en2"
    w = ExoWatch("http://127.0.0.1:9", monitor=m, links=lambda: [], emit=lambda t, f: None,
                 clock=lambda: 0.0, platform="darwin")
    inst = exo.ExoInstance("j1", "mlx-community/Llama-3.3-70B-Instruct-4bit", "jaccl",
                           devices=("rdma_en2", "rdma_en3"), mine=True)
    w.state = exo.ExoState("me", (inst,))
    w.rdma_macos = {"enabled": True, "ports": {"rdma_en2": "PORT_ACTIVE",
                                               "rdma_en3": "PORT_DOWN"}}
    carrier = m.carrier("bridge0", peer_a)
    assert carrier == "en2"
    assert w.rdma_state("bridge0", [inst], "not_counted", carrier) == (
        True, [{"device": "rdma_en2", "state": "PORT_ACTIVE"}])
    assert [p["device"] for p in w.rdma_state("bridge0", [inst], "not_counted")[1]] == [
        "rdma_en2", "rdma_en3"]


def test_a_tuns_constant_speed_is_no_capacity(tmp_path):
    """A tun device answers ethtool with 10 Mbit/s, a constant of the driver
    (drivers/net/tun.c), not a speed of anything: a VPN's capacity is unknown (its
    utilization too), never "10 Mbit/s reported by the interface" — a link over
    Tailscale or OpenVPN carrying 1.2 MB/s would read 96 % and saturate."""
    m = _monitor(tmp_path)
    m.hardware.links["tun0"] = HwLink("tun0", 10.0, source="sysfs")  # sysfs says it too
    nics = {"tun0": _nic("tun0", 10.0, "10.213.63.1")}
    m.update(nics, 0.0)
    assert m.ifaces["tun0"].capacity.source == "unknown"
    assert m.speed_of("tun0") == (None, None)  # nor "via VPN (tun0) · 10 Mb/s"
    m.update_rates(0.0, {"tun0": (0, 0)}, nics)
    m.update_rates(1.0, {"tun0": (1_200_000, 0)}, nics)
    rate, capacity, util = m.numbers("tun0", "10.213.63.9")
    assert (rate.rx_bytes_per_s, capacity.bytes_per_s, util) == (1_200_000, None, None)


def test_a_saturated_bridged_link_names_the_cable_its_numbers_are_of(tmp_path):
    """Through bridge0, a link's rates and capacity are those of the cable that reaches
    the peer (en3): its link_saturated event says so (member_interface, as the snapshot's
    link does), and the notification does not put en3's "95 % of 2.5 GB/s" on the
    Thunderbolt Bridge as a whole."""
    from exotray.agent.runtime import Agent
    from exotray.ui.tray.summary import notification

    peer_ip = "169.254.3.3"
    nics = {"bridge0": NicInfo("bridge0", True, None, ("169.254.1.1",),
                               (("169.254.1.1", 16),)),
            "en2": _nic("en2", None, "10.213.66.1"), "en3": _nic("en3", None, "10.213.67.1")}
    now = [1000.0]
    s = Settings(name="a", bind="127.0.0.1", port=0, mdns=False, interval=1.0,
                 state_dir=str(tmp_path / "state"), history_days=0, exo_url="",
                 capacity={"en3": 20_000.0})
    agent = Agent(s, clock=lambda: now[0])
    hw = agent.monitor.hardware
    hw.links = {"bridge0": HwLink("bridge0", None, members=("en2", "en3"), bridge=True)}
    hw._members[("bridge0", peer_ip)] = "en3"
    rx = {n: 0 for n in nics}
    agent.monitor.carriers.sysfs = None  # (counters given: every tick reads them)
    agent.monitor.read = lambda full: ({n: (v, 0) for n, v in rx.items()}, nics)
    link = manual_link(agent, peer_ip, "bridge0")
    for _ in range(6 * 4):  # 6 s at 2.4 GB/s on en3 (20 Gbit/s): 96 %
        now[0] += 0.25
        rx["en3"] += 600_000_000
        rx["bridge0"] += 600_000_000
        agent._sample_tick()
    assert link.state == "saturated"
    (event,) = [e for e in agent.events.after(0) if e["type"] == "link_saturated"]
    assert (event["local_interface"], event["member_interface"]) == ("bridge0", "en3")
    _title, body = notification(event, "a")
    assert "en3" in body


def test_status_says_which_bridge_cable_the_numbers_are_of():
    """`exotray status`'s VIA names the bridge cable whose RX / TX / UTIL a link shows,
    as the window does (linkwords.via): not the Thunderbolt Bridge as a whole."""
    from exotray.core.status import status_lines

    link = {"peer_name": "studio-2", "peer_address": "169.254.3.3",
            "local_interface": "bridge0", "local_label": "Thunderbolt Bridge",
            "member_interface": "en3", "rtt_ms": 0.41, "rx_bytes_per_s": 2.4e9,
            "tx_bytes_per_s": 3e6, "utilization": 0.96, "state": "saturated"}
    cluster = {"self": "a", "nodes": [{"node": {"id": "a", "name": "studio-1"},
                                       "links": [link]}],
               "peers": [], "discovery": {"mdns": False, "addresses": [], "problem": None,
                                          "ignored": []}}
    assert "Thunderbolt Bridge (bridge0) via en3" in status_lines(cluster)[1]


def test_an_edges_tooltip_says_whose_utilization_it_shows():
    """Hub B reaches A and C through one NIC. A's end of the A–B edge is idle (A's own
    interface); B's end carries B's whole NIC, busy with C. The edge is coloured by the
    busier end (95 %), but the tooltip shows A's rx / tx and capacity: a bare "95 %"
    beside them reads as A's interface at 95 % of its 1.25 GB/s while it carries 1 kB/s."""
    from exotray.core import topology
    from exotray.ui.topology.tips import edge_tooltip

    def end(lid, peer_id, addr, iface, rx, util):
        return {"id": lid, "peer_id": peer_id, "peer_name": peer_id, "peer_address": addr,
                "local_interface": iface, "local_label": "Ethernet", "state": "up",
                "rtt_ms": 0.2, "rx_bytes_per_s": rx, "tx_bytes_per_s": rx,
                "capacity_bytes_per_s": 1.25e9, "capacity_source": "nic", "utilization": util}

    def node(nid, iface, addr, links):
        return {"node": {"id": nid, "name": nid}, "links": links, "interfaces": [
            {"name": iface, "label": "Ethernet", "kind": "ethernet", "addresses": [addr]}]}

    cluster = {"self": "A", "nodes": [
        node("A", "eth0", "10.213.70.1", [end("ab", "B", "10.213.70.2", "eth0", 1e3, 1e-6)]),
        node("B", "eth1", "10.213.70.2", [end("ba", "A", "10.213.70.1", "eth1", 1.19e9, 0.95),
                                          end("bc", "C", "10.213.70.3", "eth1", 1.19e9, 0.95)]),
    ]}
    _nodes, edges = topology.build(cluster)
    (ab,) = [e for e in edges if e.primary["id"] == "ab"]
    assert ab.utilization == 0.95  # the map's colour: the busier end
    tip = edge_tooltip(ab, lambda n: n, {"A": {}, "B": {}})
    row = tip.split("Utilization</td><td>", 1)[1].split("</td>", 1)[0]
    assert row != "95 %"  # not bare beside A's 1 kB/s and A's capacity
    assert "95 %" in row and "B" in row


def test_a_capacity_test_says_which_interface_now_has_its_result(tmp_path):
    """Through bridge0 the result is kept for the cable that reaches the peer (en3), or
    not at all while that cable is not known (monitor.measured): the answer, and the
    window's text from it, say which — never "now the capacity of bridge0"."""
    import asyncio
    from types import SimpleNamespace

    from exotray.agent.http.measuring import measure
    from exotray.ui.window.actions import measured as _measured

    m, hw = _bridge_monitor(tmp_path, ("10.213.71.1", "10.213.72.1", "10.213.73.1"))

    class Tester:  # the capacity test itself (TCP streams to the peer) is not run here
        async def run(self, *args, **kwargs):
            return {"up_mbit_s": 18000.0, "down_mbit_s": 17000.0,
                    "measured_at": 1_764_720_000.0, "streams": 4, "seconds": 5.0}

    clients = SimpleNamespace(binding=lambda link: None, for_link=lambda link: None)
    link = SimpleNamespace(id="l1", target=("10.213.71.9", 52480), local_interface="bridge0",
                           peer=SimpleNamespace(name="studio-2"))

    def run():
        return asyncio.run(measure(link, tester=Tester(), clients=clients, monitor=m,
                                   who="t", seconds=5.0, streams=4))

    unknown = run()  # which cable reaches the peer is not known yet: not kept
    assert (m.measurement("bridge0"), m.measurement("en3")) == (None, None)
    assert unknown["capacity_of"] is None
    assert "now its capacity" not in _measured(unknown, "17:10")
    hw._members[("bridge0", "10.213.71.9")] = "en3"
    known = run()
    assert m.measurement("en3").mbit == 18000.0 and known["capacity_of"] == "en3"
    assert "en3" in _measured(known, "17:10")


def test_a_bonds_link_note_does_not_deny_the_utilization_it_shows():
    """A Linux bond lists its slaves as members, as a bridge does, but its link has the
    bond's capacity (its active slaves') and a utilization (monitor.numbers: only a
    bridge's totals go against no capacity): the note must not say "no utilization"
    under a utilization of 40 %."""
    from exotray.ui.link import words as linkwords

    link = {"local_interface": "bond0", "local_label": "Bond", "member_interface": None,
            "capacity_bytes_per_s": 2.5e9, "utilization": 0.4}
    ifaces = {"bond0": {"name": "bond0", "members": ["eth1", "eth2"], "kind": "virtual"}}
    note = linkwords.traffic_note(link, ifaces)
    assert "no utilization" not in note and "bond0" in note
    # a bridge whose cable to this peer is unknown: its totals, and no utilization
    bridged = {**link, "local_interface": "bridge0", "capacity_bytes_per_s": None,
               "utilization": None}
    ifaces = {"bridge0": {"name": "bridge0", "members": ["en2", "en3"], "kind": "thunderbolt"}}
    note = linkwords.traffic_note(bridged, ifaces)
    assert "no utilization" in note and "total of bridge0" in note
