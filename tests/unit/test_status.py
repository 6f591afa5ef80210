"""`exotray status` text from recorded cluster views, incl. why a peer may be missing."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from exotray.core import fmt
from exotray.core.status import status_lines as _status_lines


@pytest.fixture(params=fmt.UNITS)
def units(request) -> Iterator[str]:
    fmt.set_units(request.param)
    yield request.param
    fmt.set_units("bytes")

LINK = {
    "peer_name": "studio-2", "peer_address": "10.0.0.2", "local_interface": "bridge0",
    "local_label": "Thunderbolt Bridge", "rtt_ms": 0.41, "rx_bytes_per_s": 1.2e9,
    "tx_bytes_per_s": 3e6, "utilization": 0.31, "state": "up",
}


def _cluster(**over):
    c = {
        "self": "a",
        "nodes": [{"node": {"id": "a", "name": "studio-1"}, "links": [LINK]}],
        "peers": [{"key": "mdns:b", "name": "studio-2", "addresses": ["10.0.0.2:52480"],
                   "up": True, "last_error": None}],
        "discovery": {"mdns": True, "addresses": ["10.0.0.1"], "problem": None, "ignored": []},
    }
    c.update(over)
    return c


def test_one_line_per_link():
    lines = _status_lines(_cluster())
    assert lines[0].split() == ["FROM", "TO", "VIA", "RTT", "RX", "TX", "UTIL", "STATE"]
    assert lines[1].split() == ["studio-1", "studio-2", "10.0.0.2", "Thunderbolt", "Bridge",
                                "(bridge0)", "0.41", "ms", "1.2", "GB/s", "3.0", "MB/s", "31",
                                "%", "up"]


def test_mdns_off_is_said():
    lines = _status_lines(_cluster(discovery={"mdns": False, "addresses": [], "problem": None,
                                              "ignored": []}))
    assert any("mDNS is off" in ln for ln in lines)


def test_no_multicast_interface_is_said():
    d = {"mdns": True, "addresses": [], "ignored": [],
         "problem": "no multicast-capable IPv4 interface to announce on"}
    assert any("no multicast-capable" in ln for ln in _status_lines(_cluster(discovery=d)))


def test_version_mismatch_is_said():
    d = {"mdns": True, "addresses": ["10.0.0.1"], "problem": None, "ignored": [
        {"service": "old-x._exotray._tcp.local.", "reason": "version_mismatch",
         "detail": "old speaks protocol 2 (exotray 0.9); we speak 1"}]}
    lines = _status_lines(_cluster(discovery=d))
    assert any("old-x" in ln and "another protocol" in ln for ln in lines)


def test_seen_but_unreachable_peer_is_said():
    peers = [{"key": "mdns:c", "name": "gpu-3", "addresses": ["10.0.0.3:52480"], "up": False,
              "last_error": "ConnectTimeout"}]
    lines = _status_lines(_cluster(peers=peers))
    assert any("gpu-3" in ln and "does not answer probes" in ln and "52480" in ln
               for ln in lines)


def test_no_links():
    lines = _status_lines(_cluster(nodes=[{"node": {"id": "a", "name": "x"}, "links": []}],
                                   peers=[]))
    assert lines[0] == "no links yet."


REPORT = {"interfaces": [
    {"name": "bridge0", "kind": "thunderbolt", "label": "Thunderbolt Bridge", "up": True,
     "members": ["en2", "en3"], "bridge": True, "speed_mbit": 80000,
     "max_speed_mbit": 120000, "speed_source": "system_profiler", "phy_rate": False,
     "capacity_bytes_per_s": 1e10, "capacity_source": "kind", "links": []},
    {"name": "en3", "kind": "thunderbolt", "label": "Thunderbolt 2", "up": True,
     "members": [], "speed_mbit": 40000, "max_speed_mbit": 120000,
     "speed_source": "system_profiler", "degraded_at_mbit": 40000,
     "capacity_bytes_per_s": 5e9, "capacity_source": "measured",
     "capacity_measured_at": "2026-12-01T04:00:00.000Z", "rx_bytes_per_s": 1.5e9,
     "links": [{"peer": "studio-2", "peer_address": "169.254.3.2",
                "local_interface": "bridge0", "member_interface": "en3"}]},
    {"name": "en0", "kind": "wifi", "label": "Wi-Fi", "up": False, "members": [],
     "speed_mbit": 866.0, "phy_rate": True, "speed_source": "corewlan",
     "capacity_bytes_per_s": None, "capacity_source": "unknown", "links": []},
]}


def test_interface_lines_say_speed_capacity_members_and_carried_links():
    from exotray.core.status import interface_lines

    lines = interface_lines(REPORT)
    assert lines[0].split() == ["NAME", "KIND", "LABEL", "UP", "SPEED", "CAPACITY", "RX", "TX"]
    assert "10 GB/s of 15 GB/s" in lines[1] and "10 GB/s (kind)" in lines[1]
    assert "5 GB/s of 15 GB/s" in lines[2] and "(measured)" in lines[2]
    assert "108 MB/s (PHY)" in lines[3] and "down" in lines[3] and "unknown" in lines[3]
    notes = lines[lines.index("") + 1:]
    assert "bridge0: bridge of en2, en3" in notes
    assert "en3: degraded, at 5 GB/s of 15 GB/s" in notes
    assert ("en3: the link to studio-2 (169.254.3.2) counts traffic on its member of "
            "bridge0") in notes
    assert "en0: speed from corewlan" in notes


def test_interface_lines_have_one_unit_system_the_users(units):
    """Speeds, capacities and rates in one table: all in bytes/s or all in bits/s, as
    fmt's units say (issue 34 point 18: "10 Gb/s", "10 Gbit/s" and "57.2 kB/s" in one)."""
    from exotray.core.status import interface_lines

    text = "\n".join(interface_lines(REPORT) + _status_lines(_cluster()))
    if units == "bits":
        assert "80 Gbit/s of 120 Gbit/s" in text and "80 Gbit/s (kind)" in text
        assert "866 Mbit/s (PHY)" in text and "12.0 Gbit/s" in text  # rx 1.5 GB/s
        assert "en3: degraded, at 40 Gbit/s of 120 Gbit/s" in text
        assert not re.search(r"\d [kMG]?B/s", text), text
    else:
        assert "1.5 GB/s" in text
        assert "bit/s" not in text, text
    assert not re.search(r"\d [MG]b/s", text), text  # nor the sales spelling of a speed
