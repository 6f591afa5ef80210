"""Linux link readers: what the OS says a link can carry, and which bridge port reaches a peer.

- Wi-Fi: the current tx bitrate of the station an interface is associated with, over
  nl80211 (pyroute2's ``IW``; ``NL80211_STA_INFO_TX_BITRATE`` → ``NL80211_RATE_INFO_BITRATE32``,
  or the older u16 ``NL80211_RATE_INFO_BITRATE``, both in units of 100 kbit/s). It is a PHY
  rate: real throughput is well below it.
- Thunderbolt networking (``thunderbolt-net``): the XDomain the interface's service hangs off
  reports ``{rx,tx}_speed`` ("20.0 Gb/s", per lane) and ``{rx,tx}_lanes`` (1, 2, or 3 on an
  asymmetric USB4 v2 link), Documentation/ABI/testing/sysfs-bus-thunderbolt.
- Bridges and bonds: members from sysfs (``brif/``, ``bonding/slaves``); a bond's capacity is
  its active members' (the active slave's in active-backup, the sum of the up slaves of the
  active aggregator otherwise).
- The bridge member that reaches a peer: neighbour table (IP → MAC, netlink or /proc/net/arp)
  → the bridge's forwarding table (sysfs ``brforward``, ``struct __fdb_entry`` of
  include/uapi/linux/if_bridge.h) → port number → ``brif/<member>/port_no``.

Everything here blocks (sysfs reads, netlink round trips): call it off the event loop. No
function raises for a missing or vanished interface; they answer None (or empty) instead.
pyroute2 is optional at import time: without it the Wi-Fi rate is unknown and neighbours
come from /proc/net/arp.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import re
import socket
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SYS_NET = "/sys/class/net"
PROC_ARP = "/proc/net/arp"

# -- reading sysfs ------------------------------------------------------------------------


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii", errors="replace").strip()
    except (OSError, ValueError):
        return None


def link_speed_mbit(name: str, sys_net: str | os.PathLike = SYS_NET) -> int | None:
    """``/sys/class/net/<name>/speed`` in Mbit/s; None when unknown (-1, down, unreadable)."""
    text = _read(Path(sys_net, name, "speed"))
    try:
        speed = int(text) if text is not None else 0
    except ValueError:
        return None
    return speed if speed > 0 else None


def _is_up(name: str, sys_net: str | os.PathLike) -> bool:
    base = Path(sys_net, name)
    mii = _read(base / "bonding_slave" / "mii_status")
    if mii is not None:
        return mii == "up"
    return _read(base / "operstate") in ("up", "unknown")


def _require_off_loop() -> None:
    """pyroute2 >= 0.9's synchronous sockets run their own asyncio loop: on a thread that
    already runs one they fail (and would look like "no Wi-Fi"). Say so instead."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError("hw_linux netlink readers block: call them off the event loop "
                       "(asyncio.to_thread)")


# -- Wi-Fi over nl80211 -------------------------------------------------------------------


def _attr(msg: Any, name: str) -> Any:
    """An attribute of a pyroute2 netlink message, or of its plain-dict form
    ``{"attrs": [[name, value], ...]}`` (as ``msg.dump()`` gives and as fixtures hold)."""
    if msg is None:
        return None
    if hasattr(msg, "get_attr"):
        return msg.get_attr(name)
    if isinstance(msg, Mapping):
        for key, value in msg.get("attrs", ()):
            if key == name:
                return value
    return None


def station_tx_mbit(station: Any) -> float | None:
    """The current unicast tx rate of one ``NL80211_CMD_NEW_STATION`` message, Mbit/s."""
    info = _attr(station, "NL80211_ATTR_STA_INFO")
    rate = _attr(info, "NL80211_STA_INFO_TX_BITRATE")
    # BITRATE32 is always sent when known; the u16 BITRATE only when it fits (< 6553.6 Mbit/s)
    for key in ("NL80211_RATE_INFO_BITRATE32", "NL80211_RATE_INFO_BITRATE"):
        value = _attr(rate, key)
        if isinstance(value, int) and value > 0:
            return value / 10.0
    return None


def _associated(station: Any) -> bool:
    flags = _attr(_attr(station, "NL80211_ATTR_STA_INFO"), "NL80211_STA_INFO_STA_FLAGS")
    if isinstance(flags, Mapping) and "ASSOCIATED" in flags:
        return bool(flags["ASSOCIATED"])
    return True  # drivers that do not report the flag: a listed station is a station


def wifi_tx_mbit(stations: Iterable[Any]) -> float | None:
    """The tx rate of an interface from its station dump. A client (managed mode) has one
    station, its access point; on an AP or mesh the fastest associated station is taken."""
    rates = [r for s in stations if _associated(s) and (r := station_tx_mbit(s)) is not None]
    return max(rates) if rates else None


