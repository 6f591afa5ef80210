"""The history database's day cap of events per peer (issue 33 point 9), kept across a
restart of the agent the same day (the store seeds it from the database when it opens)."""

from __future__ import annotations

import logging
from typing import Any

from exotray.agent.base import limits as L
from exotray.agent.history import db as historydb
from exotray.core.events import iso

log = logging.getLogger("exotray.agent.history.store")  # (said as the store's)


class DayCap:
    """At most `limit` events of one peer (its id, else its name; this node's own under
    "") in a UTC day go to the database: a peer that flaps or saturates all day must not
    fill 30 days of history (issue 33 point 9). What is over is counted; the first of a
    peer's day is logged, and the day's count when the next begins or the agent stops.
    Keys are a day's peers, at most 4 x MAX_PEERS (the rest counted together)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.day: int | None = None
        self.kept: dict[str, int] = {}
        self.over: dict[str, int] = {}
        #: events not kept since start (all days)
        self.dropped = 0

    def keep(self, event: dict[str, Any]) -> bool:
        t = historydb.event_time(event)
        day = int(t // 86400) if t is not None else self.day
        if day is not None and (self.day is None or day > self.day):
            self.summary()
            self.day, self.kept, self.over = day, {}, {}
        who = str(event.get("peer_id") or event.get("peer_name") or "")
        if who not in self.kept and len(self.kept) >= 4 * L.MAX_PEERS:
            who = "(others)"
        n = self.kept[who] = self.kept.get(who, 0) + 1
        if n <= self.limit:
            return True
        self.dropped += 1
        self.over[who] = self.over.get(who, 0) + 1
        if self.over[who] == 1:
            log.warning("history: %d events of %s today; its further events today are not "
                        "stored (still logged and served while in memory)", self.limit,
                        who or "this node")
        return False

    def seed(self, day: int, kept: dict[str, int]) -> None:
        """What the database already holds of `day` (its newest): counted as kept, so an
        agent restarted that day does not store another day's worth (events counted since
        start are added to it; a newer day than `day` under way, it is not needed)."""
        if self.day is not None and self.day != day:
            return
        self.day = day
        for who, n in sorted(kept.items(), key=lambda kv: -kv[1]):
            if who not in self.kept and len(self.kept) >= 4 * L.MAX_PEERS:
                who = "(others)"
            self.kept[who] = self.kept.get(who, 0) + n

    def summary(self) -> None:
        """Log the events not stored in the day so far (once: the count is reset)."""
        if self.over:
            log.warning("history: events not stored on %s (over %d a peer): %s",
                        iso(86400.0 * (self.day or 0))[:10], self.limit, ", ".join(
                            f"{who or 'this node'} {n}" for who, n in sorted(self.over.items())))
            self.over = {}
