"""Saturation detection: sustain, clear, hysteresis and cooldown (exotray.core.saturation)."""

from __future__ import annotations

import pytest

from exotray.core.saturation import SaturationDetector, SaturationParams, Transition

HI = 0.95  # above the default threshold 0.90
LO = 0.50  # below threshold - hysteresis (0.85)
MID = 0.87  # between 0.85 and 0.90: hysteresis band

Sample = tuple[float, float, float | None]  # (at, dt, util)


def series(start: float, utils: list[float | None], dt: float = 1.0) -> list[Sample]:
    """Samples dt apart, the first ending at start + dt."""
    return [(start + dt * (i + 1), dt, u) for i, u in enumerate(utils)]


def spaced(start: float, dts: list[float], util: float | None) -> list[Sample]:
    out, t = [], start
    for dt in dts:
        t += dt
        out.append((t, dt, util))
    return out


def run(samples: list[Sample], params: SaturationParams | None = None) -> list[tuple]:
    """Feed samples; return (index, saturated, notify, at) for every transition."""
    det = SaturationDetector(params or SaturationParams())
    out = []
    for i, (at, dt, util) in enumerate(samples):
        tr = det.update(at, dt, util)
        if tr is not None:
            assert isinstance(tr, Transition)
            assert tr.at == at and tr.utilization == util
            assert det.saturated is tr.saturated
            out.append((i, tr.saturated, tr.notify, at))
    return out


CASES = [
    pytest.param(series(0, [HI, HI]), [], id="two-high-seconds-not-enough"),
    pytest.param(series(0, [HI, HI, HI]), [(2, True, True, 3.0)], id="raise-on-third-1s-sample"),
    pytest.param(series(0, [HI] * 10), [(2, True, True, 3.0)], id="stays-saturated-one-event-only"),
    pytest.param(series(0, [0.90] * 3), [(2, True, True, 3.0)], id="exactly-threshold-is-high"),
    pytest.param(series(0, [0.8999] * 10), [], id="just-below-threshold-never"),
    pytest.param(
        series(0, [HI, HI, LO, HI, HI, HI]), [(5, True, True, 6.0)], id="dip-resets-the-run"
    ),
    pytest.param(
        series(0, [HI, HI, None, HI, HI, HI]),
        [(5, True, True, 6.0)],
        id="unknown-util-resets-the-run",
    ),
    pytest.param(series(0, [None] * 20), [], id="unknown-never-raises"),
    pytest.param(
        series(0, [HI, HI, HI, LO, LO, LO, LO]),
        [(2, True, True, 3.0)],
        id="four-low-seconds-not-cleared",
    ),
    pytest.param(
        series(0, [HI, HI, HI, LO, LO, LO, LO, LO]),
        [(2, True, True, 3.0), (7, False, True, 8.0)],
        id="clear-after-5s-low",
    ),
    pytest.param(
        series(0, [HI, HI, HI, LO, LO, LO, LO, LO] + [LO] * 10),
        [(2, True, True, 3.0), (7, False, True, 8.0)],
        id="one-clear-event-only",
    ),
    pytest.param(
        series(0, [HI, HI, HI] + [MID] * 20),
        [(2, True, True, 3.0)],
        id="hysteresis-band-keeps-saturated",
    ),
    pytest.param(
        series(0, [HI, HI, HI, 0.85, 0.85, 0.85, 0.85, 0.85]),
        [(2, True, True, 3.0)],
        id="exactly-threshold-minus-hysteresis-is-not-low",
    ),
    pytest.param(
        series(0, [HI, HI, HI, LO, LO, LO, LO, MID, LO, LO, LO, LO, LO]),
        [(2, True, True, 3.0), (12, False, True, 13.0)],
        id="hysteresis-band-resets-the-clear-run",
    ),
    pytest.param(
        series(0, [HI, HI, HI, LO, LO, LO, LO, HI, LO, LO, LO, LO, LO]),
        [(2, True, True, 3.0), (12, False, True, 13.0)],
        id="high-sample-resets-the-clear-run",
    ),
    pytest.param(
        series(0, [HI, HI, HI, None, None, None, None, None]),
        [(2, True, True, 3.0), (7, False, True, 8.0)],
        id="unknown-util-clears-after-5s",
    ),
    pytest.param(
        series(0, [HI, HI, HI, LO, None, LO, None, LO]),
        [(2, True, True, 3.0), (7, False, True, 8.0)],
        id="unknown-and-low-mixed-count-as-low",
    ),
    pytest.param(
        series(0, [HI] * 3 + [LO] * 5 + [HI] * 3 + [LO] * 5),
        [
            (2, True, True, 3.0),
            (7, False, True, 8.0),
            (10, True, False, 11.0),
            (15, False, False, 16.0),
        ],
        id="flap-within-cooldown-suppressed-in-pairs",
    ),
    pytest.param(
        series(0, [HI] * 3 + [LO] * 5) + series(62, [HI] * 3 + [LO] * 5),
        [
            (2, True, True, 3.0),
            (7, False, True, 8.0),
            (10, True, True, 65.0),
            (15, False, True, 70.0),
        ],
        id="raise-after-cooldown-notifies",
    ),
    pytest.param(
        series(0, [HI] * 3 + [LO] * 5) + series(60, [HI] * 3 + [LO] * 5),
        [
            (2, True, True, 3.0),
            (7, False, True, 8.0),
            (10, True, True, 63.0),
            (15, False, True, 68.0),
        ],
        id="raise-exactly-60s-after-first-notifies",
    ),
    pytest.param(
        series(0, [HI] * 3 + [LO] * 5)
        + series(20, [HI] * 3 + [LO] * 5)
        + series(45, [HI] * 3 + [LO] * 5)
        + series(60, [HI] * 3 + [LO] * 5),
        [
            (2, True, True, 3.0),
            (7, False, True, 8.0),
            (10, True, False, 23.0),
            (15, False, False, 28.0),
            (18, True, False, 48.0),
            (23, False, False, 53.0),
            (26, True, True, 63.0),
            (31, False, True, 68.0),
        ],
        id="cooldown-counts-from-last-notified-raise",
    ),
    pytest.param(
        spaced(0, [0.98, 1.02, 0.98], HI),
        [(2, True, True, 2.98)],
        id="spacing-jitter-0.98-1.02-0.98",
    ),
    pytest.param(
        spaced(0, [1.02, 0.98, 0.98], HI),
        [(2, True, True, 2.98)],
        id="spacing-jitter-1.02-0.98-0.98",
    ),
    pytest.param(
        spaced(0.02, [0.98, 1.0, 0.98], HI),
        [(2, True, True, 2.98)],
        id="spacing-jitter-early-late-timestamps",
    ),
    pytest.param(
        spaced(0, [1.02, 1.02, 1.02], HI),
        [(2, True, True, 3.06)],
        id="spacing-jitter-all-late",
    ),
    pytest.param(series(0, [HI] * 6, dt=0.5), [(5, True, True, 3.0)], id="half-second-samples"),
    pytest.param(series(0, [HI, HI], dt=2.0), [(1, True, True, 4.0)], id="two-second-samples"),
]


