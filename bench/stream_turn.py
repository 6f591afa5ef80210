"""What the stream producer's turn costs an interval: building this node's state against
asking the watch first (agent/share/watch.py), in-process, 8 and 64 links at rest.

What it measures
    For each N in --links, one real Agent (no sockets: its parts only, as the unit tests
    build it) with N manual links on one interface, each link answered every interval
    at 0.3 ms with a little noise, sampled on the agent's own ticks with an injected
    clock; its producer has one subscriber. After --settle intervals, for --intervals
    more it times, at each full tick, in the same process and interleaved:

    * build: what the producer did every interval before the watch — this node's
      snapshot (views.snapshot), split into the stream's state held against what the
      subscriber has, the delta and the tempo's verdict (stream_wire.split / delta /
      prompt);
    * watch: `Watch.moved` against the same state (what the producer now does between
      heartbeats; it builds only when this says yes);

    and reports each one's median and p90 in µs, their ratio, and how often the watch
    said yes (at rest: never; the producer still builds every heartbeat). CPU time
    (time.thread_time_ns), so the machine's load moves both alike. It asserts nothing.

How to run (from the repository root, or with PYTHONPATH at it)
    python bench/stream_turn.py
    python bench/stream_turn.py --links 8,64,128 --intervals 300

Output: a Markdown table on stdout and bench/results/stream_turn.json.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _harness import machine_info, machine_line, md_table, write_json

from exotray.agent.hw.sampler import NicInfo
from exotray.agent.runtime import Agent
from exotray.agent.share import wire as W
from exotray.core.settings import Settings

IFACE = "xt0"
NIC = NicInfo(IFACE, True, 1000.0, ("10.213.162.1",), (("10.213.162.1", 24),), multicast=True)


def _agent(n: int, state_dir: str) -> Agent:
    now = [5000.0]
    s = Settings(name="bench", bind="127.0.0.1", port=0, mdns=False, interval=1.0,
                 state_dir=state_dir, history_days=0, capacity={IFACE: 1000.0}, exo_url="")
    a = Agent(s, clock=lambda: now[0])
    counters = [1_000_000, 1_000_000]
    a.monitor.read = lambda full: ({IFACE: tuple(counters)}, {IFACE: NIC})
    for i in range(n):
        addr = f"10.213.{162 + i // 250}.{2 + i % 250}"
        peer = a.table.add_manual(addr, 52480)
        peer.manual_targets = [(addr, 52480)]
        a.table.set_targets(peer)
        link = a.links[(addr, 52480)]
        link.up, link.last_reply, link.local_interface = True, now[0], IFACE
        link.path.update([IFACE], IFACE)
    a.sharing.tick = lambda: None
    a._bench = (now, counters)  # type: ignore[attr-defined]
    return a


def run(n: int, settle: int, intervals: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="xt-turn-") as d:
        a = _agent(n, d)
        now, counters = a._bench  # type: ignore[attr-defined]
        producer = a.sharing.producer
        sub = producer.subscribe("ab" * 8)
        rng = random.Random(seed)
        build_ns, watch_ns, yes = [], [], 0
        for i in range(settle + intervals):
            for k in range(a.ticker.per_interval):
                now[0] += 0.25
                counters[0] += 250
                counters[1] += 250
                if k == 0:
                    for link in a.links.values():
                        a.prober.on_reply(link.target, now[0], 0.3 + rng.uniform(-0.01, 0.01))
                a.ticker.sample(k == 0)
                if k == 0 and i >= settle:
                    old = producer.state
                    t0 = time.thread_time_ns()
                    new = W.split(a.snapshot(), old)
                    W.prompt(old, W.delta(old, new, 0.0), a.ticker.own.peak, new)
                    t1 = time.thread_time_ns()
                    moved = producer._watch.moved(old)
                    t2 = time.thread_time_ns()
                    build_ns.append(t1 - t0)
                    watch_ns.append(t2 - t1)
                    yes += moved
                if k == 0:
                    a.ticker.share()
                    sub.frames.clear()
                a.ticker.count += 1
        a._unlock()

    def q(xs: list[int], p: float) -> float:
        return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))] / 1000

    return {"links": n, "build_us_median": statistics.median(build_ns) / 1000,
            "build_us_p90": q(build_ns, 0.9), "watch_us_median": statistics.median(watch_ns) / 1000,
            "watch_us_p90": q(watch_ns, 0.9),
            "ratio": statistics.median(watch_ns) / statistics.median(build_ns),
            "watch_yes": yes, "intervals": intervals}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--links", default="8,64", help="link counts, one row each")
    ap.add_argument("--settle", type=int, default=30, help="intervals before timing (30)")
    ap.add_argument("--intervals", type=int, default=200, help="intervals timed (200)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    rows = [run(int(x), args.settle, args.intervals, args.seed)
            for x in args.links.split(",") if x.strip()]
    info = machine_info()
    print(machine_line(info))
    print(md_table(["links", "build µs median / p90", "watch µs median / p90",
                    "watch / build", "watch said yes"],
                   [[r["links"], f"{r['build_us_median']:.0f} / {r['build_us_p90']:.0f}",
                     f"{r['watch_us_median']:.0f} / {r['watch_us_p90']:.0f}",
                     f"{r['ratio']:.2f}", f"{r['watch_yes']} of {r['intervals']}"]
                    for r in rows]))
    path = write_json("stream_turn", {"machine": info, "rows": rows, "args": vars(args)})
    print(f"\nJSON: {path}")


if __name__ == "__main__":
    main()
