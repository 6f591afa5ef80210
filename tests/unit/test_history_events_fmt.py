"""History rings, the event log and human formatting (exotray.core.history/events/fmt)."""

from __future__ import annotations

import pytest

from exotray.core import fmt
from exotray.core.events import EVENT_TYPES, EventLog, iso
from exotray.core.history import Ring, ring_size

# --------------------------------------------------------------------------- Ring

COLS = ("t", "rx", "tx")


@pytest.mark.parametrize(
    ("maxlen", "times", "kept"),
    [
        pytest.param(5, [1, 2, 3], [1, 2, 3], id="under-cap"),
        pytest.param(3, [1, 2, 3], [1, 2, 3], id="exactly-cap"),
        pytest.param(3, [1, 2, 3, 4, 5], [3, 4, 5], id="cap-drops-oldest"),
        pytest.param(1, [1, 2, 3], [3], id="cap-one"),
        pytest.param(0, [1, 2], [2], id="cap-zero-treated-as-one"),
        pytest.param(5, [1, 2, 2, 3], [1, 2, 2, 3], id="equal-time-accepted"),
        pytest.param(5, [1, 3, 2, 4], [1, 3, 4], id="out-of-order-dropped"),
        pytest.param(5, [10, 1, 2, 11], [10, 11], id="several-late-rows-dropped"),
    ],
)
def test_ring_append(maxlen: int, times: list[float], kept: list[float]) -> None:
    ring = Ring(COLS, maxlen)
    accepted = [ring.append((t, t * 10, t * 100)) for t in times]
    assert ring.since(float("-inf"))["t"] == kept
    assert len(ring) == len(kept)
    # a row is refused only when it is older than the newest row at that moment
    newest = [max(times[: i + 1]) for i in range(len(times))]
    assert accepted == [t >= n for t, n in zip(times, newest, strict=True)]
    assert ring.since(float("-inf"))["rx"] == [t * 10 for t in kept]


def test_ring_append_returns_false_for_late_row() -> None:
    ring = Ring(COLS, 10)
    assert ring.append((5.0, 1, 1)) is True
    assert ring.append((4.0, 1, 1)) is False
    assert ring.append((5.0, 2, 2)) is True


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        pytest.param(0.0, [1.0, 2.0, 3.0, 4.0], id="before-all"),
        pytest.param(2.0, [2.0, 3.0, 4.0], id="inclusive"),
        pytest.param(2.5, [3.0, 4.0], id="between"),
        pytest.param(4.0, [4.0], id="newest-only"),
        pytest.param(9.0, [], id="after-all"),
    ],
)
def test_ring_since(t: float, expected: list[float]) -> None:
    ring = Ring(COLS, 10)
    for ts in (1.0, 2.0, 3.0, 4.0):
        ring.append([ts, ts + 0.1, None])
    got = ring.since(t)
    assert list(got) == list(COLS)
    assert got["t"] == expected
    assert got["rx"] == [x + 0.1 for x in expected]
    assert got["tx"] == [None] * len(expected)


def test_ring_since_empty() -> None:
    assert Ring(COLS, 3).since(0.0) == {"t": [], "rx": [], "tx": []}


@pytest.mark.parametrize(
    "row",
    [
        pytest.param((1.0, 2.0), id="too-narrow"),
        pytest.param((1.0, 2.0, 3.0, 4.0), id="too-wide"),
        pytest.param((), id="empty"),
    ],
)
def test_ring_wrong_width_raises(row: tuple) -> None:
    ring = Ring(COLS, 3)
    with pytest.raises(ValueError, match="expected 3"):
        ring.append(row)
    assert len(ring) == 0


def test_ring_first_column_must_be_t() -> None:
    with pytest.raises(ValueError, match="'t'"):
        Ring(("time", "rx"), 3)


@pytest.mark.parametrize(
    ("interval", "span", "expected"),
    [
        pytest.param(1.0, 3600.0, 3601, id="1s-hour"),
        pytest.param(0.5, 3600.0, 7201, id="half-second-hour"),
        pytest.param(2.0, 3600.0, 1801, id="2s-hour"),
        pytest.param(0.05, 3600.0, 72001, id="min-interval"),
        pytest.param(60.0, 3600.0, 61, id="max-interval"),
        pytest.param(7.0, 3600.0, 515, id="rounded-interval"),
        pytest.param(1.0, 60.0, 61, id="one-minute"),
    ],
)
def test_ring_size(interval: float, span: float, expected: int) -> None:
    assert ring_size(interval, span) == expected


def test_ring_size_default_span() -> None:
    assert ring_size(1.0) == 3601


# --------------------------------------------------------------------------- EventLog


def test_event_types() -> None:
    assert EVENT_TYPES == ("peer_up", "peer_down", "link_saturated", "link_cleared",
                           "link_degraded", "link_restored", "exo_slow_path",
                           "exo_slow_path_cleared", "capacity_test", "link_down", "link_up",
                           "link_slower", "link_slower_cleared", "link_flapping",
                           "link_flapping_cleared", "mtu_mismatch", "mtu_mismatch_cleared")


