"""Which interfaces mDNS uses when none is named: not VPNs (a utun refuses multicast and
peers are not found through a VPN) and not macOS's internal AirDrop/peer-to-peer ones;
bridges, veths and the Thunderbolt Bridge stay."""

from __future__ import annotations

import pytest

from exotray.agent.hw.kinds import classify_macos, mdns_by_default


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("en0", True), ("bridge0", True), ("en2", True),
        ("utun3", False), ("ipsec0", False), ("ppp0", False),
        ("awdl0", False), ("llw0", False), ("anpi0", False), ("ap1", False),
        ("lo0", False),
    ],
)
def test_macos_interfaces(name, expected):
    ports = {"en0": ("wifi", "Wi-Fi"), "bridge0": ("thunderbolt", "Thunderbolt Bridge"),
             "en2": ("thunderbolt", "Thunderbolt 1")}
    kind, _ = classify_macos(name, ports)
    assert mdns_by_default(name, kind) is expected


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("eth0", "ethernet", True), ("br0", "virtual", True), ("xt1a", "virtual", True),
        ("thunderbolt0", "thunderbolt", True), ("wlan0", "wifi", True),
        ("tailscale0", "vpn", False), ("wg0", "vpn", False), ("lo", "loopback", False),
    ],
)
def test_linux_interfaces(name, kind, expected):
    assert mdns_by_default(name, kind) is expected
