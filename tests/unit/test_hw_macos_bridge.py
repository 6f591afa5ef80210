"""The bridge member that reaches a peer on macOS (exotray/agent/hw/macos_bridge.py), on the
fixtures in tests/fixtures/macos/ (their origin is in its README.md: the ARP table of
local-devices issue #10 is a real recording; the bridge0 address cache and ARP table are
built from the printf formats of Apple's ifconfig and arp). No Mac runs here: the two
commands go through the runner seam, which records what it was asked to run."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from exotray.agent.hw import macos_bridge as hb
from exotray.agent.hw.macos import parse_bridge_members, parse_ifconfig

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "macos"
ADDR = "bridge_addr_bridge0_SYNTHETIC.txt"  # `ifconfig bridge0 addr`
FULL = "ifconfig_bridge0_addrcache_SYNTHETIC.txt"
ARP = "arp_an_bridge0_SYNTHETIC.txt"
ARP_REAL = "arp_a_en0_local-devices-issue10.txt"

ARP_ARGV = ("arp", "-an")
ADDR_ARGV = ("ifconfig", "bridge0", "addr")

GARBAGE = [None, "", "\n\n", "garbage", b"\xff\xfe", 42, ["x"], "ifconfig: bad value",
           "usage: arp [-n] [-i interface] hostname",
           "a:b:c:d:e:f Vlan1\n zz:1:2:3:4:5 Vlan1 en2 5 flags=0<>\n? (999.1.1.1) at 1:2:3:4:5:6"]


def fx(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


class FakeMac:
    """The runner seam: argv -> stdout (``None`` = the command failed), with a log of the
    calls so a test sees what would have run on a Mac."""

    def __init__(self, outputs: dict[tuple[str, ...], str | None]):
        self.outputs = outputs
        self.calls: list[tuple[tuple[str, ...], float]] = []

    def __call__(self, argv, timeout):
        self.calls.append((tuple(argv), timeout))
        return self.outputs.get(tuple(argv))


def mac_with(arp: object = None, addr: object = None) -> FakeMac:
    return FakeMac({ARP_ARGV: fx(ARP) if arp is None else arp,
                    ADDR_ARGV: fx(ADDR) if addr is None else addr})


# --------------------------------------------------------------------------- MACs


@pytest.mark.parametrize("text,expected", [
    ("0:1c:42:a:b:c", "00:1c:42:0a:0b:0c"),
    ("36:8:1f:0:a:c1", "36:08:1f:00:0a:c1"),
    ("00:1C:42:0A:0B:0C", "00:1c:42:0a:0b:0c"),
    ("ff:ff:ff:ff:ff:ff", "ff:ff:ff:ff:ff:ff"),
    (" 0:0:0:0:0:0 ", "00:00:00:00:00:00"),
    ("(incomplete)", None),
    ("0:c:XX:X:XX:XX", None),  # masked by the author
    ("1:2:3:4:5", None),
    ("1:2:3:4:5:6:7:8", None),  # a FireWire-length address
    ("100:2:3:4:5:6", None),
    ("", None), (None, None), (12, None),
])
def test_normalize_mac(text, expected):
    assert hb.normalize_mac(text) == expected


# --------------------------------------------------------------------------- address cache


def test_address_cache_of_ifconfig_addr():
    assert hb.parse_address_cache(fx(ADDR)) == {
        "36:08:1f:00:0a:c1": "en2",
        "36:08:1f:00:0b:05": "en3",
        "3a:d0:0e:71:20:09": "en5",
        "02:00:00:00:00:07": "en1",  # a static entry (flags=1<STATIC>) counts too
    }
    entries = hb.parse_address_entries(fx(ADDR))
    assert [(e.vlan, e.expire_s, e.flags) for e in entries] == [
        (1, 1187, 0), (1, 1199, 0), (1, 1043, 0), (1, 0, 1)]


def test_plain_ifconfig_bridge_gives_the_same_cache_and_its_members():
    """``ifconfig bridge0`` (no -a) prints the cache under "Address cache:"; the ``id
    0:0:0:0:0:0`` lines are not entries, and hw_macos's member parsing is not disturbed."""
    assert hb.parse_address_cache(fx(FULL)) == hb.parse_address_cache(fx(ADDR))
    assert parse_bridge_members(fx(FULL)) == ["en1", "en2", "en3", "en4", "en5"]
    assert parse_ifconfig(fx(FULL))["bridge0"].status == "active"


