"""What the link charts hold of one link's history, and what they must ask the agent for.

The charts show one `/v1/history` answer at a time (`Loaded`): its columns as arrays, each
number with its `_min` / `_max` (equal to the number for full-resolution rows; a coarse
tier's bucket extremes otherwise, so a 3 s peak stays visible in 30 days), the span it
covers, and whether live samples may be appended to it. `wanted` decides from the view
and what is loaded whether a new answer is needed, and builds its query. No Qt here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from exotray.core.history import LINK_COLUMNS, TEXT_COLUMNS

#: the time ranges offered, in seconds, with their button text
RANGES: Final[tuple[tuple[int, str], ...]] = (
    (60, "1 min"), (600, "10 min"), (3600, "1 h"),
    (86400, "24 h"), (7 * 86400, "7 d"), (30 * 86400, "30 d"))
#: ranges up to this share one full-resolution hour that live samples are appended to
LIVE_S: Final = 3600
#: points asked for that hour (one per sample at 1 s), and for anything else (about two
#: per pixel of a wide chart)
LIVE_POINTS: Final = 3600
POINTS: Final = 2000
#: samples kept while appending live ones (one hour at the agents' 1 s interval)
MAX_POINTS: Final = 3600
#: what show_around shows when not told a span
AROUND_S: Final = 600.0
#: a view across which fewer loaded points than this lie asks for finer ones
MIN_VIEW_POINTS: Final = 150
#: a range still "covers" data up to this much longer than itself (61 s of data: 1 min)
FIT_SLACK: Final = 1.1
#: the numeric columns, as /v1/history names them
NUMBERS: Final = tuple(c for c in LINK_COLUMNS if c != "t" and c not in TEXT_COLUMNS)
COLUMNS: Final = ("t", *NUMBERS, *(f"{c}_min" for c in NUMBERS), *(f"{c}_max" for c in NUMBERS))
Query = dict[str, float]


def floats(values: Any) -> np.ndarray:
    """A float array with None (JSON null) as NaN."""
    return np.array(values, dtype=float) if len(values) else np.zeros(0)


@dataclass
class Loaded:
    cols: dict[str, np.ndarray]
    states: list[str | None]
    since: float
    until: float
    #: width of a coarse row (a tier's bucket or a group of rows); None: every sample
    step_s: float | None
    #: the query this answers (None: handed over without one, e.g. a ring's hour)
    query: Query | None

    @classmethod
    def empty(cls) -> Loaded:
        return cls({c: np.zeros(0) for c in COLUMNS}, [], 0.0, 0.0, None, None)

    @classmethod
    def from_answer(cls, hist: dict[str, Any], query: Query | None) -> Loaded:
        t = floats(hist.get("t") or [])
        n = len(t)
        cols = {"t": t}
        for c in NUMBERS:
            values = hist.get(c)
            cols[c] = floats(values) if values is not None else np.full(n, np.nan)
            for s in ("_min", "_max"):
                extreme = hist.get(c + s)
                cols[c + s] = floats(extreme) if extreme is not None else cols[c].copy()
        states = list(hist.get("state") or [None] * n)
        since = hist.get("since", t[0] if n else 0.0)
        until = hist.get("until", t[-1] if n else 0.0)
        step = hist.get("step_s")
        interval = hist.get("interval_s") or 1.0
        coarse = step is not None and step > 1.5 * interval
        return cls(cols, states, float(since), max(float(until), float(t[-1]) if n else 0.0),
                   float(step) if coarse else None, query)

    def __len__(self) -> int:
        return len(self.cols["t"])

    @property
    def coarse(self) -> bool:
        return self.step_s is not None

    @property
    def live(self) -> bool:
        """Full resolution up to now: live samples may be appended."""
        q = self.query
        return not self.coarse and (q is None or q.get("seconds", math.inf) <= LIVE_S)

    def append(self, row: dict[str, Any]) -> bool:
        """Add one live sample (history column keys); False when it is not newer than the
        last one. The oldest are dropped beyond MAX_POINTS."""
        t = row.get("t")
        ts = self.cols["t"]
        if t is None or (len(ts) and not float(t) > ts[-1]):
            return False
        keep = MAX_POINTS - 1
        for c in COLUMNS:
            key = c.removesuffix("_min").removesuffix("_max") if c not in row else c
            v = row.get(key)
            self.cols[c] = np.append(self.cols[c][-keep:], math.nan if v is None else float(v))
        self.states = [*self.states[-keep:], row.get("state")]
        self.until = max(self.until, float(t))
        if len(self.cols["t"]) == MAX_POINTS:
            self.since = max(self.since, float(self.cols["t"][0]))
        return True

    def at(self, x: float) -> dict[str, Any] | None:
        """The row under time x: the bucket holding it (coarse), else the nearest sample
        within two sampling steps; None where there is no data."""
        ts = self.cols["t"]
        if not len(ts):
            return None
        if self.coarse:
            assert self.step_s is not None
            i = int(np.searchsorted(ts, x, side="right")) - 1
            if i < 0 or x - ts[i] >= self.step_s:
                return None
        else:
            i = int(np.searchsorted(ts, x))
            if i == len(ts) or (i > 0 and x - ts[i - 1] < ts[i] - x):
                i -= 1
            gap = float(np.median(np.diff(ts))) if len(ts) > 1 else 1.0
            if abs(ts[i] - x) > 2 * gap:
                return None
        row: dict[str, Any] = {c: _value(self.cols[c][i]) for c in COLUMNS}
        row["state"] = self.states[i] if i < len(self.states) else None
        row["step_s"] = self.step_s
        return row

    def top(self, x0: float, x1: float, *columns: str,
            besides: Sequence[tuple[float, float]] = ()) -> float | None:
        """The largest known value of `columns` between x0 and x1, leaving out the rows
        in the `besides` intervals (a capacity test's traffic is not the link's load: the
        axis is not fitted to it)."""
        t = self.cols["t"]
        seen = (t >= x0) & (t <= x1)
        for a, b in besides:
            seen &= (t < a) | (t > b)
        values = [a[seen] for c in columns if len(a := self.cols[c])]
        values = [v[np.isfinite(v)] for v in values]
        values = [v for v in values if len(v)]
        return float(max(v.max() for v in values)) if values else None


def _value(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def envelope(t: np.ndarray, lo: np.ndarray, hi: np.ndarray,
             width: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """At most one row per `width` seconds (e.g. a pixel's worth): each group's first time,
    the min of `lo` and the max of `hi` (unknowns ignored), so a band keeps every peak but
    has a vertex per pixel, not per sample. Unchanged when that would not halve it."""
    if len(t) < 4 or not width > 0:
        return t, lo, hi
    key = np.floor((t - t[0]) / width)
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    if 2 * len(starts) > len(t):
        return t, lo, hi
    return t[starts], np.fmin.reduceat(lo, starts), np.fmax.reduceat(hi, starts)


def follow_query(range_s: float) -> Query:
    """The query for the last `range_s` up to now: the shared full-resolution hour for the
    short ranges, else the range itself."""
    if range_s <= LIVE_S:
        return {"seconds": LIVE_S, "points": LIVE_POINTS}
    return {"seconds": float(range_s), "points": POINTS}


def view_query(x0: float, x1: float) -> Query:
    """A view's span and half of it on each side, so a pan does not fetch at once."""
    span = x1 - x0
    return {"since": max(0.0, x0 - span / 2), "until": x1 + span / 2, "points": POINTS}


def wanted(loaded: Loaded, following: bool, range_s: float,
           view: tuple[float, float]) -> Query | None:
    """The query to send for what the charts show, None when `loaded` serves it: the last
    `range_s` when following now, else the view (x0, x1) — fetched again when it reaches
    past what is loaded, or when it is zoomed in far on coarse rows."""
    if following:
        q = follow_query(range_s)
        if loaded.query is None and range_s <= LIVE_S:
            return None  # an hour handed over directly serves the short ranges
        if loaded.query is not None and loaded.query.get("seconds") == q["seconds"]:
            return None
        return q
    x0, x1 = view
    span = x1 - x0
    if span <= 0:
        return None
    tol = max(loaded.step_s or 0.0, span * 0.02)
    outside = x0 < loaded.since - tol or x1 > loaded.until + tol
    too_coarse = (loaded.step_s is not None and loaded.step_s > span / MIN_VIEW_POINTS
                  and span < (loaded.until - loaded.since) / 4)
    return view_query(x0, x1) if outside or too_coarse else None


def fitting_range(t: np.ndarray) -> int:
    """The smallest of the short ranges that covers the time span of `t` (allowing
    FIT_SLACK), the hour when none does: a new link's minute of data fills the charts."""
    span = float(t[-1] - t[0]) if len(t) >= 2 else 0.0
    for seconds, _text in RANGES:
        if seconds <= LIVE_S and span <= seconds * FIT_SLACK:
            return seconds
    return LIVE_S
