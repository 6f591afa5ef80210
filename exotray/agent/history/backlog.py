"""What the history database has not got yet: rows and events of the intervals it could
not be written (a full disk, a file that cannot be opened), kept for it until it can
(issue 33 point 10).

- **Rows** are not copied: every link's and interface's ring already holds its last hour.
  The backlog keeps the time from which the database may lack rows (`since`); once a
  write works again the rows from then on are read back from the rings and written, at
  most CATCH_UP_ROWS a batch, oldest first. Rows older than the rings' hour are gone:
  that stretch stays a gap in the database, said in the log.
- **Events** wait in the store's list, up to MAX_UNSTORED_EVENTS; beyond it the oldest are
  dropped, counted and logged (they are still in the --events file and the log).
- **Reads**: `/v1/history` takes the stretch from `since` from the ring, the rest from the
  database (`split`, `merge`); `/v1/events?since=` adds the events still waiting.

All of it runs on the event loop; the writer thread only says whether a batch went in.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from exotray.core.events import iso
from exotray.core.history import TEXT_COLUMNS

if TYPE_CHECKING:
    from exotray.agent.hw.monitor import IfaceState
    from exotray.agent.peers.links import Link

log = logging.getLogger("exotray.agent.history.store")

#: rows read back from the rings into one batch while catching up (about 2 MiB of tuples
#: for the moment they live; an hour of 20 series at 1 s is 18 such batches)
CATCH_UP_ROWS = 4000


@dataclass
class Job:
    """A batch handed to the writer thread: its future (True when written), the time of
    its oldest row (None: events only), its events, and for a batch that catches up the
    time its rows from the rings reach (None: all of them, up to its own rows)."""
    future: Future
    oldest: float | None
    events: list[dict[str, Any]]
    catch_up: bool = False
    reaches: float | None = None


@dataclass
class Backlog:
    #: rows from this time on may be missing from the database (None: it has them all)
    since: float | None = None
    #: a write worked since `since` was set: the next sample reads rows back
    due: bool = False
    #: a catch-up batch is with the thread
    catching: bool = False
    #: events dropped because too many waited
    lost_events: int = 0
    #: seconds of rows that were no longer in the rings when read back (all outages)
    lost_s: float = 0.0

    def behind(self, oldest: float | None) -> None:
        """Rows from `oldest` on did not go in (a failed or skipped batch)."""
        if oldest is not None:
            self.since = oldest if self.since is None else min(self.since, oldest)
        self.due = False

    def settled(self, job: Job, ok: bool) -> None:
        """The thread's answer for `job` (jobs settle in the order they were made)."""
        if job.catch_up:
            self.catching = False
        if not ok:
            self.behind(job.oldest)
            return
        if self.since is None:
            return
        if job.catch_up and job.oldest is not None and job.oldest <= self.since:
            self.since = job.reaches
            if self.since is None:
                log.info("history database has caught up: what was kept in memory is "
                         "written")
        elif not self.due:
            log.info("history database takes writes again: writing the rows kept in "
                     "memory since %s", iso(self.since))
        self.due = self.since is not None

    def read_back(self, links: Iterable[Link], ifaces: dict[str, IfaceState],
                  until: float, step: float | None) -> tuple[list[tuple], float | None]:
        """Rows of the rings from `since` up to (not including) `until`, at most about
        CATCH_UP_ROWS, as `collect` makes them; and where they stop when that cut them
        short (None: all of them)."""
        assert self.since is not None
        rings = [("link", lk.id, lk.history) for lk in links]
        rings += [("iface", name, st.history) for name, st in ifaces.items()
                  if st.vanished_at is None]
        share = max(1, CATCH_UP_ROWS // max(1, len(rings)))
        got, stop = [], None
        for kind, name, ring in rings:
            rows, next_t = ring.rows(self.since, until, share)
            got.append((kind, name, ring.columns, rows))
            if next_t is not None:
                stop = next_t if stop is None else min(stop, next_t)
        first = min((rows[0][0] for *_, rows in got if rows), default=None)
        if step is not None and first is not None and first - self.since > 1.5 * step:
            gone = first - self.since
            self.lost_s += gone
            log.warning("history database: the rows from %s to %s are no longer in memory "
                        "(it keeps an hour) and stay a gap", iso(self.since),
                        iso(self.since + gone))
        out = [(kind, name, cols, row) for kind, name, cols, rows in got for row in rows
               if stop is None or row[0] < stop]
        return out, stop


def keep_events(waiting: list[dict[str, Any]], limit: int) -> int:
    """Drop the oldest events beyond `limit` (in place); how many."""
    over = len(waiting) - limit
    if over > 0:
        del waiting[:over]
    return max(0, over)


def split(points: int, since: float, until: float, behind: float) -> tuple[int, int]:
    """Points of an answer for the database's part [since, behind) and the ring's
    [behind, until], by their share of the range (each at least 1)."""
    span = max(until - since, 1e-9)
    ring = min(points - 1, max(1, round(points * (until - behind) / span)))
    return max(1, points - ring), max(1, ring)


def merge(db_part: dict[str, Any], ring_part: dict[str, Any]) -> dict[str, Any]:
    """The database's answer with the ring's rows after it (same columns; a column the
    ring has not is None there)."""
    n = len(ring_part.get("t", []))
    out = dict(db_part)
    for key, values in db_part.items():
        if isinstance(values, list):
            extra = ring_part.get(key)
            out[key] = values + (list(extra) if isinstance(extra, list) else [None] * n)
    return out


def ring_part(hist: dict[str, Any] | None, since: float, until: float,
              points: int) -> dict[str, Any] | None:
    """A ring's rows with since <= t <= until in the database's shape: every numeric
    column with its _min/_max, at most `points` rows (every k-th); None without a ring."""
    if hist is None:
        return None
    times = hist.get("t", [])
    keep = [i for i, t in enumerate(times) if since <= t <= until]
    k = -(-len(keep) // max(1, points)) if len(keep) > points else 1
    keep = keep[::k]
    out: dict[str, Any] = {"tier": "memory", "step_s": None}
    for key, values in hist.items():
        if not isinstance(values, list):
            out[key] = values
            continue
        out[key] = [values[i] for i in keep]
        if key not in ("t", *TEXT_COLUMNS):
            out[f"{key}_min"] = out[f"{key}_max"] = out[key]
    return out