def read_wifi_tx_mbit(ifname: str, iw_factory: Any = None) -> float | None:
    """The current tx bitrate of Wi-Fi interface `ifname` over nl80211, in Mbit/s; None
    without pyroute2, without nl80211, when not associated, or on any netlink error.
    RuntimeError when called on a thread running an event loop."""
    _require_off_loop()
    if iw_factory is None:
        try:
            from pyroute2 import IW as iw_factory
        except ImportError:
            return None
    try:
        ifindex = socket.if_nametoindex(ifname)
    except OSError:
        return None
    try:
        iw = iw_factory()
    except Exception:  # no nl80211 family in this kernel, netlink refused
        return None
    try:
        return wifi_tx_mbit(list(iw.get_stations(ifindex)))
    except Exception:  # NetlinkError (ENODEV, EOPNOTSUPP), interface gone
        return None
    finally:
        iw.close()


# -- Thunderbolt networking ---------------------------------------------------------------

_GBPS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/s\s*$")


def parse_tb_speed(text: str | None) -> int | None:
    """A Thunderbolt sysfs lane speed ("20.0 Gb/s") in Mbit/s."""
    m = _GBPS.match(text or "")
    return round(float(m.group(1)) * 1000) if m else None


@dataclass(frozen=True)
class ThunderboltLink:
    """The link of a thunderbolt-net interface, as its XDomain reports it."""

    xdomain: str  # e.g. "0-1"
    rx_lane_mbit: int
    tx_lane_mbit: int
    rx_lanes: int
    tx_lanes: int

    @property
    def rx_mbit(self) -> int:
        return self.rx_lane_mbit * self.rx_lanes

    @property
    def tx_mbit(self) -> int:
        return self.tx_lane_mbit * self.tx_lanes

    @property
    def speed_mbit(self) -> int:
        """The negotiated rate: the faster direction (equal unless the link is asymmetric,
        e.g. USB4 v2 at 3 × 40 Gb/s one way, 40 Gb/s back; rx/tx are there for that case)."""
        return max(self.rx_mbit, self.tx_mbit)


def thunderbolt_link(ifname: str, sys_net: str | os.PathLike = SYS_NET) -> ThunderboltLink | None:
    """The negotiated link of a thunderbolt-net interface (``thunderbolt0``); None for any
    other interface, an unplugged cable, or a kernel before 5.11 (no XDomain speed files).

    The net device's parent is the XDomain *service* (``0-1.0``, key "network"); the speed
    and lane files are on the XDomain (``0-1``) above it."""
    try:
        dev = Path(os.path.realpath(Path(sys_net, ifname, "device")))
    except OSError:
        return None
    driver = dev / "driver"
    if driver.exists() and os.path.basename(os.path.realpath(driver)) not in (
            "thunderbolt-net", "thunderbolt_net"):
        return None
    for d in (dev, dev.parent, dev.parent.parent):
        files = {k: _read(d / k) for k in ("rx_speed", "tx_speed", "rx_lanes", "tx_lanes")}
        if files["rx_speed"] is None and files["tx_speed"] is None:
            continue
        rx, tx = parse_tb_speed(files["rx_speed"]), parse_tb_speed(files["tx_speed"])
        try:
            rx_lanes = int(files["rx_lanes"] or 1)
            tx_lanes = int(files["tx_lanes"] or 1)
        except ValueError:
            return None
        if rx is None and tx is None:
            return None
        return ThunderboltLink(d.name, rx or tx or 0, tx or rx or 0, rx_lanes, tx_lanes)
    return None


# -- bridges and bonds --------------------------------------------------------------------


def bridge_members(name: str, sys_net: str | os.PathLike = SYS_NET) -> list[str] | None:
    """The ports of bridge `name` (sorted); None when `name` is not a bridge."""
    base = Path(sys_net, name)
    if not (base / "bridge").is_dir():
        return None
    try:
        return sorted(os.listdir(base / "brif"))
    except OSError:
        return []


def bridge_ports(name: str, sys_net: str | os.PathLike = SYS_NET) -> dict[int, str]:
    """Port number → member name, from ``brif/<member>/port_no`` ("0x1")."""
    ports = {}
    for member in bridge_members(name, sys_net) or ():
        text = _read(Path(sys_net, name, "brif", member, "port_no"))
        try:
            ports[int(text or "", 0)] = member
        except ValueError:
            continue
    return ports


@dataclass(frozen=True)
class BondInfo:
    name: str
    mode: str  # "active-backup", "802.3ad", "balance-rr", ...
    slaves: tuple[str, ...]
    active: tuple[str, ...]  # the members that carry traffic now
    speed_mbit: int | None  # their capacity: the active one's, or the active ones' sum


def bond_info(name: str, sys_net: str | os.PathLike = SYS_NET) -> BondInfo | None:
    """Members and capacity of bond `name`; None when it is not a bond."""
    base = Path(sys_net, name, "bonding")
    mode_text = _read(base / "mode")
    if mode_text is None:
        return None
    mode = mode_text.split()[0] if mode_text.split() else ""
    slaves = tuple((_read(base / "slaves") or "").split())
    if mode == "active-backup":
        current = _read(base / "active_slave") or ""
        active: tuple[str, ...] = (current,) if current in slaves else ()
    else:
        active = tuple(s for s in slaves if _is_up(s, sys_net))
        if mode == "802.3ad":
            # only the slaves of the active aggregator carry traffic
            agg = _read(base / "ad_aggregator")
            ids = {s: _read(Path(sys_net, s, "bonding_slave", "ad_aggregator_id"))
                   for s in active}
            if agg and all(ids.values()):
                active = tuple(s for s in active if ids[s] == agg)
    speeds = [link_speed_mbit(s, sys_net) for s in active]
    known = [s for s in speeds if s is not None]
    if not known:
        total = None
    elif mode in ("active-backup", "broadcast"):
        total = min(known)  # broadcast sends every frame on every slave
    else:
        total = sum(known)
    return BondInfo(name, mode, slaves, active, total)