def test_a_mac_on_two_members_is_not_guessed():
    text = ("36:8:1f:0:a:c1 Vlan1 en2 1187 flags=0<>\n"
            "36:8:1f:0:a:c1 Vlan2 en4 1100 flags=0<>\n"
            "36:8:1f:0:b:5 Vlan1 en3 1199 flags=0<>\n"
            "36:8:1f:0:b:5 Vlan1 en3 1199 flags=0<>\n")
    assert hb.parse_address_cache(text) == {"36:08:1f:00:0b:05": "en3"}


@pytest.mark.parametrize("text", GARBAGE)
def test_address_cache_garbage(text):
    assert hb.parse_address_cache(text) == {}
    assert hb.parse_address_entries(text) == []


# --------------------------------------------------------------------------- ARP


def test_arp_real_recording_without_leading_zeros():
    entries = hb.parse_arp(fx(ARP_REAL))
    assert len(entries) == 21
    assert all(e.interface == "en0" and e.ifscope and not e.permanent for e in entries)
    assert hb.arp_mac(fx(ARP_REAL), "100.68.0.5", "en0") == "00:0c:29:04:37:a4"
    assert hb.arp_mac(fx(ARP_REAL), "100.68.1.13", "en0") == "8c:85:90:e6:06:88"
    assert hb.arp_mac(fx(ARP_REAL), "100.68.1.149", "en0") == "e8:b2:ac:43:71:0f"
    assert hb.arp_mac(fx(ARP_REAL), "100.68.0.2", "en0") is None  # masked MAC
    assert hb.arp_mac(fx(ARP_REAL), "100.68.0.5", "bridge0") is None  # other interface
    assert hb.arp_mac(fx(ARP_REAL), "100.68.0.55", "en0") is None


def test_arp_bridge_table():
    text = fx(ARP)
    assert hb.arp_mac(text, "169.254.12.7", "bridge0") == "36:08:1f:00:0a:c1"
    assert hb.arp_mac(text, "169.254.12.7", "en0") == "a4:83:e7:01:02:03"  # same IP, Wi-Fi
    assert hb.arp_mac(text, "169.254.201.9", "bridge0") is None  # (incomplete)
    assert hb.arp_mac(text, "169.254.255.255", "bridge0") is None  # broadcast
    assert hb.arp_mac(text, "224.0.0.251", "bridge0") is None  # multicast, permanent
    incomplete = [e for e in hb.parse_arp(text) if e.ip == "169.254.201.9"]
    assert incomplete == [hb.ArpEntry("169.254.201.9", None, "bridge0")]
    assert [e.permanent for e in hb.parse_arp(text) if e.ip == "224.0.0.251"] == [True]


def test_arp_n_ip_output_with_no_entry():
    # what `arp -n 169.254.9.9` prints (to stdout, exit 1) when there is no entry
    assert hb.parse_arp("169.254.9.9 (169.254.9.9) -- no entry\n") == []


@pytest.mark.parametrize("text", GARBAGE)
def test_arp_garbage(text):
    assert hb.parse_arp(text) == []
    assert hb.arp_mac(text, "169.254.12.7", "bridge0") is None


# --------------------------------------------------------------------------- the runner


@pytest.mark.parametrize("peer,member", [
    ("169.254.12.7", "en2"), ("169.254.77.31", "en3"), ("169.254.130.4", "en5")])
def test_member_found(peer, member):
    mac = mac_with()
    assert hb.bridge_member_for_peer("bridge0", peer, runner=mac) == member
    assert mac.calls == [(ARP_ARGV, hb.CMD_TIMEOUT_S), (ADDR_ARGV, hb.CMD_TIMEOUT_S)]


def test_peer_not_in_arp_runs_nothing_more():
    mac = mac_with()
    assert hb.bridge_member_for_peer("bridge0", "169.254.99.99", runner=mac) is None
    assert [argv for argv, _ in mac.calls] == [ARP_ARGV]


def test_peer_only_in_arp_on_another_interface():
    mac = mac_with()
    assert hb.bridge_member_for_peer("bridge0", "192.168.1.1", runner=mac) is None
    assert [argv for argv, _ in mac.calls] == [ARP_ARGV]


def test_incomplete_arp_entry():
    mac = mac_with()
    assert hb.bridge_member_for_peer("bridge0", "169.254.201.9", runner=mac) is None
    assert [argv for argv, _ in mac.calls] == [ARP_ARGV]


def test_mac_not_in_the_address_cache():
    # 169.254.90.90 resolves to 36:8:1f:0:c:1, which the bridge has not learned (or aged out)
    mac = mac_with()
    assert hb.bridge_member_for_peer("bridge0", "169.254.90.90", runner=mac) is None
    assert [argv for argv, _ in mac.calls] == [ARP_ARGV, ADDR_ARGV]


