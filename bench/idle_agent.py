"""What one agent of an idle full loopback mesh costs: CPU and wake-ups of its loop.

What it measures
    For each N in --agents (default 8) it starts N agents on loopback (mDNS off), each
    listing all the others (a full mesh: every agent has N-1 links, shares with N-1
    peers and follows N-1 streams). Agent 0 runs under bench/_loop_counter.py, which
    counts its event loop's passes (`_run_once`: a wake-up, and one more pass for each
    task a timer resumes) and the callbacks run by kind from `--settle` s after its
    start; with --profile also cProfile with a CPU-time clock. After --settle s the
    script samples agent 0's CPU time and voluntary context switches (psutil: every
    thread's waits, the kernel's count of its wake-ups; and each thread's exact on-CPU ns
    from /proc/PID/task/*/schedstat) for --seconds and reads its
    counters before and after (probes sent and reflected per link per second).
    All agents share the machine's CPUs; load average before and after is recorded.

    It measures and prints; it asserts nothing about speed.

How to run (from anywhere; PYTHONPATH picks the code the agents run)
    python bench/idle_agent.py                                  # N = 8, 30 s
    PYTHONPATH=/path/to/other/checkout python bench/idle_agent.py --agents 8,16
    python bench/idle_agent.py --profile    # + bench/results/idle_agent_N.prof (pstats)

Output: a Markdown table on stdout and bench/results/idle_agent.json.
Runtime: about settle + seconds + ~5 s per N (~55 s with the defaults).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import psutil
from _harness import AgentGroup, machine_info, machine_line, md_table, write_json

HERE = Path(__file__).resolve().parent


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def _run_ns(pid: int) -> int | None:
    """On-CPU time of every live thread of `pid`, in ns (Linux's schedstat: exact, where
    psutil's cpu_times counts 10 ms clock ticks, a quarter of an idle agent's minute)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (FileNotFoundError, ProcessLookupError):
                continue  # a thread that ended in between: its time is lost (rare at rest)
    except FileNotFoundError:
        return None
    return total


