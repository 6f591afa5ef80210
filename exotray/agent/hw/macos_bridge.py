"""macOS: the member port of a bridge (the Thunderbolt Bridge ``bridge0``, members
``en1``…``en5``) through which a peer is reached — the ARP table (IPv4) or the neighbour
table (IPv6) gives the peer's MAC, the bridge's address cache gives the member that MAC
was learned on. The Linux counterpart is
:func:`exotray.agent.hw.linux.bridge_member_for_peer`.

Pure parsers (text in, values out; never raise) plus one thin runner that calls the
commands through the :data:`~exotray.agent.hw.macos.Runner` seam. Synchronous and
read-only: the agent calls it off its event loop. Neither command needs root.

Formats, from Apple's sources (apple-oss-distributions; the lines are cited in
tests/fixtures/macos/README.md):

* ``ifconfig bridge0 addr`` — network_cmds ``ifconfig.tproj/ifbridge.c``:
  ``DEF_CMD("addr", 1, setbridge_addr)`` calls ``bridge_addresses(s, "")``, which reads the
  cache (ioctl ``BRDGRTS``, no super-user flag in xnu's ``bridge_control_table``) and prints
  one line per entry with ``printf("%s%s Vlan%d %s %lu ", prefix, ether_ntoa(&ea),
  ifba_vlan, ifba_ifsname, ifba_expire)`` then ``printb("flags", ifba_flags, IFBAFBITS)``:
  ``36:8:1f:0:a:c1 Vlan1 en2 1187 flags=0<>``. Plain ``ifconfig bridge0`` (one interface,
  not ``-a``) prints the same lines after ``\\tAddress cache:`` with the prefix ``"\\t\\t"``.
  ``ether_ntoa`` (Libinfo ``gen.subproj/ether_addr.c``) formats ``"%x:%x:%x:%x:%x:%x"``: no
  leading zeros.
* ``arp -an`` — network_cmds ``arp.tproj/arp.c`` ``print_entry``: ``"%s (%s) at "`` (host,
  IP; the host is ``?`` with ``-n``), then the link-layer address from ``print_lladdr``
  (``"%x%s"`` per octet: no leading zeros) or ``(incomplete)``, then ``" on %s"`` (the
  interface), `` ifscope``, `` permanent``… and ``[bridge]`` / ``[ethernet]``. The whole
  table is read (one line per entry, exit status 0) rather than ``arp -n IP``, which exits
  1 when the IP has no entry and prints every interface's entry for that IP.

* ``ndp -an`` — the neighbour table, in the columns its man page ndp(8) names for ``-a``:
  ``Neighbor`` (the IPv6 address, a link-local one with ``%interface``), ``Linklayer
  Address`` (no leading zeros, or ``(incomplete)``), ``Netif``, ``Expire``, ``S``, flags,
  under one header line: ``fe80::3408:1fff:fe00:ac1%bridge0  36:8:1f:0:a:c1  bridge0
  23h59m54s S``. The whole table is read, once a round, as ``arp -an`` is.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass

from exotray.agent.hw.macos import CMD_TIMEOUT_S, Runner, run_command

logger = logging.getLogger(__name__)

ARP_CMD = ("arp", "-an")
NDP_CMD = ("ndp", "-an")

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.]{0,15}")
_OCTET = re.compile(r"[0-9A-Fa-f]{1,2}")


def normalize_mac(text: object) -> str | None:
    """``"0:1c:42:a:b:c"`` (macOS, no leading zeros) or ``"00:1C:42:0A:0B:0C"`` ->
    ``"00:1c:42:0a:0b:0c"``; anything that is not six hex octets -> ``None``."""
    if not isinstance(text, str):
        return None
    parts = text.strip().split(":")
    if len(parts) != 6 or not all(_OCTET.fullmatch(p) for p in parts):
        return None
    return ":".join(f"{int(p, 16):02x}" for p in parts)


# --------------------------------------------------------------------------- address cache


@dataclass(frozen=True)
class CacheEntry:
    """One line of a bridge's address cache."""

    mac: str  # normalised
    vlan: int
    member: str
    expire_s: int  # seconds left for a learned entry; 0 for a static one
    flags: int  # IFBAF_STATIC 0x1, IFBAF_STICKY 0x2


