"""RTT statistics: percentile and RttWindow (exotray.core.stats)."""

from __future__ import annotations

import math

import pytest

from exotray.core.stats import RttSummary, RttWindow, percentile

# --------------------------------------------------------------------------- percentile


@pytest.mark.parametrize(
    ("values", "q", "expected"),
    [
        pytest.param([5.0], 50, 5.0, id="single-value-any-q"),
        pytest.param([5.0], 90, 5.0, id="single-value-p90"),
        pytest.param([1.0, 2.0, 3.0], 50, 2.0, id="odd-median"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 50, 2.5, id="even-median-interpolated"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 0, 1.0, id="p0-is-min"),
        pytest.param([1.0, 2.0, 3.0, 4.0], 100, 4.0, id="p100-is-max"),
        pytest.param([float(i) for i in range(1, 11)], 90, 9.1, id="p90-of-1..10"),
        pytest.param([0.0, 10.0], 25, 2.5, id="p25-interpolated"),
        pytest.param([2.0, 2.0, 2.0], 90, 2.0, id="all-equal"),
    ],
)
def test_percentile(values: list[float], q: float, expected: float) -> None:
    assert percentile(values, q) == pytest.approx(expected)


def test_percentile_empty_raises() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)


# --------------------------------------------------------------------------- RttWindow

# Events: ("reply", at, rtt_ms) or ("lost", at). Then summary(now) is compared on the
# listed fields only.
WINDOW_CASES = [
    pytest.param(
        [],
        20.0,
        {
            "median_ms": None,
            "loss": None,
            "sent": 0,
            "received": 0,
            "jitter_ms": None,
            "last_ms": None,
        },
        id="empty",
    ),
    pytest.param(
        [("reply", 1.0, 2.0)],
        1.5,
        {
            "median_ms": 2.0,
            "min_ms": 2.0,
            "max_ms": 2.0,
            "p90_ms": 2.0,
            "jitter_ms": None,
            "loss": 0.0,
        },
        id="first-sample-jitter-none",
    ),
    pytest.param(
        [("reply", float(i), float(r)) for i, r in enumerate([5, 1, 4, 2, 3], start=1)],
        5.5,
        {
            "median_ms": 3.0,
            "min_ms": 1.0,
            "max_ms": 5.0,
            "p90_ms": 4.6,
            "last_ms": 3.0,
            "loss": 0.0,
        },
        id="median-min-max-p90-unsorted-input",
    ),
    pytest.param(
        [("reply", float(i), float(i)) for i in range(1, 11)],
        10.5,
        {"median_ms": 5.5, "min_ms": 1.0, "max_ms": 10.0, "p90_ms": 9.1, "sent": 10},
        id="ten-samples",
    ),
    pytest.param(
        [("reply", 0.0, 100.0), ("reply", 5.0, 1.0), ("reply", 12.0, 3.0)],
        12.0,
        {"median_ms": 2.0, "min_ms": 1.0, "max_ms": 3.0, "sent": 2, "received": 2},
        id="old-sample-expired-by-time",
    ),
    pytest.param(
        [("reply", 2.0, 100.0), ("reply", 5.0, 1.0)],
        12.0,
        {"median_ms": 50.5, "max_ms": 100.0, "sent": 2},
        id="sample-exactly-window-old-kept",
    ),
    pytest.param(
        [("reply", 0.0, 1.0), ("reply", 1.0, 2.0)],
        30.0,
        {"median_ms": None, "min_ms": None, "loss": None, "sent": 0, "last_ms": 2.0},
        id="everything-expired-keeps-last",
    ),
    pytest.param(
        [("reply", 1.0, 1.0), ("lost", 2.0), ("reply", 3.0, 1.0), ("lost", 4.0)],
        4.5,
        {"loss": 0.5, "sent": 4, "received": 2, "median_ms": 1.0, "max_ms": 1.0},
        id="half-lost",
    ),
    pytest.param(
        [("lost", 1.0), ("lost", 2.0), ("lost", 3.0)],
        3.5,
        {"loss": 1.0, "median_ms": None, "min_ms": None, "max_ms": None, "p90_ms": None},
        id="all-lost",
    ),
    pytest.param(
        [("lost", 0.0), ("lost", 1.0), ("reply", 11.0, 2.0), ("reply", 11.5, 2.0)],
        11.5,
        {"loss": 0.0, "sent": 2, "received": 2},
        id="losses-expire-from-window",
    ),
    pytest.param(
        [("reply", 1.0, 2.0), ("lost", 2.0), ("reply", 3.0, 4.0)],
        3.5,
        {"max_ms": 4.0, "min_ms": 2.0, "median_ms": 3.0, "last_ms": 4.0},
        id="lost-probe-never-an-rtt",
    ),
]


