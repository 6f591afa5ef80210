"""Queueing delay: how much longer than the path's idle RTT probes take right now.

When a path saturates, packets wait in a queue somewhere on it and the RTT rises above
the path's idle RTT, whatever the capacity of the local interface says. This module
keeps, per link:

* a **baseline** — the path's idle RTT, the way LEDBAT keeps its "base delay" (RFC 6817
  §3.4.2: minima per period, kept for 10 minutes): probe RTTs are put in buckets of
  `bucket_s` seconds by send time; a bucket's "low" is the `bucket_quantile` percentile
  of its replies (a low percentile, not the minimum, so one odd sample cannot set the
  baseline), and the baseline is the smallest low of the buckets of the last
  `history_s` seconds, the open bucket included. So:
  - a link that starts under load learns the loaded RTT first, and the baseline falls
    as soon as a tenth of a bucket's probes see the idle path (seconds after the load
    drops): a minimum can only be too high, never stay too high once idle RTTs come;
  - a path whose idle RTT grew (a longer route the agent cannot see) would look like
    queueing for up to `history_s`; when the RTT stays high for `relearn_s` while the
    link's interface carries no traffic — so the wait cannot be our own queue — the
    baseline is learned again from the recent probes;
  - on a path change the agent can see (another local interface or on-link route, a
    peer that answers with another id, a link that was down) `relearn()` starts over.
* the **queueing delay** — the median of the replies of the last `recent_s` seconds
  minus the baseline, never below 0. The median of a short window, not the snapshot's
  10-second `rtt_ms`, so that a queue is seen within seconds of forming. The window
  widens to hold `recent_probes` resolved probes (at most `recent_max_s`): a link at
  rest is probed once an interval (agent/probe/pacing.py), and its delay is then the median
  of its last 8 probes, as a busy link's is of its last 2 s (8 probes at 4 a second).

Where it cannot judge it says so instead of inventing a figure: fewer than
`min_replies` replies in the recent window, or more than `max_loss` of its resolved
probes lost (a link losing most probes has an RTT nobody knows; its loss is reported on
its own), give a queueing delay of None with the reason.

Saturation by queueing (`judge`): "high" when the queueing delay is at least
max(`high_abs_ms`, `high_rel` x baseline) while the link's interface carries at least
`carrying_bytes_per_s`; "low" (for clearing) when it is under `low_fraction` of that
bound, unknown, or the interface carries less. docs/design.md gives the reasoning.

Plain Python: no sockets, no clock (times are passed in).
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass

from exotray.core import fmt
from exotray.core.stats import percentile


@dataclass(frozen=True)
class QueueParams:
    bucket_s: float = 10.0
    history_s: float = 600.0
    bucket_quantile: float = 10.0
    recent_s: float = 2.0
    #: the recent window widens (up to `recent_max_s`) to hold this many resolved
    #: probes: a link probed slowly at rest (agent/probe/pacing.py) keeps 8 samples in it
    recent_probes: int = 8
    recent_max_s: float = 8.0
    min_replies: int = 4
    max_loss: float = 0.5
    high_abs_ms: float = 1.0
    high_rel: float = 1.0
    low_fraction: float = 0.5
    carrying_bytes_per_s: float = 125_000.0  # 1 Mbit/s
    relearn_s: float = 30.0


#: why a queueing delay is unknown
TOO_FEW_PROBES = "too_few_probes"
LOSS = "loss"
NO_BASELINE = "no_baseline"


@dataclass(frozen=True)
class QueueReading:
    baseline_ms: float | None
    #: median of the recent window minus the baseline (>= 0), None when unknown
    queue_delay_ms: float | None
    recent_median_ms: float | None
    replies: int
    lost: int
    #: None when the delay is known, else TOO_FEW_PROBES | LOSS | NO_BASELINE
    unknown: str | None


@dataclass(frozen=True)
class QueueJudgement:
    high: bool
    low: bool
    #: the queueing delay at or above which it is high (None when the baseline is unknown)
    bound_ms: float | None
    carrying: bool


class QueueTracker:
    """The baseline and recent RTTs of one link. Feed every resolved probe once
    (`reply`/`lost`, `at` = send time); read with `reading(now)` (reading changes
    nothing); call `observe(now, carrying)` once per sample tick (it may re-learn)."""

    def __init__(self, params: QueueParams | None = None) -> None:
        self.params = params or QueueParams()
        self._lows: deque[tuple[int, float]] = deque()  # (bucket index, low) of closed buckets
        self._cur_idx: int | None = None
        self._cur: list[float] = []  # sorted replies of the open bucket
        self._recent: list[tuple[float, float | None]] = []  # (at, rtt or None), by `at`
        #: bumped by every change: a reading is kept until then (the sample tick and the
        #: views read each link several times at one `now`)
        self._version = 0
        self._cached: tuple[float, int, QueueParams, QueueReading] | None = None
        self._high_idle_since: float | None = None
        #: how many times the baseline was learned again, and the last reason
        self.relearned = 0
        self.last_relearn: str | None = None

    # -- feeding ---------------------------------------------------------------------
    def reply(self, at: float, rtt_ms: float) -> None:
        self._add_recent(at, rtt_ms)
        self._add_baseline(at, rtt_ms)

    def lost(self, at: float) -> None:
        self._add_recent(at, None)

    def _add_recent(self, at: float, rtt: float | None) -> None:
        self._version += 1
        r = self._recent
        if not r or at >= r[-1][0]:
            r.append((at, rtt))
        else:  # a loss is known only at its timeout, after later replies
            bisect.insort(r, (at, rtt), key=_at)
        p = self.params
        keep = max(p.recent_s, p.relearn_s, p.recent_max_s) + p.recent_s
        if r[0][0] < r[-1][0] - keep:
            del r[:bisect.bisect_left(r, r[-1][0] - keep, key=_at)]

    def _add_baseline(self, at: float, rtt_ms: float) -> None:
        self._version += 1
        idx = int(at // self.params.bucket_s)
        if self._cur_idx is None or idx > self._cur_idx:
            if self._cur_idx is not None and self._cur:
                self._lows.append((self._cur_idx, self._low(self._cur)))
            self._cur_idx = idx
            self._cur = []
        # (a reply older than the open bucket counts in the open one)
        bisect.insort(self._cur, rtt_ms)
        oldest = idx - int(self.params.history_s // self.params.bucket_s)
        while self._lows and self._lows[0][0] < oldest:
            self._lows.popleft()

    def _low(self, values: list[float]) -> float:
        return percentile(values, self.params.bucket_quantile)

    # -- reading ---------------------------------------------------------------------
    def baseline_ms(self, now: float) -> float | None:
        oldest = int((now - self.params.history_s) // self.params.bucket_s)
        lows = [low for idx, low in self._lows if idx >= oldest]
        if self._cur and self._cur_idx is not None and self._cur_idx >= oldest:
            lows.append(self._low(self._cur))
        return min(lows) if lows else None

    def recent_low_ms(self) -> float | None:
        """The low (the bucket quantile) of the newest bucket with `min_replies` replies:
        the open one, else the last closed one. A path that got slower raises every
        probe's RTT, so its low; a noisy one (Wi-Fi's power save) leaves some low."""
        if len(self._cur) >= self.params.min_replies:
            return self._low(self._cur)
        return self._lows[-1][1] if self._lows else None

    def recent_since(self, now: float) -> float:
        """Where the recent window starts: `recent_s` ago, or earlier to hold
        `recent_probes` resolved probes, but never more than `recent_max_s` ago."""
        p = self.params
        since = now - p.recent_s
        r = self._recent
        if r:
            nth = r[-min(p.recent_probes, len(r))][0]
            if nth < since:
                since = max(nth, now - p.recent_max_s)
        return since

    def reading(self, now: float) -> QueueReading:
        c = self._cached
        if c is not None and c[0] == now and c[1] == self._version and c[2] is self.params:
            return c[3]
        rd = self._reading(now)
        self._cached = (now, self._version, self.params, rd)
        return rd

    def _reading(self, now: float) -> QueueReading:
        p = self.params
        base = self.baseline_ms(now)
        r = self._recent
        window = r[bisect.bisect_left(r, self.recent_since(now), key=_at):]
        rtts = sorted(x for _, x in window if x is not None)
        lost = len(window) - len(rtts)
        median = percentile(rtts, 50) if rtts else None
        unknown = None
        if lost and lost / (lost + len(rtts)) > p.max_loss:
            unknown = LOSS
        elif len(rtts) < p.min_replies:
            unknown = TOO_FEW_PROBES
        elif base is None:
            unknown = NO_BASELINE
        qd = None if unknown or median is None or base is None else max(0.0, median - base)
        return QueueReading(base, qd, median, len(rtts), lost, unknown)

    def bound_ms(self, baseline_ms: float | None) -> float | None:
        if baseline_ms is None:
            return None
        return max(self.params.high_abs_ms, self.params.high_rel * baseline_ms)

    def judge(self, reading: QueueReading, rate_bytes_per_s: float | None) -> QueueJudgement:
        """Whether the queueing delay is high (raises saturation after the sustain
        time) or low (counts towards clearing it)."""
        p = self.params
        carrying = rate_bytes_per_s is not None and rate_bytes_per_s >= p.carrying_bytes_per_s
        bound = self.bound_ms(reading.baseline_ms)
        qd = reading.queue_delay_ms
        if qd is None or bound is None:
            return QueueJudgement(False, True, bound, carrying)
        high = carrying and qd >= bound
        low = not carrying or qd < p.low_fraction * bound
        return QueueJudgement(high, low, bound, carrying)

    # -- learning again ----------------------------------------------------------------
    def relearn(self, reason: str, keep_recent_from: float | None = None) -> None:
        """Forget the baseline (the path changed). With `keep_recent_from`, the replies
        sent since then seed the new baseline."""
        self._version += 1
        self._lows.clear()
        self._cur_idx = None
        self._cur = []
        self._high_idle_since = None
        self.relearned += 1
        self.last_relearn = reason
        if keep_recent_from is None:
            self._recent.clear()
            return
        for at, r in self._recent:
            if at >= keep_recent_from and r is not None:
                self._add_baseline(at, r)

    def observe(self, now: float, carrying: bool) -> bool:
        """Once per sample tick: an RTT that stays above the bound for `relearn_s`
        while the interface carries no traffic is the path's new idle RTT, not a queue
        of ours. Returns True when it re-learned."""
        rd = self.reading(now)
        bound = self.bound_ms(rd.baseline_ms)
        elevated = (rd.queue_delay_ms is not None and bound is not None
                    and rd.queue_delay_ms >= bound)
        if carrying or not elevated:
            self._high_idle_since = None
            return False
        if self._high_idle_since is None:
            self._high_idle_since = now
            return False
        if now - self._high_idle_since >= self.params.relearn_s:
            self.relearn("idle RTT rose", keep_recent_from=now - self.params.relearn_s)
            return True
        return False


def _at(sample: tuple[float, float | None]) -> float:
    return sample[0]


# -- what the UI says ------------------------------------------------------------------
_DEFAULT = QueueParams()


def notable(queue_delay_ms: float | None, baseline_ms: float | None,
            params: QueueParams = _DEFAULT) -> bool:
    """Whether a link's queueing delay is worth naming to a user: at or above the bound
    that raises saturation (whether or not traffic flows)."""
    if queue_delay_ms is None or baseline_ms is None:
        return False
    return queue_delay_ms >= max(params.high_abs_ms, params.high_rel * baseline_ms)


def note(link: dict) -> str | None:
    """'+170 ms queueing' for a snapshot link whose queueing delay matters, else None."""
    qd, base = link.get("queue_delay_ms"), link.get("rtt_baseline_ms")
    if not notable(qd, base):
        return None
    return f"+{fmt.ms(qd)} queueing"
