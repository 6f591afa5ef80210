"""Between full ticks, the byte counters of the interfaces that carry links alone
(docs/design.md, "The ticks between full ones"): on Linux from sysfs through files kept
open (sampler.SysfsCounters), checked against psutil's at every read; elsewhere, or once
they disagree, None: every tick reads all interfaces through psutil. The monitor
(hw/monitor.py) holds one and keeps the merged raw counters."""

from __future__ import annotations

import logging
import os
import sys
from collections import deque
from collections.abc import Iterable

from exotray.agent.hw import sampler
from exotray.core.stats import counter_delta

log = logging.getLogger("exotray.agent.hw.monitor")

#: sysfs counters that run behind psutil's this many times within DISAGREE_WINDOW_S are
#: not this namespace's (an interface re-created makes one such step, rarely): every
#: tick then reads all counters through psutil
DISAGREE_MAX = 3
DISAGREE_WINDOW_S = 60.0

Counters = dict[str, tuple[int, int]]


class CarrierReader:
    def __init__(self, sysfs: sampler.SysfsCounters | None = None) -> None:
        #: None: every tick reads all (elsewhere than Linux, after sysfs and psutil
        #: disagreed, or a test giving the counters)
        self.sysfs = sysfs if sysfs is not None else (
            sampler.SysfsCounters() if sys.platform.startswith("linux")
            and os.path.isdir(sampler.SYS_NET) else None)
        #: the names it has open; None while it is not in use
        self.watched: frozenset[str] | None = None
        self._disagreed: deque[float] = deque(maxlen=DISAGREE_MAX)

    def watch(self, names: Iterable[str | None]) -> None:
        """Read these interfaces between full ticks (the links' carriers), where they
        can be read alone."""
        if self.sysfs is None:
            return
        want = frozenset(n for n in names if n and "/" not in n and not n.startswith("."))
        if want != self.watched:
            self.watched = want if self.sysfs.open(want) else None

    def read(self, raw: Counters, now: float) -> Counters | None:
        """The watched interfaces' counters, or None when they cannot be read alone now
        (one could not be read: opened again at the next full tick; or they went back
        against `raw`, the last reading of each)."""
        if self.watched is None or self.sysfs is None:
            return None
        counters = self.sysfs.read()
        if self.sysfs.names != self.watched:
            self.watched = None
            return None
        return counters if self.agree(raw, counters, now) else None

    def agree(self, raw: Counters, counters: Counters, now: float) -> bool:
        """Counters only grow (or wrap at 32 bits: stats.counter_delta): a watched
        interface whose counters went back since the last read, from the other source or
        this one, was re-created — or sysfs is another namespace's, which does so every
        interval: then psutil's alone. False when this reading went back."""
        watched = self.watched
        if not watched or self.sysfs is None:
            return True
        behind = sorted(n for n in watched if n in counters and n in raw and (
            counter_delta(raw[n][0], counters[n][0]) is None
            or counter_delta(raw[n][1], counters[n][1]) is None))
        if not behind:
            return True
        self._disagreed.append(now)
        self.watched = None
        if len(self._disagreed) == DISAGREE_MAX and now - self._disagreed[0] <= DISAGREE_WINDOW_S:
            log.warning("byte counters of %s in sysfs and in /proc/net/dev disagree "
                        "again: every tick reads /proc/net/dev", ", ".join(behind))
            self.close()
            self.sysfs = None
            return False
        log.info("byte counters of %s went back (re-created?): sysfs files opened again",
                 ", ".join(behind))
        self.watched = watched if self.sysfs.open(watched) else None
        return False

    def close(self) -> None:
        if self.sysfs is not None:
            self.sysfs.close()
        self.watched = None
