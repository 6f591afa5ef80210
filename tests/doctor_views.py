"""Cluster views for `exotray doctor`'s checks (tests/unit/test_doctor_*.py,
tests/qt/test_health_view.py): small builders of the /v1/cluster shape, and a Thunderbolt 5
Mac pair built from the recorded macOS and exo fixtures with the agent's own readers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures"
NOW = 1_800_000_000.0


def iface(name: str, kind: str = "ethernet", **kw: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "label": kw.pop("label", name), "up": True,
            "addresses": [], "rx_bytes_per_s": 0.0, "tx_bytes_per_s": 0.0,
            "capacity_bytes_per_s": None, "capacity_source": "unknown",
            "speed_mbit": None, "max_speed_mbit": None, "members": [], **kw}


def link(lid: str, peer: str, via: str, address: str, **kw: Any) -> dict[str, Any]:
    return {"id": lid, "peer_id": f"id-{peer}", "peer_name": peer, "local_interface": via,
            "local_label": kw.pop("label", via), "member_interface": None,
            "peer_address": address, "peer_port": 52480, "state": "up", "rtt_ms": 0.2,
            "rtt_min_ms": 0.1, "rtt_max_ms": 0.3, "jitter_ms": 0.01, "loss": 0.0,
            "rtt_baseline_ms": 0.1, "queue_delay_ms": 0.0, "rx_bytes_per_s": 1000.0,
            "tx_bytes_per_s": 1000.0, "capacity_bytes_per_s": 1.25e8,
            "capacity_source": "nic", "utilization": 0.0, "exo_instances": [], "rdma": None,
            "rdma_enabled": None, "rdma_ports": [], "path_mtu": None, "mtu_ok": None, **kw}


def node(name: str, links: list[dict], interfaces: list[dict] | None = None,
         **kw: Any) -> dict[str, Any]:
    return {"schema": 1, "node": {"id": f"id-{name}", "name": name,
                                  "version": kw.pop("version", "0.3.0")},
            "interval_s": 1.0, "data_age_s": 0.1, "age_s": kw.pop("age_s", 0.2),
            "reachable": kw.pop("reachable", True), "authenticated": False,
            "interfaces": interfaces if interfaces is not None else [iface("eth0")],
            "links": links, **kw}


def peer(name: str, *addresses: str, up: bool = True, **kw: Any) -> dict[str, Any]:
    return {"key": f"mdns:id-{name}", "id": f"id-{name}", "name": name,
            "sources": kw.pop("sources", ["mdns"]),
            "addresses": [f"{a}:52480" for a in addresses], "up": up,
            "reachable": kw.pop("reachable", up), "authenticated": False,
            "last_error": kw.pop("last_error", None), "sharing": kw.pop("sharing", "stream")}


def view(nodes: list[dict], peers: list[dict] | None = None, **kw: Any) -> dict[str, Any]:
    return {"self": nodes[0]["node"]["id"], "sharing": "stream", "nodes": nodes,
            "peers": peers or [], "discovery": kw.pop("discovery", {
                "mdns": True, "addresses": [], "problem": None, "ignored": []}), **kw}


def healthy() -> dict[str, Any]:
    """Three Linux nodes on one 10 GbE switch, every link up, the MTU checked."""
    names = ["a", "b", "c"]
    addr = {n: f"10.0.0.{i + 1}" for i, n in enumerate(names)}
    nodes = [node(n, [link(f"{n}{p}", p, "eth0", addr[p], mtu_ok=True, path_mtu=9000)
                      for p in names if p != n],
                  [iface("eth0", speed_mbit=10000, max_speed_mbit=10000)],
                  history={"days": 30.0, "database": "ok", "behind_since": None,
                           "free_bytes": 50 << 30, "path": "/s/history.db"}
                  if n == "a" else {})
             for n in names]
    return view(nodes, [peer(p, addr[p]) for p in names[1:]])


def event(type_: str, at: float, **kw: Any) -> dict[str, Any]:
    from exotray.core.events import iso

    return {"seq": int(at), "at": iso(at), "type": type_, "link_id": kw.pop("link_id", None),
            "peer_id": kw.pop("peer_id", None), "utilization": None, **kw}


# -- a Thunderbolt 5 pair of Macs, from recordings ------------------------------------------

def _tb(sp_file: str, ports: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """The agent's readers over a recorded system_profiler: {device: HwLink-like dict}."""
    from exotray.agent.hw import macos
    from exotray.agent.hw.read import HwLink

    recs = macos.parse_sp_thunderbolt((FIXTURES / "macos" / sp_file).read_text())
    out = {}
    for dev, s in macos.thunderbolt_speeds(recs, ports).items():
        hw = HwLink(dev, s.speed_mbit, s.max_mbit)
        out[dev] = {"speed_mbit": hw.speed_mbit, "max_speed_mbit": hw.full_mbit,
                    "cabled": s.cabled}
    return out


