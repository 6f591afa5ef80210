"""What the link charts hold and when they ask the agent again (ui/link/chart_data.py, no Qt)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from exotray.ui.link.chart_data import (
    LIVE_POINTS,
    LIVE_S,
    MAX_POINTS,
    POINTS,
    Loaded,
    envelope,
    fitting_range,
    follow_query,
    view_query,
    wanted,
)

NOW = 1_800_000_000.0
DAY = 86400.0


def _answer(since: float, until: float, step: float | None, n: int = 100,
            **extra: list) -> dict:
    """A /v1/history answer in the agent's shape (numbers with _min/_max)."""
    width = (until - since) / n
    t = [since + i * width for i in range(n)]
    out = {"link": "L", "interval_s": 1.0, "since": since, "until": until,
           "tier": "1m" if step else "raw", "step_s": step, "t": t,
           "rtt_ms": [1.0] * n, "rtt_ms_min": [0.5] * n, "rtt_ms_max": [2.0] * n,
           "rx_bytes_per_s": [10.0] * n, "rx_bytes_per_s_min": [5.0] * n,
           "rx_bytes_per_s_max": [20.0] * n, "state": ["up"] * n}
    out.update(extra)
    return out


def test_an_answer_keeps_min_and_max_and_the_span() -> None:
    q = follow_query(30 * DAY)
    got = Loaded.from_answer(_answer(NOW - 30 * DAY, NOW, 1320.0), q)
    assert got.coarse and got.step_s == 1320.0 and not got.live
    assert (got.since, got.until) == (NOW - 30 * DAY, NOW)
    assert got.cols["rx_bytes_per_s_max"][0] == 20.0
    # columns the answer lacks are unknown; a number without _min/_max is its own extremes
    assert math.isnan(got.cols["queue_delay_ms"][0])
    assert got.cols["rtt_min_ms_min"].shape == (100,)
    ring = Loaded.from_answer({"t": [1.0, 2.0], "rtt_ms": [3.0, None]}, None)
    assert ring.live and not ring.coarse and (ring.since, ring.until) == (1.0, 2.0)
    assert ring.cols["rtt_ms_max"][0] == 3.0 and math.isnan(ring.cols["rtt_ms_min"][1])


def test_full_resolution_hour_takes_live_samples_and_caps() -> None:
    hour = Loaded.from_answer(_answer(NOW - 3600, NOW, None, n=3600), follow_query(60))
    assert hour.live
    assert hour.append({"t": NOW + 1, "rtt_ms": 7.0, "rx_bytes_per_s": 3.0, "state": "down"})
    assert not hour.append({"t": NOW + 1, "rtt_ms": 8.0})  # not newer
    assert len(hour) == MAX_POINTS and hour.until == NOW + 1
    assert hour.cols["rtt_ms"][-1] == 7.0 and hour.cols["rtt_ms_max"][-1] == 7.0
    assert hour.cols["rx_bytes_per_s_min"][-1] == 3.0 and hour.states[-1] == "down"
    assert hour.since == hour.cols["t"][0]
    # a day (coarse) or a window in the past (asked with since/until) never takes them
    assert not Loaded.from_answer(_answer(NOW - DAY, NOW, 50.0), follow_query(DAY)).live
    past = Loaded.from_answer(_answer(NOW - 900, NOW - 300, None), view_query(NOW - 750, NOW - 450))
    assert not past.live


def test_the_row_under_a_time() -> None:
    coarse = Loaded.from_answer(_answer(NOW - 6000, NOW, 60.0), None)
    row = coarse.at(NOW - 6000 + 59)  # inside the first bucket
    assert row is not None and row["t"] == NOW - 6000 and row["step_s"] == 60.0
    assert row["rx_bytes_per_s_max"] == 20.0 and row["state"] == "up"
    assert coarse.at(NOW - 6001) is None
    assert coarse.at(NOW + 60) is None  # past the last bucket
    fine = Loaded.from_answer(_answer(NOW - 100, NOW, None), None)
    assert fine.at(NOW - 49.4)["t"] == NOW - 49
    assert fine.at(NOW - 200) is None
    assert Loaded.empty().at(NOW) is None


def test_following_asks_for_the_range_once() -> None:
    empty = Loaded.empty()
    view = (NOW - 600, NOW)
    # the short ranges share one hour at full resolution
    assert follow_query(60) == follow_query(3600) == {"seconds": LIVE_S, "points": LIVE_POINTS}
    hour = Loaded.from_answer(_answer(NOW - 3600, NOW, None), follow_query(600))
    assert wanted(hour, True, 60, view) is None
    assert wanted(hour, True, 3600, view) is None
    assert wanted(hour, True, DAY, view) == {"seconds": DAY, "points": POINTS}
    day = Loaded.from_answer(_answer(NOW - DAY, NOW, 50.0), follow_query(DAY))
    assert wanted(day, True, DAY, view) is None
    assert wanted(day, True, 7 * DAY, view) == {"seconds": 7 * DAY, "points": POINTS}
    assert wanted(day, True, 600, view) == follow_query(600)  # back to full resolution
    # an hour handed over directly serves the short ranges
    assert wanted(empty, True, 600, view) is None


def test_a_view_reaching_past_the_data_or_zoomed_in_on_coarse_rows_asks_again() -> None:
    day = Loaded.from_answer(_answer(NOW - DAY, NOW, 50.0), follow_query(DAY))
    # inside what is loaded, wide enough: nothing
    assert wanted(day, False, DAY, (NOW - 20 * 3600, NOW - 10 * 3600)) is None
    # panned two hours before the day: the view and half of it on each side
    q = wanted(day, False, DAY, (NOW - DAY - 7200, NOW - 7200))
    assert q == {"since": NOW - 1.5 * DAY - 7200, "until": NOW + 0.5 * DAY - 7200,
                 "points": POINTS}
    # zoomed to 10 min of 50 s rows: 12 points across, ask for full resolution there
    q = wanted(day, False, DAY, (NOW - 4000, NOW - 3400))
    assert q == view_query(NOW - 4000, NOW - 3400)
    assert q["until"] - q["since"] == pytest.approx(1200)
    # full-resolution rows are as fine as they get
    hour = Loaded.from_answer(_answer(NOW - 3600, NOW, None), follow_query(600))
    assert wanted(hour, False, 600, (NOW - 100, NOW - 40)) is None


@pytest.mark.parametrize(("seconds", "expected"), [
    (5, 60), (64, 60), (300, 600), (1200, 3600), (10 * DAY, 3600)])
def test_fitting_range_picks_among_the_short_ranges(seconds: float, expected: int) -> None:
    assert fitting_range(np.array([NOW - seconds, NOW])) == expected


def test_envelope_keeps_every_peak_with_a_vertex_per_pixel() -> None:
    t = np.arange(3600.0)
    lo = np.full(3600, 1.0)
    hi = np.full(3600, 2.0)
    hi[1234], lo[2000], lo[2001] = 250.0, 0.1, np.nan
    et, elo, ehi = envelope(t, lo, hi, 3600 / 700)  # an hour across 700 pixels
    assert len(et) <= 701 and et[0] == 0.0
    assert ehi.max() == 250.0 and et[int(ehi.argmax())] <= 1234 < et[int(ehi.argmax()) + 1]
    assert elo.min() == 0.1 and not np.isnan(elo).any()  # an unknown is ignored
    # fewer samples than pixels: as they are
    assert len(envelope(t[:60], lo[:60], hi[:60], 60 / 700)[0]) == 60
