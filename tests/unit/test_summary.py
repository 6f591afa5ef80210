"""Tray health, menu lines and notification text, from the recorded lab cluster view."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from exotray.ui.tray.summary import empty_hints, health, notification, peer_lines, summary_line

FIX = Path(__file__).parent.parent / "qt" / "fixtures"
CLUSTER = json.loads((FIX / "cluster.json").read_text())
EVENTS = json.loads((FIX / "events.json").read_text())["events"]


def _with_links(**change):
    c = copy.deepcopy(CLUSTER)
    for lk in c["nodes"][0]["links"]:
        lk.update(change)
    return c


@pytest.mark.parametrize(
    ("cluster", "expected"),
    [
        pytest.param(None, "offline", id="no-agent"),
        pytest.param(CLUSTER, "alert", id="recorded: saturated and down"),
        pytest.param(_with_links(state="up", utilization=0.2, loss=0.0), "ok", id="all-ok"),
        pytest.param(_with_links(state="up", utilization=0.93, loss=0.0), "warning",
                     id="over-threshold-not-yet-saturated"),
        pytest.param(_with_links(state="up", utilization=None, loss=0.0), "ok",
                     id="unknown-capacity-is-not-a-warning"),
        pytest.param(_with_links(state="up", utilization=0.1, loss=0.05), "warning", id="loss"),
        pytest.param(_with_links(state="down", utilization=None, loss=1.0), "alert", id="down"),
        pytest.param({"self": "x", "nodes": [{"node": {}, "links": []}]}, "alone",
                     id="no-peers-is-not-all-fine"),
    ],
)
def test_health(cluster, expected):
    assert health(cluster) == expected


def test_menu_from_recorded_cluster():
    assert summary_line(CLUSTER) == "2 peers · 1 link saturated · 1 peer down"
    lines = peer_lines(CLUSTER)
    assert [ln.text for ln in lines] == [
        "gpu-3 · down",
        "studio-2 · Virtual · 159 ms · 6.3 MB/s · 101 % · saturated",
    ]
    # The busiest of studio-2's two links is the saturated one, and the line knows it.
    sat = next(lk for lk in CLUSTER["nodes"][0]["links"] if lk["state"] == "saturated")
    assert lines[1].link_id == sat["id"]


@pytest.mark.parametrize(
    ("cluster", "state", "expected"),
    [
        (None, "starting", "Starting the exotray agent…"),
        (None, "restarting", "The exotray agent stopped; restarting it…"),
        (None, "stopped", "No exotray agent is running"),
        (None, "config_error", "The exotray agent cannot start: fix its settings"),
        ({"self": "x", "nodes": [{"node": {}, "links": []}]}, "running", "No peers yet"),
        (_with_links(state="up", utilization=0.1), "running", "2 peers · all links ok"),
    ],
)
def test_summary_line(cluster, state, expected):
    assert summary_line(cluster, state) == expected


def test_notification_text_names_both_nodes_interface_utilization_and_rate():
    sat = next(e for e in EVENTS if e["type"] == "link_saturated")
    title, body = notification(sat, "studio-1")
    assert title == f"Link saturated: studio-1 ⇄ {sat['peer_name']}"
    assert body.startswith(f"{sat['local_label']} at ")
    assert "%" in body and "MB/s" in body and "of 6.25 MB/s" in body and "bit/s" not in body
    cleared = {**sat, "type": "link_cleared", "utilization": 0.1}
    assert notification(cleared, "studio-1")[0].startswith("Link back to normal")
    down = next(e for e in EVENTS if e["type"] == "peer_down")
    assert notification(down, "studio-1") == ("Peer down: gpu-3",
                                              "studio-1 gets no answer from gpu-3")
    assert notification({"type": "something_else"}, "x") is None


def test_speed_events_say_the_port_its_speed_and_its_maximum():
    ev = {"type": "link_degraded", "node": "studio-2", "interface": "en4",
          "local_label": "Thunderbolt 3", "from_mbit": 80000, "to_mbit": 40000,
          "max_mbit": 80000}
    assert notification(ev, "studio-1") == ("Link slower than it can be: studio-2",
                                             "studio-2: Thunderbolt 3 (en4) at 40 Gb/s of 80 Gb/s")
    no_max = {**ev, "interface": "eth0", "local_label": "Ethernet", "from_mbit": 10000,
              "to_mbit": 1000, "max_mbit": None}
    assert notification(no_max, "gpu-1")[1] == "studio-2: Ethernet (eth0) at 1 Gb/s, was 10 Gb/s"
    back = {**ev, "type": "link_restored", "from_mbit": 40000, "to_mbit": 80000}
    assert notification(back, "studio-1") == ("Link back to full speed: studio-2",
                                              "studio-2: Thunderbolt 3 (en4) at 80 Gb/s")


ALONE = {"self": "x", "nodes": [{"node": {}, "links": []}]}


@pytest.mark.parametrize(
    ("discovery", "first", "manual"),
    [
        ({"mdns": True, "addresses": ["10.0.0.2"]}, "another machine of this network", True),
        ({"mdns": False}, "mDNS is off: add --peer HOST:PORT", False),
        ({"mdns": True, "problem": "no multicast-capable interface"},
         "mDNS: no multicast-capable interface", True),
    ],
)
def test_empty_state_says_how_to_get_peers(discovery, first, manual):
    hints = empty_hints({**ALONE, "discovery": discovery})
    assert first in hints[0]
    assert any("--peer HOST:PORT" in h for h in hints[1:]) is manual


def test_no_hints_once_there_are_links():
    assert empty_hints(CLUSTER) == [] and empty_hints(None) == []


def test_link_changes_are_said_in_words_naming_the_nodes_and_links():
    """Issue 31's events: the notification (and the timeline, which says what it says)."""
    base = {"peer_name": "studio-2", "local_label": "Thunderbolt Bridge", "link_id": "l1"}
    said = {kind: notification({**base, "type": kind, **more}, "studio-1") for kind, more in [
        ("link_down", {"fallback_link_id": "l2", "fallback_label": "Wi-Fi",
                       "rtt_before_ms": 0.4, "rtt_now_ms": 6.1}),
        ("link_up", {"rtt_ms": 0.41}),
        ("link_slower", {"rtt_before_ms": 0.4, "rtt_now_ms": 30.4}),
        ("link_slower_cleared", {"rtt_before_ms": 0.4, "rtt_now_ms": 0.45}),
        ("link_flapping", {"changes": 3, "window_s": 600}),
        ("link_flapping_cleared", {"quiet_s": 600}),
    ]}
    assert said["link_down"] == (
        "Link down: studio-1 ⇄ studio-2",
        "Thunderbolt Bridge to studio-2 is down; studio-2 is now reached over Wi-Fi "
        "(0.40 → 6.1 ms)")
    assert "answers again (0.41 ms)" in said["link_up"][1]
    assert "round trip 0.40 → 30.4 ms" in said["link_slower"][1]
    assert "0.45 ms again (it was 0.40 ms)" in said["link_slower_cleared"][1]
    assert "came back 3 times in 10 minutes" in said["link_flapping"][1]
    assert "no drop for 10 minutes" in said["link_flapping_cleared"][1]
    for title, body in said.values():
        assert "studio-1" in title and "Thunderbolt Bridge" in body and "_" not in body


