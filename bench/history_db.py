"""Size and cost of the agent's history database (exotray/agent/history/db.py) at steady
state: N links (and a few interfaces) kept for D days at the tier rates.

    .venv/bin/python bench/history_db.py [--links 8] [--ifaces 4] [--days 30] [--interval 1]

Fills a fresh database as it stands after D days of an agent: full-resolution rows for
the last 6 h at --interval, 10 s buckets for 48 h, 1 min buckets for D days, with values
that move (RTT, rates, utilization; state mostly "up") so SQLite's integer encoding sees
realistic sizes. Then it measures, with the agent's own code paths:

* the file size (database + WAL after a checkpoint) and bytes per link-day;
* one interval's write (`HistoryDB.write`: N links + interfaces, roll-ups, in one
  transaction), wall and CPU time, median and p99 over --writes intervals (this runs in
  the agent's history thread, never on its event loop);
* `/v1/history`'s query (`HistoryDB.query`, 2000 points) for 1 h, 24 h and 30 d of one
  link, median of 5;
* the retention cleanup and the open (quick_check + schema) at start;
* how late the event loop wakes (10 ms sleeps), idle and while the store's thread answers
  30-day queries back to back: what the API's reads cost the agent's loop.

No network, no agent; about a minute. Writes a temporary directory, removed afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _harness import machine_info, machine_line, md_table, write_json

from exotray.agent.history.db import HistoryDB, open_or_replace
from exotray.agent.history.schema import KINDS, RANKS, numeric, scale
from exotray.core.history import IFACE_COLUMNS, LINK_COLUMNS

DAY = 86400.0


def _values(rnd: random.Random, kind: str, busy: float) -> dict[str, float | str | None]:
    rtt = 0.05 + rnd.random() * 0.4
    util = min(1.0, busy * (0.5 + rnd.random()))
    rate = util * 1.25e9
    if kind == "iface":
        return {"rx_bytes_per_s": rate, "tx_bytes_per_s": rate * rnd.random(), "carrier": "up"}
    return {"rtt_ms": rtt, "rtt_min_ms": rtt * 0.7, "rtt_max_ms": rtt * 2.5,
            "rx_bytes_per_s": rate, "tx_bytes_per_s": rate * rnd.random(),
            "utilization": util, "state": "saturated" if util > 0.9 else "up",
            "rtt_baseline_ms": 0.05, "queue_delay_ms": rtt - 0.05,
            "flow_rx_bytes_per_s": None, "flow_tx_bytes_per_s": None,
            "loss": 0.1 if rnd.random() < 0.01 else 0.0}


def _enc(col: str, v: float | str | None) -> int | str | None:
    if v is None:
        return None
    if col in RANKS:
        return RANKS[col].index(v)
    return round(float(v) * scale(col))


def fill(db: HistoryDB, kind: str, name: str, now: float, interval: float, days: float,
         seed: int) -> int:
    """Bulk rows of one series in every tier as D days of sampling leave them."""
    rnd = random.Random(seed)
    sid = db._series_id(kind, name)
    cols = KINDS[kind][1:]
    rows = 0
    for tier in db.tiers:
        step = tier.step_ms / 1000 or interval
        keep = min(tier.keep_s, days * DAY)
        start = now - keep
        batch = []
        for i in range(int(keep / step)):
            t = start + i * step
            busy = 0.05 if rnd.random() > 0.02 else 0.95
            v = _values(rnd, kind, busy)
            row: list = [sid, round(t * 1000)]
            if not tier.step_ms:
                row += [_enc(c, v[c]) for c in cols]
            else:
                row.append(int(step / interval))
                for c in cols:
                    if not numeric(c):
                        row.append(_enc(c, v[c]))
                    elif v[c] is None:  # not read (a link's own bytes)
                        row += [None] * 3
                    else:
                        x = float(v[c])  # type: ignore[arg-type]
                        row += [_enc(c, x * 0.6), _enc(c, x), _enc(c, x * 1.8)]
            batch.append(row)
        names = ["series", "t"] + ([c for c in cols] if not tier.step_ms else
                                   ["n"] + [x for c in cols for x in (
                                       [c] if not numeric(c) else
                                       [f"{c}_min", f"{c}_mean", f"{c}_max"])])
        db.conn.executemany(
            f"INSERT OR REPLACE INTO {kind}_{tier.name} ({', '.join(map(repr, names))}) "
            f"VALUES ({', '.join('?' * len(names))})".replace("'", '"'), batch)
        rows += len(batch)
    return rows


def loop_lag(state: Path, days: float, end: float) -> dict[str, float]:
    """How late a 10 ms asyncio sleep wakes, idle and while the store's thread answers
    30-day queries back to back (through HistoryStore, as the API does)."""
    from exotray.agent.base.throttle import Throttled
    from exotray.agent.history.store import HistoryStore

    async def probe(seconds: float) -> list[float]:
        lags = []
        stop = time.perf_counter() + seconds
        while time.perf_counter() < stop:
            t = time.perf_counter()
            await asyncio.sleep(0.01)
            lags.append((time.perf_counter() - t - 0.01) * 1000)
        return lags

    async def run() -> dict[str, float]:
        store = HistoryStore(state, days, Throttled(time.monotonic))
        await store.open()
        idle = await probe(2.0)
        done = False

        async def hammer() -> None:
            while not done:
                await store.answer("link00", None, end - 30 * DAY, end, 2000, end, 1.0,
                                   lambda: None)

        task = asyncio.create_task(hammer())
        busy = await probe(3.0)
        done = True
        await task
        await store.close()

        def p99(xs: list[float]) -> float:
            return sorted(xs)[int(len(xs) * 0.99) - 1]

        return {"idle_p99": p99(idle), "idle_max": max(idle), "busy_p99": p99(busy),
                "busy_max": max(busy)}

    return asyncio.run(run())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--links", type=int, default=8)
    ap.add_argument("--ifaces", type=int, default=4)
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--interval", type=float, default=1.0)
    ap.add_argument("--writes", type=int, default=600)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="exotray-histbench-"))
    try:
        path = tmp / "history.db"
        now = 1_800_000_000.0
        db = open_or_replace(path, args.days * DAY)
        t0 = time.perf_counter()
        db.conn.execute("BEGIN")
        rows = sum(fill(db, "link", f"link{i:02d}", now, args.interval, args.days, i)
                   for i in range(args.links))
        rows += sum(fill(db, "iface", f"eth{i}", now, args.interval, args.days, 100 + i)
                    for i in range(args.ifaces))
        db.conn.execute("COMMIT")
        fill_s = time.perf_counter() - t0
        print(f"filled {rows} rows in {fill_s:.1f} s", file=sys.stderr)

        # one interval's write, as the agent's history thread does it
        rnd = random.Random(7)
        wall, cpu = [], []
        for k in range(args.writes):
            t = now + (k + 1) * args.interval
            batch = [("link", f"link{i:02d}", LINK_COLUMNS,
                      (t, *(_values(rnd, "link", 0.05)[c] for c in LINK_COLUMNS[1:])))
                     for i in range(args.links)]
            batch += [("iface", f"eth{i}", IFACE_COLUMNS,
                       (t, *(_values(rnd, "iface", 0.05)[c] for c in IFACE_COLUMNS[1:])))
                      for i in range(args.ifaces)]
            w0, c0 = time.perf_counter(), time.process_time()
            db.write(t, batch, [])
            wall.append(time.perf_counter() - w0)
            cpu.append(time.process_time() - c0)
        end = now + args.writes * args.interval

        queries = {}
        for label, span in (("1 h", 3600.0), ("24 h", DAY), ("30 d", 30 * DAY)):
            times, n, tier = [], 0, ""
            for _ in range(5):
                q0 = time.perf_counter()
                got = db.query("link", "link00", end - span, end, 2000, end)
                times.append(time.perf_counter() - q0)
                n, tier = len(got["t"]), got["tier"]
            queries[label] = {"ms": statistics.median(times) * 1000, "points": n, "tier": tier}

        c0 = time.perf_counter()
        db.conn.execute("BEGIN")
        db.cleanup(end)
        db.conn.execute("COMMIT")
        cleanup_ms = (time.perf_counter() - c0) * 1000
        db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()
        size = sum(p.stat().st_size for p in tmp.iterdir() if p.name.startswith("history"))
        o0 = time.perf_counter()
        open_or_replace(path, args.days * DAY).close()
        open_ms = (time.perf_counter() - o0) * 1000

        per_link_day = size / (args.days * max(1, args.links))
        lag = loop_lag(tmp, args.days, end)
        out = {
            "machine": machine_info(), "links": args.links, "ifaces": args.ifaces,
            "days": args.days, "interval_s": args.interval, "rows": rows,
            "file_bytes": size, "bytes_per_link_day": per_link_day,
            "write_wall_ms_median": statistics.median(wall) * 1000,
            "write_wall_ms_p99": sorted(wall)[int(len(wall) * 0.99) - 1] * 1000,
            "write_cpu_ms_median": statistics.median(cpu) * 1000,
            "query": queries, "cleanup_ms": cleanup_ms, "open_ms": open_ms,
            "loop_lag_ms": lag,
        }
        write_json("history_db", out)
        print(machine_line(out["machine"]))
        print(f"\n{args.links} links + {args.ifaces} interfaces x {args.days:g} days "
              f"(interval {args.interval:g} s): {rows} rows\n")
        print(md_table(["what", "value"], [
            ["database file", f"{size / 2**20:.1f} MiB"],
            ["per link-day (the interfaces' rows included)", f"{per_link_day / 1024:.0f} KiB"],
            ["one interval's write, wall median / p99",
             f"{out['write_wall_ms_median']:.2f} / {out['write_wall_ms_p99']:.2f} ms"],
            ["one interval's write, CPU median", f"{out['write_cpu_ms_median']:.2f} ms"],
            *[[f"/v1/history query {k} (one link)",
               f"{v['ms']:.1f} ms, {v['points']} points from {v['tier']}"]
              for k, v in queries.items()],
            ["retention cleanup", f"{cleanup_ms:.0f} ms"],
            ["open at start (quick_check + schema)", f"{open_ms:.0f} ms"],
            ["event loop lag, idle: p99 / max",
             f"{lag['idle_p99']:.1f} / {lag['idle_max']:.1f} ms"],
            ["event loop lag during 30-day queries: p99 / max",
             f"{lag['busy_p99']:.1f} / {lag['busy_max']:.1f} ms"],
        ]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
