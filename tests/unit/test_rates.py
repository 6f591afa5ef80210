"""Byte-counter deltas and per-interface rates (exotray.core.stats: counter_delta, RateMeter)."""

from __future__ import annotations

import pytest

from exotray.core.stats import U32, Rate, RateMeter, counter_delta

MB = 1_000_000


# --------------------------------------------------------------------------- counter_delta


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(0, 0, 0, id="zero-to-zero"),
        pytest.param(1000, 1000, 0, id="idle"),
        pytest.param(1000, 5000, 4000, id="normal"),
        pytest.param(2**40, 2**40 + 123, 123, id="normal-64bit"),
        pytest.param(U32 - 100, 50, 150, id="wrap-32bit-small"),
        pytest.param(U32 - 1, 0, 1, id="wrap-32bit-to-zero"),
        pytest.param(3_000_000_000, 100, U32 - 3_000_000_000 + 100, id="wrap-32bit-large-distance"),
        pytest.param(U32 // 2 + 1, 0, U32 // 2 - 1, id="wrap-just-under-half-range"),
        pytest.param(U32 // 2, 0, None, id="wrap-exactly-half-range-is-reset"),
        pytest.param(1_000_000, 0, None, id="reset-recreated-interface-to-zero"),
        pytest.param(1_000_000, 500, None, id="reset-recreated-interface-small"),
        pytest.param(2**40, 5, None, id="reset-64bit-backwards"),
        pytest.param(2**40, 2**40 - 1, None, id="64bit-backwards-by-one-is-reset"),
        pytest.param(U32, 10, None, id="old-just-above-32bit-is-reset"),
    ],
)
def test_counter_delta(old: int, new: int, expected: int | None) -> None:
    assert counter_delta(old, new) == expected


# --------------------------------------------------------------------------- RateMeter

# Each case: a list of steps (now, counters, capacity) and, per step, the expected rates
# {name: (rx, tx)}; then the expected .rejected counters at the end.
Step = tuple[float, dict[str, tuple[int, int]], dict[str, float | None] | None]

