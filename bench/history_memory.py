"""Memory of the agent's one-hour history rings: typed columns (exotray.core.history.Ring)
next to the rows-of-tuples design they replaced, measured in the same run.

    .venv/bin/python bench/history_memory.py [--links 8] [--interval 1]

Fills one hour of rows for N links (the agent's LINK_COLUMNS, realistic values: RTT and
rates vary, utilization is None half the time, state mostly "up") and measures what the
rings hold with tracemalloc. No network, no agent; a few seconds.
"""

from __future__ import annotations

import argparse
import random
import sys
import tracemalloc
from collections import deque
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _harness import machine_info, machine_line, md_table, write_json

from exotray.core.history import LINK_COLUMNS, Ring, ring_size


class TupleRing:
    """The previous design: a deque of row tuples (exotray before typed columns)."""

    def __init__(self, maxlen: int) -> None:
        self.rows: deque[tuple] = deque(maxlen=maxlen)

    def append(self, row: tuple) -> None:
        self.rows.append(tuple(row))


def rows(n: int, seed: int):
    """Fresh row objects, one at a time, as the agent makes them every interval."""
    rnd = random.Random(seed)
    t0 = 1_764_720_000.0
    for i in range(n):
        rtt = round(0.05 + rnd.random() * 0.2, 4)
        util = None if i % 2 else round(rnd.random(), 4)
        values = {"t": t0 + i, "rtt_ms": rtt, "rtt_min_ms": round(rtt * 0.8, 4),
                  "rtt_max_ms": round(rtt * 1.5, 4), "rx_bytes_per_s": round(rnd.random() * 1e6, 1),
                  "tx_bytes_per_s": round(rnd.random() * 1e6, 1), "utilization": util,
                  "state": "up" if rnd.random() > 0.01 else "saturated",
                  "rtt_baseline_ms": 0.05, "queue_delay_ms": round(rtt - 0.05, 4),
                  "loss": 0.1 if rnd.random() < 0.01 else 0.0}
        # every column the agent keeps (one not set here: None, as where it is not read)
        yield tuple(values.get(c) for c in LINK_COLUMNS)


def measure(make, links: int, n: int) -> int:
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    rings = []
    for seed in range(links):
        r = make()
        for row in rows(n, seed):
            r.append(row)
        rings.append(r)
    used = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    del rings
    return used


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--links", type=int, default=8)
    ap.add_argument("--interval", type=float, default=1.0)
    args = ap.parse_args()
    n = ring_size(args.interval)
    typed = measure(lambda: Ring(LINK_COLUMNS, n), args.links, n)
    tuples = measure(lambda: TupleRing(n), args.links, n)
    mib = 1024 * 1024
    table = md_table(
        ["storage", f"{args.links} links x 1 h (MiB)", "bytes per link-hour", "per row"],
        [[name, f"{b / mib:.2f}", f"{b / args.links:,.0f}", f"{b / args.links / n:.0f} B"]
         for name, b in (("typed columns (now)", typed), ("tuples (before)", tuples))],
    )
    print(machine_line(machine_info()))
    print(f"one hour at {args.interval:g} s = {n} rows per link\n")
    print(table)
    write_json("history_memory", {"machine": machine_info(), "links": args.links,
                                  "rows_per_link": n, "typed_bytes": typed,
                                  "tuple_bytes": tuples})
    return 0


if __name__ == "__main__":
    sys.exit(main())