@pytest.mark.parametrize(
    ("ts", "expected"),
    [
        pytest.param(0.0, "1970-01-01T00:00:00.000Z", id="epoch"),
        pytest.param(1_700_000_000.1234, "2023-11-14T22:13:20.123Z", id="millis-truncated"),
    ],
)
def test_iso(ts: float, expected: str) -> None:
    assert iso(ts) == expected


def test_event_log_seq_and_fields() -> None:
    log = EventLog()
    assert log.last_seq == 0
    e1 = log.emit("link_saturated", 0.0, link_id="abc", peer_id="p1", utilization=0.97)
    e2 = log.emit("link_cleared", 5.0, link_id="abc", peer_id="p1", utilization=0.2)
    assert e1 == {
        "seq": 1,
        "at": "1970-01-01T00:00:00.000Z",
        "type": "link_saturated",
        "link_id": "abc",
        "peer_id": "p1",
        "utilization": 0.97,
    }
    assert (e2["seq"], e2["at"], e2["type"]) == (2, "1970-01-01T00:00:05.000Z", "link_cleared")
    assert log.last_seq == 2


@pytest.mark.parametrize(
    ("after", "seqs"),
    [
        pytest.param(0, [1, 2, 3, 4], id="after-0-all"),
        pytest.param(-1, [1, 2, 3, 4], id="after-negative-all"),
        pytest.param(2, [3, 4], id="after-2"),
        pytest.param(4, [], id="after-last"),
        pytest.param(99, [], id="after-future"),
    ],
)
def test_event_log_after(after: int, seqs: list[int]) -> None:
    log = EventLog()
    for i, t in enumerate(("peer_up", "link_saturated", "link_cleared", "peer_down")):
        log.emit(t, float(i), peer_id="p")
    assert [e["seq"] for e in log.after(after)] == seqs


@pytest.mark.parametrize(
    ("keep", "emitted", "kept"),
    [
        pytest.param(3, 2, [1, 2], id="under-keep"),
        pytest.param(3, 5, [3, 4, 5], id="keep-drops-oldest"),
        pytest.param(1, 4, [4], id="keep-one"),
    ],
)
def test_event_log_keep_bound(keep: int, emitted: int, kept: list[int]) -> None:
    log = EventLog(keep=keep)
    for i in range(emitted):
        log.emit("peer_up", float(i))
    assert [e["seq"] for e in log.after(0)] == kept
    assert log.last_seq == emitted  # seq keeps counting past the bound


@pytest.mark.parametrize(
    "type_",
    [
        pytest.param("link_sideways", id="unknown"),
        pytest.param("", id="empty"),
        pytest.param("PEER_UP", id="wrong-case"),
    ],
)
def test_event_log_unknown_type_raises(type_: str) -> None:
    seen: list[dict] = []
    log = EventLog(sinks=[seen.append])
    with pytest.raises(ValueError, match="unknown event type"):
        log.emit(type_, 0.0)
    assert (log.last_seq, log.after(0), seen) == (0, [], [])


def test_event_log_sinks_called_in_order_with_the_event() -> None:
    calls: list[tuple[str, int]] = []
    log = EventLog(
        sinks=[lambda e: calls.append(("a", e["seq"])), lambda e: calls.append(("b", e["seq"]))]
    )
    ev = log.emit("peer_down", 1.0, peer_id="p")
    log.emit("peer_up", 2.0, peer_id="p")
    assert calls == [("a", 1), ("b", 1), ("a", 2), ("b", 2)]
    assert ev["type"] == "peer_down"


def test_event_log_sink_added_later() -> None:
    log = EventLog()
    seen: list[dict] = []
    log.sinks.append(seen.append)
    log.emit("peer_up", 0.0)
    assert [e["seq"] for e in seen] == [1]


def test_event_log_keeps_callers_empty_sink_list() -> None:
    sinks: list = []
    log = EventLog(sinks=sinks)
    seen: list[dict] = []
    sinks.append(seen.append)
    log.emit("peer_up", 0.0)
    assert len(seen) == 1


# --------------------------------------------------------------------------- fmt

