"""What the user reads about queueing delay: the tray menu line and the notification
(ui/tray/summary.py), from snapshot links and events as the agent writes them."""

from __future__ import annotations

import pytest

from exotray.core import queueing
from exotray.ui.tray.summary import notification, peer_lines

LINK = {"id": "l1", "peer_id": "n2", "peer_name": "studio-2", "peer_address": "10.213.130.2",
        "local_interface": "en0", "local_label": "Ethernet", "state": "saturated",
        "rtt_ms": 171.2, "rtt_baseline_ms": 0.06, "queue_delay_ms": 170.4,
        "rx_bytes_per_s": 0.1e6, "tx_bytes_per_s": 6.2e6, "capacity_bytes_per_s": None,
        "utilization": None, "loss": 0.0}


def _cluster(**change):
    return {"self": "n1", "nodes": [{"node": {"id": "n1", "name": "studio-1"},
                                     "links": [{**LINK, **change}]}]}


@pytest.mark.parametrize(("change", "text"), [
    ({}, "studio-2 · Ethernet · 171 ms · 6.2 MB/s · +170 ms queueing · saturated"),
    # under the bound (1 ms, or the baseline when higher): not worth naming
    ({"state": "up", "rtt_ms": 0.4, "queue_delay_ms": 0.34}, "studio-2 · Ethernet · 0.40 ms · "
     "6.2 MB/s"),
    ({"state": "up", "rtt_ms": 9.0, "rtt_baseline_ms": 5.0, "queue_delay_ms": 4.0},
     "studio-2 · Ethernet · 9.0 ms · 6.2 MB/s"),
    # unknown (too few probes, high loss): nothing is invented
    ({"state": "up", "queue_delay_ms": None}, "studio-2 · Ethernet · 171 ms · 6.2 MB/s"),
    # a snapshot from an agent before issue 13 has no such fields
    ({"state": "up", "queue_delay_ms": ..., "rtt_baseline_ms": ...},
     "studio-2 · Ethernet · 171 ms · 6.2 MB/s"),
    ({"utilization": 0.31, "capacity_bytes_per_s": 20e6},
     "studio-2 · Ethernet · 171 ms · 6.2 MB/s · 31 % · +170 ms queueing · saturated"),
])
def test_menu_line_names_the_queueing_delay_when_it_matters(change, text):
    lk = {**LINK, **change}
    for k in [k for k, v in change.items() if v is ...]:
        del lk[k]
    cluster = {"self": "n1", "nodes": [{"node": {}, "links": [lk]}]}
    assert [p.text for p in peer_lines(cluster)] == [text]


EVENT = {"type": "link_saturated", "node": "studio-1", "peer_name": "studio-2",
         "local_label": "Ethernet", "local_interface": "en0", "cause": "queueing",
         "queue_delay_ms": 170.4, "rtt_baseline_ms": 0.06, "utilization": None,
         "rx_bytes_per_s": 0.1e6, "tx_bytes_per_s": 6.2e6, "capacity_bytes_per_s": None}


def test_notification_says_queueing_in_words():
    assert notification(EVENT, "studio-1") == (
        "Link saturated: studio-1 ⇄ studio-2",
        "+170 ms queueing delay at 6.2 MB/s (capacity unknown) on Ethernet")
    known = {**EVENT, "capacity_bytes_per_s": 1.25e9, "utilization": 0.00496}
    assert notification(known, "studio-1")[1] == (
        "+170 ms queueing delay at 6.2 MB/s (< 1 % of 1.25 GB/s) on Ethernet")
    cleared = {**EVENT, "type": "link_cleared", "queue_delay_ms": 0.2,
               "tx_bytes_per_s": 2e3, "rx_bytes_per_s": 1e3}
    assert notification(cleared, "studio-1") == (
        "Link back to normal: studio-1 ⇄ studio-2",
        "+0.20 ms queueing delay at 2.0 kB/s (capacity unknown) on Ethernet")
    unknown = {**EVENT, "queue_delay_ms": None}
    assert notification(unknown, "studio-1")[1].startswith("queueing delay unknown at ")


def test_utilization_notification_adds_the_queueing_delay_when_it_matters():
    util = {**EVENT, "cause": "utilization", "utilization": 0.95,
            "capacity_bytes_per_s": 6.25e6, "tx_bytes_per_s": 5.9e6}
    assert notification(util, "studio-1")[1] == (
        "Ethernet at 95 % (5.9 MB/s of 6.25 MB/s), +170 ms queueing delay")
    quiet = {**util, "queue_delay_ms": 0.3}
    assert notification(quiet, "studio-1")[1] == "Ethernet at 95 % (5.9 MB/s of 6.25 MB/s)"


def test_note_and_notable():
    assert queueing.note(LINK) == "+170 ms queueing"
    assert queueing.note({"queue_delay_ms": 1.0, "rtt_baseline_ms": 0.05}) == "+1.0 ms queueing"
    assert queueing.note({"queue_delay_ms": 0.99, "rtt_baseline_ms": 0.05}) is None
    assert not queueing.notable(None, 0.05) and not queueing.notable(3.0, None)


def test_status_table_names_the_queue_in_the_state_column():
    from exotray.core.status import status_lines

    cluster = {"self": "n1", "nodes": [{"node": {"id": "n1", "name": "studio-1"},
                                        "links": [LINK]}]}
    row = status_lines(cluster)[1]
    assert row.endswith("saturated (+170 ms queueing)")
    calm = {**LINK, "state": "up", "queue_delay_ms": 0.2}
    cluster["nodes"][0]["links"] = [calm]
    assert status_lines(cluster)[1].endswith(" up")
