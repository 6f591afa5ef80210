"""Log a recurring problem once, then at most once a minute with a count."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any


class Throttled:
    def __init__(self, clock: Callable[[], float], every_s: float = 60.0,
                 logger: logging.Logger | None = None) -> None:
        self.clock = clock
        self.every_s = every_s
        self.log = logger or logging.getLogger("exotray.agent.runtime")
        self._seen: dict[str, tuple[float, int]] = {}

    def __call__(self, key: str, level: int, msg: str, *args: Any) -> None:
        now = self.clock()
        last = self._seen.get(key)
        if last is None or now - last[0] >= self.every_s:
            suffix = f" (and {last[1]} more since last report)" if last and last[1] else ""
            self.log.log(level, msg + suffix, *args)
            self._seen[key] = (now, 0)
        else:
            self._seen[key] = (last[0], last[1] + 1)
