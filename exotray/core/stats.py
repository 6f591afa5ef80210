"""Rate and RTT statistics.

Plain Python: no sockets, no clocks of its own. Every function takes the time it is
told, so tests drive it with tables of cases.
"""

from __future__ import annotations

import bisect
import logging
import math
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

log = logging.getLogger(__name__)

U32 = 1 << 32


@dataclass(frozen=True)
class Rate:
    rx_bytes_per_s: float
    tx_bytes_per_s: float
    #: seconds the rate was averaged over
    dt: float


@dataclass
class _Last:
    at: float
    rx: int
    tx: int


def counter_delta(old: int, new: int) -> int | None:
    """Bytes between two readings of a byte counter, or None when it was reset.

    A counter that went backwards either wrapped (32-bit counters, still found in some
    drivers, and on macOS' `if_data`) or restarted from zero (an interface deleted and
    created again under the same name). A wrap is recognised when the old value was a
    32-bit value and the wrapped distance is under half the 32-bit range (a reset
    that happens to look like a wrap still has to pass the capacity check);
    anything else is a reset: the interval is skipped, never turned into a huge or
    negative rate.
    """
    if new >= old:
        return new - old
    if old < U32:
        wrapped = new + U32 - old
        if wrapped < U32 // 2:
            return wrapped
    return None


class RateMeter:
    """Per-interface rx/tx rates from successive counter readings.

    `update(now, counters)` takes a monotonic time and {name: (rx_bytes, tx_bytes)} and
    returns {name: Rate} for every interface that has a valid rate for this interval.
    Interfaces may appear (no rate until their second reading) and vanish (forgotten),
    unless `partial`: a reading of some interfaces alone (the agent reads the links'
    carriers alone between full ticks), the others neither vanished nor read.
    `limits` maps names to what the hardware can physically carry in bytes/s (the NIC's
    negotiated speed): rates above `absurd_factor` times it are impossible and rejected.
    Never pass a user's capacity override here: a rate above it is "over capacity", a
    real reading.

    With `window_s`, readings may come more often than the window (the agent reads its
    links' carriers four times per interval) and each returned rate is the average over
    the most recent valid readings spanning `window_s`: a sliding window, so a detector
    fed with it sees a full interval's rate four times per interval. A reset clears the
    window; a rejected (absurd) reading is left out of it.
    """

    def __init__(self, absurd_factor: float = 1.5, window_s: float | None = None) -> None:
        self._last: dict[str, _Last] = {}
        self._win: dict[str, _Window] = {}
        self.window_s = window_s
        self.absurd_factor = absurd_factor
        #: rejected samples by reason, for the snapshot's counters
        self.rejected: dict[str, int] = {"reset": 0, "absurd": 0, "clock": 0}

    def update(
        self,
        now: float,
        counters: Mapping[str, tuple[int, int]],
        limits: Mapping[str, float | None] | None = None,
        partial: bool = False,
    ) -> dict[str, Rate]:
        limits = limits or {}
        out: dict[str, Rate] = {}
        for name in () if partial else list(self._last):  # (partial: some read alone)
            if name not in counters:
                log.info("interface %s vanished", name)
                del self._last[name]
                self._win.pop(name, None)
        for name, (rx, tx) in counters.items():
            prev = self._last.get(name)
            self._last[name] = _Last(now, rx, tx)
            if prev is None:
                continue
            dt = now - prev.at
            if dt <= 0:
                self.rejected["clock"] += 1
                continue
            drx = counter_delta(prev.rx, rx)
            dtx = counter_delta(prev.tx, tx)
            if drx is None or dtx is None:
                self.rejected["reset"] += 1
                self._win.pop(name, None)
                log.info("interface %s: counters reset (re-created?); interval skipped", name)
                continue
            rate = Rate(drx / dt, dtx / dt, dt)
            cap = limits.get(name)
            if cap and max(rate.rx_bytes_per_s, rate.tx_bytes_per_s) > self.absurd_factor * cap:
                self.rejected["absurd"] += 1
                log.warning(
                    "interface %s: rate %.0f B/s is above %.1fx its link speed (%.0f B/s): "
                    "impossible, dropped",
                    name,
                    max(rate.rx_bytes_per_s, rate.tx_bytes_per_s),
                    self.absurd_factor,
                    cap,
                )
                continue
            out[name] = self._windowed(name, dt, drx, dtx) if self.window_s else rate
        return out

    def _windowed(self, name: str, dt: float, drx: int, dtx: int) -> Rate:
        win = self._win.get(name)
        if win is None:
            win = self._win[name] = _Window()
        win.add(dt, drx, dtx)
        assert self.window_s is not None
        # Drop the oldest readings while the rest still span the window.
        while len(win.readings) > 1 and win.dt - win.readings[0][0] >= self.window_s - 1e-3:
            win.drop_oldest()
        return Rate(win.rx / win.dt, win.tx / win.dt, win.dt)


