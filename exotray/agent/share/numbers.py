"""The stream's numbers (docs/design.md, "Stream sharing"): the resolution each is sent
at, the hysteresis that keeps a number from being re-sent for noise, and which moves go
out at once and which wait for the next heartbeat (the tempo). Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
from typing import Any

_RATES = frozenset({"rx_bytes_per_s", "tx_bytes_per_s", "capacity_bytes_per_s",
                    "flow_rx_bytes_per_s", "flow_tx_bytes_per_s"})
_TRAFFIC = frozenset({"rx_bytes_per_s", "tx_bytes_per_s", "flow_rx_bytes_per_s",
                      "flow_tx_bytes_per_s"})
_MS = frozenset({"rtt_ms", "rtt_min_ms", "rtt_max_ms", "rtt_p90_ms", "rtt_last_ms",
                 "jitter_ms", "rtt_baseline_ms", "queue_delay_ms"})
_FIXED_STEP = {"utilization": 0.005, "loss": 0.001}
RESOLVED = _RATES | _MS | frozenset(_FIXED_STEP)


_NUMBERS = (float, int)  # (a tuple: `float | int` would be built at every call)


def _number(v: Any) -> bool:
    t = type(v)  # (the common cases first: this runs for every number of every frame)
    if t is float:
        return math.isfinite(v)
    if t is int:
        return True
    return isinstance(v, _NUMBERS) and not isinstance(v, bool) and math.isfinite(v)


# -- display resolution ------------------------------------------------------------------
def quantize(field: str, v: Any) -> Any:
    """A number at its display resolution (core/fmt.py): rates to 3 significant digits
    and whole bytes, times to 0.01 ms below 1 ms, 0.1 ms below 100 ms, 1 ms above;
    utilization to 0.5 %, loss to 0.1 %. Anything else unchanged."""
    return _quantize(field, v) if _number(v) else v


def _quantize(field: str, v: float) -> float:
    if field in _RATES:
        return float(f"{v:.3g}") if abs(v) >= 100 else float(round(v))
    if field in _MS:
        return round(v, 2) if abs(v) < 1 else round(v, 1) if abs(v) < 100 else float(round(v))
    if field == "utilization":
        if 0 < v < 0.005:  # shown as "< 1 %", not "0 %" (core/fmt.utilization): not zero
            return min(float(f"{v:.1g}"), 0.004)
        return round(v * 200) / 200
    if field == "loss":
        return round(v, 3)
    return v


def step(field: str, a: float, b: float) -> float | None:
    """One display step of `field` between values a and b (the finer of their two
    steps), None for a field shown as it is."""
    m = min(abs(a), abs(b))
    if field in _RATES:
        return 10.0 ** (math.floor(math.log10(m)) - 2) if m >= 100 else 1.0
    if field in _MS:
        return 0.01 if m < 1 else 0.1 if m < 100 else 1.0
    return _FIXED_STEP.get(field)


def held(field: str, new: Any, last: Any) -> Any:
    """What to send for `field` now that it reads `new`, `last` having been sent before:
    `last` again while `new` is less than one display step away from it (hysteresis: a
    number hovering on a rounding edge, or moving within what anybody can see, is not
    re-sent every interval, and the receiver's copy is never a whole step off), else
    `new` at its display resolution."""
    if field not in RESOLVED:
        return new  # shown as it is
    if new == last:
        return last  # (what was sent: at its resolution)
    if not _number(new):
        return new  # (quantize leaves it as it is)
    q = _quantize(field, new)
    if not _number(last):
        return q
    if field == "utilization" and (q == 0) != (last == 0):
        return q  # traffic came or went: "0 %" and "< 1 %" are less than a step apart
    s = step(field, new, last)
    return last if s is not None and abs(new - last) < s else q


# -- the tempo: what goes at once, what waits for the heartbeat ----------------------------
#: a producer sends a frame at least every HEARTBEAT of its intervals (a heartbeat when
#: nothing moved), and between them only for a prompt change
HEARTBEAT = 5
#: numbers describing a window of probes (its spread) or a long baseline: statistics of
#: the last 10 s or more, so a move waits for the heartbeat (at most HEARTBEAT intervals)
SPREAD = frozenset({"rtt_min_ms", "rtt_max_ms", "rtt_p90_ms", "jitter_ms",
                    "rtt_baseline_ms"})
#: a rate's move is prompt from 1 Mbit/s (pacing's "carrying" bound: below it a link
#: is at rest) that is also 10 % of the rate
PROMPT_RATE_B = 125_000.0
PROMPT_RATE_REL = 0.10
#: an RTT or queueing delay's move is prompt from two display steps, 0.1 ms (a tenth of
#: the queueing delay that raises saturation: a LAN's tens of µs of noise are not news)
#: and a quarter
PROMPT_MS_ABS = 0.1
PROMPT_MS_REL = 0.25
#: a utilization's move is prompt from 1 % of the capacity (two display steps)
PROMPT_UTIL = 0.01


def prompt(field: str, new: Any, last: Any, own: float = 0.0,
           capacity: Any = None) -> bool:
    """Whether `field` moving from `last` (sent) to `new` (held) must go out at once:
    anything that is not a number (a state, a name, a list), a number becoming known or
    unknown, a capacity, a loss that rose, and moves of the others beyond the bounds
    above; a window's spread never. `own`: the most bytes a second this agent itself
    moved lately (pacing.OwnTraffic.peak): a rate or utilization must move by more than
    that too, or a hub's own frames to its followers, a burst each time it sends, would
    be news that makes it send again."""
    if new == last:
        return False
    if not (_number(new) and _number(last)):
        return True
    if field in SPREAD:
        return False
    d, big = abs(new - last), max(abs(new), abs(last))
    if field in _TRAFFIC:  # (a link's own bytes hold our frames to its peer too)
        return d >= PROMPT_RATE_B + own and d >= PROMPT_RATE_REL * big
    if field in _MS:
        return (d >= max(2 * (step(field, new, last) or 0.0), PROMPT_MS_ABS)
                and d >= PROMPT_MS_REL * big)
    if field == "utilization":
        return d >= PROMPT_UTIL - 1e-9 and not (_number(capacity) and d * capacity < own)
    if field == "loss":
        return new > last  # a probe lost is news; an old loss leaving the window is not
    return True


def prompt_records(part: dict | None, old: dict[str, dict], own: float = 0.0) -> bool:
    """Whether a delta's part (add / set / del of links or interfaces, stream_wire's
    `_records`) holds a prompt change: a record added or removed, or a field whose move
    is prompt against `old` (the records as last sent)."""
    if not part:
        return False
    if part.get("add") or part.get("del"):
        return True
    return any(prompt(f, v, old[k].get(f), own, old[k].get("capacity_bytes_per_s"))
               for k, fields in part.get("set", {}).items() for f, v in fields.items())
