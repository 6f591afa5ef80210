"""What the hardware says of each interface's link, per platform: one call that asks the
platform's readers (hw_linux, hw_macos, hw_macos_wifi) for every interface at once.

`links(kinds)` answers {name: HwLink} for the interfaces it learnt something about;
`member_for_peer(bridge, ip)` names the bridge member that reaches a peer. Both block
(sysfs, netlink, system_profiler): hw/hardware.py calls them from a worker thread, never on
the event loop. They never raise for a vanished interface or a failing command; what
cannot be read is simply absent (unknown), never guessed.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from exotray.agent.hw import ethtool as hw_ethtool
from exotray.agent.hw import linux as hw_linux
from exotray.agent.hw import macos as hw_macos
from exotray.agent.hw import macos_bridge as hw_macos_bridge
from exotray.agent.hw import macos_wifi as hw_macos_wifi

log = logging.getLogger(__name__)

#: Thunderbolt 5's "Up to 120 Gb/s" is its asymmetric (Bandwidth Boost) rate; a symmetric
#: link at 80 Gb/s is at its full speed, not degraded.
TB5_ASYMMETRIC_MBIT = 120_000
TB5_SYMMETRIC_MBIT = 80_000


@dataclass(frozen=True)
class HwLink:
    """One interface's link as the OS reports it (Mbit/s)."""

    name: str
    #: negotiated rate: Thunderbolt link rate, Ethernet media, Wi-Fi's current tx (PHY) rate
    speed_mbit: float | None = None
    #: the most the port or NIC can negotiate, where the OS says
    max_mbit: float | None = None
    #: a bridge's or bond's member interfaces
    members: tuple[str, ...] = ()
    #: a bridge (each peer is reached through one member) rather than a bond
    bridge: bool = False
    #: Wi-Fi: speed is a PHY rate; real throughput is well below it
    phy_rate: bool = False
    #: which reader said so ("sysfs", "thunderbolt", "nl80211", "system_profiler", ...)
    source: str = ""

    @property
    def full_mbit(self) -> float | None:
        """The rate below which this link is degraded (its maximum; TB5's symmetric one)."""
        if self.max_mbit == TB5_ASYMMETRIC_MBIT:
            return TB5_SYMMETRIC_MBIT
        return self.max_mbit


class HwReader(Protocol):
    def links(self, kinds: Mapping[str, str]) -> dict[str, HwLink]: ...

    def member_for_peer(self, bridge: str, peer_ip: str) -> str | None: ...


class LinuxReader:
    """sysfs and nl80211 (hw_linux). `sys_net` and `iw_factory` are seams for tests."""

    def __init__(self, sys_net: str | os.PathLike = hw_linux.SYS_NET,
                 iw_factory: Any = None, ethtool_factory: Any = None) -> None:
        self.sys_net = sys_net
        self.iw_factory = iw_factory
        self.ethtool_factory = ethtool_factory
        #: a wired NIC's maximum, by name: (its ifindex and negotiated speed, the answer)
        self._max: dict[str, tuple[tuple[str | None, int | None], int | None]] = {}

    def links(self, kinds: Mapping[str, str]) -> dict[str, HwLink]:
        out: dict[str, HwLink] = {}
        for gone in self._max.keys() - kinds.keys():
            del self._max[gone]
        for name, kind in kinds.items():
            found = self._one(name, kind)
            if found is not None:
                out[name] = found
        return out

    def _one(self, name: str, kind: str) -> HwLink | None:
        if kind == "wifi":
            rate = hw_linux.read_wifi_tx_mbit(name, self.iw_factory)
            return HwLink(name, rate, phy_rate=True, source="nl80211") if rate else None
        if kind == "thunderbolt":
            tb = hw_linux.thunderbolt_link(name, self.sys_net)
            if tb is not None:
                return HwLink(name, float(tb.speed_mbit), source="thunderbolt")
        members = hw_linux.bridge_members(name, self.sys_net)
        if members is not None:
            # a link through the bridge crosses one member: the fastest is what it can get
            speeds = [s for m in members if (s := hw_linux.link_speed_mbit(m, self.sys_net))]
            return HwLink(name, float(max(speeds)) if speeds else None, members=tuple(members),
                          bridge=True, source="bridge members")
        bond = hw_linux.bond_info(name, self.sys_net)
        if bond is not None:
            return HwLink(name, float(bond.speed_mbit) if bond.speed_mbit else None,
                          members=bond.slaves, source=f"bond ({bond.mode})")
        speed = hw_linux.link_speed_mbit(name, self.sys_net)
        top = self._max_mbit(name, speed) if kind == "ethernet" else None
        if not speed and not top:
            return None
        return HwLink(name, float(speed) if speed else None, float(top) if top else None,
                      source="sysfs")

    def _max_mbit(self, name: str, speed: int | None) -> int | None:
        """A wired NIC's supported maximum, asked (a child process: hw_ethtool) only when
        the NIC is new, re-created (another ifindex) or renegotiated: the modes a port
        supports change with the port, and the question costs a process start."""
        key = (hw_linux._read(Path(self.sys_net, name, "ifindex")), speed)
        hit = self._max.get(name)
        if hit is None or hit[0] != key:
            hit = self._max[name] = (key, hw_ethtool.read_max_mbit(name, self.ethtool_factory))
        return hit[1]

    def member_for_peer(self, bridge: str, peer_ip: str) -> str | None:
        return hw_linux.bridge_member_for_peer(bridge, peer_ip, self.sys_net)