RATE_CASES = [
    pytest.param(
        [(0.0, {"eth0": (100, 200)}, None)],
        [{}],
        {"reset": 0, "absurd": 0, "clock": 0},
        id="first-reading-gives-nothing",
    ),
    pytest.param(
        [
            (0.0, {"eth0": (0, 0)}, None),
            (1.0, {"eth0": (10 * MB, 10 * MB)}, None),
            (2.0, {"eth0": (20 * MB, 20 * MB)}, None),
            (3.0, {"eth0": (30 * MB, 30 * MB)}, None),
        ],
        [
            {},
            {"eth0": (10 * MB, 10 * MB)},
            {"eth0": (10 * MB, 10 * MB)},
            {"eth0": (10 * MB, 10 * MB)},
        ],
        {"reset": 0, "absurd": 0, "clock": 0},
        id="steady-rate",
    ),
    pytest.param(
        [(0.0, {"eth0": (0, 0)}, None), (2.0, {"eth0": (8 * MB, 2 * MB)}, None)],
        [{}, {"eth0": (4 * MB, 1 * MB)}],
        {"reset": 0, "absurd": 0, "clock": 0},
        id="rx-tx-separate-over-2s",
    ),
    pytest.param(
        [(0.0, {"en0": (U32 - 1000, 5000)}, None), (1.0, {"en0": (1000, 6000)}, None)],
        [{}, {"en0": (2000, 1000)}],
        {"reset": 0, "absurd": 0, "clock": 0},
        id="rx-wrap-32bit",
    ),
    pytest.param(
        [
            (0.0, {"eth0": (50 * MB, 50 * MB)}, None),
            (1.0, {"eth0": (1000, 1000)}, None),
            (2.0, {"eth0": (3000, 5000)}, None),
        ],
        [{}, {}, {"eth0": (2000, 4000)}],
        {"reset": 1, "absurd": 0, "clock": 0},
        id="reset-skipped-then-resumes",
    ),
    pytest.param(
        [(0.0, {"eth0": (2**40, 1000)}, None), (1.0, {"eth0": (10, 2000)}, None)],
        [{}, {}],
        {"reset": 1, "absurd": 0, "clock": 0},
        id="reset-64bit-rx-only-skips-whole-interval",
    ),
    pytest.param(
        [
            (0.0, {"eth0": (0, 0)}, None),
            (1.0, {"eth0": (1000, 1000), "tb0": (5000, 5000)}, None),
            (2.0, {"eth0": (2000, 2000), "tb0": (9000, 6000)}, None),
        ],
        [{}, {"eth0": (1000, 1000)}, {"eth0": (1000, 1000), "tb0": (4000, 1000)}],
        {"reset": 0, "absurd": 0, "clock": 0},
        id="interface-appearing-needs-second-reading",
    ),
    pytest.param(
        [
            (0.0, {"eth0": (0, 0), "tb0": (0, 0)}, None),
            (1.0, {"eth0": (1000, 1000)}, None),
            (2.0, {"eth0": (2000, 2000), "tb0": (50, 70)}, None),
            (3.0, {"eth0": (3000, 3000), "tb0": (150, 170)}, None),
        ],
        [
            {},
            {"eth0": (1000, 1000)},
            {"eth0": (1000, 1000)},
            {"eth0": (1000, 1000), "tb0": (100, 100)},
        ],
        {"reset": 0, "absurd": 0, "clock": 0},
        id="vanished-interface-forgotten-and-returns-fresh",
    ),
    pytest.param(
        [(0.0, {"eth0": (0, 0)}, {"eth0": 1000.0}), (1.0, {"eth0": (1501, 0)}, {"eth0": 1000.0})],
        [{}, {}],
        {"reset": 0, "absurd": 1, "clock": 0},
        id="rx-above-1.5x-capacity-rejected",
    ),
    pytest.param(
        [(0.0, {"eth0": (0, 0)}, {"eth0": 1000.0}), (1.0, {"eth0": (0, 1600)}, {"eth0": 1000.0})],
        [{}, {}],
        {"reset": 0, "absurd": 1, "clock": 0},
        id="tx-above-1.5x-capacity-rejected",
    ),
    pytest.param(
        [
            (0.0, {"eth0": (0, 0)}, {"eth0": 1000.0}),
            (1.0, {"eth0": (1499, 1500)}, {"eth0": 1000.0}),
        ],
        [{}, {"eth0": (1499, 1500)}],
        {"reset": 0, "absurd": 0, "clock": 0},
        id="at-or-just-under-1.5x-accepted",
    ),
    pytest.param(
        [
            (0.0, {"eth0": (0, 0), "eth1": (0, 0)}, {"eth0": 1000.0}),
            (1.0, {"eth0": (10**9, 0), "eth1": (10**9, 0)}, {"eth0": None, "eth1": 0.0}),
        ],
        [{}, {"eth0": (10**9, 0), "eth1": (10**9, 0)}],
        {"reset": 0, "absurd": 0, "clock": 0},
        id="unknown-capacity-never-rejects",
    ),
    pytest.param(
        [
            (0.0, {"eth0": (3_000_000_000, 0)}, {"eth0": 125 * MB}),
            (1.0, {"eth0": (100, 0)}, {"eth0": 125 * MB}),
        ],
        [{}, {}],
        {"reset": 0, "absurd": 1, "clock": 0},
        id="reset-that-looks-like-wrap-caught-by-capacity",
    ),
    pytest.param(
        [(0.0, {"eth0": (0, 0)}, None), (0.0, {"eth0": (1000, 1000)}, None)],
        [{}, {}],
        {"reset": 0, "absurd": 0, "clock": 1},
        id="zero-dt-rejected",
    ),
    pytest.param(
        [(5.0, {"eth0": (0, 0)}, None), (4.0, {"eth0": (1000, 1000)}, None)],
        [{}, {}],
        {"reset": 0, "absurd": 0, "clock": 1},
        id="negative-dt-rejected",
    ),
]


@pytest.mark.parametrize(("steps", "expected", "rejected"), RATE_CASES)
def test_rate_meter(
    steps: list[Step], expected: list[dict[str, tuple[float, float]]], rejected: dict[str, int]
) -> None:
    meter = RateMeter()
    for (now, counters, capacity), want in zip(steps, expected, strict=True):
        got = meter.update(now, counters, capacity)
        assert set(got) == set(want), f"at {now}"
        for name, (rx, tx) in want.items():
            assert isinstance(got[name], Rate)
            assert got[name].rx_bytes_per_s == pytest.approx(rx), f"{name} rx at {now}"
            assert got[name].tx_bytes_per_s == pytest.approx(tx), f"{name} tx at {now}"
    assert meter.rejected == rejected


@pytest.mark.parametrize(
    ("t0", "t1", "dt"),
    [
        pytest.param(0.0, 1.0, 1.0, id="1s"),
        pytest.param(10.0, 10.5, 0.5, id="half-second"),
    ],
)
def test_rate_reports_interval(t0: float, t1: float, dt: float) -> None:
    meter = RateMeter()
    meter.update(t0, {"eth0": (0, 0)})
    assert meter.update(t1, {"eth0": (100, 100)})["eth0"].dt == pytest.approx(dt)


@pytest.mark.parametrize(
    ("factor", "rx", "accepted"),
    [
        pytest.param(2.0, 1999, True, id="custom-factor-under"),
        pytest.param(2.0, 2001, False, id="custom-factor-over"),
    ],
)
def test_rate_meter_absurd_factor(factor: float, rx: int, accepted: bool) -> None:
    meter = RateMeter(absurd_factor=factor)
    meter.update(0.0, {"eth0": (0, 0)}, {"eth0": 1000.0})
    assert ("eth0" in meter.update(1.0, {"eth0": (rx, 0)}, {"eth0": 1000.0})) is accepted
