"""The agent's history on disk: one SQLite database (WAL) in the state dir, per link and
per interface, in tiers, and every event.

Synchronous and single-threaded by design: `history/store.py` owns the one thread that calls it
(writes once per interval, reads for the API), so there is one writer and no lock. Every
method that depends on time takes it (`now`, unix seconds): no clock of its own.

Tiers (per kind, `link_raw`, `link_10s`, `link_1m`, and `iface_…`): every sample for the
last hours, then 10 s and 1 min buckets. A bucket keeps, per number, min / mean / max (so a
3 s peak survives into the 30-day view) and for the link state the worst one seen. Buckets
are rolled up from the finer tier when complete (a watermark per tier in `meta`, written
in the same transaction, so a kill never loses or doubles a bucket).

Values are stored as integers at a fixed resolution (`scale`): µs for milliseconds,
bytes/s for rates, 1e-4 for ratios; SQLite keeps small integers in 1-4 bytes where a REAL
takes 8. Columns come from `core.history.LINK_COLUMNS` / `IFACE_COLUMNS`: a column added
there is added to every tier's table at the next open (history/schema.py).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from exotray.agent.history.schema import (
    KINDS,
    RANKS,
    Corrupt,
    NotOurs,
    Tier,
    digits,
    is_corruption,
    numeric,
    prepare,
    q,
    scale,
    set_aside,
    tiers,
)

__all__ = ["HistoryDB", "event_time", "is_corruption", "open_or_replace", "set_aside"]

log = logging.getLogger(__name__)
#: a retention cleanup runs this often (sample time)
CLEANUP_EVERY_S = 600.0


def open_or_replace(path: Path, retention_s: float) -> HistoryDB:
    """Open the database; a corrupt, foreign or newer one is moved aside with one log
    line and a fresh one started. An error on the fresh one is raised (the caller then
    runs without a database)."""
    try:
        return HistoryDB(path, retention_s)
    except NotOurs as e:
        why, what = ("newer", str(e)) if "newer" in str(e) else ("foreign", str(e))
    except (Corrupt, sqlite3.DatabaseError) as e:
        if not isinstance(e, Corrupt) and not is_corruption(e):
            raise
        why, what = "corrupt", f"unreadable ({e})"
    aside = set_aside(path, why)
    log.warning("history database %s is %s: moved aside to %s; starting a fresh one",
                path, what, aside.name)
    return HistoryDB(path, retention_s)


class HistoryDB:
    def __init__(self, path: Path, retention_s: float) -> None:
        self.path = path
        self.retention_s = retention_s
        self.tiers = tiers(retention_s)
        self._series: dict[tuple[str, str], int] = {}
        self._inserts: dict[tuple[str, tuple[str, ...]], tuple[str, list]] = {}
        self._cleaned_at: float | None = None
        if str(path) != ":memory:" and not os.path.lexists(path):
            # made 0600 before SQLite makes it with the umask's mode; its -wal and -shm
            # take the database file's mode (SQLite's unix VFS). Where it cannot be made,
            # SQLite says why, as before.
            with contextlib.suppress(OSError):
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_CLOEXEC,
                                 0o600))
        self.conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            prepare(self.conn, self.tiers)
        except BaseException:
            self.conn.close()
            raise

    def close(self) -> None:
        self.conn.close()

    # -- writing -----------------------------------------------------------------------
    def _series_id(self, kind: str, name: str, create: bool = True) -> int | None:
        sid = self._series.get((kind, name))
        if sid is None:
            row = self.conn.execute("SELECT id FROM series WHERE kind=? AND name=?",
                                    (kind, name)).fetchone()
            if row is None and create:
                row = (self.conn.execute("INSERT INTO series (kind, name) VALUES (?, ?)",
                                         (kind, name)).lastrowid,)
            if row is None:
                return None
            sid = self._series[(kind, name)] = row[0]
        return sid

    def _insert_sql(self, kind: str, columns: tuple[str, ...],
                    ) -> tuple[str, list[tuple[int, str]]]:
        """The statement that stores a row of `columns` (t first) into `kind`'s raw
        table, and the row's positions and columns it keeps (those the table has)."""
        got = self._inserts.get((kind, columns))
        if got is None:
            keep = [(i, col) for i, col in enumerate(columns) if i and col in KINDS[kind]]
            sql = (f"INSERT OR REPLACE INTO {kind}_raw (series, t"
                   + "".join(f", {q(col)}" for _, col in keep)
                   + ") VALUES (?, ?" + ", ?" * len(keep) + ")")
            got = self._inserts[(kind, columns)] = (sql, keep)
        return got

    @staticmethod
    def _encode(col: str, value: Any) -> Any:
        if value is None:
            return None
        if col in RANKS:
            ranks = RANKS[col]
            return ranks.index(value) if value in ranks else None
        if not numeric(col):
            return str(value)
        return round(float(value) * scale(col))

    def write(self, now: float | None, rows: list[tuple[str, str, tuple[str, ...], tuple]],
              events: list[dict[str, Any]]) -> None:
        """Samples of one or more intervals (kind, series name, columns, row with t first)
        and the events raised since the last call, rollups due by `now` (the newest row's
        time; None when there is none yet), cleanup when due; one transaction."""
        c = self.conn
        c.execute("BEGIN IMMEDIATE")
        try:
            batches: dict[str, list[tuple]] = {}  # one statement per kind and columns
            oldest: dict[str, int] = {}  # per kind, the oldest row's time (ms)
            for kind, name, columns, row in rows:
                sql, keep = self._insert_sql(kind, columns)
                t_ms = round(row[0] * 1000)
                oldest[kind] = min(oldest.get(kind, t_ms), t_ms)
                batches.setdefault(sql, []).append(
                    (self._series_id(kind, name), t_ms,
                     *(self._encode(col, row[i]) for i, col in keep)))
            for sql, params in batches.items():
                c.executemany(sql, params)
            c.executemany(
                "INSERT INTO events (seq, at, type, link_id, body) VALUES (?, ?, ?, ?, ?)",
                [(e.get("seq"), event_time(e), e.get("type"), e.get("link_id"),
                  json.dumps(e, separators=(",", ":"))) for e in events])
            if now is not None:  # (None: events only, before any row)
                self._rollup(round(now * 1000), oldest)
                if self._cleaned_at is None or now - self._cleaned_at >= CLEANUP_EVERY_S:
                    self.cleanup(now)
            c.execute("COMMIT")
        except BaseException:
            if c.in_transaction:
                c.execute("ROLLBACK")
            raise

    def _rollup(self, now_ms: int, oldest: dict[str, int] | None = None) -> None:
        """Roll complete buckets up to `now_ms` into the coarser tiers. Rows older than
        a tier's mark (`oldest`, per kind: written late, after the database could not
        be written) roll their buckets again, from the finest tier up."""
        for kind in KINDS:
            late = (oldest or {}).get(kind)
            for src, dst in zip(self.tiers, self.tiers[1:], strict=False):
                key = f"rolled_{kind}_{dst.name}"
                end = now_ms // dst.step_ms * dst.step_ms
                row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
                start = int(row[0]) if row else None
                if start is not None and late is not None and late < start:
                    start = late // dst.step_ms * dst.step_ms
                if start is None:
                    first = self.conn.execute(f"SELECT min(t) FROM {kind}_{src.name}").fetchone()
                    start = first[0] // dst.step_ms * dst.step_ms if first[0] is not None else end
                if end > start:
                    self._roll(kind, src, dst, start, end)
                self.conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(end)))

    def _roll(self, kind: str, src: Tier, dst: Tier, start: int, end: int) -> None:
        names, exprs = ["n"], ["count(*)" if not src.step_ms else "sum(n)"]
        for col in KINDS[kind][1:]:
            if not numeric(col):
                names.append(col)
                exprs.append(f"max({q(col)})")
                continue
            names += [f"{col}_min", f"{col}_mean", f"{col}_max"]
            exprs += [f"CAST(round({e}) AS INTEGER)" for e in _aggregates(col, bool(src.step_ms))]
        step = dst.step_ms
        self.conn.execute(
            f"INSERT OR REPLACE INTO {kind}_{dst.name} (series, t, "
            + ", ".join(q(n) for n in names) + f") SELECT series, t / {step} * {step}, "
            + ", ".join(exprs) + f" FROM {kind}_{src.name} WHERE t >= ? AND t < ? "
            f"GROUP BY series, t / {step}", (start, end))

    def cleanup(self, now: float) -> None:
        """Rows older than each tier keeps, events older than the retention."""
        self._cleaned_at = now
        sids = [r[0] for r in self.conn.execute("SELECT id FROM series")]
        for kind in KINDS:
            for tier in self.tiers:
                cut = round((now - tier.keep_s) * 1000)
                self.conn.executemany(f"DELETE FROM {kind}_{tier.name} WHERE series=? AND t<?",
                                      [(sid, cut) for sid in sids])
        self.conn.execute("DELETE FROM events WHERE at < ?", (now - self.retention_s,))

    # -- reading -----------------------------------------------------------------------
    def last_seq(self) -> int:
        return self.conn.execute("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]

    def day_counts(self) -> tuple[int, dict[str, int]] | None:
        """The UTC day (days since the epoch) of the newest event kept, and that day's
        events per peer as the store's day cap counts them (its id, else its name, else
        "" for this node's own); None with no event."""
        newest = self.conn.execute("SELECT max(at) FROM events").fetchone()[0]
        if newest is None:
            return None
        day = int(newest // 86400)
        rows = self.conn.execute(
            "SELECT coalesce(nullif(json_extract(body, '$.peer_id'), ''), "
            "nullif(json_extract(body, '$.peer_name'), ''), ''), count(*) FROM events "
            "WHERE at >= ? AND at < ? GROUP BY 1", (day * 86400.0, (day + 1) * 86400.0))
        return day, {str(who): n for who, n in rows}

    def has(self, kind: str, name: str) -> bool:
        return self._series_id(kind, name, create=False) is not None

    def query(self, kind: str, name: str, since: float, until: float, points: int,
              now: float, columns: tuple[str, ...] | None = None) -> dict[str, Any] | None:
        """Columns of the series between since and until (unix s), at most `points` rows:
        from the finest tier that still keeps `since`, in equal buckets when it has more
        rows than that; the newest stretch that tier has not rolled up yet (under a
        minute) from the finer ones. `columns`: only these (and t), else all. None when
        the series was never recorded."""
        sid = self._series_id(kind, name, create=False)
        if sid is None:
            return None
        cols = [c for c in KINDS[kind][1:] if columns is None or c in columns]
        top = next((i for i, t in enumerate(self.tiers) if since >= now - t.keep_s),
                   len(self.tiers) - 1)
        lo, hi = round(since * 1000), round(until * 1000)
        # [lo, hi] split by the tiers' roll-up marks: coarse part first, finer tails after
        segments: list[tuple[Tier, int, int]] = []
        seg_hi = hi
        for k in range(0, top + 1):
            mark = self._mark(kind, self.tiers[k + 1]) if k < top else None
            seg_lo = lo if mark is None else max(lo, mark)
            if seg_lo <= seg_hi:
                segments.append((self.tiers[k], seg_lo, seg_hi))
            seg_hi = min(seg_hi, seg_lo - 1)
        tier = self.tiers[top]
        share = max(1, points // max(1, len(segments)))
        tails = [self._select(kind, sid, t, a, b, share, cols) for t, a, b in segments
                 if t is not tier]
        budget = max(1, points - sum(len(r) for r, _ in tails))
        main, width = next((self._select(kind, sid, t, a, b, budget, cols)
                            for t, a, b in segments if t is tier), ([], tier.step_ms))
        rows = main + [r for part, _ in reversed(tails) for r in part]
        out: dict[str, Any] = {"tier": tier.name,
                               "step_s": (width / 1000) if width else None,
                               "t": [r[0] / 1000 for r in rows]}
        i = 1
        for col in cols:
            if not numeric(col):
                ranks = RANKS.get(col)
                out[col] = [ranks[r[i]] if ranks and r[i] is not None else r[i] for r in rows]
                i += 1
                continue
            k, nd = scale(col), digits(col)
            for j, suffix in enumerate(("_min", "", "_max")):
                out[col + suffix] = [None if r[i + j] is None else round(r[i + j] / k, nd)
                                     for r in rows]
            i += 3
        return out

    def _mark(self, kind: str, tier: Tier) -> int | None:
        """Where `tier`'s complete buckets end (ms): later rows are only in finer tiers."""
        row = self.conn.execute("SELECT value FROM meta WHERE key=?",
                                (f"rolled_{kind}_{tier.name}",)).fetchone()
        return int(row[0]) if row else None

    def _select(self, kind: str, sid: int, tier: Tier, lo: int, hi: int,
                points: int, cols: list[str]) -> tuple[list[tuple], int]:
        """Rows of one tier in [lo, hi], bucketed when more than `points`; and the width."""
        table = f"{kind}_{tier.name}"
        count = self.conn.execute(f"SELECT count(*) FROM {table} WHERE series=? AND t>=? "
                                  "AND t<=?", (sid, lo, hi)).fetchone()[0]
        grouped = count > points
        width = max(tier.step_ms, (hi - lo) // max(1, points) + 1) if grouped else tier.step_ms
        if grouped and tier.step_ms:
            width = -(-width // tier.step_ms) * tier.step_ms
        select = ["min(t)" if grouped else "t"]
        for col in cols:
            if not numeric(col):
                select.append(f"max({q(col)})" if grouped else q(col))
            elif not grouped:
                select += ([q(col)] * 3 if not tier.step_ms else
                           [q(f"{col}_{a}") for a in ("min", "mean", "max")])
            else:
                select += list(_aggregates(col, bool(tier.step_ms)))
        sql = (f"SELECT {', '.join(select)} FROM {table} WHERE series=? AND t>=? AND t<=?"
               + (f" GROUP BY (t - {lo}) / {width}" if grouped else "") + " ORDER BY 1")
        return self.conn.execute(sql, (sid, lo, hi)).fetchall(), width

    def events(self, since: float, until: float, limit: int) -> tuple[list[dict], bool]:
        """Events between since and until (unix s), oldest first; whether more matched."""
        rows = self.conn.execute("SELECT body FROM events WHERE at >= ? AND at <= ? "
                                 "ORDER BY at, id LIMIT ?", (since, until, limit + 1)).fetchall()
        return [json.loads(r[0]) for r in rows[:limit]], len(rows) > limit


def _aggregates(col: str, tiered: bool) -> tuple[str, str, str]:
    """min, mean, max of a numeric column over a group of raw rows or of buckets (the
    mean weighted by each bucket's sample count, NULLs not counted)."""
    c = q(col)
    if not tiered:
        return f"min({c})", f"avg({c})", f"max({c})"
    mn, me, mx = (q(f"{col}_{a}") for a in ("min", "mean", "max"))
    return (f"min({mn})",
            f"sum({me} * n) * 1.0 / nullif(sum(CASE WHEN {me} IS NULL THEN 0 ELSE n END), 0)",
            f"max({mx})")


def event_time(event: dict[str, Any]) -> float | None:
    try:
        return datetime.fromisoformat(str(event["at"]).replace("Z", "+00:00")).timestamp()
    except (KeyError, ValueError):
        return None
