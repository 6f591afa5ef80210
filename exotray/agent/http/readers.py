"""Who may read the past at once (issue 33, point 2): `/v1/history` and
`/v1/events?since=` run in the history store's one thread, so a LAN host asking for 30
days at 50,000 points again and again kept it busy and made the tray's own reads wait
(50 s for a 10-minute read). So:

- a LAN client's read gets at most MAX_LAN_HISTORY_POINTS rows, one LAN read runs at a
  time, and after a LAN read the LAN waits as long as it took (LAN reads have at most
  half of the thread's time); a loopback read therefore waits for at most one LAN read;
- loopback clients may have MAX_LOCAL_HISTORY_READS reads at once;
- a read beyond these is answered at once with 503 and Retry-After, never queued, so
  waiting readers hold no memory.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from exotray.agent.base import limits as L


class Busy(Exception):
    """No room for this read now; try again in `retry_s` seconds."""

    def __init__(self, retry_s: float) -> None:
        super().__init__(f"busy with other history reads; try again in {retry_s:g} s")
        self.retry_s = retry_s


class Readers:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.local = 0
        self.lan = 0
        self._lan_closed_until = 0.0
        #: reads refused, for the log and tests
        self.refused = 0

    @asynccontextmanager
    async def slot(self, local: bool) -> AsyncIterator[None]:
        """Hold a reader's place for the read inside; raises Busy when there is none."""
        if local:
            if self.local >= L.MAX_LOCAL_HISTORY_READS:
                self.refused += 1
                raise Busy(1.0)
            self.local += 1
            try:
                yield
            finally:
                self.local -= 1
            return
        now = self.clock()
        if self.lan >= L.MAX_LAN_HISTORY_READS or now < self._lan_closed_until:
            self.refused += 1
            raise Busy(max(1.0, math.ceil(self._lan_closed_until - now)))
        self.lan += 1
        try:
            yield
        finally:
            self.lan -= 1
            end = self.clock()
            self._lan_closed_until = end + (end - now)

    @staticmethod
    def points(local: bool, asked: int) -> int:
        return asked if local else min(asked, L.MAX_LAN_HISTORY_POINTS)