_CACHE_LINE = re.compile(
    r"^\s*(?P<mac>[0-9A-Fa-f]{1,2}(?::[0-9A-Fa-f]{1,2}){5}) Vlan(?P<vlan>\d+)"
    r" (?P<member>\S+) (?P<expire>\d+) flags=(?P<flags>[0-9A-Fa-f]+)<[^>]*>\s*$")


def parse_address_entries(text: object) -> list[CacheEntry]:
    """Every cache line of ``ifconfig bridgeN addr`` (or of ``ifconfig bridgeN``, whose
    other lines are skipped); ``[]`` for garbage. Never raises."""
    if not isinstance(text, str):
        return []
    entries = []
    for line in text.splitlines():
        m = _CACHE_LINE.match(line)
        mac = normalize_mac(m.group("mac")) if m else None
        if m is None or mac is None or not _NAME.fullmatch(m.group("member")):
            continue
        entries.append(CacheEntry(mac, int(m.group("vlan")), m.group("member"),
                                  int(m.group("expire")), int(m.group("flags"), 16)))
    return entries


def parse_address_cache(text: object) -> dict[str, str]:
    """``{mac: member}`` of a bridge's address cache. A MAC listed on two different
    members (it cannot be on a VLAN-less Thunderbolt Bridge) is left out: which cable
    reaches it is not known."""
    found: dict[str, str] = {}
    ambiguous: set[str] = set()
    for e in parse_address_entries(text):
        if found.get(e.mac, e.member) != e.member:
            ambiguous.add(e.mac)
        found.setdefault(e.mac, e.member)
    return {mac: member for mac, member in found.items() if mac not in ambiguous}


# --------------------------------------------------------------------------- ARP


@dataclass(frozen=True)
class ArpEntry:
    """One line of ``arp -an``."""

    ip: str
    mac: str | None  # normalised; None when "(incomplete)" or not an Ethernet address
    interface: str | None
    permanent: bool = False
    ifscope: bool = False


_ARP_LINE = re.compile(
    r"^\S+ \((?P<ip>[0-9.]+)\) at (?P<ll>\S+)(?: on (?P<ifname>\S+))?(?P<rest>.*)$")


def parse_arp(text: object) -> list[ArpEntry]:
    """Entries of ``arp -an`` (or ``arp -n IP``) output; lines that are not entries
    (``IP (IP) -- no entry``, errors, garbage) are skipped. Never raises."""
    if not isinstance(text, str):
        return []
    entries = []
    for line in text.splitlines():
        m = _ARP_LINE.match(line.strip())
        if not m:
            continue
        try:
            ip = str(ipaddress.IPv4Address(m.group("ip")))
        except ValueError:
            continue
        rest = m.group("rest").split()
        entries.append(ArpEntry(ip, normalize_mac(m.group("ll")), m.group("ifname"),
                                "permanent" in rest, "ifscope" in rest))
    return entries


def unicast_macs(entries: Iterable[ArpEntry | NdpEntry]) -> dict[tuple[str, str], str]:
    """(ip, interface) -> the first unicast MAC a neighbour table gives there (incomplete
    and broadcast/multicast entries left out: the group bit, ff:ff:ff:ff:ff:ff, 1:0:5e:…)."""
    out: dict[tuple[str, str], str] = {}
    for e in entries:
        if e.mac is not None and not int(e.mac[:2], 16) & 1:
            out.setdefault((e.ip, e.interface), e.mac)
    return out


def arp_mac(text: object, ip: str, interface: str) -> str | None:
    """The unicast MAC that ``arp -an`` output gives for ``ip`` on ``interface``; ``None``
    when there is no entry there, it is incomplete, or it is a broadcast/multicast one."""
    return unicast_macs(parse_arp(text)).get((ip, interface))


# --------------------------------------------------------------------------- NDP


@dataclass(frozen=True)
class NdpEntry:
    """One line of ``ndp -an``."""

    ip: str  # compressed, without its zone
    mac: str | None  # normalised; None when "(incomplete)"
    interface: str


