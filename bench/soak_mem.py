"""What grows in each agent of a `bench/soak.py --split` run, from bench/_mem_probe.py's
lines (bench/results/soak-mem-<split>/n<i>.jsonl); run by soak.py at the end of a run,
or again on kept lines:

    python bench/soak_mem.py bench/results/soak-mem-rings [--after 180]

Per agent: least-squares slopes (MiB a minute) of RSS and its parts over the lines at or
after --after seconds of the agent's life (the rings are full by then), and over the
first and second half of that window (does it level off?); then, over the same window,
the gc types whose count grew most, the containers (same id) that grew, zeroconf's
containers, and for a traced agent what tracemalloc saw grow.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import md_table


def _malloc_in_use(r: dict) -> float:
    return r["malloc"]["uordblks"] + r["malloc"]["hblkhd"]


#: (column, value of a line or None); MiB unless named otherwise
PARTS: list[tuple[str, object]] = [
    ("RSS", lambda r: r["rss_mib"]),
    ("[heap]", lambda r: r["smaps_mib"].get("heap", 0)),
    ("anon maps", lambda r: r["smaps_mib"].get("anon", 0)),
    ("glibc in use", _malloc_in_use),
    ("glibc free", lambda r: r["malloc"]["fordblks"]),
    ("obmalloc arenas", lambda r: r.get("obmalloc", {}).get("arenas")),
    ("obmalloc blocks", lambda r: r.get("obmalloc", {}).get("blocks_mib")),
    ("SQLite", lambda r: r["sqlite_mib"] or 0),
    ("traced", lambda r: r.get("traced_app_mib")),
    ("objects k", lambda r: r["objects"] / 1000),
]


def load(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope, per minute, of (seconds, value) points."""
    pts = [(t / 60, v) for t, v in points if v is not None]
    if len(pts) < 3:
        return None
    n = len(pts)
    mx = sum(t for t, _ in pts) / n
    my = sum(v for _, v in pts) / n
    sxx = sum((t - mx) ** 2 for t, _ in pts)
    return sum((t - mx) * (v - my) for t, v in pts) / sxx if sxx else None


def _fmt(v: float | None, digits: int = 3) -> str:
    return "" if v is None else f"{v:+.{digits}f}"


def slopes_table(runs: dict[str, tuple[str, list[dict]]], after: float) -> str:
    head = ["agent", "variant", "min", "RSS start→end", *[f"{n} /min" for n, _ in PARTS],
            "RSS /min 1st half", "RSS /min 2nd half"]
    rows = []
    for name, (label, lines) in runs.items():
        win = [r for r in lines if r["t"] >= after]
        if len(win) < 3:
            continue
        mid = (win[0]["t"] + win[-1]["t"]) / 2
        halves = ([r for r in win if r["t"] <= mid], [r for r in win if r["t"] >= mid])
        cells = [_fmt(slope([(r["t"], f(r)) for r in win])) for _, f in PARTS]
        rows.append([name, label, f"{win[0]['t'] / 60:.1f}-{win[-1]['t'] / 60:.1f}",
                     f"{win[0]['rss_mib']:.1f}→{win[-1]['rss_mib']:.1f}", *cells,
                     *[_fmt(slope([(r["t"], r["rss_mib"]) for r in h])) for h in halves]])
    return md_table(head, rows)


def windows_table(runs: dict[str, tuple[str, list[dict]]], edges: list[float]) -> str:
    """RSS, glibc in use, glibc free and SQLite slopes (MiB/min) in each window between
    `edges` (minutes of the agents' life): does the growth level off?"""
    spans = list(itertools.pairwise(edges))
    cols = [("RSS", lambda r: r["rss_mib"]), ("in use", _malloc_in_use),
            ("free", lambda r: r["malloc"]["fordblks"]),
            ("SQLite", lambda r: r["sqlite_mib"] or 0)]
    head = ["agent", "variant", *[f"{n} {a:g}-{b:g}" for a, b in spans for n, _ in cols]]
    rows = []
    for name, (label, lines) in runs.items():
        cells = []
        for a, b in spans:
            win = [r for r in lines if a * 60 <= r["t"] <= b * 60 + 1]
            cells += [_fmt(slope([(r["t"], f(r)) for r in win])) for _, f in cols]
        rows.append([name, label, *cells])
    return md_table(head, rows)