@pytest.mark.parametrize(("samples", "expected"), CASES)
def test_saturation_default_params(samples: list[Sample], expected: list[tuple]) -> None:
    assert run(samples) == expected


@pytest.mark.parametrize(
    ("params", "samples", "expected"),
    [
        pytest.param(
            SaturationParams(threshold=0.5, sustain_s=1.0, clear_s=1.0),
            series(0, [0.6, 0.46, 0.44]),
            [(0, True, True, 1.0), (2, False, True, 3.0)],
            id="custom-threshold-hysteresis-band",
        ),
        pytest.param(
            SaturationParams(sustain_s=10.0),
            series(0, [HI] * 10),
            [(9, True, True, 10.0)],
            id="custom-sustain-10s",
        ),
        pytest.param(
            SaturationParams(cooldown_s=0.0),
            series(0, [HI] * 3 + [LO] * 5 + [HI] * 3 + [LO] * 5),
            [
                (2, True, True, 3.0),
                (7, False, True, 8.0),
                (10, True, True, 11.0),
                (15, False, True, 16.0),
            ],
            id="no-cooldown-every-flap-notifies",
        ),
    ],
)
def test_saturation_custom_params(
    params: SaturationParams, samples: list[Sample], expected: list[tuple]
) -> None:
    assert run(samples, params) == expected


def test_saturation_defaults_match_design() -> None:
    p = SaturationParams()
    assert (p.threshold, p.sustain_s, p.clear_s, p.hysteresis, p.cooldown_s) == (
        0.90,
        3.0,
        5.0,
        0.05,
        60.0,
    )