def _drive(w: RttWindow, events: list[tuple]) -> None:
    for ev in events:
        if ev[0] == "reply":
            w.reply(ev[1], ev[2])
        else:
            w.lost(ev[1])


@pytest.mark.parametrize(("events", "now", "expected"), WINDOW_CASES)
def test_rtt_window(events: list[tuple], now: float, expected: dict) -> None:
    w = RttWindow(window_s=10.0)
    _drive(w, events)
    s = w.summary(now)
    assert isinstance(s, RttSummary)
    for field, want in expected.items():
        got = getattr(s, field)
        if want is None:
            assert got is None, field
        else:
            assert got == pytest.approx(want), field


def test_rtt_window_loss_resolved_late_still_expires() -> None:
    w = RttWindow(window_s=10.0)
    # probe sent at 0.0 times out and is resolved after the reply to the probe sent at 0.25
    w.reply(0.25, 1.0)
    w.lost(0.0)
    s = w.summary(10.1)  # horizon 0.1: the probe sent at 0.0 is outside the window
    assert (s.sent, s.loss) == (1, 0.0)


# RFC 3550 §6.4.1 jitter over a sequence of RTTs (all replies, 1 s apart).
JITTER_CASES = [
    pytest.param([5.0], None, id="one-sample-none"),
    pytest.param([5.0, 5.0], 0.0, id="two-equal-zero"),
    pytest.param([5.0] * 50, 0.0, id="constant-zero"),
    pytest.param([1.0, 3.0], 2.0 / 16, id="rfc3550-starts-from-zero"),
    pytest.param([1.0, 3.0, 3.0], 2.0 / 16 * 15 / 16, id="one-step-of-1/16-decay"),
    pytest.param([1.0, 3.0] * 150, 2.0, id="alternating-converges-to-D"),
    pytest.param([1.0, 3.0] + [3.0] * 200, 0.0, id="decays-to-zero-after-step"),
]


@pytest.mark.parametrize(("rtts", "expected"), JITTER_CASES)
def test_rtt_jitter(rtts: list[float], expected: float | None) -> None:
    w = RttWindow(window_s=1000.0)
    for i, r in enumerate(rtts):
        w.reply(float(i), r)
    got = w.summary(float(len(rtts))).jitter_ms
    if expected is None:
        assert got is None
    else:
        assert got == pytest.approx(expected, abs=1e-4)


def test_rtt_jitter_converges_from_zero_toward_d() -> None:
    """After a long constant run, alternating RTTs move the jitter up toward |D|."""
    w = RttWindow(window_s=1000.0)
    t = 0.0
    for _ in range(20):
        w.reply(t, 1.0)
        t += 1
    seen = []
    for i in range(200):
        w.reply(t, 1.0 if i % 2 else 3.0)
        t += 1
        seen.append(w.summary(t).jitter_ms)
    assert seen == sorted(seen)  # monotonically rising
    assert seen[0] == pytest.approx(2.0 / 16)
    assert seen[-1] == pytest.approx(2.0, abs=1e-3)


