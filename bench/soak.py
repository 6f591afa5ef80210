"""Soak: 8 agents on the namespace lab for an hour (default) with rotating iperf3
bursts; RSS, open fds, threads and asyncio tasks sampled every minute, as a table.

    sudo .venv/bin/python bench/soak.py                 # 60 min (explicit opt-in)
    sudo .venv/bin/python bench/soak.py --minutes 5     # a short look
    sudo .venv/bin/python bench/soak.py --minutes 120 --capacity 150
        # two hours; each LAN at 150 Mbit/s, so every 200 Mbit/s burst raises and
        # clears saturation events (issue 33 point 13)

    sudo .venv/bin/python bench/soak.py --split --minutes 45 --sharing stream
        # each agent different (SPLIT below), all under bench/_mem_probe.py, whose
        # per-minute lines (malloc, SQLite, zeroconf, gc types, tracemalloc) land in
        # bench/results/soak-mem-causes/n<i>.jsonl (soak-mem-rings with --split rings);
        # bench/soak_mem.py reads them (slopes and what grew), also again later
    cd /tmp && sudo PYTHONPATH=$TREE $TREE/.venv/bin/python $TREE/bench/soak.py \
        --split rings --minutes 30     # 120 s rings: 28 minutes after they are full

Needs root, iproute2, iperf3 (like tests/lab). Writes bench/results/soak.json.
Lab names and addresses: XT_LAB_TAG_PREFIX and XT_LAB_NET (tests/lab/netlab.py).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = str(ROOT / "bench" / "_mem_probe.py")
FAST = ("--interval", "0.25")  # 4 rows a second (the rings still hold one hour: ring_size)
NO_DB = ("--history-days", "0")
SCALED = ("XT_MEM_EVERY", "XT_MEM_BASE")
#: --split: what each of the 8 agents is, to tell causes apart in one run. Two speeds:
#: zeroconf's timers do not scale with --interval, so the default-interval group is the
#: honest one for mDNS; the fast group does 4x the per-interval work (rows, probes,
#: frames). The rings hold an hour at any interval: for "after they fill", --split rings.
SPLIT: list[tuple[str, dict]] = [
    ("control", {}),
    ("control, tracemalloc", {"env": {"XT_MEM_TRACE": "8", "XT_MEM_EVERY": "180"}}),
    ("control, malloc_trim", {"env": {"XT_MEM_TRIM": "1"}}),
    ("no mDNS", {"mdns": False}),
    ("no database", {"extra": NO_DB}),
    ("fast", {"extra": FAST, "env": {"XT_MEM_BASE": "1000"}}),
    ("fast, tracemalloc", {"extra": FAST, "env": {"XT_MEM_TRACE": "8", "XT_MEM_EVERY": "180",
                                                  "XT_MEM_BASE": "1000"}}),
    ("fast, no mDNS, no database", {"extra": (*FAST, *NO_DB), "mdns": False,
                                     "env": {"XT_MEM_BASE": "1000"}}),
]
#: --split rings: every agent's history rings shortened to 120 s (bench/_mem_probe.py's
#: XT_MEM_RING_S) so that they are full 2 minutes after start and the rest of the run is
#: "after the rings fill"; all agents run this tree (the same sharing protocol), at the
#: default interval unless said. Each variant takes one cause away or adds one look:
RING = {"XT_MEM_RING_S": "120", "XT_MEM_EVERY": "30", "XT_MEM_BASE": "150"}
SPLIT_RINGS: list[tuple[str, dict]] = [
    ("control", {"env": RING}),
    ("control (twin)", {"env": RING}),
    ("tracemalloc (from 150 s)", {"env": {**RING, "XT_MEM_TRACE": "8"}}),
    ("malloc_trim each minute", {"env": {**RING, "XT_MEM_TRIM": "1", "XT_MEM_EVERY": "60"}}),
    ("no mDNS", {"mdns": False, "env": RING}),
    ("no database", {"extra": NO_DB, "env": RING}),
    ("no mDNS, no database", {"extra": NO_DB, "mdns": False, "env": RING}),
    ("0.1 s interval (10x rows, probes, frames)", {"extra": ("--interval", "0.1"),
                                                   "env": RING}),
]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "lab")]

import soak  # noqa: E402
import soak_mem  # noqa: E402
from _harness import machine_info, machine_line, md_table, write_json  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=60.0)
    ap.add_argument("--hosts", type=int, default=8)
    ap.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    ap.add_argument("--sharing", choices=["poll", "stream"], default=None,
                    help="the agents' sharing protocol (default: the agents' own default)")
    ap.add_argument("--split", nargs="?", const="causes", choices=["causes", "rings"],
                    help="each agent a different variant (SPLIT, or SPLIT_RINGS: shortened "
                         "rings), memory probes on all")
    ap.add_argument("--after", type=float, default=180.0,
                    help="--split: slopes from this many seconds of the agents' life on")
    ap.add_argument("--capacity", type=float, default=None, metavar="MBIT",
                    help="each agent's LAN capacity: below the bursts' 200 Mbit/s, links "
                         "saturate and clear (events) at every burst")
    ap.add_argument("--probe-scale", type=float, default=1.0,
                    help="multiply the probes' periods (XT_MEM_EVERY, XT_MEM_BASE): 0.1 for "
                         "a short check of the harness")
    args = ap.parse_args()
    variants = None
    split = SPLIT_RINGS if args.split == "rings" else SPLIT
    if args.split:
        args.hosts = len(split)
        mem = ROOT / "bench" / "results" / f"soak-mem-{args.split}"
        mem.mkdir(parents=True, exist_ok=True)
        for old in mem.glob("n*.*"):
            old.unlink()
        (mem / "variants.json").write_text(json.dumps([label for label, _ in split]))
        def scaled(env: dict) -> dict:
            env = {"XT_MEM_EVERY": "60", "XT_MEM_BASE": "600", **env}
            return {k: f"{float(v) * args.probe_scale:g}" if k in SCALED else v
                    for k, v in env.items()}
        variants = [{**v, "runner": PROBE,
                     "env": scaled({"XT_MEM_OUT": str(mem / f"n{i + 1}.jsonl"),
                                    **v.get("env", {})})}
                    for i, (_, v) in enumerate(split)]
    with tempfile.TemporaryDirectory(prefix="exotray-soak-") as tmp:
        rows = soak.run(Path(tmp), args.hosts, args.minutes * 60, args.every,
                        log=lambda m: print(m, file=sys.stderr),
                        extra=("--sharing", args.sharing) if args.sharing else (),
                        variants=variants, capacity_mbit=args.capacity)
        if args.split:  # keep each agent's log and events beside its memory lines
            for f in Path(tmp).glob("n*.*"):
                if f.suffix in (".log", ".events"):
                    shutil.copy(f, mem / f.name)
    if args.split:
        print_split(rows, split)
        print(soak_mem.report(mem, [label for label, _ in split], args.after) + "\n")
    table = []
    for t in sorted({r["t"] for r in rows}):
        at = [r for r in rows if r["t"] == t and r["rss_mib"] is not None]
        if not at:
            continue
        table.append([f"{t / 60:.1f}", f"{statistics.median(r['rss_mib'] for r in at):.1f}",
                      f"{max(r['rss_mib'] for r in at):.1f}", str(max(r["fds"] for r in at)),
                      str(max(r["threads"] for r in at)), _agg(max, at, "tasks"),
                      f"{_agg(min, at, 'links_up')}/{args.hosts - 1}",
                      _agg(lambda v: int(statistics.median(v)), at, "events")])
    sharing = args.sharing or "default"
    events = f", capacity {args.capacity:g} Mbit/s (events)" if args.capacity else ""
    print(f"## exotray soak: {args.hosts} agents, {args.minutes:g} min, iperf3 bursts, "
          f"sharing {sharing}{events}\n")
    print(machine_line(machine_info()) + "\n")
    print(md_table(["min", "RSS MiB median", "RSS MiB max", "fds max", "threads max",
                    "tasks max", "links up (min)", "events (median)"], table))
    write_json("soak", {"machine": machine_info(), "args": vars(args), "rows": rows})
    return 0


def _agg(f, rows: list[dict], key: str) -> str:
    """f over the rows that have key (an agent that did not answer a round has None)."""
    vals = [r[key] for r in rows if r[key] is not None]
    return str(f(vals)) if vals else "?"


def print_split(rows: list[dict], split: list[tuple[str, dict]]) -> None:
    """RSS per agent (variant) at a few times (as the sampler read /proc), and its slope
    over the run's second half."""
    ts = sorted({r["t"] for r in rows})
    picks = sorted({ts[int(k * (len(ts) - 1) / 6)] for k in range(7)})
    head = ["agent", "variant", *[f"{t / 60:.0f} min" for t in picks], "MiB/min, 2nd half",
            "events", "rounds unanswered"]
    table = []
    for i, (label, _) in enumerate(split):
        mine = {r["t"]: r for r in rows if r["agent"] == f"n{i + 1}"}
        half = [(t, mine[t]["rss_mib"]) for t in ts
                if t >= ts[-1] / 2 and mine.get(t, {}).get("rss_mib") is not None]
        s = soak_mem.slope(half)
        table.append([f"n{i + 1}", label,
                      *[f"{mine[t]['rss_mib']:.1f}" if mine.get(t, {}).get("rss_mib")
                        else "?" for t in picks],
                      "?" if s is None else f"{s:+.3f}", str(mine[ts[-1]]["events"]),
                      str(sum(1 for r in mine.values() if r["tasks"] is None))])
    print(md_table(head, table) + "\n")


if __name__ == "__main__":
    sys.exit(main())
