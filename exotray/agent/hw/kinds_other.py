"""Interface kinds on macOS (from `networksetup -listallhardwareports` and name rules)
and, from the name alone, on other OSes. Pure text parsing: the classifier that runs
networksetup (off the event loop) is hw/kinds.py."""

from __future__ import annotations

import re

Classification = tuple[str, str]


# --------------------------------------------------------------------------- macOS

_TB_NUMBERED = re.compile(r"^thunderbolt\s+\d+$")
_WORD_LAN = re.compile(r"\blan\b")


def macos_port_kind(port: str) -> str:
    """Kind for a macOS Hardware Port name ("Wi-Fi", "Thunderbolt 1", ...)."""
    low = " ".join(port.lower().replace("\u2011", "-").split())
    if low in ("wi-fi", "airport") or low.startswith(("wi-fi", "airport")):
        return "wifi"
    if low == "thunderbolt bridge" or _TB_NUMBERED.match(low):
        return "thunderbolt"
    if low.startswith(("bluetooth", "iphone", "ipad")) or "firewire" in low:
        return "other"
    # "Thunderbolt Ethernet", "Thunderbolt Ethernet Slot 1[, Port 1]", "Display Ethernet",
    # "USB 10/100/1000 LAN", "Ethernet Adapter (en5)", "Apple USB Ethernet Adapter".
    if "ethernet" in low or _WORD_LAN.search(low):
        return "ethernet"
    if low.startswith("thunderbolt"):
        return "thunderbolt"
    return "other"


def parse_networksetup(text: str) -> dict[str, Classification]:
    """Parse ``networksetup -listallhardwareports`` into ``{device: (kind, label)}``.

    The label is the Hardware Port name. Blocks without a device are skipped. VLANs listed
    in the trailing "VLAN Configurations" section are reported as ``virtual``. Unknown
    lines are ignored, so CRLF, indentation and stray text are tolerated.
    """
    ports: dict[str, Classification] = {}
    port: str | None = None
    in_vlans = False
    vlan_name: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        low = line.lower()
        if low.startswith("vlan configurations"):
            in_vlans = True
            port = None
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key_low = key.strip().lower()
        value = value.strip()
        if key_low == "hardware port":
            in_vlans = False
            port = value or None
        elif key_low == "device" and not in_vlans:
            if port is not None and value:
                ports[value] = (macos_port_kind(port), port)
            port = None
        elif in_vlans and key_low == "vlan user defined name":
            vlan_name = value or None
        elif in_vlans and key_low.startswith("device (") and value:
            label = f"VLAN ({vlan_name})" if vlan_name else "VLAN"
            ports.setdefault(value, ("virtual", label))
            vlan_name = None
    return ports


# name prefix -> (kind, label) for BSD interfaces that have no hardware port.
_MACOS_NAME_RULES: tuple[tuple[str, Classification], ...] = (
    ("utun", ("vpn", "VPN (utun)")),
    ("ipsec", ("vpn", "VPN (IPsec)")),
    ("ppp", ("vpn", "VPN (PPP)")),
    ("tun", ("vpn", "VPN (tun)")),
    ("tap", ("vpn", "VPN (tap)")),
    ("awdl", ("virtual", "AirDrop (AWDL)")),
    ("llw", ("virtual", "Low Latency WLAN")),
    ("anpi", ("virtual", "Apple internal network")),
    ("ap", ("virtual", "Wi-Fi Access Point")),
    ("p2p", ("virtual", "Wi-Fi Peer-to-Peer")),
    ("gif", ("virtual", "Generic Tunnel")),
    ("stf", ("virtual", "6to4 Tunnel")),
    ("bridge", ("virtual", "Bridge")),
    ("vmenet", ("virtual", "VM Network")),
    ("vmnet", ("virtual", "VM Network")),
    ("feth", ("virtual", "Fake Ethernet")),
    ("vlan", ("virtual", "VLAN")),
    ("bond", ("virtual", "Bond")),
)


def classify_macos(name: str, ports: dict[str, Classification]) -> Classification:
    """(kind, label) for a macOS interface: hardware port first, then name rules."""
    found = ports.get(name)
    if found is not None:
        return found
    if name == "lo0" or re.fullmatch(r"lo\d+", name):
        return ("loopback", "Loopback")
    for prefix, result in _MACOS_NAME_RULES:
        if name.startswith(prefix):
            return result
    return ("other", name)


# --------------------------------------------------------------------------- other OSes


def _classify_generic(name: str) -> Classification:
    """Best effort from the name alone (Windows friendly names, BSDs)."""
    low = name.lower()
    if low.startswith("lo") and (low == "lo" or low[2:].isdigit() or "loopback" in low):
        return ("loopback", "Loopback")
    if "loopback" in low:
        return ("loopback", "Loopback")
    if "wi-fi" in low or "wifi" in low or "wireless" in low or "wlan" in low:
        return ("wifi", name)
    if "thunderbolt" in low:
        return ("thunderbolt", name)
    if any(word in low for word in ("vpn", "wireguard", "tailscale", "zerotier", "openvpn")):
        return ("vpn", name)
    if low.startswith(("vethernet", "vmware", "virtualbox", "hyper-v")):
        return ("virtual", name)
    if "ethernet" in low:
        return ("ethernet", name)
    return ("other", name)


#: macOS interfaces that carry no cluster traffic and where mDNS does harm or nothing:
#: AirDrop's AWDL and its low-latency companion, Apple internal networks, the Wi-Fi
#: access-point and peer-to-peer interfaces.
_NO_MDNS_PREFIXES = ("awdl", "llw", "anpi", "ap", "p2p")


def mdns_by_default(name: str, kind: str) -> bool:
    """Whether mDNS announces and browses on this interface when no --mdns-interface is
    given: not on VPNs (a utun refuses multicast, and peers are not found through a VPN)
    nor on the macOS-internal interfaces above. Bridges and veths stay: a Linux bridge
    or the Thunderbolt Bridge is where cluster peers are."""
    if kind in ("vpn", "loopback"):
        return False
    return not (kind == "virtual" and name.startswith(_NO_MDNS_PREFIXES))
