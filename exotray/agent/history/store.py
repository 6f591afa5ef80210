"""The agent's side of the history database (history/db.py): one worker thread does all
SQLite work, so the event loop never waits on the disk and there is a single writer.

Once per interval the sample tick hands over the newest row of every link's and
interface's ring and the events raised since (`collect`: a few list appends on the loop);
every WRITE_EVERY intervals the thread writes what was handed over in one transaction (a
thread woken and a transaction per interval was most of an idle agent's history cost).
Reads for the API (`answer`, `event_range`) hand over what waits first and wait for it,
so they miss nothing; stopping writes what waits. An agent that is killed loses at most
WRITE_EVERY intervals the database had not got. Of one peer's events it keeps
MAX_EVENTS_PER_PEER_PER_DAY a day (`DayCap`).

What the database cannot take (a full disk, a stuck one, a file that cannot be opened)
waits for it (history/backlog.py): the rows in the rings (an hour), the events in a list
(MAX_UNSTORED_EVENTS); a database that could not be opened is tried again every
REOPEN_EVERY_S. Meanwhile reads take what the database lacks from memory. Each trouble is
said once in the log, then at most once a minute; never a crash loop.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exotray.agent.base import limits as L
from exotray.agent.base.throttle import Throttled
from exotray.agent.history import db as historydb
from exotray.agent.history.backlog import Backlog, Job, keep_events, merge, ring_part, split
from exotray.agent.history.daycap import DayCap
from exotray.core.events import iso

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
#: batches with the thread before new ones wait in memory instead (a stuck disk)
MAX_BACKLOG = 30
#: intervals of rows written in one transaction
WRITE_EVERY = 5
#: a database that could not be opened is tried again this often (sample time, s)
REOPEN_EVERY_S = 10.0


class HistoryStore:
    def __init__(self, state_dir: Path, retention_days: float, throttled: Throttled) -> None:
        self.path = state_dir / FILE
        self.retention_s = retention_days * 86400.0
        self._throttled = throttled
        self._exec: ThreadPoolExecutor | None = None
        self.db: historydb.HistoryDB | None = None
        #: events not yet written (waiting for the next batch, or for the database)
        self._events: list[dict[str, Any]] = []
        #: rows handed over and not yet written, the first and last one's time, intervals
        self._rows: list[tuple] = []
        self._rows_t0: float | None = None
        self._rows_t: float | None = None
        self._held = 0
        #: this batch reads rows back from the rings: (from, where they stop or None)
        self._catch: tuple[float, float | None] | None = None
        self._jobs: deque[Job] = deque()
        self.backlog = Backlog()
        self._last_t: float | None = None
        self._step: float | None = None
        self._opening: Future | None = None
        self._reopen_at: float | None = None
        #: called with the last event seq of a database opened after start
        self.on_open: Callable[[int], None] | None = None
        #: batches kept back because the thread fell behind (for tests and /metrics)
        self.dropped = 0
        self.cap = DayCap(L.MAX_EVENTS_PER_PEER_PER_DAY)
        #: free bytes on the database's disk, read by the thread after each batch
        self.free_bytes: int | None = None

    @property
    def enabled(self) -> bool:
        return self.db is not None

    def status(self) -> dict[str, Any]:
        """The database as `exotray doctor` judges it (the snapshot's local `history`):
        "off" (history_days 0), "ok" or "unavailable" (not open: tried again every
        REOPEN_EVERY_S); since when samples wait for it, and the free space under it."""
        days = self.retention_s / 86400.0
        return {"days": days,
                "database": "off" if days <= 0 else "ok" if self.db is not None
                else "unavailable",
                "path": str(self.path),
                "behind_since": iso(self.backlog.since) if self.backlog.since else None,
                "free_bytes": self.free_bytes}

    def _free(self) -> None:
        try:
            self.free_bytes = shutil.disk_usage(self.path.parent).free
        except OSError:
            self.free_bytes = None

    async def open(self) -> int:
        """Open (or replace) the database in the worker thread; the last event seq it
        holds (0 when none or disabled)."""
        if self.retention_s <= 0:
            log.info("history database off (history_days = 0): one hour in memory")
            return 0
        self._exec = ThreadPoolExecutor(1, thread_name_prefix="exotray-history")
        seq, kept = await asyncio.get_running_loop().run_in_executor(self._exec, self._open)
        self._seed(kept)
        return seq

    def _seed(self, kept: tuple[int, dict[str, int]] | None) -> None:
        if kept is not None:  # (a restart the same day: the day's cap goes on)
            self.cap.seed(*kept)

    def _open(self, again: bool = False) -> tuple[int, tuple[int, dict[str, int]] | None]:
        """(In the thread.) The last event seq and the newest day's events per peer of the
        database opened ((0, None) when it cannot be)."""
        try:
            db = historydb.open_or_replace(self.path, self.retention_s)
            try:
                seq, kept = db.last_seq(), db.day_counts()
            except BaseException:
                db.close()
                raise
            self.db = db
            self._free()
            return seq, kept
        except Exception as e:  # any failure: run on, never crash-loop
            self.db = None
            if again:
                log.debug("history database %s still cannot be opened: %s", self.path, e)
            else:
                log.error("cannot use history database %s (%s): keeping one hour in memory "
                          "and trying again every %g s", self.path, e, REOPEN_EVERY_S)
            return 0, None

    def event(self, event: dict[str, Any]) -> None:
        """An EventLog sink: kept until the next batch (up to the day's cap)."""
        if self._exec is not None and self.cap.keep(event):
            self._events.append(event)
            if len(self._events) > L.MAX_UNSTORED_EVENTS:  # a burst: hand them over now
                self.flush()
                self._bound_events()

    def _bound_events(self) -> None:
        lost = keep_events(self._events, L.MAX_UNSTORED_EVENTS)
        if lost:
            self.backlog.lost_events += lost
            self._throttled("history-events", logging.WARNING,
                            "history database: more than %d events wait for it; the oldest "
                            "are not stored (still logged and in the --events file)",
                            L.MAX_UNSTORED_EVENTS)

    def collect(self, t: float, links: Iterable[Link], ifaces: dict[str, IfaceState]) -> None:
        """The rows recorded at `t` (the newest of each ring); with the pending events,
        to the thread as one batch every WRITE_EVERY calls. Called on the loop once per
        interval; also where a database behind is caught up and a failed open retried."""
        if self._exec is None:
            return
        if self._last_t is not None and t > self._last_t:
            self._step = t - self._last_t
        self._last_t = t
        self._settle()
        if self.db is None:
            self._reopen(t)
        elif self.backlog.due and not self.backlog.catching and self._catch is None:
            rows, stop = self.backlog.read_back(
                links, ifaces, self._rows_t0 if self._held else t, self._step)
            self._catch = (self.backlog.since or t, stop)
            self._rows[:0] = rows
        self._rows += [("link", lk.id, lk.history.columns, row) for lk in links
                       if (row := lk.history.last()) is not None and row[0] == t]
        self._rows += [("iface", name, st.history.columns, row)
                       for name, st in ifaces.items()
                       if st.vanished_at is None and (row := st.history.last()) is not None
                       and row[0] == t]
        if not self._held:
            self._rows_t0 = t
        self._rows_t = t
        self._held += 1
        if self._held >= WRITE_EVERY or self._catch is not None:
            self.flush()

    def _reopen(self, t: float) -> None:
        if self._opening is not None or self._exec is None:
            return
        if self._reopen_at is None or t >= self._reopen_at:
            if self._reopen_at is not None:
                self._opening = self._exec.submit(self._open, True)
            self._reopen_at = t + REOPEN_EVERY_S

    def flush(self) -> None:
        """What waits (rows and events), to the thread now; kept back (events) or left
        to the rings (rows) while the database is not open or the thread is stuck."""
        if self._exec is None or not (self._held or self._events):
            return
        rows, t, held, catch = self._rows, self._rows_t, self._held, self._catch
        oldest = catch[0] if catch is not None else (self._rows_t0 if held else None)
        self._rows, self._held, self._catch = [], 0, None
        self._settle()
        if self.db is None or len(self._jobs) >= MAX_BACKLOG:
            if self.db is not None:
                self.dropped += 1
                self._throttled("history-backlog", logging.WARNING,
                                "history database is falling behind: keeping samples in "
                                "memory until it catches up")
            self.backlog.behind(oldest)
            return
        events, self._events = self._events, []
        job = Job(self._exec.submit(self._write, t, rows, events), oldest, events,
                  catch_up=catch is not None, reaches=catch[1] if catch else None)
        self.backlog.catching |= job.catch_up
        self._jobs.append(job)

    def _settle(self) -> None:
        """Take the thread's answers for the batches it has done, in order: what did not
        go in waits again; a database opened again starts catching up."""
        back: list[dict[str, Any]] = []
        while self._jobs and self._jobs[0].future.done():
            job = self._jobs.popleft()
            ok = job.future.exception() is None and job.future.result() is True
            self.backlog.settled(job, ok)
            if not ok:
                back += job.events
        if back:
            self._events = sorted(back + self._events, key=lambda e: e.get("seq") or 0)
            self._bound_events()
        opening = self._opening
        if opening is not None and opening.done():
            self._opening = None
            seq, kept = opening.result()
            if self.db is not None:
                self._seed(kept)
                log.info("history database %s opened: writing what was kept in memory",
                         self.path)
                self.backlog.due = self.backlog.since is not None
                if self.on_open is not None:
                    self.on_open(seq)

    def _write(self, now: float | None, rows: list, events: list, retry: bool = True,
               ) -> bool:
        """One batch in one transaction; whether it went in."""
        db = self.db
        self._free()
        if db is None:
            return False
        try:
            db.write(now, rows, events)
            return True
        except Exception as e:  # any failure: run on, never crash-loop
            if historydb.is_corruption(e):
                db.close()
                aside = historydb.set_aside(self.path, "corrupt")
                log.warning("history database %s went bad (%s): moved aside to %s; starting "
                            "a fresh one", self.path, e, aside.name)
                self._open()
                if retry:  # the file was bad, not the batch (up to WRITE_EVERY intervals)
                    return self._write(now, rows, events, retry=False)
            else:
                self._throttled("history-write", logging.ERROR,
                                "cannot write history database %s: %s", self.path, e)
            return False

    async def _run(self, fn: Callable[..., Any], *args: Any) -> Any:
        assert self._exec is not None
        return await asyncio.get_running_loop().run_in_executor(self._exec, fn, *args)

    async def _handed_over(self) -> None:
        """Hand over what waits and wait until the thread has tried it (before a read)."""
        self.flush()
        if self._jobs:
            await asyncio.wrap_future(self._jobs[-1].future)
        self._settle()

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
        """Stored events in the range, and those still waiting for the database."""
        if self.db is None or self._exec is None:
            return None
        await self._handed_over()
        got = await self._run(self._events_q, since, until, limit)
        waiting = [e for e in self._events if since <= (historydb.event_time(e) or -1) <= until]
        if got is None or not waiting:
            return got
        both = sorted(got[0] + waiting, key=lambda e: (historydb.event_time(e), e.get("seq")))
        return both[:limit], got[1] or len(both) > limit

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
                     memory: Callable[[], dict[str, Any] | None],
                     columns: tuple[str, ...] | None = None) -> dict[str, Any] | None:
        """/v1/history: from the database when it has the series, the stretch it has
        not got yet (`backlog.since` on) from the ring; else from the ring (`memory`,
        the database off); None when neither knows it. `columns`: only these (and t)."""
        kind, name = ("link", link_id) if link_id is not None else ("iface", iface or "")
        hist = None
        if self.db is not None and self._exec is not None:
            await self._handed_over()
            behind = self.backlog.since
            if behind is None or behind > until:
                hist = await self._run(self._query, kind, name, since, until, points, now,
                                       columns)
            elif behind > since:  # the database's part, then the ring's
                db_points, ring_points = split(points, since, until, behind)
                hist = await self._run(self._query, kind, name, since, behind - 0.001,
                                       db_points, now, columns)
                ring = ring_part(memory(), behind, until, ring_points)
                if hist is not None and ring is not None:
                    hist = merge(hist, ring)
        if hist is None:
            hist = memory_history(memory(), points, until)
            if hist is None:
                return None
        if columns is not None:  # (the ring's part has every column)
            hist = {k: v for k, v in hist.items() if not isinstance(v, list) or k == "t"
                    or k.removesuffix("_min").removesuffix("_max") in columns}
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
        self._settle()
        if self.backlog.since is not None or self._events:
            log.warning("history database %s did not get the samples since %s nor %d "
                        "events: stopping without them", self.path,
                        iso(self.backlog.since) if self.backlog.since else "-",
                        len(self._events))

    def _close(self) -> None:
        if self.db is not None:
            self.db.close()
            self.db = None


def memory_history(hist: dict[str, Any] | None, points: int,
                   until: float) -> dict[str, Any] | None:
    """A ring's answer (the database is off) in the database's shape: every numeric
    column with its _min/_max, at most `points` rows (every k-th)."""
    return ring_part(hist, float("-inf"), until, points)