_NDP_LINE = re.compile(
    r"^(?P<ip>[0-9A-Fa-f:.]+)(?:%\S+)?\s+(?P<ll>\S+)\s+(?P<ifname>\S+)\s+\S+")


def parse_ndp(text: object) -> list[NdpEntry]:
    """Entries of ``ndp -an`` output; the header and lines that are not entries are
    skipped. Never raises."""
    if not isinstance(text, str):
        return []
    entries = []
    for line in text.splitlines():
        m = _NDP_LINE.match(line.strip())
        if not m or not _NAME.fullmatch(m.group("ifname")):
            continue
        try:
            ip = str(ipaddress.IPv6Address(m.group("ip")))
        except ValueError:
            continue
        entries.append(NdpEntry(ip, normalize_mac(m.group("ll")), m.group("ifname")))
    return entries


def _peer_address(peer_ip: object) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """A peer's address as a link names it (``fe80::1%bridge0`` too: the zone goes)."""
    try:
        return ipaddress.ip_address(str(peer_ip).strip().split("%", 1)[0])
    except ValueError:
        return None


# --------------------------------------------------------------------------- runner


def bridge_member_for_peer(bridge: str, peer_ip: str, runner: Runner = run_command,
                           mac: str | None = None) -> str | None:
    """The member of ``bridge`` (``"en3"``) through which ``peer_ip`` is reached, or
    ``None`` when it cannot be known: the peer is not (or incompletely) in the ARP table
    (IPv4) or the neighbour table (IPv6) on that bridge, its MAC is not (or no longer) in
    the bridge's address cache, a command failed (logged by the runner), or the address
    is not one. ``mac`` skips the table lookup when the caller knows it."""
    if mac is not None:
        if not _valid_bridge(bridge) or (mac := normalize_mac(mac)) is None:
            return None
        cache = parse_address_cache(runner(("ifconfig", bridge, "addr"), CMD_TIMEOUT_S))
        return cache.get(mac)
    return bridge_members_for_peers([(bridge, peer_ip)], runner)[(bridge, peer_ip)]


def bridge_members_for_peers(pairs: list[tuple[str, str]], runner: Runner = run_command,
                             ) -> dict[tuple[str, str], str | None]:
    """`bridge_member_for_peer` for many (bridge, peer) pairs at once: ``arp -an`` runs
    once if an IPv4 peer needs it, ``ndp -an`` once if an IPv6 one does, ``ifconfig
    bridgeN addr`` once per bridge that a found MAC needs (issue 35: they ran once per
    pair, every 30 s, every 5 s while unknown)."""
    out: dict[tuple[str, str], str | None] = {}
    tables: dict[int, dict[tuple[str, str], str]] = {}  # 4: arp -an, 6: ndp -an, parsed
    caches: dict[str, dict[str, str]] = {}
    for bridge, peer_ip in pairs:
        out[(bridge, peer_ip)] = None
        if not _valid_bridge(bridge):
            continue
        ip = _peer_address(peer_ip)
        if ip is None:
            logger.debug("bridge_member_for_peer: %r is not an IP address", peer_ip)
            continue
        if ip.version not in tables:  # (run and parsed once a round, not once a peer)
            text = runner(ARP_CMD if ip.version == 4 else NDP_CMD, CMD_TIMEOUT_S) or ""
            tables[ip.version] = unicast_macs(
                parse_arp(text) if ip.version == 4 else parse_ndp(text))
        mac = tables[ip.version].get((str(ip), bridge))
        if mac is None:
            logger.debug("bridge_member_for_peer: no neighbour entry for %s on %s", ip, bridge)
            continue
        if bridge not in caches:
            caches[bridge] = parse_address_cache(
                runner(("ifconfig", bridge, "addr"), CMD_TIMEOUT_S))
        out[(bridge, peer_ip)] = caches[bridge].get(mac)
    return out


def _valid_bridge(bridge: object) -> bool:
    if isinstance(bridge, str) and _NAME.fullmatch(bridge):
        return True
    logger.warning("bridge_member_for_peer: not an interface name: %r", bridge)
    return False