# -- the bridge member that reaches a peer ------------------------------------------------

#: struct __fdb_entry (include/uapi/linux/if_bridge.h): mac_addr[6], port_no u8, is_local u8,
#: ageing_timer_value u32, port_hi u8, pad0 u8, unused u16 — 16 bytes, native byte order
FDB_ENTRY = struct.Struct("=6sBBIBBH")


@dataclass(frozen=True)
class FdbEntry:
    mac: str
    port: int
    is_local: bool
    ageing_cs: int  # centiseconds since last seen (jiffies_to_clock_t)


def parse_brforward(data: bytes) -> list[FdbEntry]:
    """The entries of a bridge's ``brforward`` file (a trailing partial entry is ignored)."""
    entries = []
    for off in range(0, len(data) - FDB_ENTRY.size + 1, FDB_ENTRY.size):
        mac, port_no, is_local, ageing, port_hi, _pad, _unused = FDB_ENTRY.unpack_from(data, off)
        entries.append(FdbEntry(mac.hex(":"), port_hi << 8 | port_no, bool(is_local), ageing))
    return entries


def read_brforward(name: str, sys_net: str | os.PathLike = SYS_NET) -> list[FdbEntry]:
    try:
        return parse_brforward(Path(sys_net, name, "brforward").read_bytes())
    except OSError:
        return []


def member_for_mac(bridge: str, mac: str, sys_net: str | os.PathLike = SYS_NET) -> str | None:
    """The member of `bridge` whose forwarding entry holds `mac`."""
    mac = mac.lower()
    for entry in read_brforward(bridge, sys_net):
        if entry.mac == mac and not entry.is_local:
            return bridge_ports(bridge, sys_net).get(entry.port)
    return None


def parse_proc_arp(text: str) -> dict[tuple[str, str], str]:
    """/proc/net/arp → {(ip, device): mac} of complete entries (flags ATF_COM 0x2)."""
    table = {}
    for line in text.splitlines()[1:]:
        f = line.split()
        if len(f) >= 6 and int(f[2], 16) & 0x2 and f[3] != "00:00:00:00:00:00":
            table[(f[0], f[5])] = f[3].lower()
    return table


#: NUD_INCOMPLETE | NUD_FAILED | NUD_NOARP (include/uapi/linux/neighbour.h): no peer's address
_NUD_UNUSABLE = 0x01 | 0x20 | 0x40


def neighbour_mac(ip: str, ifname: str, proc_arp: str = PROC_ARP,
                  ipr_factory: Any = None) -> str | None:
    """The link-layer address of neighbour `ip` on `ifname`: netlink RTM_GETNEIGH through
    pyroute2 where installed (IPv4 and IPv6), else /proc/net/arp (IPv4). An IPv6 address
    may come with its zone (``fe80::1%br0``) or uncompressed: pyroute2 compares NDA_DST as
    the kernel's compressed text, so it is asked in that form. RuntimeError when called
    on a thread running an event loop."""
    _require_off_loop()
    try:
        ip = str(ipaddress.ip_address(str(ip).split("%", 1)[0].strip()))
    except ValueError:
        return None
    if ipr_factory is None:
        try:
            from pyroute2 import IPRoute as ipr_factory
        except ImportError:
            ipr_factory = None
    if ipr_factory is not None:
        try:
            ifindex = socket.if_nametoindex(ifname)
            with ipr_factory() as ipr:
                for n in ipr.get_neighbours(dst=ip, ifindex=ifindex):
                    lladdr = n.get_attr("NDA_LLADDR")
                    if lladdr and lladdr != "00:00:00:00:00:00" and not (
                            n["state"] & _NUD_UNUSABLE):
                        return str(lladdr).lower()
            return None
        except Exception:  # interface gone, netlink refused: try the proc file
            pass
    try:
        text = Path(proc_arp).read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return parse_proc_arp(text).get((ip, ifname))


def bridge_member_for_peer(bridge: str, peer_ip: str, sys_net: str | os.PathLike = SYS_NET,
                           mac: str | None = None) -> str | None:
    """The member interface of `bridge` through which `peer_ip` is reached, or None when the
    peer is not in the neighbour table or its MAC not (or no longer) in the forwarding table.
    `mac` skips the neighbour lookup when the caller knows it."""
    if bridge_members(bridge, sys_net) is None:
        return None
    mac = mac or neighbour_mac(peer_ip, bridge)
    return member_for_mac(bridge, mac, sys_net) if mac else None
