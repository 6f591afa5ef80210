"""The reflector's budget: how many probe requests it answers per source address (a
token bucket each, the least recently seen forgotten first), so exotray never becomes a
reflector worth aiming at anyone."""

from __future__ import annotations

from collections import OrderedDict

#: sustained requests per second per source address, and the burst
REFLECT_RATE = 200.0
REFLECT_BURST = 400.0
#: source addresses remembered at once
MAX_SOURCES = 4096


class _Bucket:
    __slots__ = ("at", "tokens")

    def __init__(self, now: float) -> None:
        self.tokens = REFLECT_BURST
        self.at = now


class SourceBudget:
    def __init__(self) -> None:
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def allow(self, host: str, now: float) -> bool:
        """Whether a request from `host` may be answered now (and take its token)."""
        b = self._buckets.get(host)
        if b is None:
            b = self._buckets[host] = _Bucket(now)
            if len(self._buckets) > MAX_SOURCES:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(host)
            b.tokens = min(REFLECT_BURST, b.tokens + (now - b.at) * REFLECT_RATE)
            b.at = now
        if b.tokens < 1:
            return False
        b.tokens -= 1
        return True
