"""Plot the saturation episode of bench/results/lab_rtt.json: ping's and exotray's RTT.

    .venv/bin/python bench/plot_rtt.py                     # -> docs/benchmarks-rtt-vs-ping.png
    .venv/bin/python bench/plot_rtt.py --json other.json --out /tmp/x.png

Needs matplotlib (a benchmark-only dependency: `pip install matplotlib`). Reads only the
JSON; measures nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "lab_rtt.json")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks-rtt-vs-ping.png")
    args = ap.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    data = json.loads(args.json.read_text())
    ep = data["episode"]
    t0 = ep["t0"]
    ping_t = [t - t0 for t in ep["ping"]["t"]]
    ex_t = [t - t0 for t in ep["exotray"]["t"]]
    rate = data["params"].get("rate", "50mbit")

    fig, ax = plt.subplots(figsize=(10, 5), dpi=120)
    ax.axvspan(ep["transfer_start"] - t0, ep["transfer_end"] - t0, color="tab:orange",
               alpha=0.15, label=f"iperf3 -C cubic h1 → h2 through tbf {rate}")
    ax.plot(ping_t, ep["ping"]["rtt_ms"], ".", ms=3.5, color="tab:gray",
            label="ping -i 0.1 (each reply)")
    ax.plot(ex_t, ep["exotray"]["rtt_last_ms"], "o", ms=5, mfc="none", mew=1.3,
            color="tab:blue", label="exotray (each probe, 4/s)")
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("time (s)")
    ax.set_ylabel("round-trip time (ms, log scale)")
    ax.set_title("RTT h1 → h2 on a lab link: idle, saturated, idle — exotray vs ping")
    ax.grid(True, which="major", alpha=0.4)
    ax.grid(True, which="minor", alpha=0.12)
    ax.set_xlim(0, max(ping_t + ex_t) + 0.5)
    ax.legend(loc="center right", framealpha=0.9)
    fig.text(0.99, 0.01, data["machine"].get("cpu_model") or "", ha="right", va="bottom",
             fontsize=7, color="gray")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
