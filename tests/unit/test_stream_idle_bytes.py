"""What an idle stream leaves out (issue 11, sharing bytes): a number is re-sent only once
it has moved a display step from the value last sent (hysteresis), and a link whose
traffic is its interface's names the interface instead of repeating its rates — while
the receiver's rebuilt snapshot stays exactly what /v1/snapshot would have said."""

from __future__ import annotations

import copy

import pytest
from stream_frames import IFACE, snapshot

from exotray.agent.share import numbers as N
from exotray.agent.share import wire as W
from exotray.core.schema import SnapshotRejected, dump


@pytest.mark.parametrize(("field", "new", "last", "sent"), [
    ("rtt_ms", 0.066, 0.06, 0.06),  # rounds to 0.07, but is less than 0.01 from 0.06
    ("rtt_ms", 0.0705, 0.06, 0.07),  # a whole step from what was sent
    ("rtt_ms", 0.051, 0.06, 0.06),
    ("rtt_ms", 0.049, 0.06, 0.05),
    ("rtt_ms", 12.34, 12.3, 12.3),  # 0.1 ms steps from 1 ms on (core/fmt.ms)
    ("rtt_ms", 12.41, 12.3, 12.4),
    ("rtt_ms", 0.07, None, 0.07),  # nothing sent before: sent
    ("rtt_ms", None, 0.07, None),  # unknown now: sent as unknown
    ("rx_bytes_per_s", 14_450.0, 14_400.0, 14_400.0),  # 3 significant digits: 100 B/s
    ("rx_bytes_per_s", 14_520.0, 14_400.0, 14_500.0),
    ("rx_bytes_per_s", 656.4, 656.0, 656.0),  # whole bytes below 1000 B/s
    ("rx_bytes_per_s", 12.7, 12.0, 12.0),
    ("rx_bytes_per_s", 13.1, 12.0, 13.0),
    ("rx_bytes_per_s", 0.3, 0.0, 0.0),
    ("utilization", 0.313, 0.31, 0.31),
    ("utilization", 0.3151, 0.31, 0.315),
    ("utilization", 0.0004, 0.0, 0.0004),  # traffic came: "< 1 %", never "0 %"
    ("utilization", 0.0, 0.0004, 0.0),  # and went
    ("utilization", 0.0009, 0.0004, 0.0004),  # still "< 1 %": held
    ("utilization", 0.0049, None, 0.004),  # below one step, kept below it
    ("loss", 0.0109, 0.01, 0.01),
    ("state", "saturated", "up", "saturated"),  # not a number: sent when it changes
    ("peer_port", 5001, 5000, 5001),
])
def test_a_number_is_held_at_what_was_last_sent_until_it_moved_a_display_step(
        field, new, last, sent):
    assert N.held(field, new, last) == pytest.approx(sent) if sent is not None \
        else N.held(field, new, last) is None


def _sent(snaps: list[dict]) -> list[dict]:
    """The deltas a stream sends for `snaps`, the first one sent whole."""
    state = W.split(snaps[0])
    out = []
    for s in snaps[1:]:
        new = W.split(s, state)
        out.append(W.delta(state, new, 0.0))
        state = new
    return out


def test_drift_is_measured_from_the_value_last_sent_not_the_previous_sample():
    snaps = []
    for rtt in (0.064, 0.0655, 0.0668, 0.0695, 0.0702, 0.0712):
        s = snapshot()
        s["links"][0]["rtt_ms"] = rtt
        snaps.append(s)
    sent = [d.get("links", {}).get("set", {}).get("b-a-1", {}).get("rtt_ms") for d in
            _sent(snaps)]
    # 0.064 went out as 0.06; each sample moved < 0.01 from the one before, but only
    # 0.0702 is a whole step from 0.06; then 0.0712 is within a step of 0.07
    assert sent == [None, None, None, 0.07, None]


def test_a_number_hovering_on_a_rounding_edge_sends_heartbeats_only():
    snaps = []
    for i in range(20):
        s = snapshot(links=4)
        for lk in s["links"]:
            lk["rtt_ms"] = 0.065 + (0.001 if i % 2 else -0.001)  # 0.064 / 0.066
            lk["jitter_ms"] = 0.015 + (0.002 if i % 2 else -0.002)
            lk["rx_bytes_per_s"] = 1250.0 + (4.0 if i % 2 else -4.0)  # 1.25 kB/s ± 4 B/s
        snaps.append(s)
    assert all(set(d) == {"age"} for d in _sent(snaps))


def _via_lo(rx: float = 14_400.0, tx: float = 15_100.0, links: int = 3) -> dict:
    """A node whose links all take their traffic from "lo" (loopback, or one NIC)."""
    s = snapshot(links=links)
    s["interfaces"][0].update(rx_bytes_per_s=rx, tx_bytes_per_s=tx)
    for lk in s["links"]:
        lk.update(rx_bytes_per_s=rx, tx_bytes_per_s=tx)
    return s


def _as_polled(snap: dict) -> dict:
    """What a receiver of the same snapshot, polled, would show: it at display
    resolution (the stream's F frame as a plain snapshot)."""
    state = W.split(snap)
    return dump(W.Mirror(None, None).full(W.full_body(state, 0.0)))


