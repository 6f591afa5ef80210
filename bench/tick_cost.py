"""What the agent's tick costs in Python alone, by link count: no sockets, no event loop.

What it measures
    For each N in --links, one real Agent (its parts only, as the unit tests build it)
    with N manual links at rest on one interface, answered every interval at 0.3 ms; the
    interface counters are given (no psutil read) and the clock is injected. For
    --intervals intervals after --settle it times (CPU time of this thread) the full
    tick's sample (interfaces, every link judged, history rows), a quarter tick's
    sample, and the full tick's sharing turn (the stream producer with one subscriber,
    the watch, own traffic, pruning), and reports their medians and what they add up to
    a second: the agent's per-link Python, apart from its I/O and its event loop's
    wake-ups (bench/idle_agent.py counts those; docs/benchmarks.md "What an idle agent's
    CPU is"). It asserts nothing.

How to run (from the repository root, or with PYTHONPATH at it)
    python bench/tick_cost.py
    python bench/tick_cost.py --links 0,8,64,128

Output: a Markdown table on stdout and bench/results/tick_cost.json.
Runtime: a few seconds.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import machine_info, machine_line, md_table, write_json
from stream_turn import _agent


def run(n: int, settle: int, intervals: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="xt-tick-") as d:
        a = _agent(n, d)
        now, counters = a._bench  # type: ignore[attr-defined]
        sub = a.sharing.producer.subscribe("ab" * 8)
        rng = random.Random(1)
        full, part, share = [], [], []
        for i in range(settle + intervals):
            for k in range(a.ticker.per_interval):
                now[0] += 1.0 / a.ticker.per_interval
                counters[0] += 250
                counters[1] += 250
                if k == 0:
                    for link in a.links.values():
                        a.prober.on_reply(link.target, now[0], 0.3 + rng.uniform(-0.01, 0.01))
                t0 = time.thread_time_ns()
                a.ticker.sample(k == 0)
                t1 = time.thread_time_ns()
                if k == 0:
                    a.ticker.share()
                    sub.frames.clear()
                t2 = time.thread_time_ns()
                if i >= settle:
                    (full if k == 0 else part).append(t1 - t0)
                    if k == 0:
                        share.append(t2 - t1)
                a.ticker.count += 1
        a._unlock()
    us = [statistics.median(x) / 1000 for x in (full, part, share)]
    per_s = us[0] + (a.ticker.per_interval - 1) * us[1] + us[2]
    return {"links": n, "full_sample_us": us[0], "quarter_sample_us": us[1],
            "share_us": us[2], "us_per_s": per_s, "pct_of_core": per_s / 1e4}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--links", default="0,8,64", help="link counts, one row each")
    ap.add_argument("--settle", type=int, default=30)
    ap.add_argument("--intervals", type=int, default=300)
    args = ap.parse_args(argv)
    rows = [run(int(x), args.settle, args.intervals) for x in args.links.split(",") if x]
    info = machine_info()
    print(machine_line(info))
    print(md_table(["links", "full tick's sample µs", "quarter tick's sample µs",
                    "sharing turn µs", "µs a second", "% of a core"],
                   [[r["links"], f"{r['full_sample_us']:.0f}", f"{r['quarter_sample_us']:.0f}",
                     f"{r['share_us']:.0f}", f"{r['us_per_s']:.0f}",
                     f"{r['pct_of_core']:.3f}"] for r in rows]))
    path = write_json("tick_cost", {"machine": info, "rows": rows, "args": vars(args)})
    print(f"\nJSON: {path}")


if __name__ == "__main__":
    main()
