"""An IPv6 peer's bridge member on macOS (issue 35 point 6): its MAC from ``ndp -an``, then
the bridge's address cache, as an IPv4 peer's from ``arp -an``. The ``ndp -an`` fixture is
synthetic (tests/fixtures/macos/README.md says how it was built); the commands go through
the runner seam, which records what would have run on a Mac."""

from __future__ import annotations

from pathlib import Path

import pytest

from exotray.agent.hw import macos_bridge as hb
from exotray.agent.hw.hardware import Hardware
from exotray.agent.hw.read import MacReader

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "macos"
ARP, NDP = ("arp", "-an"), ("ndp", "-an")
ADDR = ("ifconfig", "bridge0", "addr")


def fx(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


class FakeMac:
    def __init__(self) -> None:
        self.outputs = {ARP: fx("arp_an_bridge0_SYNTHETIC.txt"),
                        NDP: fx("ndp_an_bridge0_SYNTHETIC.txt"),
                        ADDR: fx("bridge_addr_bridge0_SYNTHETIC.txt")}
        self.calls: list[tuple[str, ...]] = []

    def __call__(self, argv, timeout):
        self.calls.append(tuple(argv))
        return self.outputs.get(tuple(argv))


def test_the_neighbour_table_parsed():
    entries = hb.parse_ndp(fx("ndp_an_bridge0_SYNTHETIC.txt"))
    assert len(entries) == 10  # every line but the header
    assert entries[2] == hb.NdpEntry("fe80::3408:1fff:fe00:ac1", "36:08:1f:00:0a:c1", "bridge0")
    assert hb.NdpEntry("fe80::dead:beef", None, "bridge0") in entries  # (incomplete)
    assert hb.NdpEntry("fd00:7e::5", "36:08:1f:00:0b:05", "bridge0") in entries
    for garbage in (None, "", 42, "Neighbor Linklayer Address", "zz::1 1:2:3:4:5:6 en0 5s R",
                    "fe80::1%en0 36:8:1f:0:0:1 en0; 5s R"):
        assert hb.parse_ndp(garbage) == []


@pytest.mark.parametrize("peer,member", [
    ("fe80::3408:1fff:fe00:ac1%bridge0", "en2"),
    ("fe80::3408:1fff:fe00:b05", "en3"),
    ("FE80:0:0:0:38D0:EFF:FE71:2009", "en5"),
    ("fd00:7e::5", "en3"),
])
def test_an_ipv6_peers_member(peer, member):
    mac = FakeMac()
    assert hb.bridge_member_for_peer("bridge0", peer, runner=mac) == member
    assert mac.calls == [NDP, ADDR]


@pytest.mark.parametrize("peer", [
    "fe80::dead:beef%bridge0",  # incomplete
    "fe80::face:21ff:fe39:5bf4",  # only on en0
    "fe80::3408:1fff:fe00:c01",  # its MAC is not in the address cache
    "fe80::99",  # not in the table
])
def test_an_ipv6_peer_not_known_is_none(peer):
    assert hb.bridge_member_for_peer("bridge0", peer, runner=FakeMac()) is None


def test_a_round_of_ipv4_and_ipv6_peers_runs_each_table_once():
    """Once a round, as point 5 made arp: `arp -an` once, `ndp -an` once, the cache once."""
    mac = FakeMac()
    pairs = [("bridge0", p) for p in ("169.254.12.7", "fe80::3408:1fff:fe00:b05%bridge0",
                                      "169.254.130.4", "fd00:7e::5", "fe80::99")]
    found = Hardware(MacReader(runner=mac))._resolve(pairs)
    assert found == {("bridge0", "169.254.12.7"): "en2",
                     ("bridge0", "fe80::3408:1fff:fe00:b05%bridge0"): "en3",
                     ("bridge0", "169.254.130.4"): "en5", ("bridge0", "fd00:7e::5"): "en3",
                     ("bridge0", "fe80::99"): None}
    assert sorted(mac.calls) == sorted([ARP, ADDR, NDP])


def test_only_ipv4_peers_run_no_ndp():
    mac = FakeMac()
    Hardware(MacReader(runner=mac))._resolve([("bridge0", "169.254.12.7")])
    assert NDP not in mac.calls