def test_a_link_with_its_interfaces_traffic_sends_the_reference_not_the_numbers():
    first = _via_lo()
    state = W.split(first)
    assert all(r[W.RATES_OF] == "lo" and "rx_bytes_per_s" not in r
               for r in state[1].values())
    m = W.Mirror(None, None)
    full_snap = dump(m.full(W.full_body(state, 0.0)))
    assert full_snap == _as_polled(first)  # the F frame is a whole snapshot, numbers in
    assert all(lk["rx_bytes_per_s"] == 14_400.0 for lk in full_snap["links"])

    busier = _via_lo(rx=52_000.0, tx=61_000.0)
    new = W.split(busier, state)
    d = W.delta(state, new, 0.3)
    assert "links" not in d  # only the interface's two numbers travel
    assert d["interfaces"] == {"set": {"lo": {"rx_bytes_per_s": 52_000.0,
                                              "tx_bytes_per_s": 61_000.0}}}
    got = dump(m.delta(W.encode(d)))
    # the receiver filled every link's rates in: its view is the one polling gave
    assert got == {**_as_polled(busier), "data_age_s": 0.3}
    assert "rates_of" not in str(got)  # the stream's own field stays in the stream


def test_a_link_whose_rates_part_from_its_interface_carries_them_and_back():
    a = _via_lo()
    state = W.split(a)
    m = W.Mirror(None, None)
    m.full(W.full_body(state, 0.0))
    b = copy.deepcopy(a)
    b["links"][1].update(rx_bytes_per_s=99_000.0, tx_bytes_per_s=15_100.0)  # + RDMA bytes
    new = W.split(b, state)
    d = W.delta(state, new, 0.0)
    assert d["links"]["set"] == {"b-a-2": {W.RATES_OF: None, "rx_bytes_per_s": 99_000.0,
                                           "tx_bytes_per_s": 15_100.0}}
    assert dump(m.delta(W.encode(d))) == _as_polled(b)
    c = _via_lo(rx=20_000.0, tx=20_000.0)  # back on the interface's numbers, which moved
    d2 = W.delta(new, newer := W.split(c, new), 0.0)
    assert d2["links"]["set"] == {"b-a-2": {W.RATES_OF: "lo"}}
    assert dump(m.delta(W.encode(d2))) == _as_polled(c)
    assert W.delta(newer, W.split(c, newer), 0.0) == {"age": 0.0}


def test_a_bridged_link_names_its_member_port_not_the_bridge():
    s = snapshot(links=2)
    s["interfaces"] = [
        {**IFACE, "name": "br0", "kind": "virtual", "label": "br0", "rx_bytes_per_s": 900.0,
         "tx_bytes_per_s": 900.0},
        {**IFACE, "name": "p1", "kind": "ethernet", "label": "p1", "rx_bytes_per_s": 800.0,
         "tx_bytes_per_s": 700.0},
        {**IFACE, "name": "p2", "kind": "ethernet", "label": "p2", "rx_bytes_per_s": 100.0,
         "tx_bytes_per_s": 200.0}]
    for lk, member in zip(s["links"], ("p1", "p2"), strict=True):
        lk.update(local_interface="br0", member_interface=member,
                  rx_bytes_per_s=800.0 if member == "p1" else 100.0,
                  tx_bytes_per_s=700.0 if member == "p1" else 200.0)
    state = W.split(s)
    assert [r[W.RATES_OF] for r in state[1].values()] == ["p1", "p2"]
    m = W.Mirror(None, None)
    m.full(W.full_body(state, 0.0))
    s2 = copy.deepcopy(s)
    s2["interfaces"][2].update(rx_bytes_per_s=5_000.0)
    s2["links"][1].update(rx_bytes_per_s=5_000.0)
    got = dump(m.delta(W.encode(W.delta(state, W.split(s2, state), 0.0))))
    assert [lk["rx_bytes_per_s"] for lk in got["links"]] == [800.0, 5_000.0]


def _refused(m: W.Mirror, body: bytes) -> str:
    before = dump(m.snap)
    with pytest.raises((W.FrameError, SnapshotRejected)) as e:
        m.delta(body)
    assert dump(m.snap) == before  # a refused frame changes nothing
    return e.value.reason


@pytest.mark.parametrize(("body", "reason"), [
    (b'{"age":0,"links":{"set":{"b-a-1":{"rates_of":"eth7"}}}}', "unknown_link"),
    (b'{"age":0,"links":{"set":{"b-a-1":{"rates_of":7}}}}', "bad_frame"),
    (b'{"age":0,"links":{"set":{"b-a-1":{"rates_of":["lo"]}}}}', "bad_frame"),
    (b'{"age":0,"interfaces":{"del":["lo"]}}', "unknown_link"),  # b-a-1..3 still name it
])
def test_a_reference_to_an_interface_the_receiver_lacks_is_refused(body, reason):
    m = W.Mirror(None, None)
    m.full(W.full_body(W.split(_via_lo()), 0.0))
    assert _refused(m, body) == reason


def test_a_full_snapshot_naming_an_unknown_interface_is_refused():
    body = W.full_body(W.split(_via_lo()), 0.0).replace(b'"rates_of":"lo"',
                                                         b'"rates_of":"eth7"')
    with pytest.raises(W.FrameError) as e:
        W.Mirror(None, None).full(body)
    assert e.value.reason == "unknown_link"