D = fmt.DASH


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, D, id="none"),
        pytest.param(0, "0 B/s", id="zero"),
        pytest.param(999, "999 B/s", id="bytes"),
        pytest.param(1000, "1.0 kB/s", id="1k"),
        pytest.param(850_000, "850 kB/s", id="850k"),
        pytest.param(12_340_000, "12.3 MB/s", id="12.3M"),
        pytest.param(99_940_000, "99.9 MB/s", id="99.9M"),
        pytest.param(100_000_000, "100 MB/s", id="100M-no-decimal"),
        pytest.param(1_200_000_000, "1.2 GB/s", id="1.2G"),
        pytest.param(5e9, "5.0 GB/s", id="5G"),
        pytest.param(1.25e11, "125 GB/s", id="125G"),
        pytest.param(1e13, "10000 GB/s", id="schema-max"),
        pytest.param(
            999_700_000,
            "1.0 GB/s",
            id="rounds-up-into-next-unit",
        ),
        pytest.param(
            99_970_000,
            "100 MB/s",
            id="rounds-up-to-100",
        ),
    ],
)
def test_fmt_rate(value: float | None, expected: str) -> None:
    assert fmt.rate(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, D, id="none"),
        pytest.param(0.0, "0.00 ms", id="zero"),
        pytest.param(0.41, "0.41 ms", id="sub-ms"),
        pytest.param(1.0, "1.0 ms", id="one"),
        pytest.param(12.34, "12.3 ms", id="tens"),
        pytest.param(99.9, "99.9 ms", id="just-under-100"),
        pytest.param(100.0, "100 ms", id="hundred"),
        pytest.param(2500.4, "2500 ms", id="seconds"),
        pytest.param(
            99.97,
            "100 ms",
            id="rounds-up-to-100",
        ),
    ],
)
def test_fmt_ms(value: float | None, expected: str) -> None:
    assert fmt.ms(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, D, id="none"),
        pytest.param(0.0, "0 %", id="zero"),
        pytest.param(0.31, "31 %", id="31"),
        pytest.param(0.904, "90 %", id="rounds-down"),
        pytest.param(1.0, "100 %", id="full"),
        pytest.param(1.5, "150 %", id="over"),
    ],
)
def test_fmt_percent(value: float | None, expected: str) -> None:
    assert fmt.percent(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param(None, "unknown", id="unknown"),
        pytest.param(12_500_000.0, "100 Mbit/s", id="100M"),
        pytest.param(108_337_500.0, "866.7 Mbit/s", id="wifi-866.7"),
        pytest.param(124_875_000.0, "999 Mbit/s", id="just-under-1G"),
        pytest.param(125_000_000.0, "1 Gbit/s", id="1G"),
        pytest.param(312_500_000.0, "2.5 Gbit/s", id="2.5G"),
        pytest.param(5e9, "40 Gbit/s", id="thunderbolt-40G"),
        pytest.param(1e10, "80 Gbit/s", id="thunderbolt-80G"),
    ],
)
def test_fmt_capacity(value: float | None, expected: str) -> None:
    assert fmt.capacity(value) == expected


@pytest.mark.parametrize(
    ("value", "as_bytes", "as_bits"),
    [
        pytest.param(None, "unknown", "unknown", id="unknown"),
        pytest.param(6_250_000.0, "6.25 MB/s", "50 Mbit/s", id="demo-40M-is-not-cut"),
        pytest.param(5e6, "5 MB/s", "40 Mbit/s", id="40M"),
        pytest.param(835_137_500.0, "835 MB/s", "6.68 Gbit/s", id="measured-6.6811G"),
        pytest.param(108_337_500.0, "108 MB/s", "867 Mbit/s", id="wifi-866.7"),
        pytest.param(124_875_000.0, "125 MB/s", "999 Mbit/s", id="just-under-1G"),
        pytest.param(1.25e9, "1.25 GB/s", "10 Gbit/s", id="10G"),
        pytest.param(12.5e9, "12.5 GB/s", "100 Gbit/s", id="100G"),
        pytest.param(999_600.0, "1 MB/s", "8 Mbit/s", id="unit-after-rounding"),
    ],
)
def test_fmt_capacity_three_significant_digits(value, as_bytes, as_bits) -> None:
    assert fmt.capacity_rate(value) == as_bytes
    assert fmt.bit_rate(value) == as_bits


@pytest.mark.parametrize(
    ("ratio", "capacity", "expected"),
    [
        pytest.param(0.0, None, D, id="capacity-unknown-reported-0"),
        pytest.param(None, 6.25e6, D, id="ratio-unknown"),
        pytest.param(0.0004, 12.5e9, "< 1 %", id="traffic-that-rounds-to-0"),
        pytest.param(0.0, 1.25e9, "0 %", id="idle"),
        pytest.param(1.0093, 6.25e6, "101 %", id="over"),
    ],
)
def test_fmt_utilization(ratio, capacity, expected) -> None:
    assert fmt.utilization(ratio, capacity) == expected


def test_ring_typed_columns_round_trip_text_none_and_wrap() -> None:
    cols = ("t", "rtt_ms", "state")
    ring = Ring(cols, 4)
    states = ["up", "saturated", None, "down", "up", "up"]
    for i, st in enumerate(states):
        ring.append((float(i), None if i % 2 else i * 0.5, st))
    got = ring.since(float("-inf"))
    assert got["t"] == [2.0, 3.0, 4.0, 5.0]          # wrapped: the oldest two are gone
    assert got["rtt_ms"] == [1.0, None, 2.0, None]   # None survives as None, not NaN
    assert got["state"] == [None, "down", "up", "up"]
    assert ring.append((4.5, 1, "up")) is False      # older than the newest, after wrapping
    ring.resize(2)
    assert ring.since(float("-inf"))["t"] == [4.0, 5.0]
    ring.append((6.0, 3.0, "saturated"))
    assert ring.since(4.5) == {"t": [5.0, 6.0], "rtt_ms": [None, 3.0],
                               "state": ["up", "saturated"]}
