"""Saturation detection with hysteresis, sustain/clear times and a cooldown.

A link is saturated when its utilization has been >= `threshold` over samples covering
at least `sustain` seconds; it clears when utilization has been below
`threshold - hysteresis` over samples covering at least `clear` seconds. Each sample
stands for the interval that ends at its time (`at - dt` .. `at`), so three 1-second
samples cover 3 seconds. Unknown utilization never raises saturation and counts as
"not high" (a saturated link whose capacity becomes unknown clears after `clear`).

A second cause, queueing (core/queueing.py), is passed in as two flags: `queue_high`
(the queueing delay is high while the interface carries traffic) and `queue_low` (it is
low, unknown, or the interface is idle). The link is saturated when utilization OR
queueing has been high over `sustain` seconds, and clears when both have been low over
`clear` seconds. The raise's `cause` is the one whose current run of high samples
started first (utilization on a tie): the first to fire wins; the clear carries the
cause of the raise it ends.

One event is produced each way. A raise within `cooldown` seconds of the previous
raise *event* is not notified (the state still says saturated), and neither is the
clear that ends it, so a flapping link notifies once per cooldown, in pairs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: tolerance for sample spacing jitter when adding up sample intervals (fraction of dt)
_SLACK = 0.1


@dataclass(frozen=True)
class SaturationParams:
    threshold: float = 0.90
    sustain_s: float = 3.0
    clear_s: float = 5.0
    hysteresis: float = 0.05
    cooldown_s: float = 60.0


@dataclass(frozen=True)
class Transition:
    """What `SaturationDetector.update` returns when the state changes."""

    saturated: bool
    #: False when the event is suppressed by the cooldown
    notify: bool
    at: float
    utilization: float | None
    #: "utilization" | "queueing": what raised the saturation this transition starts or ends
    cause: str | None = None


@dataclass
class SaturationDetector:
    params: SaturationParams = field(default_factory=SaturationParams)
    saturated: bool = False
    _since: float | None = None  # start of the run of samples pointing the other way
    _last_raise_event: float | None = None
    _raise_notified: bool = False
    #: what raised the current saturation (None while not saturated)
    cause: str | None = None
    _util_since: float | None = None  # start of the current run of high utilization
    _queue_since: float | None = None  # start of the current run of high queueing delay

    def end(self, at: float, util: float | None) -> Transition | None:
        """End a saturation now, whatever the samples say (the link moved to another
        interface: what raised it was another path's). The clear is notified as the
        raise was; the cooldown stays. None when not saturated."""
        self._since = self._util_since = self._queue_since = None
        if not self.saturated:
            return None
        self.saturated = False
        cause, self.cause = self.cause, None
        return Transition(False, self._raise_notified, at, util, cause)

    def skip(self) -> None:
        """A reading that is not the link's own load (a capacity test's traffic on its
        interface): no transition, and no run of samples either way goes on through it."""
        self._since = self._util_since = self._queue_since = None

    @property
    def pending(self) -> bool:
        """A run of samples pointing the other way has started (towards a raise, or
        towards a clear): the next samples decide."""
        return self._since is not None

    def update(self, at: float, dt: float, util: float | None, queue_high: bool = False,
               queue_low: bool = True) -> Transition | None:
        p = self.params
        util_high = util is not None and util >= p.threshold
        self._util_since = (self._util_since if self._util_since is not None else at - dt
                            ) if util_high else None
        self._queue_since = (self._queue_since if self._queue_since is not None else at - dt
                             ) if queue_high else None
        if not self.saturated:
            high = util_high or queue_high
            if not high:
                self._since = None
                return None
            if self._since is None:
                self._since = at - dt
            if at - self._since + _SLACK * dt >= p.sustain_s:
                self.saturated = True
                self._since = None
                notify = (
                    self._last_raise_event is None or at - self._last_raise_event >= p.cooldown_s
                )
                if notify:
                    self._last_raise_event = at
                self._raise_notified = notify
                u, q = self._util_since, self._queue_since
                self.cause = ("utilization" if u is not None and (q is None or u <= q)
                              else "queueing")
                return Transition(True, notify, at, util, self.cause)
            return None
        low = (util is None or util < p.threshold - p.hysteresis) and queue_low
        if not low:
            self._since = None
            return None
        if self._since is None:
            self._since = at - dt
        if at - self._since + _SLACK * dt >= p.clear_s:
            self.saturated = False
            self._since = None
            cause, self.cause = self.cause, None
            return Transition(False, self._raise_notified, at, util, cause)
        return None