def test_plain_ifconfig_output_in_place_of_addr_works_too():
    assert hb.bridge_member_for_peer(
        "bridge0", "169.254.77.31", runner=mac_with(addr=fx(FULL))) == "en3"


@pytest.mark.parametrize("which", ["arp", "addr"])
@pytest.mark.parametrize("text", GARBAGE[1:3] + GARBAGE[-3:])
def test_garbage_output(which, text):
    mac = mac_with(arp=text) if which == "arp" else mac_with(addr=text)
    assert hb.bridge_member_for_peer("bridge0", "169.254.12.7", runner=mac) is None


def test_arp_failing():
    mac = FakeMac({ARP_ARGV: None, ADDR_ARGV: fx(ADDR)})
    assert hb.bridge_member_for_peer("bridge0", "169.254.12.7", runner=mac) is None
    assert [argv for argv, _ in mac.calls] == [ARP_ARGV]


def test_ifconfig_failing():
    mac = FakeMac({ARP_ARGV: fx(ARP), ADDR_ARGV: None})
    assert hb.bridge_member_for_peer("bridge0", "169.254.12.7", runner=mac) is None
    assert [argv for argv, _ in mac.calls] == [ARP_ARGV, ADDR_ARGV]


def test_real_run_command_failing_is_one_log_line(caplog):
    """The default runner on this (Linux) machine: ``ifconfig bridge0 addr`` and ``arp
    -an`` are absent or refuse; the answer is None with the runner's warning, no raise."""
    def only_missing(argv, timeout):
        return hb.run_command(["/nonexistent/exotray-no-such-" + argv[0], *argv[1:]], timeout)

    with caplog.at_level(logging.WARNING, logger="exotray.agent.hw.macos"):
        assert hb.bridge_member_for_peer("bridge0", "169.254.12.7",
                                         runner=only_missing) is None
    assert len([r for r in caplog.records if "failed" in r.getMessage()]) == 1


def test_known_mac_skips_arp():
    mac = mac_with()
    assert hb.bridge_member_for_peer("bridge0", "", runner=mac, mac="3A:D0:0E:71:20:09") == "en5"
    assert [argv for argv, _ in mac.calls] == [ADDR_ARGV]
    assert hb.bridge_member_for_peer("bridge0", "", runner=mac, mac="nonsense") is None


@pytest.mark.parametrize("bridge,peer", [
    ("bridge0; rm -rf /", "169.254.12.7"),
    ("", "169.254.12.7"),
    (None, "169.254.12.7"),
    ("bridge0", "not an ip"),
    ("bridge0", None),
])
def test_bad_arguments_run_no_command(bridge, peer):
    mac = mac_with()
    assert hb.bridge_member_for_peer(bridge, peer, runner=mac) is None
    assert mac.calls == []


def test_real_recording_of_an_m1_mac_minis_thunderbolt_bridge():
    """`ifconfig bridge0` on an M1 Mac mini cabled to a Linux box over Thunderbolt (macOS
    11; tests/fixtures/macos/README.md): members en2 and en3, learned entries with expire
    0 and unpadded octets; the Linux peer's MAC 36:50:51:3f:7c:0 is on en2."""
    text = fx("ifconfig_bridge0_addrcache_m1macmini_macos11.txt")
    assert parse_bridge_members(text) == ["en2", "en3"]
    assert hb.parse_address_cache(text) == {
        "12:e2:e9:5f:d5:4b": "en3", "36:50:51:3f:7c:00": "en2", "02:e2:e9:5f:d5:4b": "en2"}


def test_a_round_of_pairs_runs_arp_once_and_each_bridges_cache_once():
    """Issue 35 point 5: `arp -an` and `ifconfig bridgeN addr` ran once per (bridge,
    peer) pair every 30 s (5 s while unknown); a round runs each once."""
    from exotray.agent.hw.hardware import Hardware
    from exotray.agent.hw.read import MacReader

    mac = mac_with()
    pairs = [("bridge0", p) for p in ("169.254.12.7", "169.254.77.31", "169.254.130.4",
                                      "169.254.99.99")]
    found = Hardware(MacReader(runner=mac))._resolve(pairs)
    assert found == {("bridge0", "169.254.12.7"): "en2", ("bridge0", "169.254.77.31"): "en3",
                     ("bridge0", "169.254.130.4"): "en5", ("bridge0", "169.254.99.99"): None}
    assert [argv for argv, _ in mac.calls] == [ARP_ARGV, ADDR_ARGV]
