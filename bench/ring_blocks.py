"""The history rings' cost to the allocator while they fill: an hour of 7 links and
2 interfaces (3601 rows each, as at 1 s) appended interval by interval, with other
short-lived blocks in between (a model of the agent's other work: stream frames and
records of mixed sizes), in a fresh interpreter per tree; glibc's mallinfo2 and RSS
before and after.

    python bench/ring_blocks.py --ref /work/wt-ref     # the reference tree, then this one

The churn is synthetic (the lab soak, bench/soak.py --split rings, is the real thing);
this shows the mechanism alone, in seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import ctypes, json, random
from exotray.core.history import IFACE_COLUMNS, LINK_COLUMNS, Ring, ring_size

libc = ctypes.CDLL(None)
class M(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks",
                "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
libc.mallinfo2.restype = M
def rss():
    for ln in open("/proc/self/status"):
        if ln.startswith("VmRSS"):
            return int(ln.split()[1]) / 1024
def mi():
    m = libc.mallinfo2()
    return (m.uordblks + m.hblkhd) / 2**20, m.fordblks / 2**20
random.seed(1)
size = ring_size(1.0)
links = [Ring(LINK_COLUMNS, size) for _ in range(7)]
# a row of every link column after "t", by name (a tree with fewer columns takes fewer)
VALUES = {"rtt_ms": 1.0, "rtt_min_ms": 0.9, "rtt_max_ms": 1.2, "rx_bytes_per_s": 1e6,
          "tx_bytes_per_s": 2e6, "utilization": 0.1, "state": "up",
          "rtt_baseline_ms": 0.8, "queue_delay_ms": 0.1}
LINK_ROW = tuple(VALUES.get(c) for c in LINK_COLUMNS[1:])
ifaces = [Ring(IFACE_COLUMNS, size) for _ in range(2)]
r0, (u0, f0) = rss(), mi()
live = []
for t in range(size):
    for r in links:
        # numbers that move, as a link's do (a constant block would take no array)
        r.append((float(t), *(round(v * (1 + (t % 13) / 100), 4)
                             if isinstance(v, float) else v for v in LINK_ROW)))
    for r in ifaces:
        r.append((float(t), 1e6 + t, 2e6 + t, "up"))
    live.extend(bytes(random.choice((300, 700, 1500, 3000, 9000))) for _ in range(12))
    live.extend([{"k": t, "v": [1.0] * 8} for _ in range(8)])
    del live[:-300]
del live[:]
r1, (u1, f1) = rss(), mi()
libc.malloc_trim(0)
print(json.dumps({"rings_mib": sum(r.nbytes() for r in links + ifaces) / 2**20,
                  "rss_mib": r1 - r0, "in_use_mib": u1 - u0, "free_mib": f1 - f0,
                  "rss_trimmed_mib": rss() - r0}))
"""


def run(tree: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         check=True, cwd="/tmp", env={**os.environ, "PYTHONPATH": tree})
    return json.loads(out.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ref", required=True, help="the reference tree")
    args = ap.parse_args()
    print("| tree | rings' bytes | RSS | malloc in use | malloc free | RSS after malloc_trim |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, tree in (("ref", args.ref), ("this", str(ROOT))):
        r = run(tree)
        print(f"| {name} | {r['rings_mib']:.2f} | +{r['rss_mib']:.2f} | "
              f"+{r['in_use_mib']:.2f} | +{r['free_mib']:.2f} | +{r['rss_trimmed_mib']:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