def run_row(n: int, args: argparse.Namespace) -> dict:
    group = AgentGroup(python=args.python)
    out = group.root / "counted"
    try:
        ports = [group.reserve() for _ in range(n)]
        agents = []
        for i, port in enumerate(ports):
            others = [q for q in ports if q != port]
            if i == 0:
                agents.append(group.start("a0", port, others,
                                          runner=(str(HERE / "_loop_counter.py"),),
                                          env_extra={"XT_COUNT_OUT": str(out),
                                                     "XT_COUNT_AFTER": str(args.settle),
                                                     "XT_COUNT_PROFILE":
                                                         "1" if args.profile else "0"}))
            else:
                agents.append(group.start(f"a{i}", port, others))
        started = time.monotonic()
        group.wait_ready(timeout=args.start_timeout)
        group.wait_links_up(agents[0], n - 1, timeout=args.start_timeout)
        time.sleep(max(0.0, args.settle + 1.0 - (time.monotonic() - started)))
        proc = psutil.Process(agents[0].proc.pid)
        load0 = os.getloadavg()
        snap0 = agents[0].snapshot()
        t0, c0, x0 = time.monotonic(), _cpu_s(proc), proc.num_ctx_switches()
        n0 = _run_ns(proc.pid)
        time.sleep(args.seconds)
        t1, c1, x1 = time.monotonic(), _cpu_s(proc), proc.num_ctx_switches()
        n1 = _run_ns(proc.pid)
        snap1 = agents[0].snapshot()
        load1 = os.getloadavg()
        wall = t1 - t0
        k0, k1 = snap0.get("counters", {}), snap1.get("counters", {})
        links = snap1.get("links", [])
    finally:
        group.stop_all()
        counted = json.loads(Path(str(out) + ".json").read_text()) \
            if Path(str(out) + ".json").exists() else {}
        if args.profile and Path(str(out) + ".prof").exists():
            dest = HERE / "results" / f"{args.name}_{n}.prof"
            dest.parent.mkdir(exist_ok=True)
            Path(str(out) + ".prof").replace(dest)
        group.close()
    per_link = max(1, n - 1)
    return {
        "agents": n,
        "seconds": round(wall, 2),
        "cpu_pct_one_core": 100.0 * (c1 - c0) / wall,
        "cpu_pct_schedstat": (100.0 * (n1 - n0) / 1e9 / wall)
        if n0 is not None and n1 is not None else None,
        "profiled": args.profile,
        # the kernel's count: each time the agent (any thread) gave up the CPU to wait
        "switches_per_s": (x1.voluntary - x0.voluntary) / wall,
        "wakeups_per_s": (counted["wakeups"] / counted["seconds"]) if counted else None,
        "callbacks_per_s": counted.get("callbacks_per_s"),
        # passes of the loop that ran no callback, and what left timers to wake it for
        "empty_passes_per_s": (counted["empty_passes"] / counted["seconds"])
        if counted.get("empty_passes") is not None else None,
        "cancelled_timers_per_s": counted.get("cancelled_timers_per_s"),
        "passes_per_s": counted.get("passes_per_s"),  # what each pass ran, most common
        "probes_sent_per_link_per_s": (k1.get("probes_sent", 0) - k0.get("probes_sent", 0))
        / wall / per_link,
        "reflected_per_link_per_s": (k1.get("requests_reflected", 0)
                                     - k0.get("requests_reflected", 0)) / wall / per_link,
        "links_up": sum(1 for lk in links if lk.get("state") == "up"),
        "loadavg_before": load0,
        "loadavg_after": load1,
        "pythonpath": os.environ.get("PYTHONPATH", ""),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--agents", default="8", help="mesh sizes, one row each (8)")
    ap.add_argument("--seconds", type=float, default=30.0, help="window, s (30)")
    ap.add_argument("--settle", type=float, default=20.0,
                    help="s after agent 0 starts before counting (20: startup's full "
                         "snapshots and first probes are over)")
    ap.add_argument("--start-timeout", type=float, default=40.0)
    ap.add_argument("--profile", action="store_true", help="cProfile agent 0 (CPU clock)")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--name", default="idle_agent", help="results file name")
    args = ap.parse_args(argv)
    info = machine_info()
    rows = []
    for n in [int(x) for x in args.agents.split(",") if x.strip()]:
        print(f"[idle_agent] {n} agents …", file=sys.stderr, flush=True)
        rows.append(run_row(n, args))
    print(machine_line(info))
    print(f"PYTHONPATH={os.environ.get('PYTHONPATH', '')!r}" + (" (cProfile on: CPU inflated)"
                                                                if args.profile else ""))
    print()
    print(md_table(
        ["agents", "CPU % of a core", "(schedstat)", "switches/s", "loop wake-ups/s", "probes/s/link", "reflected/s/link",
         "links up", "load avg before → after"],
        [[str(r["agents"]), f"{r['cpu_pct_one_core']:.2f}",
          f"{r['cpu_pct_schedstat']:.3f}" if r["cpu_pct_schedstat"] is not None else "–",
          f"{r['switches_per_s']:.1f}",
          f"{r['wakeups_per_s']:.1f}" if r["wakeups_per_s"] is not None else "–",
          f"{r['probes_sent_per_link_per_s']:.2f}", f"{r['reflected_per_link_per_s']:.2f}",
          f"{r['links_up']}/{r['agents'] - 1}",
          f"{r['loadavg_before'][0]:.2f} → {r['loadavg_after'][0]:.2f}"] for r in rows]))
    for r in rows:
        top = list((r["callbacks_per_s"] or {}).items())[:8]
        print(f"\n{r['agents']} agents, callbacks/s: " + "; ".join(f"{k} {v}" for k, v in top))
        if r.get("empty_passes_per_s") is not None:
            print(f"{r['agents']} agents, passes that ran no callback: "
                  f"{r['empty_passes_per_s']:.2f}/s; timers cancelled before due/s: "
                  + "; ".join(f"{k} {v}" for k, v in (r["cancelled_timers_per_s"] or {}).items()))
    path = write_json(args.name, {"machine": info, "args": vars(args), "rows": rows})
    print(f"\n[idle_agent] raw numbers: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