def test_rtt_jitter_losses_do_not_reset() -> None:
    w = RttWindow(window_s=1000.0)
    w.reply(0.0, 1.0)
    w.lost(1.0)
    w.reply(2.0, 3.0)
    assert w.summary(3.0).jitter_ms == pytest.approx(2.0 / 16)


@pytest.mark.parametrize(
    "rtt",
    [
        pytest.param(math.nan, id="nan"),
        pytest.param(math.inf, id="inf"),
        pytest.param(-math.inf, id="minus-inf"),
        pytest.param(-0.001, id="negative"),
    ],
)
def test_rtt_reply_rejects_bad_values(rtt: float) -> None:
    w = RttWindow()
    with pytest.raises(ValueError):
        w.reply(0.0, rtt)
    s = w.summary(0.0)
    assert (s.sent, s.last_ms, s.jitter_ms) == (0, None, None)


@pytest.mark.parametrize("rtt", [pytest.param(0.0, id="zero"), pytest.param(3e6, id="huge")])
def test_rtt_reply_accepts_edge_values(rtt: float) -> None:
    w = RttWindow()
    w.reply(0.0, rtt)
    assert w.summary(0.0).last_ms == rtt


def test_rtt_summary_kept_until_a_sample_leaves_or_arrives() -> None:
    """The summary is computed once and kept while nothing changes; read at any later
    moment it equals what a window holding the same probes computes afresh — across the
    moments samples leave the window, replies and losses (late ones included)."""
    import random

    rng = random.Random(7)
    kept = RttWindow(window_s=10.0)
    probes: list[tuple[float, float | None]] = []
    now = 0.0
    for _ in range(400):
        now += rng.choice([0.05, 0.25, 0.5, 1.0, 2.5])
        if rng.random() < 0.5:
            at = now - rng.choice([0.0, 0.1, 3.0])  # a loss is resolved late
            rtt = None if rng.random() < 0.2 else rng.uniform(0.05, 5.0)
            probes.append((at, rtt))
            if rtt is None:
                kept.lost(at)
            else:
                kept.reply(at, rtt)
        fresh = RttWindow(window_s=10.0)
        for at, rtt in probes:
            (fresh.lost(at) if rtt is None else fresh.reply(at, rtt))
        got = kept.summary(now)
        assert kept.summary(now) is got  # read twice: computed once
        want = fresh.summary(now)
        assert (got.median_ms, got.min_ms, got.max_ms, got.p90_ms, got.loss, got.sent,
                got.received) == (want.median_ms, want.min_ms, want.max_ms, want.p90_ms,
                                  want.loss, want.sent, want.received)
        assert got.last_ms == want.last_ms


def test_losses_sent_in_an_outage_are_not_loss() -> None:
    """Losses of probes sent in an outage (after, before) go, and are not counted when
    resolved later; replies, and losses outside it, stay."""
    w = RttWindow(window_s=10.0)
    w.lost(1.0)
    assert w.summary(2.0).loss == 1.0  # (not answered yet: all it sent is lost)
    w.outage(None, 4.0)  # (its first answer: the probe sent at 4.0)
    w.lost(2.0)  # (resolved late: still the outage)
    w.reply(4.0, 1.0)
    assert w.summary(5.0).loss == 0.0
    w.lost(5.0)
    w.lost(6.0)
    w.lost(7.0)
    w.reply(8.0, 1.0)
    assert w.summary(9.0).loss == pytest.approx(3 / 5)  # (the summary kept from here ...)
    w.outage(5.0, 8.0)  # (5.0 itself, lost while up before it, stays)
    s = w.summary(9.0)  # (... is computed again)
    assert (s.loss, s.sent, s.received) == (pytest.approx(1 / 3), 3, 2)
    w.lost(6.5)  # (one of the outage's, resolved late)
    assert w.summary(9.0).sent == 3
