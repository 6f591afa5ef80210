"""This node's links' loss of the last 24 h for the tray app's checks (the Health view and
the tray menu's count run `exotray doctor`'s, core/doctor.py): read as `exotray doctor`
reads it, one `/v1/history` a link in 1 min buckets (core/doctor_loss.history_query),
through the polling thread's requests, again every REFRESH_S, at most MAX_LINKS links."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from exotray.core import doctor_loss
from exotray.core.doctor_view import LOSS_HISTORY

#: a link's day is read again this often (s): a stretch of loss shows within it
REFRESH_S = 300.0
#: links of this node read at most
MAX_LINKS = doctor_loss.MAX_LINKS

#: `history_query(link_id, query, done)` of ui/client/poll.AgentClient
Fetch = Callable[[str, dict[str, Any], Callable[[Any, str | None], None]], Any]


class LossHistory:
    def __init__(self, fetch: Fetch, clock: Callable[[], float] = time.time,
                 mono: Callable[[], float] = time.monotonic) -> None:
        self.fetch = fetch
        self.clock = clock
        self.mono = mono
        self._links: dict[str, dict[str, Any]] = {}  # link id -> its day, as read
        self._answered = False  # (a first answer is in)
        self._asked_at: float | None = None

    def attach(self, cluster: dict[str, Any] | None) -> None:
        """Put the last reading into `cluster` (under core/doctor_view.LOSS_HISTORY) for
        the checks, once one is in; ask for a new one when due."""
        if not cluster or not cluster.get("nodes"):
            return
        ids = doctor_loss.own_link_ids(cluster)
        now = self.mono()
        if self._asked_at is None or now - self._asked_at >= REFRESH_S:
            self._asked_at = now
            self._ask(ids)
        if self._answered:
            cluster[LOSS_HISTORY] = doctor_loss.reading(ids, self._links)

    def _ask(self, ids: list[str]) -> None:
        query = doctor_loss.history_query(self.clock())
        for lid in ids[:MAX_LINKS]:
            self.fetch(lid, query, lambda result, error, lid=lid: self._got(lid, result))

    def _got(self, lid: str, result: Any) -> None:
        self._answered = True
        got = doctor_loss.kept(result)
        if got is None:
            self._links.pop(lid, None)
        else:
            self._links[lid] = got