class MacReader:
    """system_profiler, CoreWLAN, networksetup and ifconfig (hw_macos, hw_macos_wifi),
    each through the `runner` seam. Only what the kinds present ask for is run:
    system_profiler takes seconds."""

    def __init__(self, runner: hw_macos.Runner = hw_macos.run_command,
                 wifi_loader: Callable[[], Any] | None = None,
                 member_finder: Callable[[str, str], str | None] | None = None) -> None:
        self.runner = runner
        self.wifi_loader = wifi_loader
        self.member_finder = member_finder

    def links(self, kinds: Mapping[str, str]) -> dict[str, HwLink]:
        out: dict[str, HwLink] = {}
        if any(k == "thunderbolt" for k in kinds.values()):
            found = hw_macos.thunderbolt_links(self.runner) or {}
            ports = {n: ls for n, ls in found.items() if not ls.members
                     and not n.startswith("bridge")}
            for name, ls in ports.items():
                # A port cabled to a drive or a dock is not a network link: its speed is
                # no link's (system_profiler lists a Mac at the other end by its IP service)
                speed = ls.speed_mbit if ls.detail.get("ip_service") else None
                if name in kinds:
                    out[name] = HwLink(name, speed, ls.max_mbit, source="system_profiler")
            for name, ls in found.items():
                if name in kinds and name not in ports:
                    # a link through the bridge crosses one of its networked cables
                    speeds = [out[m].speed_mbit for m in ls.members
                              if m in out and out[m].speed_mbit]
                    out[name] = HwLink(name, max(speeds) if speeds else None, ls.max_mbit,
                                       members=ls.members, bridge=True,
                                       source="system_profiler")
        if any(k == "wifi" for k in kinds.values()):
            rates = (hw_macos_wifi.wifi_rates(self.runner, self.wifi_loader)
                     if self.wifi_loader else hw_macos_wifi.wifi_rates(self.runner))
            for name, w in (rates or {}).items():
                if name in kinds:
                    out[name] = HwLink(name, w.rate_mbit, phy_rate=True, source=w.source)
        for name, kind in kinds.items():
            if kind == "ethernet" and name not in out:
                ls = hw_macos.ethernet_media(name, self.runner)
                if ls is not None and (ls.speed_mbit or ls.max_mbit):
                    out[name] = HwLink(name, ls.speed_mbit, ls.max_mbit, source="ifconfig")
        return out

    def member_for_peer(self, bridge: str, peer_ip: str) -> str | None:
        """ARP (IP -> MAC), then the bridge's address cache (MAC -> member):
        hw_macos_bridge."""
        return self.members_for_peers([(bridge, peer_ip)])[(bridge, peer_ip)]

    def members_for_peers(self, pairs: list[tuple[str, str]],
                          ) -> dict[tuple[str, str], str | None]:
        """A round of pairs at once: `arp -an`, `ndp -an`, each bridge's cache once."""
        if self.member_finder is not None:
            return {(b, ip): self.member_finder(b, ip) for b, ip in pairs}
        return hw_macos_bridge.bridge_members_for_peers(pairs, self.runner)


class NoReader:
    """Platforms without readers: everything stays as psutil says."""

    def links(self, kinds: Mapping[str, str]) -> dict[str, HwLink]:
        return {}

    def member_for_peer(self, bridge: str, peer_ip: str) -> str | None:
        return None


def reader_for(platform: str | None = None) -> HwReader:
    platform = platform or sys.platform
    if platform.startswith("linux"):
        return LinuxReader()
    if platform == "darwin":
        return MacReader()
    return NoReader()
