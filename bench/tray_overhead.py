"""Resource cost of the tray app attached to a 16-node cluster: tray only, and dashboard open.

What it measures
    Starts 16 exotray agents on loopback in a star: a *hub* that lists the 15 spokes as
    --peer, and 15 spokes that each list only the hub. It waits until the hub's
    /v1/cluster has 16 nodes and the hub has 15 links up. Then, inside a throwaway
    desktop (tests/desktop/harness.py: Xvfb + private D-Bus session + trayer + dunst),
    it first samples the hub (and Xvfb) with no app running, as a baseline, and then
    runs the tray app twice, one after the other:

    (a) tray only:       python -m exotray --port HUB --no-mdns --state-dir HUBSTATE
    (b) dashboard open:  the same with --dashboard (topology map + link table)

    The app always *attaches* to the running hub agent (the script checks that the hub
    answers right before starting the app, that the app logs "agent: attached", and
    that the app has no child processes); it never starts an agent of its own.

    For each run:
    * startup: the time from Popen to the tray icon being embedded in trayer (polled
      every --poll seconds, 20 ms, with xwininfo), and for (b) to the dashboard window
      being mapped;
    * after --settle seconds (10) it samples the app's process with psutil every
      --sample-interval seconds (1) for --seconds (30): CPU % of one core = (user +
      system CPU time delta) / wall time (and the largest 1-s sample), RSS in MiB
      (median and max), and threads;
    * over the same window, the same numbers for the hub agent (which serves the app's
      /v1/cluster poll every second) and for Xvfb (where X11 drawing ends up).

    It measures and prints; it asserts nothing about speed. Everything stays on
    127.0.0.1 (agents run with --bind 127.0.0.1 --no-mdns and loopback peers only;
    the app runs with --no-mdns and finds the hub already running). The agents,
    the app and the desktop processes are stopped by PID in finally blocks, the app
    first.

How to run (from the repository root, with exotray[gui] installed, and Xvfb, dbus,
x11-utils, trayer and dunst on the PATH)
    python bench/tray_overhead.py
    python bench/tray_overhead.py --seconds 60 --settle 20

Output: a Markdown table on stdout and bench/results/tray_overhead.json.
Runtime: about 10 s to start the cluster, then (seconds) for the baseline and
(startup + settle + seconds + ~2 s) per run: ~2.5 min with the defaults.
Note that the 16 agents, Xvfb and the app all share the machine's CPUs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil
from _harness import (
    Agent,
    AgentGroup,
    get_json,
    http_get,
    machine_info,
    machine_line,
    md_table,
    write_json,
)

MIB = 1024 * 1024
N_SPOKES = 15
REPO = Path(__file__).resolve().parent.parent
WINDOW_TITLE = "cluster network"  # "exotray — cluster network"


def _load_desktop():
    """tests/desktop/harness.py's Desktop class (loaded by path: tests/ is no package)."""
    path = REPO / "tests" / "desktop" / "harness.py"
    spec = importlib.util.spec_from_file_location("exotray_bench_desktop", path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses/typing look the module up by name
    spec.loader.exec_module(mod)
    return mod.Desktop


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def _log(msg: str) -> None:
    print(f"[tray_overhead] {msg}", file=sys.stderr, flush=True)


# -- cluster -------------------------------------------------------------------------------
def wait_cluster(hub: Agent, nodes: int, links_up: int, timeout: float) -> dict:
    """Until the hub's /v1/cluster has `nodes` nodes and its own node `links_up` links up."""
    deadline = time.monotonic() + timeout
    seen: tuple[int, int] = (0, 0)
    while time.monotonic() < deadline:
        if hub.proc.poll() is not None:
            raise RuntimeError(f"hub exited with {hub.proc.returncode}:\n" + hub.log_tail())
        try:
            cluster = get_json(hub.base + "/v1/cluster")
            ns = cluster.get("nodes", [])
            up = sum(1 for lk in (ns[0].get("links", []) if ns else []) if lk.get("state") == "up")
            seen = (len(ns), up)
            if seen[0] >= nodes and up >= links_up:
                return cluster
        except OSError:
            pass
        time.sleep(0.25)
    raise RuntimeError(f"hub sees {seen[0]} nodes and {seen[1]} links up after {timeout} s")


def hub_answers(hub: Agent) -> bool:
    """The same check the app's supervisor makes before deciding to attach."""
    if hub.proc.poll() is not None:
        return False
    try:
        return get_json(hub.base + "/v1/snapshot", timeout=1.0).get("schema") == 1
    except (OSError, ValueError):
        return False


# -- sampling ------------------------------------------------------------------------------
def sample(
    procs: dict[str, psutil.Process],
    seconds: float,
    interval: float,
    alive: subprocess.Popen | None = None,
) -> dict[str, dict]:
    """Sample each process every `interval` s for `seconds`; per-process summaries."""
    t0 = time.monotonic()
    cpu0 = {k: _cpu_s(p) for k, p in procs.items()}
    rss: dict[str, list[float]] = {k: [] for k in procs}
    threads: dict[str, list[int]] = {k: [] for k in procs}
    cpu_samples: dict[str, list[float]] = {k: [] for k in procs}
    last_t, last_cpu = t0, dict(cpu0)
    end = t0 + seconds
    for _ in range(int(seconds / interval) + 2):  # hard bound on the loop
        now = time.monotonic()
        if now >= end:
            break
        time.sleep(min(interval, end - now))
        if alive is not None and alive.poll() is not None:
            raise RuntimeError(f"the app exited with {alive.returncode} while sampling")
        t = time.monotonic()
        for k, p in procs.items():
            with p.oneshot():
                rss[k].append(p.memory_info().rss / MIB)
                threads[k].append(p.num_threads())
                c = _cpu_s(p)
            if t > last_t:
                cpu_samples[k].append(100.0 * (c - last_cpu[k]) / (t - last_t))
            last_cpu[k] = c
        last_t = t
    t1 = time.monotonic()
    wall = t1 - t0
    out = {}
    for k, p in procs.items():
        out[k] = {
            "pid": p.pid,
            "seconds": round(wall, 2),
            "samples": len(rss[k]),
            "cpu_pct_one_core": 100.0 * (_cpu_s(p) - cpu0[k]) / wall,
            "cpu_pct_max_sample": max(cpu_samples[k]) if cpu_samples[k] else None,
            "cpu_pct_samples": [round(x, 2) for x in cpu_samples[k]],
            "rss_mib_median": statistics.median(rss[k]) if rss[k] else None,
            "rss_mib_max": max(rss[k]) if rss[k] else None,
            "threads_median": statistics.median(threads[k]) if threads[k] else None,
            "threads_max": max(threads[k]) if threads[k] else None,
        }
    return out


# -- the app -------------------------------------------------------------------------------
def stop_proc(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM the process we started (by its PID), SIGKILL after `grace` seconds."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(timeout=5)


def window_mapped(desk) -> bool:
    return any(WINDOW_TITLE in w["name"] and w["size"][0] > 200 for w in desk.windows())


def run_app(
    desk, hub: Agent, hub_state: Path, dashboard: bool, root: Path, args: argparse.Namespace
) -> dict:
    label = "dashboard" if dashboard else "tray"
    # A tray icon from the previous run must be gone before we time this one.
    deadline = time.monotonic() + 10
    while desk.tray_icon_embedded("exotray") and time.monotonic() < deadline:
        time.sleep(0.1)
    if not hub_answers(hub):
        raise RuntimeError(
            "the hub agent does not answer: not starting the app (it would "
            "start an agent of its own)"
        )
    cmd = [
        args.python,
        "-m",
        "exotray",
        "--port",
        str(hub.port),
        "--no-mdns",
        "--state-dir",
        str(hub_state),
    ]
    if dashboard:
        cmd.append("--dashboard")
    env = {k: v for k, v in desk.env.items() if "proxy" not in k.lower()}
    env["QT_QPA_PLATFORM"] = "xcb"
    log_path = root / f"app-{label}.log"
    with open(log_path, "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env
        )
    try:
        t_icon = t_window = None
        polls = 0
        deadline = time.monotonic() + args.start_timeout
        max_polls = int(args.start_timeout / args.poll) + 2
        while polls < max_polls and time.monotonic() < deadline:
            polls += 1
            if proc.poll() is not None:
                raise RuntimeError(
                    f"the app exited with {proc.returncode}:\n"
                    + log_path.read_text(errors="replace")[-2000:]
                )
            if t_icon is None and desk.tray_icon_embedded("exotray"):
                t_icon = time.perf_counter() - t0
            if dashboard and t_window is None and window_mapped(desk):
                t_window = time.perf_counter() - t0
            if t_icon is not None and (t_window is not None or not dashboard):
                break
            time.sleep(args.poll)
        if t_icon is None:
            raise RuntimeError(f"tray icon not embedded after {args.start_timeout} s")
        if dashboard and t_window is None:
            raise RuntimeError(f"dashboard window not mapped after {args.start_timeout} s")
        _log(
            f"{label}: tray icon after {t_icon * 1000:.0f} ms"
            + (f", window after {t_window * 1000:.0f} ms" if t_window else "")
            + f"; settling {args.settle:g} s"
        )

        app = psutil.Process(proc.pid)
        time.sleep(args.settle)
        children = app.children(recursive=True)
        app_log = log_path.read_text(errors="replace")
        attached = "agent: attached" in app_log
        if children or not attached:
            raise RuntimeError(
                "the app did not attach to the hub (children: "
                f"{[c.pid for c in children]}, 'agent: attached' logged: {attached})"
            )
        procs = {
            "app": app,
            "hub": psutil.Process(hub.proc.pid),
            "Xvfb": psutil.Process(desk.pids()["Xvfb"]),
        }
        _log(f"{label}: sampling {args.seconds:g} s")
        stats = sample(procs, args.seconds, args.sample_interval, alive=proc)
        return {
            "run": label,
            "cmd": cmd[1:],
            "startup_tray_icon_ms": t_icon * 1000,
            "startup_window_ms": t_window * 1000 if t_window is not None else None,
            "start_polls": polls,
            "attached": attached,
            "app_children": len(children),
            "processes": stats,
            "app_log_tail": app_log.splitlines()[-10:],
        }
    finally:
        stop_proc(proc)


# -- main ----------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--seconds",
        type=float,
        default=30.0,
        help="measurement window per run in seconds (default 30)",
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=10.0,
        help="seconds to wait after the tray icon shows up (default 10)",
    )
    ap.add_argument(
        "--sample-interval",
        type=float,
        default=1.0,
        help="psutil sampling period in seconds (default 1)",
    )
    ap.add_argument(
        "--poll",
        type=float,
        default=0.02,
        help="period of the tray-icon check at startup (default 0.02)",
    )
    ap.add_argument(
        "--no-baseline",
        action="store_true",
        help="skip the baseline window (hub and Xvfb with no app running)",
    )
    ap.add_argument(
        "--start-timeout",
        type=float,
        default=30.0,
        help="max seconds for agents, the cluster and the app to start (default 30)",
    )
    ap.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that has exotray[gui] installed (default: this one)",
    )
    ap.add_argument(
        "--name",
        default="tray_overhead",
        help="results file name under bench/results/ (default tray_overhead)",
    )
    args = ap.parse_args(argv)
    if args.seconds <= 0 or args.sample_interval <= 0 or args.poll <= 0:
        ap.error("--seconds, --sample-interval and --poll must be > 0")

    desktop_cls = _load_desktop()
    reason = desktop_cls.why_not_available(tray=True, notifications=True, monitor=False)
    if reason:
        print(f"tray_overhead: {reason}", file=sys.stderr)
        return 2

    info = machine_info()
    for mod in ("PySide6", "pyqtgraph"):
        with contextlib.suppress(Exception):
            info[mod.lower()] = importlib.import_module(mod).__version__

    group = AgentGroup(python=args.python)
    rows: list[dict] = []
    baseline: dict | None = None
    try:
        hub_port = group.reserve()
        spoke_ports = [group.reserve() for _ in range(N_SPOKES)]
        _log(f"starting hub + {N_SPOKES} spokes on 127.0.0.1 ...")
        hub = group.start("hub", hub_port, spoke_ports)
        for i, port in enumerate(spoke_ports):
            group.start(f"spoke{i + 1:02d}", port, [hub_port])
        group.wait_ready(timeout=args.start_timeout)
        t_ready = time.monotonic()
        cluster = wait_cluster(hub, N_SPOKES + 1, N_SPOKES, timeout=args.start_timeout + 30)
        _log(
            f"hub sees {len(cluster['nodes'])} nodes "
            f"({time.monotonic() - t_ready:.1f} s after all agents answered)"
        )
        hub_state = group.root / "hub"

        with desktop_cls(group.root / "desktop", tray=True, notifications=True) as desk:
            if not args.no_baseline:
                _log(f"baseline (no app): sampling {args.seconds:g} s")
                baseline = sample(
                    {
                        "hub": psutil.Process(hub.proc.pid),
                        "Xvfb": psutil.Process(desk.pids()["Xvfb"]),
                    },
                    args.seconds,
                    args.sample_interval,
                )
            for dashboard in (False, True):
                rows.append(run_app(desk, hub, hub_state, dashboard, group.root, args))
            body, head = http_get(hub.base + "/v1/cluster")
            final = get_json(hub.base + "/v1/cluster")
    finally:
        group.close()

    n_nodes = len(final.get("nodes", []))
    hub_links = final["nodes"][0].get("links", []) if n_nodes else []
    links_up = sum(1 for lk in hub_links if lk.get("state") == "up")

    def fmt_row(run: str, proc: str, s: dict, icon: str = "", window: str = "") -> list[str]:
        mx = s["cpu_pct_max_sample"]
        return [
            run,
            proc,
            icon,
            window,
            f"{s['cpu_pct_one_core']:.2f}",
            f"{mx:.1f}" if mx is not None else "–",
            f"{s['rss_mib_median']:.1f}",
            f"{s['rss_mib_max']:.1f}",
            f"{s['threads_median']:g} (max {s['threads_max']})",
        ]

    headers = [
        "run",
        "process",
        "tray icon ms",
        "window ms",
        "CPU % (1 core)",
        "CPU % max 1 s",
        "RSS MiB med",
        "RSS MiB max",
        "threads",
    ]
    table: list[list[str]] = []
    if baseline is not None:
        table.append(fmt_row("no app", "hub agent", baseline["hub"]))
        table.append(fmt_row("no app", "Xvfb", baseline["Xvfb"]))
    names = {"tray": "(a) tray only", "dashboard": "(b) dashboard"}
    for r in rows:
        p = r["processes"]
        window = f"{r['startup_window_ms']:.0f}" if r["startup_window_ms"] is not None else "–"
        table.append(
            fmt_row(
                names[r["run"]],
                "**exotray app**",
                p["app"],
                f"{r['startup_tray_icon_ms']:.0f}",
                window,
            )
        )
        table.append(fmt_row(names[r["run"]], "hub agent", p["hub"]))
        table.append(fmt_row(names[r["run"]], "Xvfb", p["Xvfb"]))

    print(
        f"## exotray tray app overhead, 16-node cluster ({args.seconds:g} s window, "
        f"{args.settle:g} s settle)\n"
    )
    print(machine_line(info) + f", PySide6 {info.get('pyside6')}\n")
    print(md_table(headers, table))
    print(
        f"\nCluster: hub + {N_SPOKES} spokes on 127.0.0.1 (star); the hub's /v1/cluster has "
        f"{n_nodes} nodes, {links_up}/{len(hub_links)} hub links up, {len(body)} B body "
        f"(+~{head} B headers), fetched by the app every second. Startup = Popen to the tray "
        f"icon embedded in trayer (xwininfo polled every {args.poll * 1000:.0f} ms; "
        "each poll itself takes a few ms) and, for (b), to the dashboard window mapped. "
        "Xvfb renders everything drawn over X11, so its CPU is part of the app's cost. "
        "All 16 agents, Xvfb and the app share the machine's CPUs."
    )
    path = write_json(
        args.name,
        {
            "benchmark": "tray_overhead",
            "machine": info,
            "params": dict(vars(args)),
            "cluster": {
                "nodes": n_nodes,
                "hub_links": len(hub_links),
                "hub_links_up": links_up,
                "cluster_body_bytes": len(body),
                "cluster_header_bytes": head,
            },
            "baseline": baseline,
            "runs": rows,
        },
    )
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
