"""Soak: 8 agents on the namespace lab for an hour (default) with rotating iperf3
bursts; RSS, open fds, threads and asyncio tasks sampled every minute, as a table.

    sudo .venv/bin/python bench/soak.py                 # 60 min (explicit opt-in)
    sudo .venv/bin/python bench/soak.py --minutes 5     # a short look

Needs root, iproute2, iperf3 (like tests/lab). Writes bench/results/soak.json.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
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
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="exotray-soak-") as tmp:
        rows = soak.run(Path(tmp), args.hosts, args.minutes * 60, args.every,
                        log=lambda m: print(m, file=sys.stderr),
                        extra=("--sharing", args.sharing) if args.sharing else ())
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


if __name__ == "__main__":
    sys.exit(main())
