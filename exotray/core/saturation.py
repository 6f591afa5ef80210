"""Saturation detection with hysteresis, sustain/clear times and a cooldown.

A link is saturated when its utilization has been >= `threshold` over samples covering
at least `sustain` seconds; it clears when utilization has been below
`threshold - hysteresis` over samples covering at least `clear` seconds. Each sample
stands for the interval that ends at its time (`at - dt` .. `at`), so three 1-second
samples cover 3 seconds. Unknown utilization never raises saturation and counts as
"not high" (a saturated link whose capacity becomes unknown clears after `clear`).

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


@dataclass
class SaturationDetector:
    params: SaturationParams = field(default_factory=SaturationParams)
    saturated: bool = False
    _since: float | None = None  # start of the run of samples pointing the other way
    _last_raise_event: float | None = None
    _raise_notified: bool = False

    def update(self, at: float, dt: float, util: float | None) -> Transition | None:
        p = self.params
        if not self.saturated:
            high = util is not None and util >= p.threshold
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
                return Transition(True, notify, at, util)
            return None
        low = util is None or util < p.threshold - p.hysteresis
        if not low:
            self._since = None
            return None
        if self._since is None:
            self._since = at - dt
        if at - self._since + _SLACK * dt >= p.clear_s:
            self.saturated = False
            self._since = None
            return Transition(False, self._raise_notified, at, util)
        return None
