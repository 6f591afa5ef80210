"""What one pass of an asyncio event loop costs when it wakes for a single callback,
against the same callbacks run together in one pass.

What it measures
    --callbacks timer callbacks that do nothing, scheduled with `loop.call_at` either
    --spread-ms apart (each is its own wake-up: epoll_wait returns, `_run_once` runs one
    handle) or all at one instant (one wake-up runs them all). It reports the process's
    CPU time (user + system, `time.process_time_ns`) per callback, median of --reps runs
    of each. The difference is what a wake-up adds beyond the work it runs: the price of
    callbacks split over more passes of the loop (bench/idle_agent.py counts an agent's
    passes and its callbacks by kind). It asserts nothing.

How to run (from anywhere)
    python bench/loop_pass_cost.py
    python bench/loop_pass_cost.py --callbacks 5000 --spread-ms 1

Output: a Markdown table on stdout and bench/results/loop_pass_cost.json.
Runtime: about callbacks x spread x reps (~15 s with the defaults).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from _harness import machine_info, machine_line, md_table, write_json


async def _run(n: int, spread_s: float) -> float:
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    left = [n]

    def fire() -> None:
        left[0] -= 1
        if not left[0]:
            done.set()

    start = loop.time() + 0.05
    for i in range(n):
        loop.call_at(start + i * spread_s, fire)
    c0 = time.process_time_ns()
    await done.wait()
    return (time.process_time_ns() - c0) / n / 1000.0  # µs per callback


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--callbacks", type=int, default=2000)
    ap.add_argument("--spread-ms", type=float, default=2.0)
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    rows = {}
    for label, spread in (("one pass each", args.spread_ms / 1000.0), ("one pass for all", 0.0)):
        runs = [asyncio.run(_run(args.callbacks, spread)) for _ in range(args.reps)]
        rows[label] = {"us_per_callback": runs, "median": statistics.median(runs)}
    extra = rows["one pass each"]["median"] - rows["one pass for all"]["median"]
    info = machine_info()
    print(machine_line(info))
    print()
    print(md_table(["callbacks", "CPU µs per callback (median; runs)"],
                   [[k, f"{v['median']:.1f} ({', '.join(f'{x:.1f}' for x in v['us_per_callback'])})"]
                    for k, v in rows.items()]))
    print(f"\na wake-up adds {extra:.1f} µs of CPU: 1 more a second is {extra / 1e4:.4f} % of a core")
    write_json("loop_pass_cost", {"machine": info, "args": vars(args), "rows": rows,
                                  "extra_us_per_wakeup": extra})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
