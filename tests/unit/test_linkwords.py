"""What a link's numbers rest on, in words (exotray/ui/link/words.py): the bridge member
that carries it, whose traffic is shown, where its capacity came from."""

from __future__ import annotations

from exotray.ui.link import words as linkwords

IFACES = {
    "bridge0": {"name": "bridge0", "label": "Thunderbolt Bridge", "kind": "thunderbolt",
                "members": ["en2", "en3"]},
    "en3": {"name": "en3", "label": "Thunderbolt 2", "kind": "thunderbolt", "members": [],
            "capacity_measured_at": "2026-12-01T04:00:00.000Z"},
    "en0": {"name": "en0", "label": "Wi-Fi", "kind": "wifi", "members": []},
    "eth0": {"name": "eth0", "label": "Ethernet", "kind": "ethernet", "members": []},
}
NOW = 1_764_734_400.0  # 2025-12-03T04:00:00Z


def link(**kw):
    return {"local_interface": "bridge0", "local_label": "Thunderbolt Bridge",
            "member_interface": None, "capacity_source": "kind", **kw}


def test_via_names_the_bridge_and_its_cable():
    assert linkwords.via(link(member_interface="en3"), IFACES) == \
        "Thunderbolt Bridge (bridge0) via Thunderbolt 2 (en3)"
    assert linkwords.via(link(), IFACES) == "Thunderbolt Bridge (bridge0)"
    assert linkwords.via({"local_interface": "eth0", "local_label": "Ethernet"}, {}) == \
        "Ethernet (eth0)"
    assert linkwords.via({}, {}) == "?"


def test_traffic_note_says_whose_traffic():
    assert "all traffic of en3, the cable of the bridge bridge0" in linkwords.traffic_note(
        link(member_interface="en3"), IFACES)
    assert "total of bridge0 (all its member ports)" in linkwords.traffic_note(
        link(), IFACES)
    assert linkwords.traffic_note({"local_interface": "eth0"}, IFACES) == \
        "Traffic shown is all traffic of the local interface eth0, not only this link's."


def test_capacity_words():
    def words(**kw):
        return linkwords.capacity_words(kw, IFACES, now=lambda: NOW + 365 * 86400)

    assert words(local_interface="en0", capacity_source="kind") == \
        "Wi-Fi PHY rate (real throughput is well below it)"
    assert words(local_interface="bridge0", member_interface="en3",
                 capacity_source="kind") == "negotiated Thunderbolt rate"
    assert words(local_interface="bridge0", member_interface="en3",
                 capacity_source="measured") == "measured 2 d ago"
    assert words(local_interface="eth0", capacity_source="measured") == "measured"
    assert words(local_interface="eth0", capacity_source="override") == "your setting"
    assert words(local_interface="eth0", capacity_source="nic") == "reported by the interface"


def test_ago():
    assert linkwords.ago("2026-12-03T03:59:30Z", lambda: 1_796_270_400.0) == "just now"
    assert linkwords.ago("2026-12-03T01:00:00Z", lambda: 1_796_270_400.0) == "3 h ago"
    assert linkwords.ago(None) is None and linkwords.ago("yesterday") is None


def test_speed_of_the_carrying_port():
    ifaces = {**IFACES, "en3": {**IFACES["en3"], "speed_mbit": 40000, "max_speed_mbit": 80000},
              "en0": {**IFACES["en0"], "speed_mbit": 866.0}}
    assert linkwords.speed(link(member_interface="en3"), ifaces) == "40 Gb/s of 80 Gb/s"
    assert linkwords.speed({"local_interface": "en0"}, ifaces) == "866 Mb/s PHY rate"
    assert linkwords.speed({"local_interface": "eth0"}, ifaces) is None
