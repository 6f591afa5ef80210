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
MAX_LINKS = 32

#: `history_query(link_id, query, done)` of ui/client/poll.AgentClient
Fetch = Callable[[str, dict[str, Any], Callable[[Any, str | None], None]], Any]


class LossHistory:
    def __init__(self, fetch: Fetch, clock: Callable[[], float] = time.time,
                 mono: Callable[[], float] = time.monotonic) -> None:
        self.fetch = fetch
        self.clock = clock
        self.mono = mono
        self._links: dict[str, dict[str, Any]] = {}
        self._unread: set[str] = set()
        self._asked_at: float | None = None
        self._read = False

    def attach(self, cluster: dict[str, Any] | None) -> None:
        """Put the last reading into `cluster` (under core/doctor_view.LOSS_HISTORY) for
        the checks, once one is in; ask for a new one when due."""
        if not cluster or not cluster.get("nodes"):
            return
        own = cluster["nodes"][0]
        ids = [lk["id"] for lk in own.get("links") or [] if isinstance(lk.get("id"), str)]
        now = self.mono()
        if self._asked_at is None or now - self._asked_at >= REFRESH_S:
            self._asked_at = now
            self._ask(ids)
        if self._read:
            cluster[LOSS_HISTORY] = {
                "links": {i: self._links[i] for i in ids if i in self._links},
                "unread": [i for i in ids if i in self._unread or (
                    i not in self._links and ids.index(i) >= MAX_LINKS)]}

    def _ask(self, ids: list[str]) -> None:
        query = doctor_loss.history_query(self.clock())
        for lid in ids[:MAX_LINKS]:
            self.fetch(lid, query, lambda result, error, lid=lid: self._got(lid, result))

    def _got(self, lid: str, result: Any) -> None:
        self._read = True
        got = doctor_loss.kept(result)
        if got is None:
            self._unread.add(lid)
            self._links.pop(lid, None)
        else:
            self._unread.discard(lid)
            self._links[lid] = got
