"""Soak: 8 agents on the namespace lab for an hour (default) with rotating iperf3
bursts; RSS, open fds, threads and asyncio tasks sampled every minute, as a table.

    sudo .venv/bin/python bench/soak.py                 # 60 min (explicit opt-in)
    sudo .venv/bin/python bench/soak.py --minutes 5     # a short look

    sudo .venv/bin/python bench/soak.py --split --minutes 45 --sharing stream
        # each agent different (SPLIT below), all under bench/_mem_probe.py, whose
        # per-minute lines (malloc, SQLite, zeroconf, gc types, tracemalloc) land in
        # bench/results/soak-mem-causes/n<i>.jsonl (soak-mem-rings with --split rings)

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
#: --split rings: every agent's history rings shortened (bench/_mem_probe.py's
#: XT_MEM_RING_S), so that a short run shows both the rings filling and what follows.
#: Agents marked "ref" run the tree given by --ref (the other agents this checkout).
#: - at a 0.1 s interval with 360 s rings: 3601-row rings, as an hour at 1 s makes them
#:   (same arrays, same number of reallocations), full in 6 minutes;
#: - at the default interval with 120 s rings: 5 minutes after they fill at real rates.
FILL = {"extra": ("--interval", "0.1"), "env": {"XT_MEM_RING_S": "360"}}
AFTER = {"env": {"XT_MEM_RING_S": "120"}}
SPLIT_RINGS: list[tuple[str, dict]] = [
    ("ref, 0.1 s, 3601-row rings", {**FILL, "ref": True}),
    ("ref, 0.1 s, 3601-row rings", {**FILL, "ref": True}),
    ("0.1 s, 3601-row rings", FILL),
    ("0.1 s, 3601-row rings", FILL),
    ("ref, 120 s rings", {**AFTER, "ref": True}),
    ("ref, 120 s rings, tracemalloc", {"ref": True, "env": {
        "XT_MEM_RING_S": "120", "XT_MEM_TRACE": "8", "XT_MEM_BASE": "150"}}),
    ("120 s rings", AFTER),
    ("ref, 120 s rings, no mDNS, no database", {"ref": True, "extra": NO_DB, "mdns": False,
                                               "env": {"XT_MEM_RING_S": "120"}}),
]
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "lab")]

import soak  # noqa: E402
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
    ap.add_argument("--ref", default="/work/wt-ref",
                    help="the tree that agents marked 'ref' run (PYTHONPATH)")
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
        def scaled(env: dict) -> dict:
            env = {"XT_MEM_EVERY": "60", "XT_MEM_BASE": "600", **env}
            return {k: f"{float(v) * args.probe_scale:g}" if k in SCALED else v
                    for k, v in env.items()}
        variants = [{**v, "runner": PROBE,
                     "env": scaled({"XT_MEM_OUT": str(mem / f"n{i + 1}.jsonl"),
                                    **v.get("env", {}),
                                    **({"PYTHONPATH": args.ref} if v.get("ref") else {})})}
                    for i, (_, v) in enumerate(split)]
    with tempfile.TemporaryDirectory(prefix="exotray-soak-") as tmp:
        rows = soak.run(Path(tmp), args.hosts, args.minutes * 60, args.every,
                        log=lambda m: print(m, file=sys.stderr),
                        extra=("--sharing", args.sharing) if args.sharing else (),
                        variants=variants)
        if args.split:  # keep each agent's log and events beside its memory lines
            for f in Path(tmp).glob("n*.*"):
                if f.suffix in (".log", ".events"):
                    shutil.copy(f, mem / f.name)
    if args.split:
        print_split(rows, split)
        print_mem(mem, split)
    table = []
    for t in sorted({r["t"] for r in rows}):
        at = [r for r in rows if r["t"] == t]
        table.append([f"{t / 60:.1f}", f"{statistics.median(r['rss_mib'] for r in at):.1f}",
                      f"{max(r['rss_mib'] for r in at):.1f}", str(max(r["fds"] for r in at)),
                      str(max(r["threads"] for r in at)), str(max(r["tasks"] for r in at)),
                      f"{min(r['links_up'] for r in at)}/{args.hosts - 1}"])
    sharing = args.sharing or "default"
    print(f"## exotray soak: {args.hosts} agents, {args.minutes:g} min, iperf3 bursts, "
          f"sharing {sharing}\n")
    print(machine_line(machine_info()) + "\n")
    print(md_table(["min", "RSS MiB median", "RSS MiB max", "fds max", "threads max",
                    "tasks max", "links up (min)"], table))
    write_json("soak", {"machine": machine_info(), "args": vars(args), "rows": rows})
    return 0


def print_split(rows: list[dict], split: list[tuple[str, dict]]) -> None:
    """RSS per agent (variant) at a few times, and its slope over the last half."""
    ts = sorted({r["t"] for r in rows})
    picks = sorted({ts[int(k * (len(ts) - 1) / 6)] for k in range(7)})
    head = ["agent", "variant", *[f"{t / 60:.0f} min" for t in picks], "MiB/min, 2nd half",
            "events"]
    table = []
    for i, (label, _) in enumerate(split):
        mine = {r["t"]: r for r in rows if r["agent"] == f"n{i + 1}"}
        half = [t for t in ts if t >= ts[-1] / 2]
        slope = ((mine[half[-1]]["rss_mib"] - mine[half[0]]["rss_mib"])
                 / max((half[-1] - half[0]) / 60, 1e-9))
        table.append([f"n{i + 1}", label, *[f"{mine[t]['rss_mib']:.1f}" for t in picks],
                      f"{slope:+.3f}", str(mine[ts[-1]]["events"])])
    print(md_table(head, table) + "\n")


#: what print_mem follows, from bench/_mem_probe.py's lines
MEM_PARTS: list[tuple[str, object]] = [
    ("RSS", lambda r: r["rss_mib"]),
    ("[heap]", lambda r: r["smaps_mib"].get("heap", 0)),
    ("anon maps", lambda r: r["smaps_mib"].get("anon", 0)),
    ("malloc in use", lambda r: r["malloc"]["uordblks"] + r["malloc"]["hblkhd"]),
    ("malloc free", lambda r: r["malloc"]["fordblks"]),
    ("SQLite", lambda r: r["sqlite_mib"] or 0),
    ("traced", lambda r: r.get("traced_mib")),
    ("py blocks k", lambda r: r["py_blocks"] / 1000),
    ("zc records", lambda r: sum(z["cache_records"] for z in r["zeroconf"])),
    ("zc expiry heap", lambda r: sum(z["expire_heap"] for z in r["zeroconf"])),
    ("zc questions", lambda r: sum(z["question_history"] for z in r["zeroconf"])),
]


def print_mem(mem: Path, split: list[tuple[str, dict]]) -> None:
    """Per agent: each part's change per minute over the run's second half."""
    head = ["agent", "variant", "min", *[f"{n} /min" for n, _ in MEM_PARTS]]
    table = []
    for i, (label, _) in enumerate(split):
        path = mem / f"n{i + 1}.jsonl"
        if not path.exists():
            continue
        lines = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
        if len(lines) < 3:
            continue
        half = [r for r in lines if r["t"] >= lines[-1]["t"] / 2]
        a, b = half[0], half[-1]
        mins = max((b["t"] - a["t"]) / 60, 1e-9)
        cells = []
        for _, f in MEM_PARTS:
            va, vb = f(a), f(b)
            cells.append("" if va is None or vb is None else f"{(vb - va) / mins:+.3f}")
        table.append([f"n{i + 1}", label, f"{a['t'] / 60:.0f}-{b['t'] / 60:.0f}", *cells])
    print(md_table(head, table) + "\n")


if __name__ == "__main__":
    sys.exit(main())
