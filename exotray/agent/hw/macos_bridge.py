"""macOS: the member port of a bridge (the Thunderbolt Bridge ``bridge0``, members
``en1``…``en5``) through which a peer is reached — the ARP table gives the peer's MAC, the
bridge's address cache gives the member that MAC was learned on. The Linux counterpart is
:func:`exotray.agent.hw.linux.bridge_member_for_peer`.

Pure parsers (text in, values out; never raise) plus one thin runner that calls two
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

IPv4 only: an IPv6 peer's MAC is in the NDP table (``ndp -an``), not read here.
"""

from __future__ import annotations

import ipaddress
import logging
import re
from dataclasses import dataclass

from exotray.agent.hw.macos import CMD_TIMEOUT_S, Runner, run_command

logger = logging.getLogger(__name__)

ARP_CMD = ("arp", "-an")

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


def arp_mac(text: object, ip: str, interface: str) -> str | None:
    """The unicast MAC that ``arp -an`` output gives for ``ip`` on ``interface``; ``None``
    when there is no entry there, it is incomplete, or it is a broadcast/multicast one."""
    for e in parse_arp(text):
        if e.ip == ip and e.interface == interface and e.mac is not None:
            if int(e.mac[:2], 16) & 1:  # group bit: ff:ff:ff:ff:ff:ff, 1:0:5e:…
                continue
            return e.mac
    return None


# --------------------------------------------------------------------------- runner


def bridge_member_for_peer(bridge: str, peer_ip: str, runner: Runner = run_command,
                           mac: str | None = None) -> str | None:
    """The member of ``bridge`` (``"en3"``) through which ``peer_ip`` is reached, or
    ``None`` when it cannot be known: the peer is not (or incompletely) in the ARP table
    on that bridge, its MAC is not (or no longer) in the bridge's address cache, a command
    failed (logged by the runner), or the address is not IPv4. ``mac`` skips the ARP
    lookup when the caller knows it."""
    if mac is not None:
        if not _valid_bridge(bridge) or (mac := normalize_mac(mac)) is None:
            return None
        cache = parse_address_cache(runner(("ifconfig", bridge, "addr"), CMD_TIMEOUT_S))
        return cache.get(mac)
    return bridge_members_for_peers([(bridge, peer_ip)], runner)[(bridge, peer_ip)]


def bridge_members_for_peers(pairs: list[tuple[str, str]], runner: Runner = run_command,
                             ) -> dict[tuple[str, str], str | None]:
    """`bridge_member_for_peer` for many (bridge, peer) pairs at once: ``arp -an`` runs
    once, ``ifconfig bridgeN addr`` once per bridge that a found MAC needs (issue 35: they
    ran once per pair, every 30 s, every 5 s while unknown)."""
    out: dict[tuple[str, str], str | None] = {}
    arp: str | None = None
    caches: dict[str, dict[str, str]] = {}
    for bridge, peer_ip in pairs:
        out[(bridge, peer_ip)] = None
        if not _valid_bridge(bridge):
            continue
        try:
            ip = str(ipaddress.IPv4Address(str(peer_ip).strip()))
        except ValueError:
            logger.debug("bridge_member_for_peer: %r is not IPv4; not looked up", peer_ip)
            continue
        if arp is None:
            arp = runner(ARP_CMD, CMD_TIMEOUT_S) or ""
        mac = arp_mac(arp, ip, bridge)
        if mac is None:
            logger.debug("bridge_member_for_peer: no ARP entry for %s on %s", ip, bridge)
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