def tb5_macs(*, rdma_peer: bool | None = True, ring: bool = False) -> dict[str, Any]:
    """An M5 Max MacBook Pro (its recorded networksetup, system_profiler, ibv_devinfo and
    rdma_ctl) cabled at 80 Gb/s over Thunderbolt 5 to an M3 Ultra Mac Studio (its recorded
    system_profiler; its port names follow the receptacles), running exo's recorded JACCL
    instance (or, `ring`, the same model as a TCP ring) over that cable; each also on
    Wi-Fi. `rdma_peer`: whether RDMA is enabled on the Studio."""
    from exotray.agent.exo.state import parse_state
    from exotray.agent.hw import rdma
    from exotray.agent.hw.kinds_other import parse_networksetup

    mac = FIXTURES / "macos"
    ports = {d: (c.kind, c.label) if hasattr(c, "kind") else tuple(c)
             for d, c in parse_networksetup((mac / "networksetup_macbookpro_m5max.txt")
                                            .read_text()).items()}
    mbp = _tb("sp_thunderbolt_macbookpro_m5max_tb5.json", ports)
    studio_ports = {f"en{n}": ("thunderbolt", f"Thunderbolt {n}") for n in range(1, 7)}
    studio = _tb("sp_thunderbolt_macstudio_m3ultra_tb5.json", studio_ports)
    mbp_dev = next(d for d, s in mbp.items() if s["cabled"] and s["speed_mbit"])
    studio_dev = "en2"  # receptacle 2: the cable to the MacBook (fixtures/macos/README.md)
    states = rdma.parse_ibv_devinfo((mac / "ibv_devinfo_macbookpro_m5max_macos27.txt")
                                    .read_text())
    enabled = rdma.parse_rdma_ctl((mac / "rdma_ctl_status_enabled_SYNTHETIC.txt").read_text())
    exo = parse_state(json.loads((FIXTURES / "exo" / "state_jaccl.json").read_text()), None)
    inst = exo.instances[0].wire()
    if ring:
        inst = {**inst, "backend": "ring"}
    tb_cap = 80_000e6 / 8

    def tb_iface(dev: str, hw: dict[str, Any]) -> dict[str, Any]:
        return iface(dev, "thunderbolt", label=f"Thunderbolt {dev[2:]}",
                     speed_mbit=hw["speed_mbit"], max_speed_mbit=hw["max_speed_mbit"],
                     capacity_bytes_per_s=tb_cap, capacity_source="kind")

    jaccl = not ring
    a = node("macbook", [
        link("mb-tb", "studio", mbp_dev, "169.254.10.2", capacity_bytes_per_s=tb_cap,
             capacity_source="kind", exo_instances=[inst], mtu_ok=True, path_mtu=9000,
             rdma="not_counted" if jaccl else None, rdma_enabled=enabled if jaccl else None,
             rdma_ports=[{"device": f"rdma_{mbp_dev}",
                          "state": states.get(f"rdma_{mbp_dev}")}] if jaccl else [],
             rx_bytes_per_s=2e9, tx_bytes_per_s=2e9),
        link("mb-wifi", "studio", "en0", "192.168.1.20", capacity_bytes_per_s=None,
             capacity_source="unknown", label="Wi-Fi")],
        [tb_iface(mbp_dev, mbp[mbp_dev]), iface("en0", "wifi", label="Wi-Fi"),
         iface("awdl0", "virtual", up=False)], version="0.3.0")
    b = node("studio", [
        link("st-tb", "macbook", studio_dev, "169.254.10.1", capacity_bytes_per_s=tb_cap,
             capacity_source="kind", exo_instances=[inst], mtu_ok=True, path_mtu=9000,
             rdma="not_counted" if jaccl else None,
             rdma_enabled=rdma_peer if jaccl else None, rx_bytes_per_s=2e9,
             tx_bytes_per_s=2e9),
        link("st-wifi", "macbook", "en0", "192.168.1.10", capacity_bytes_per_s=None,
             capacity_source="unknown", label="Wi-Fi")],
        [tb_iface(studio_dev, studio[studio_dev]), iface("en0", "wifi", label="Wi-Fi")],
        version="0.3.0")
    return view([a, b], [peer("studio", "169.254.10.2", "192.168.1.10")])