class _Window:
    """Readings of one interface over the rate window, with their running sums (the
    counters are read four times an interval: no sum over the window each time)."""

    __slots__ = ("dt", "readings", "rx", "tx")

    def __init__(self) -> None:
        self.readings: deque[tuple[float, int, int]] = deque()
        self.dt = 0.0
        self.rx = 0
        self.tx = 0

    def add(self, dt: float, rx: int, tx: int) -> None:
        self.readings.append((dt, rx, tx))
        self.dt += dt
        self.rx += rx
        self.tx += tx

    def drop_oldest(self) -> None:
        _, rx, tx = self.readings.popleft()
        self.rx -= rx
        self.tx -= tx
        # the seconds again from what is left (a float's running sum would drift)
        self.dt = sum(r[0] for r in self.readings)


def percentile(sorted_values: list[float], q: float) -> float:
    """Linear-interpolated percentile (0..100) of an already sorted, non-empty list."""
    if not sorted_values:
        raise ValueError("no values")
    if len(sorted_values) == 1:
        return sorted_values[0]
    pos = (len(sorted_values) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = math.ceil(pos)
    frac = pos - lo
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * frac


@dataclass(frozen=True)
class RttSummary:
    last_ms: float | None
    median_ms: float | None
    min_ms: float | None
    max_ms: float | None
    p90_ms: float | None
    jitter_ms: float | None
    #: fraction of probes lost over the window, None before any probe was resolved
    loss: float | None
    sent: int
    received: int


class RttWindow:
    """RTT samples and losses of one link over a sliding time window.

    Each resolved probe is recorded once: `reply(at, rtt_ms)` or `lost(at)`, where `at`
    is when the probe was sent (monotonic seconds). Losses are known only at their
    timeout, after replies to later probes, so samples are kept ordered by `at`.
    Statistics cover probes sent within the last `window_s` seconds. Jitter follows
    RFC 3550 §6.4.1: J starts at 0 and J += (|D| - J) / 16, with D the difference
    between consecutive RTTs (losses do not reset it); it is None before two replies.
    """

    def __init__(self, window_s: float = 10.0) -> None:
        self.window_s = window_s
        self._samples: list[tuple[float, float | None]] = []
        self._jitter: float | None = None
        self._prev_rtt: float | None = None
        self.last_ms: float | None = None
        #: the last summary and (samples changed, window) when it was computed
        self._cached: tuple[tuple[int, float], RttSummary] | None = None
        self._version = 0
        #: (after, before): the send times of the link's last outage (`outage`)
        self._outage: tuple[float | None, float] | None = None

    def reply(self, at: float, rtt_ms: float) -> None:
        if not math.isfinite(rtt_ms) or rtt_ms < 0:
            raise ValueError(f"bad rtt {rtt_ms!r}")
        self._insert(at, rtt_ms)
        if self._prev_rtt is not None:
            d = abs(rtt_ms - self._prev_rtt)
            j = self._jitter or 0.0
            self._jitter = j + (d - j) / 16
        self._prev_rtt = rtt_ms
        self.last_ms = rtt_ms

    def lost(self, at: float) -> None:
        """A probe sent at `at` went unanswered (not counted when sent in the outage)."""
        if not self._in_outage(at):
            self._insert(at, None)

    def outage(self, after: float | None, before: float) -> None:
        """The probes sent after `after` (None: from the first) and before `before` are
        the link's outage, not loss: it was not up then (its peer not yet listening, or
        down, which its state says already). Their losses go, now and when resolved
        later; what it lost while up, before, stays."""
        self._outage = (after, before)
        kept = [s for s in self._samples if s[1] is not None or not self._in_outage(s[0])]
        if len(kept) != len(self._samples):
            self._samples = kept
            self._version += 1

    def _in_outage(self, at: float) -> bool:
        if self._outage is None:
            return False
        after, before = self._outage
        return at < before and (after is None or at > after)

    def _insert(self, at: float, rtt: float | None) -> None:
        self._version += 1
        if not self._samples or at >= self._samples[-1][0]:
            self._samples.append((at, rtt))
        else:
            bisect.insort(self._samples, (at, rtt), key=lambda s: s[0])

    def _expire(self, now: float) -> None:
        horizon = now - self.window_s
        cut = bisect.bisect_left(self._samples, horizon, key=lambda s: s[0])
        if cut:
            del self._samples[:cut]

    def summary(self, now: float) -> RttSummary:
        """The window's statistics at `now`. Kept until a probe is resolved or the oldest
        sample leaves the window: the detector, the history row and the snapshot read a
        link's summary at moments apart within one interval, and compute it once."""
        c = self._cached
        if (c is not None and c[0] == (self._version, self.window_s)
                and (not self._samples or self._samples[0][0] >= now - self.window_s)):
            return c[1]
        s = self._summary(now)
        self._cached = ((self._version, self.window_s), s)
        return s

    def _summary(self, now: float) -> RttSummary:
        self._expire(now)
        rtts = sorted(r for _, r in self._samples if r is not None)
        sent = len(self._samples)
        received = len(rtts)
        loss = (sent - received) / sent if sent else None
        if not rtts:
            return RttSummary(self.last_ms, None, None, None, None, self._jitter, loss, sent, 0)
        return RttSummary(
            last_ms=self.last_ms,
            median_ms=percentile(rtts, 50),
            min_ms=rtts[0],
            max_ms=rtts[-1],
            p90_ms=percentile(rtts, 90),
            jitter_ms=self._jitter,
            loss=loss,
            sent=sent,
            received=received,
        )