def test_an_mtu_mismatch_says_what_to_set():
    ev = {"type": "mtu_mismatch", "peer_name": "studio-2", "local_interface": "en0",
          "local_label": "Ethernet", "mtu": 9000, "path_mtu": 1500}
    assert notification(ev, "studio-1") == (
        "Jumbo frames do not pass: studio-1 ⇄ studio-2",
        "en0 sends 9000-byte frames, but only 1500 reach studio-2: set jumbo frames end to "
        "end, or 1500 on both")
    none = notification({**ev, "path_mtu": None}, "studio-1")
    assert "do not reach studio-2 (small ones do)" in none[1]
    back = notification({**ev, "type": "mtu_mismatch_cleared"}, "studio-1")
    assert back[1] == "9000-byte frames of Ethernet reach studio-2 again"


def test_an_interface_that_flaps_is_a_cable_named_by_its_port():
    ev = {"type": "link_flapping", "link_id": None, "interface": "en2",
          "local_label": "Thunderbolt 5", "changes": 3, "window_s": 600}
    assert notification(ev, "studio-1") == (
        "Cable flapping: studio-1",
        "Thunderbolt 5 (en2) lost its carrier and got it back 3 times in 10 minutes: check "
        "the cable and its ports")


def test_a_flapping_clear_says_whose_and_whether_it_ended_down():
    cable = {"type": "link_flapping_cleared", "link_id": None, "interface": "en2",
             "local_label": "Thunderbolt 5", "quiet_s": 600, "state": "up"}
    assert notification(cable, "studio-1") == (
        "Cable steady again: studio-1", "Thunderbolt 5 (en2): no drop for 10 minutes")
    link = {**cable, "link_id": "l1", "peer_name": "studio-2", "state": "down"}
    assert notification(link, "studio-1") == (
        "Link steady again: studio-1 ⇄ studio-2",
        "Thunderbolt 5 to studio-2: no change for 10 minutes; it is down")
