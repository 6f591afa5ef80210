"""How long the window takes to show new data: topology map and link charts.

What it measures
    * TopologyView: for a synthetic full mesh of N nodes (every node reports a link to
      every other over one interface, shaped like a /v1/cluster view), the time of
      ``topology.build`` alone, of the first ``set_cluster`` + forced repaint
      (``widget.grab()``), of an update (same nodes, new numbers) + forced repaint, and of
      the STEADY updates that follow it on the same view ("next updates").
    * MainWindow (map + link table + status line, what the tray app does every second):
      the same first draw and update, for the same meshes (the table has one row per
      link: 4032 at 64 nodes).
    * LinkDetails: ``set_history`` with one hour (3600 points) + ``flush()`` (setData) +
      forced repaint, and one ``append`` + flush + repaint on a full buffer.
    Median (and max) of --runs runs, in milliseconds; "update CPU" is the GUI thread's
    CPU time for the update (time.thread_time: less moved by other processes on a shared
    machine than the wall time). Runs offscreen (QT_QPA_PLATFORM is
    set to "offscreen" unless already set). No network is used.

How to run (from the repository root, with exotray[gui] installed)
    python bench/gui_redraw.py
    python bench/gui_redraw.py --sizes 8,64,128 --runs 7

Output: a Markdown table on stdout and bench/results/gui_redraw.json. Asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _harness import machine_info, machine_line, md_table, write_json

#: updates measured after the first one on each view ("next updates": the steady state of
#: a window that gets a view every second; the first update after the first draw still
#: pays for caches filled on first use)
STEADY = 5


def mesh_cluster(n: int, seed: int = 0) -> dict[str, Any]:
    """A /v1/cluster-shaped view of an n-node full mesh over one interface per node."""
    ids = [f"{i:012x}" for i in range(1, n + 1)]
    nodes = []
    for i, nid in enumerate(ids):
        links = []
        for j, other in enumerate(ids):
            if i == j:
                continue
            k = (i * 131 + j * 17 + seed) % 100
            links.append({
                "id": f"{i:08x}{j:08x}",
                "peer_id": other,
                "peer_name": f"node-{j + 1}",
                "local_interface": "eth0",
                "local_label": "Ethernet",
                "peer_address": f"10.{j // 250}.{j % 250}.1",
                "peer_port": 52480,
                "state": "down" if k == 0 else "saturated" if k < 5 else "up",
                "rtt_ms": 0.05 + k / 100, "rtt_min_ms": 0.04, "rtt_max_ms": 0.2 + k / 50,
                "rtt_p90_ms": 0.1 + k / 80, "rtt_last_ms": 0.06, "jitter_ms": 0.01,
                "loss": 0.0,
                "rx_bytes_per_s": 1e4 * (k + 1), "tx_bytes_per_s": 2e4 * (k + 1) + seed,
                "capacity_bytes_per_s": None if k % 7 == 0 else 1.25e9,
                "capacity_source": "unknown" if k % 7 == 0 else "nic",
                "utilization": None if k % 7 == 0 else k / 100,
            })
        nodes.append({
            "schema": 1,
            "node": {"id": nid, "name": f"node-{i + 1}", "version": "0.1.0"},
            "interfaces": [{"name": "eth0", "kind": "ethernet", "label": "Ethernet", "up": True,
                            "addresses": [f"10.{i // 250}.{i % 250}.1"]}],
            "links": links,
            "age_s": 0.1,
            "reachable": True,
        })
    return {"self": ids[0], "nodes": nodes, "peers": [], "discovery": {}}


def history(points: int, t0: float = 1.7e9) -> dict[str, Any]:
    import math

    t = [t0 + i for i in range(points)]
    return {
        "link": "bench", "interval_s": 1.0, "t": t,
        "rtt_ms": [1 + math.sin(i / 30) for i in range(points)],
        "rtt_min_ms": [0.5 + 0.5 * math.sin(i / 30) for i in range(points)],
        "rtt_max_ms": [2 + math.sin(i / 30) for i in range(points)],
        "rx_bytes_per_s": [1e6 * (1 + math.sin(i / 50)) for i in range(points)],
        "tx_bytes_per_s": [2e6 * (1 + math.cos(i / 70)) for i in range(points)],
        "utilization": [0.1] * points,
        "state": ["up"] * points,
    }


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--sizes", default="8,64,128", help="mesh sizes (nodes)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--results", default="gui_redraw",
                    help="name of the JSON in bench/results (e.g. gui_redraw_main for a run "
                         "of another checkout's exotray on PYTHONPATH)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    from PySide6.QtWidgets import QApplication

    from exotray.core import topology
    from exotray.ui.link.view import LinkDetails
    from exotray.ui.topology.view import TopologyView
    from exotray.ui.window.dashboard import MainWindow

    app = QApplication.instance() or QApplication([])
    rows: list[list[str]] = []
    results: dict[str, Any] = {"machine": machine_info(), "runs": args.runs, "topology": [], "window": [],
                               "link_details": {}}

    def stat(xs: list[float]) -> str:
        return f"{statistics.median(xs):.1f} (max {max(xs):.1f})"

    for n in sizes:
        print(f"mesh of {n} nodes…", file=sys.stderr)
        clusters = [mesh_cluster(n, seed) for seed in range(args.runs + 1)]
        edges = len(topology.build(clusters[0])[1])
        build_ms = timed(lambda c=clusters[0]: topology.build(c), args.runs)
        for what, make, size in (("topology", TopologyView, (1000, 650)),
                                 ("window", lambda: MainWindow(None), (1280, 820))):
            first: list[float] = []
            update: list[float] = []
            update_cpu: list[float] = []
            steady: list[float] = []
            steady_cpu: list[float] = []
            for r in range(args.runs):
                view = make()
                view.resize(*size)
                view.show()
                app.processEvents()
                t = time.perf_counter()
                view.set_cluster(clusters[0])
                view.grab()
                first.append((time.perf_counter() - t) * 1000)
                t, c = time.perf_counter(), time.thread_time()
                view.set_cluster(clusters[r + 1])
                view.grab()
                update.append((time.perf_counter() - t) * 1000)
                update_cpu.append((time.thread_time() - c) * 1000)
                # then the updates that follow, as the window gets one every second
                for i in range(STEADY):
                    cl = clusters[(r + 2 + i) % len(clusters)]
                    t, c = time.perf_counter(), time.thread_time()
                    view.set_cluster(cl)
                    view.grab()
                    steady.append((time.perf_counter() - t) * 1000)
                    steady_cpu.append((time.thread_time() - c) * 1000)
                view.close()
                view.deleteLater()
                app.processEvents()
            rows.append([f"{what} {n} nodes", str(edges),
                         stat(build_ms) if what == "topology" else "–", stat(first),
                         stat(update), stat(update_cpu), stat(steady), stat(steady_cpu)])
            results[what].append({"nodes": n, "edges": edges, "build_ms": build_ms,
                                  "first_ms": first, "update_ms": update,
                                  "update_cpu_ms": update_cpu, "steady_ms": steady,
                                  "steady_cpu_ms": steady_cpu})

    print("link details, 3600 points…", file=sys.stderr)
    w = LinkDetails()
    w.resize(1000, 520)
    w.show()
    app.processEvents()
    hist = history(3600)
    full: list[float] = []
    for _ in range(args.runs):
        t = time.perf_counter()
        w.set_history(hist)
        w.flush()
        w.grab()
        full.append((time.perf_counter() - t) * 1000)
    step: list[float] = []
    last = hist["t"][-1]
    row = {k: v[-1] for k, v in hist.items() if isinstance(v, list)}
    for i in range(args.runs):
        t = time.perf_counter()
        w.append(dict(row, t=last + 1 + i))
        w.flush()
        w.grab()
        step.append((time.perf_counter() - t) * 1000)
    rows.append(["link details set_history 3600 pts", "–", "–", stat(full), "–", "–", "–",
                 "–"])
    rows.append(["link details append 1 pt (3600 kept)", "–", "–", "–", stat(step), "–", "–",
                 "–"])
    results["link_details"] = {"points": 3600, "set_history_ms": full, "append_ms": step}

    print(md_table(["case", "edges", "build ms", "first draw ms", "update ms",
                    "update CPU ms", "next updates ms", "next updates CPU ms"], rows))
    print()
    print(machine_line(results["machine"]))
    import exotray

    print(f"median (max) of {args.runs} runs; draw = set_* + widget.grab() at 1000x650 "
          "(topology), 1280x820 (window), 1000x520 (details), offscreen raster; "
          f"exotray from {Path(exotray.__file__).parent}")
    path = write_json(args.results, results)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