def _window(lines: list[dict], after: float) -> tuple[dict, dict] | None:
    win = [r for r in lines if r["t"] >= after]
    return (win[0], win[-1]) if len(win) >= 2 else None


def growth_report(runs: dict[str, tuple[str, list[dict]]], after: float) -> str:
    out = []
    for name, (label, lines) in runs.items():
        w = _window(lines, after)
        if w is None:
            continue
        a, b = w
        out.append(f"### {name}: {label} ({a['t'] / 60:.1f} → {b['t'] / 60:.1f} min)")
        out.append(f"- objects {a['objects']} → {b['objects']}, fds {a.get('fds')} → "
                   f"{b.get('fds')}, threads {a['threads']} → {b['threads']}, "
                   f"py blocks {a['py_blocks']} → {b['py_blocks']}, obmalloc "
                   f"{a.get('obmalloc')} → {b.get('obmalloc')}")
        out.append(f"- gc types grown since the probe's base (XT_MEM_BASE, "
                   f"{b.get('base_t', '?')} s): "
                   + ", ".join(f"{k} {v:+d}" for k, v in (b.get("types_grew") or [])[:10]))
        ca = {c["id"]: c for c in a.get("containers", [])}
        moved = [(c, c["len"] - ca[c["id"]]["len"]) for c in b.get("containers", [])
                 if c["id"] in ca and c["len"] != ca[c["id"]]["len"]]
        new = [c for c in b.get("containers", []) if c["id"] not in ca]
        out.append("- containers (same id) that changed length: "
                   + ("; ".join(f"{c['type']} {c['len'] - d}→{c['len']} ({c['hint']})"
                                for c, d in sorted(moved, key=lambda x: -x[1])[:6]) or "none"))
        if new:
            out.append("- long containers new since: " + "; ".join(
                f"{c['type']} {c['len']} ({c['hint']})" for c in new[:4]))
        for la, lb in zip(a.get("loops", []), b.get("loops", []), strict=False):
            out.append("- event loop " + ", ".join(f"{k} {la[k]}→{lb[k]}" for k in la))
        for za, zb in zip(a["zeroconf"], b["zeroconf"], strict=False):
            out.append("- zeroconf " + ", ".join(f"{k} {za[k]}→{zb[k]}" for k in za
                                                  if k in zb))
        if "traced_grew" in b:
            out.append(f"- traced (the agent's, not the probe's) {a.get('traced_app_mib')} → "
                       f"{b.get('traced_app_mib')} MiB; "
                       "grew since tracing's first snapshot:")
            for d in b["traced_grew"][:8]:
                out.append(f"  - {d['kib']:+.1f} KiB, {d['count']:+d} blocks: "
                           + " ← ".join(d["where"][:6]))
        out.append("")
    return "\n".join(out)


def read_runs(mem: Path, labels: list[str] | None = None) -> dict[str, tuple[str, list[dict]]]:
    runs = {}
    for path in sorted(mem.glob("n*.jsonl"), key=lambda p: int(p.stem[1:])):
        i = int(path.stem[1:])
        label = labels[i - 1] if labels and i <= len(labels) else ""
        runs[path.stem] = (label, load(path))
    return runs


def report(mem: Path, labels: list[str] | None = None, after: float = 180.0) -> str:
    runs = read_runs(mem, labels)
    return slopes_table(runs, after) + "\n\n" + growth_report(runs, after)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mem", type=Path)
    ap.add_argument("--after", type=float, default=180.0,
                    help="seconds of the agents' life from which to measure (rings full)")
    ap.add_argument("--windows", default="",
                    help="minutes, e.g. 3,10,20,30: slopes in each window between them")
    args = ap.parse_args()
    labels = None
    meta = args.mem / "variants.json"
    if meta.exists():
        labels = json.loads(meta.read_text())
    print(report(args.mem, labels, args.after))
    if args.windows:
        edges = [float(x) for x in args.windows.split(",")]
        print(windows_table(read_runs(args.mem, labels), edges))
    return 0


if __name__ == "__main__":
    sys.exit(main())
