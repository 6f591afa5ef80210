"""The agent's side of the history database (history/db.py): one worker thread does all
SQLite work, so the event loop never waits on the disk and there is a single writer.

Once per interval the sample tick hands over the newest row of every link's and
interface's ring and the events raised since (`collect`: a few list appends on the loop);
every WRITE_EVERY intervals the thread writes what was handed over in one transaction (a
thread woken and a transaction per interval was most of an idle agent's history cost).
Reads for the API (`history`, `events`) hand over what waits first, run in the same
thread and are awaited, so they miss nothing; stopping writes what waits. An agent that
is killed loses at most WRITE_EVERY intervals the database had not got. A database that
cannot be opened or goes bad leaves the agent running on its in-memory hour, said once
in the log. Of one peer's events it keeps MAX_EVENTS_PER_PEER_PER_DAY a day (`DayCap`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exotray.agent.base import limits as L
from exotray.agent.base.throttle import Throttled
from exotray.agent.history import db as historydb
from exotray.core.events import iso
from exotray.core.history import TEXT_COLUMNS

if TYPE_CHECKING:
    from exotray.agent.hw.monitor import IfaceState
    from exotray.agent.peers.links import Link

log = logging.getLogger(__name__)

FILE = "history.db"
#: points a /v1/history answer has at most, unless asked for fewer (or, up to
#: MAX_POINTS, more)
POINTS = 2000
MIN_POINTS = 10
MAX_POINTS = 50_000
#: batches waiting for the thread before new ones are dropped (a stuck disk)
MAX_BACKLOG = 30
#: intervals of rows written in one transaction
WRITE_EVERY = 5


class HistoryStore:
    def __init__(self, state_dir: Path, retention_days: float, throttled: Throttled) -> None:
        self.path = state_dir / FILE
        self.retention_s = retention_days * 86400.0
        self._throttled = throttled
        self._exec: ThreadPoolExecutor | None = None
        self.db: historydb.HistoryDB | None = None
        self._events: list[dict[str, Any]] = []
        #: rows handed over and not yet written, the last one's time, intervals of them
        self._rows: list[tuple] = []
        self._rows_t: float | None = None
        self._held = 0
        self._pending: list[Future] = []
        #: batches dropped because the thread fell behind (for tests and /metrics)
        self.dropped = 0
        self.cap = DayCap(L.MAX_EVENTS_PER_PEER_PER_DAY)

    @property
    def enabled(self) -> bool:
        return self.db is not None

    async def open(self) -> int:
        """Open (or replace) the database in the worker thread; the last event seq it
        holds (0 when none or disabled)."""
        if self.retention_s <= 0:
            log.info("history database off (history_days = 0): one hour in memory")
            return 0
        self._exec = ThreadPoolExecutor(1, thread_name_prefix="exotray-history")
        return await asyncio.get_running_loop().run_in_executor(self._exec, self._open)

    def _open(self) -> int:
        try:
            self.db = historydb.open_or_replace(self.path, self.retention_s)
            return self.db.last_seq()
        except Exception as e:  # any failure: run on, never crash-loop
            log.error("cannot use history database %s (%s): keeping one hour in memory only",
                      self.path, e)
            self.db = None
            return 0

    def event(self, event: dict[str, Any]) -> None:
        """An EventLog sink: kept until the next batch (up to the day's cap)."""
        if self._exec is not None and self.cap.keep(event):
            self._events.append(event)

    def collect(self, t: float, links: Iterable[Link], ifaces: dict[str, IfaceState]) -> None:
        """The rows recorded at `t` (the newest of each ring); with the pending events,
        to the thread as one batch every WRITE_EVERY calls. Called on the loop once per
        interval."""
        if self._exec is None:
            return
        self._rows += [("link", lk.id, lk.history.columns, row) for lk in links
                       if (row := lk.history.last()) is not None and row[0] == t]
        self._rows += [("iface", name, st.history.columns, row)
                       for name, st in ifaces.items()
                       if st.vanished_at is None and (row := st.history.last()) is not None
                       and row[0] == t]
        self._rows_t = t
        self._held += 1
        if self._held >= WRITE_EVERY:
            self.flush()

    def flush(self) -> None:
        """What waits (rows and events), to the thread now."""
        if self._exec is None or not (self._held or self._events):
            return
        rows, events, t = self._rows, self._events, self._rows_t
        self._rows, self._events, self._held = [], [], 0
        self._pending = [f for f in self._pending if not f.done()]
        if len(self._pending) >= MAX_BACKLOG:
            self.dropped += 1
            self._throttled("history-backlog", logging.WARNING,
                            "history database is falling behind: dropping samples")
            return
        self._pending.append(self._exec.submit(self._write, t, rows, events))

    def _write(self, now: float | None, rows: list, events: list, retry: bool = True,
               ) -> None:
        db = self.db
        if db is None:
            return
        try:
            db.write(now, rows, events)
        except Exception as e:  # any failure: run on, never crash-loop
            if historydb.is_corruption(e):
                db.close()
                aside = historydb.set_aside(self.path, "corrupt")
                log.warning("history database %s went bad (%s): moved aside to %s; starting "
                            "a fresh one", self.path, e, aside.name)
                self._open()
                if retry:  # the file was bad, not the batch (up to WRITE_EVERY intervals)
                    self._write(now, rows, events, retry=False)
            else:
                self._throttled("history-write", logging.ERROR,
                                "cannot write history database %s: %s", self.path, e)

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        assert self._exec is not None
        return await asyncio.get_running_loop().run_in_executor(self._exec, fn, *args)

    async def history(self, kind: str, name: str, since: float, until: float, points: int,
                      now: float) -> dict[str, Any] | None:
        """The database's answer, or None when it has no such series (or is off)."""
        if self.db is None or self._exec is None:
            return None
        self.flush()  # the last intervals too
        return await self._run(self._query, kind, name, since, until, points, now)

    def _query(self, *args: Any) -> dict[str, Any] | None:
        db = self.db
        try:
            return db.query(*args) if db is not None else None
        except Exception as e:  # any failure: run on, never crash-loop
            self._throttled("history-read", logging.ERROR,
                            "cannot read history database %s: %s", self.path, e)
            return None

    async def events(self, since: float, until: float, limit: int,
                     ) -> tuple[list[dict[str, Any]], bool] | None:
        if self.db is None or self._exec is None:
            return None
        # The one thread writes what is queued before it reads: nothing pending is missed.
        self.flush()
        return await self._run(self._events_q, since, until, limit)

    def _events_q(self, since: float, until: float, limit: int,
                  ) -> tuple[list[dict[str, Any]], bool] | None:
        db = self.db
        try:
            return db.events(since, until, limit) if db is not None else None
        except Exception as e:  # any failure: run on, never crash-loop
            self._throttled("history-read", logging.ERROR,
                            "cannot read history database %s: %s", self.path, e)
            return None

    async def answer(self, link_id: str | None, iface: str | None, since: float,
                     until: float, points: int, now: float, interval: float,
                     memory: Callable[[], dict[str, Any] | None]) -> dict[str, Any] | None:
        """/v1/history: from the database when it has the series, else from the ring
        (`memory`, the database off); None when neither knows it."""
        kind, name = ("link", link_id) if link_id is not None else ("iface", iface or "")
        hist = await self.history(kind, name, since, until, points, now)
        if hist is None:
            hist = memory_history(memory(), points, until)
            if hist is None:
                return None
        key = "link" if kind == "link" else "interface"
        return {key: name, "interval_s": interval, "since": since, "until": until, **hist}

    async def event_range(self, since: float, until: float, limit: int,
                          memory: list[dict[str, Any]]) -> dict[str, Any]:
        """/v1/events?since=&until=: from the database, else from the in-memory ring."""
        got = await self.events(since, until, limit)
        if got is None:
            hits = [e for e in memory if since <= (historydb.event_time(e) or -1) <= until]
            got = hits[:limit], len(hits) > limit
        return {"events": got[0], "truncated": got[1]}

    async def close(self) -> None:
        """Write what is queued, then close the file and end the thread."""
        if self._exec is None:
            return
        self.flush()
        self.cap.summary()
        loop = asyncio.get_running_loop()
        exec_, self._exec = self._exec, None
        await loop.run_in_executor(exec_, self._close)
        exec_.shutdown(wait=True)

    def _close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


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

    def summary(self) -> None:
        """Log the events not stored in the day so far (once: the count is reset)."""
        if self.over:
            log.warning("history: events not stored on %s (over %d a peer): %s",
                        iso(86400.0 * (self.day or 0))[:10], self.limit, ", ".join(
                            f"{who or 'this node'} {n}" for who, n in sorted(self.over.items())))
            self.over = {}


def memory_history(hist: dict[str, Any] | None, points: int,
                   until: float) -> dict[str, Any] | None:
    """A ring's answer (the database is off) in the database's shape: every numeric
    column with its _min/_max, at most `points` rows (every k-th)."""
    if hist is None:
        return None
    n = sum(1 for t in hist.get("t", []) if t <= until)
    hist = {k: v[:n] if isinstance(v, list) else v for k, v in hist.items()}
    k = -(-n // max(1, points)) if n > points else 1
    out: dict[str, Any] = {"tier": "memory", "step_s": None}
    for key, values in hist.items():
        if not isinstance(values, list):
            out[key] = values
            continue
        out[key] = values[::k] if k > 1 else values
        if key not in ("t", *TEXT_COLUMNS):
            out[f"{key}_min"] = out[f"{key}_max"] = out[key]
    return out
