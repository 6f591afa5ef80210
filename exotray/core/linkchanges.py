"""When a link changes for the worse (issue 31): a cable that flaps, a path that got
slower and stayed slower. Pure: times and RTTs are passed in, nothing is emitted here
(agent/peers/linkevents.py says what these decide).

* **Flapping** (`FlapWatch`): a link that went down and came back `flap_cycles` times
  within `flap_window_s` flaps; it stops flapping after `flap_quiet_s` without a change.
  While it flaps, its own ups and downs are not told one by one (the flapping is).
* **Slower** (`SlowerWatch`): a link's idle RTT that rose to at least
  max(`slower_factor` x what it was, what it was + `slower_abs_ms`) and stayed there for
  `slower_hold_s`; over when it is back within `clear_factor` x what it was for
  `clear_hold_s`. "What it was" (`usual_ms`) is the link's queueing baseline
  (core/queueing.py: the path's idle RTT, a low percentile over ten minutes) as long as
  the link is not judged risen; it is frozen from the first risen reading on, since the
  baseline itself learns the new RTT after 30 s. Only readings the link's own traffic
  cannot explain count: where the queue judge says the link carries no traffic (or the
  link is under a quarter of a known capacity), the RTT is the path's. A link busy all
  along is not judged (a standing queue of its own traffic looks the same); bursty
  traffic leaves gaps that are.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ChangeParams:
    flap_cycles: int = 3
    flap_window_s: float = 600.0
    flap_quiet_s: float = 600.0
    slower_factor: float = 3.0
    slower_abs_ms: float = 1.0
    slower_hold_s: float = 30.0
    clear_factor: float = 1.5
    clear_hold_s: float = 10.0


DEFAULT = ChangeParams()


@dataclass
class FlapWatch:
    """A link's ups and downs: `change` at each, `quiet` at each tick."""

    params: ChangeParams = DEFAULT
    #: when it came back up after going down, within the window (and the hour: `count`)
    ups: deque[float] = field(default_factory=deque)
    downs: deque[float] = field(default_factory=deque)
    flapping: bool = False
    last_change: float | None = None
    #: it went down and has not come back yet (its first up is no return)
    down: bool = False
    #: its flapping was told (a link's is not while its cable's carrier flaps:
    #: agent/peers/linkevents.py); its clear is told only then
    told: bool = False

    def change(self, now: float, up: bool) -> bool:
        """The link went up (True) or down at `now`; True when it begins to flap."""
        self.last_change = now
        if not up:
            self.downs.append(now)
        elif self.down:
            self.ups.append(now)
        self.down = not up
        for q in (self.ups, self.downs):
            while q and q[0] < now - max(3600.0, self.params.flap_window_s):
                q.popleft()
        if up and not self.flapping and self.cycles(now) >= self.params.flap_cycles:
            self.flapping = True
            return True
        return False

    def cycles(self, now: float, span_s: float | None = None) -> int:
        """Times it came back up after going down within `span_s` (the window)."""
        since = now - (self.params.flap_window_s if span_s is None else span_s)
        return sum(1 for t in self.ups if t >= since)

    def count(self, now: float, span_s: float = 3600.0) -> int:
        """Changes (downs and ups) within the last `span_s`."""
        since = now - span_s
        return sum(1 for q in (self.ups, self.downs) for t in q if t >= since)

    def quiet(self, now: float) -> bool:
        """True when a flapping link has been without a change for `flap_quiet_s`."""
        if (self.flapping and self.last_change is not None
                and now - self.last_change >= self.params.flap_quiet_s):
            self.flapping = False
            return True
        return False


@dataclass
class SlowerWatch:
    """A link's idle RTT against what it was: `reading` once a full tick."""

    params: ChangeParams = DEFAULT
    usual_ms: float | None = None
    slower: bool = False
    #: since when the readings that count have been risen (or, while slower, back)
    since: float | None = None
    #: the last reading that counted: the RTT the event names, and when it came
    now_ms: float | None = None
    counted_at: float | None = None

    def risen(self, rtt_ms: float) -> bool:
        u = self.usual_ms
        p = self.params
        return u is not None and rtt_ms >= max(p.slower_factor * u, u + p.slower_abs_ms)

    def reading(self, now: float, baseline_ms: float | None, rtt_ms: float | None,
                counts: bool) -> str | None:
        """One reading: the queue's baseline, the recent median RTT, and whether the
        link's own traffic cannot explain it (`counts`). Returns "slower" when the link
        is judged slower, "cleared" when it is no longer, else None."""
        p = self.params
        if rtt_ms is None or not counts:
            return None  # (a busy link, or no replies: nothing learnt, nothing undone)
        if self.counted_at is not None and now - self.counted_at > p.slower_hold_s:
            self.since = None  # (a hold spans readings, not a long gap between two)
        self.now_ms, self.counted_at = rtt_ms, now
        if not self.slower:
            if not self.risen(rtt_ms):
                self.since = None
                if baseline_ms is not None and not self.risen(baseline_ms):
                    self.usual_ms = baseline_ms
                return None
            if self.since is None:
                self.since = now
            elif now - self.since >= p.slower_hold_s:
                self.slower, self.since = True, None
                return "slower"
            return None
        assert self.usual_ms is not None
        if rtt_ms > p.clear_factor * self.usual_ms:
            self.since = None
            return None
        if self.since is None:
            self.since = now
        elif now - self.since >= p.clear_hold_s:
            self.slower, self.since = False, None
            return "cleared"
        return None
