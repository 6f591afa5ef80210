"""What one hub agent costs with 2 .. 64 real peers, each in its own network namespace.

What it measures (root; network namespaces, see bench/README.md)
    One lab (tests/lab/netlab.py) of 1 + max(P) hosts on one bridge, built once. For each
    P in --peers (default 2,8,32,64), and each sharing protocol in --sharing (default
    poll,stream: both, P by P, so each pair of rows is measured minutes apart at most) the
    script starts a hub agent in h1 whose `--peer` list has P spokes, and one agent in
    each of h2 .. h(P+1) that lists only the hub (`--peer`, `--no-mdns`: deterministic,
    no multicast), every agent with `--sharing` of that row. Interval 1 s (the default).
    Once the hub shows P links up it waits --settle s (10), then over --seconds s (30)
    samples the hub process with psutil every second and reports:

    * hub CPU % of one core ((user + system) CPU time delta / wall time) and the largest
      1-s sample; RSS in MiB (median, max); threads;
    * what the hub sends, per peer per second: from its counters (`probes_sent`,
      `requests_reflected`, x 82 B = 40 B probe + 28 B IPv4/UDP + 14 B Ethernet), and
      everything its veth transmitted (`/sys/class/net/<veth>/statistics/tx_bytes` inside
      its namespace; GSO/TSO are off in the lab, so these are frame bytes) — which also
      holds what it shares with the P spokes (polling: the snapshots it serves and its
      own fetch requests; stream: its frames and its followers' requests); rx likewise;
    * stream rows: the hub's frame bytes out and in per peer per second (its counters
      `stream_bytes_out`, `stream_bytes_in`);
    * the hub's and one spoke's /v1/snapshot body size (read after the window);
    * per-spoke CPU % (mean and max over the spokes; all spokes share the machine).

    The script reads the hub's API only before and after the window (and reads the veth
    counters between those reads), so its own requests are not counted. All agents are
    stopped between rows; the namespaces stay until the end. It asserts nothing.

How to run (as root, from the repository root)
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_scale.py
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_scale.py --peers 8,16 --seconds 60
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_scale.py --sharing stream \
        --tag q1 --net 100      # names xtq1..., addresses 10.213.100.0/24

Output: Markdown on stdout, bench/results/lab_scale.json.
Runtime with the defaults: about 7 min (65 namespaces, then per row start-up + 10 s +
30 s, 8 rows; the 64-peer rows take longest to start); about 4 min with one protocol.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from _harness import machine_line, md_table, write_json
from _lab import PORT, cpu_s, lab_body_len, lab_machine_info, netlab, require_lab, wait_until

MIB = 1024 * 1024
PROBE_FRAME = 40 + 28 + 14  # probe payload + IPv4/UDP + Ethernet


def run_row(lab: netlab.Lab, agents_tmp: Path, n: int, sharing: str,
            args: argparse.Namespace) -> dict:
    hub_host, spokes_hosts = lab.hosts[0], lab.hosts[1 : n + 1]
    agents = netlab.Agents(lab, agents_tmp / f"p{n}-{sharing}")
    (agents_tmp / f"p{n}-{sharing}").mkdir()
    t_start = time.monotonic()
    try:
        counted = {}
        if args.profile:  # the hub under bench/_loop_counter.py: cProfile, CPU clock
            counted = {"runner": str(Path(__file__).resolve().parent / "_loop_counter.py"),
                       "env": {"XT_COUNT_OUT": str(Path(args.profile) / f"hub-{n}-{sharing}"),
                               "XT_COUNT_AFTER": str(args.profile_after),
                               "XT_COUNT_PROFILE": "1"}}
        hub = agents.start(hub_host, "--sharing", sharing, name="hub", mdns=False,
                           peers=[f"{h.addr}:{PORT}" for h in spokes_hosts], **counted)
        spokes = [agents.start(h, "--sharing", sharing, name=f"s{i + 1}", mdns=False,
                               peers=[f"{hub_host.addr}:{PORT}"])
                  for i, h in enumerate(spokes_hosts)]

        def links_up():
            snap = hub.get("/v1/snapshot")
            return sum(1 for lk in snap["links"] if lk["state"] == "up") >= n

        if not wait_until(links_up, args.start_timeout + 0.5 * n, every=0.5):
            raise RuntimeError(f"hub: {n} links not up in time:\n" + hub.log()[-2000:])
        started_s = time.monotonic() - t_start
        time.sleep(args.settle)

        proc = psutil.Process(hub.proc.pid)
        sprocs = [psutil.Process(s.proc.pid) for s in spokes]
        snap0 = hub.get("/v1/snapshot")
        rx0, tx0 = lab.counters(hub_host)
        t0 = time.monotonic()
        c0 = cpu_s(proc)
        k0_times = proc.cpu_times()
        x0 = proc.num_ctx_switches()
        sc0 = [cpu_s(p) for p in sprocs]
        rss, threads, samples = [], [], []
        spy = None
        if args.py_spy:  # where the hub's CPU goes, over the same window (raw stacks)
            spy = subprocess.Popen(
                ["py-spy", "record", "--pid", str(proc.pid), "--rate", "400", "--nonblocking",
                 "--duration", str(int(args.seconds)), "--format", "raw", "--output",
                 str(Path(args.py_spy) / f"hub-{n}-{sharing}.txt")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        last_t, last_c = t0, c0
        end = t0 + args.seconds
        for _ in range(int(args.seconds) + 2):  # counted; one sample a second
            now = time.monotonic()
            if now >= end:
                break
            time.sleep(min(1.0, end - now))
            with proc.oneshot():
                mem = proc.memory_info().rss
                nth = proc.num_threads()
                c = cpu_s(proc)
            t = time.monotonic()
            rss.append(mem / MIB)
            threads.append(nth)
            samples.append(100.0 * (c - last_c) / (t - last_t))
            last_t, last_c = t, c
        t1 = time.monotonic()
        c1 = cpu_s(proc)
        k1_times = proc.cpu_times()
        x1 = proc.num_ctx_switches()
        if spy is not None:
            spy.wait(timeout=30)
        sc1 = [cpu_s(p) for p in sprocs]
        rx1, tx1 = lab.counters(hub_host)
        wall = t1 - t0
        snap1 = hub.get("/v1/snapshot")

        k0, k1 = snap0.get("counters", {}), snap1.get("counters", {})

        def rate(key: str) -> float:
            return (k1.get(key, 0) - k0.get(key, 0)) / wall

        spoke_cpu = [100.0 * (b - a) / wall for a, b in zip(sc0, sc1, strict=True)]
        hub_body = lab_body_len(hub.url + "/v1/snapshot")
        spoke_body = lab_body_len(spokes[0].url + "/v1/snapshot")
        links = snap1["links"]
        return {
            "peers": n,
            "sharing": sharing,
            "stream_bytes_out_per_peer_per_s": rate("stream_bytes_out") / n,
            "stream_bytes_in_per_peer_per_s": rate("stream_bytes_in") / n,
            "start_to_links_up_s": round(started_s, 2),
            "seconds": round(wall, 2),
            "hub_cpu_pct_one_core": 100.0 * (c1 - c0) / wall,
            # the kernel's share: on veths and a bridge, a datagram's whole path into
            # the receiving namespace runs in the sender's system time
            "hub_cpu_user_pct": 100.0 * (k1_times.user - k0_times.user) / wall,
            # the kernel's count of the hub's wake-ups (every thread): each time it gave
            # up the CPU to wait, and each time it was preempted
            "hub_voluntary_switches_per_s": (x1.voluntary - x0.voluntary) / wall,
            "hub_involuntary_switches_per_s": (x1.involuntary - x0.involuntary) / wall,
            "hub_cpu_system_pct": 100.0 * (k1_times.system - k0_times.system) / wall,
            "hub_cpu_pct_max_sample": max(samples) if samples else None,
            "hub_cpu_pct_samples": [round(x, 2) for x in samples],
            "hub_rss_mib_median": statistics.median(rss),
            "hub_rss_mib_max": max(rss),
            "hub_threads_max": max(threads),
            "probes_sent_per_peer_per_s": rate("probes_sent") / n,
            "probe_bytes_per_peer_per_s": rate("probes_sent") / n * PROBE_FRAME,
            "reflect_bytes_per_peer_per_s": rate("requests_reflected") / n * PROBE_FRAME,
            "veth_tx_bytes_per_s": (tx1 - tx0) / wall,
            "veth_tx_bytes_per_peer_per_s": (tx1 - tx0) / wall / n,
            "veth_rx_bytes_per_peer_per_s": (rx1 - rx0) / wall / n,
            "hub_snapshot_body_bytes": hub_body,
            "spoke_snapshot_body_bytes": spoke_body,
            "links": len(links),
            "links_up": sum(1 for lk in links if lk["state"] == "up"),
            "loss_max": max((lk.get("loss") or 0.0) for lk in links) if links else None,
            "fetch_errors": k1.get("fetch_errors", 0) - k0.get("fetch_errors", 0),
            "spoke_cpu_pct_mean": statistics.fmean(spoke_cpu),
            "spoke_cpu_pct_max": max(spoke_cpu),
            "spokes_cpu_pct_sum": sum(spoke_cpu),
            "counters_delta": {
                k: k1.get(k, 0) - k0.get(k, 0) for k in k1 if isinstance(k1.get(k), int)
            },
        }
    finally:
        agents.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--peers", default="2,8,32,64", help="peer counts, one row each")
    ap.add_argument("--seconds", type=float, default=30.0, help="window per row, s (30)")
    ap.add_argument("--settle", type=float, default=10.0,
                    help="seconds after all links are up (10)")
    ap.add_argument("--start-timeout", type=float, default=30.0,
                    help="seconds for links to come up, plus 0.5 s per peer (30)")
    ap.add_argument("--sharing", default="poll,stream",
                    help="sharing protocols, comma-separated, each P in turn (poll,stream)")
    ap.add_argument("--tag", default=None,
                    help="lab names xt<TAG>... (a prefix of your own; random if not given)")
    ap.add_argument("--net", type=int, default=None,
                    help="lab addresses 10.213.<NET>.0/24 (random 100..198 if not given)")
    ap.add_argument("--name", default="lab_scale", help="results file name")
    ap.add_argument("--profile", default=None, metavar="DIR",
                    help="run the hub under cProfile (CPU clock; inflates its CPU) from "
                         "--profile-after s after its start until it stops: "
                         "DIR/hub-<P>-<sharing>.prof")
    ap.add_argument("--profile-after", type=float, default=45.0)
    ap.add_argument("--py-spy", default=None, metavar="DIR",
                    help="also record the hub with py-spy over each window (raw stacks "
                         "in DIR/hub-<P>-<sharing>.txt; py-spy on PATH)")
    args = ap.parse_args(argv)
    protocols = [x.strip() for x in args.sharing.split(",") if x.strip()]
    if not protocols or any(x not in ("poll", "stream") for x in protocols):
        ap.error("--sharing: poll, stream or both (poll,stream)")
    try:
        counts = [int(x) for x in args.peers.split(",") if x.strip()]
    except ValueError:
        ap.error("--peers takes integers like 2,8")
    if not counts or any(not 1 <= c <= 120 for c in counts):
        ap.error("--peers: each count must be 1..120")
    if args.seconds <= 0 or args.settle < 0:
        ap.error("--seconds > 0, --settle >= 0")
    require_lab("lab_scale")

    info = lab_machine_info()
    t_begin = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(prefix="exotray-labbench-") as d:
        print(f"[lab_scale] building a lab of {1 + max(counts)} hosts ...", file=sys.stderr)
        with netlab.Lab(1 + max(counts), net=args.net, tag=args.tag) as lab:
            built_s = time.monotonic() - t_begin
            for n in counts:
                for sharing in protocols:
                    print(f"[lab_scale] P={n} {sharing}: starting {n + 1} agents ...",
                          file=sys.stderr)
                    try:
                        rows.append(run_row(lab, Path(d), n, sharing, args))
                    except Exception as e:  # a row that cannot start is reported
                        print(f"[lab_scale] P={n} {sharing} failed: {e}", file=sys.stderr)
                        rows.append({"peers": n, "sharing": sharing, "error": str(e)[:2000]})
    total_s = time.monotonic() - t_begin

    def f(v: float | None, nd: int) -> str:
        return "–" if v is None else f"{v:.{nd}f}"

    headers = ["P", "sharing", "hub CPU %", "user / sys %", "max 1 s", "hub switches/s", "RSS MiB med / max", "probe B/s/peer",
               "reflect B/s/peer", "veth tx B/s/peer", "veth tx kB/s total", "veth rx B/s/peer",
               "hub snapshot B", "stream out / in B/s/peer", "spoke CPU % mean / max",
               "links up", "start s"]
    table = []
    for r in rows:
        if "error" in r:
            table.append([r["peers"], r["sharing"], "failed: see JSON",
                          *[""] * (len(headers) - 3)])
            continue
        table.append([
            r["peers"],
            r["sharing"],
            f(r["hub_cpu_pct_one_core"], 2),
            f"{r['hub_cpu_user_pct']:.2f} / {r['hub_cpu_system_pct']:.2f}",
            f(r["hub_cpu_pct_max_sample"], 1),
            f(r["hub_voluntary_switches_per_s"], 1),
            f"{r['hub_rss_mib_median']:.1f} / {r['hub_rss_mib_max']:.1f}",
            f(r["probe_bytes_per_peer_per_s"], 0),
            f(r["reflect_bytes_per_peer_per_s"], 0),
            f(r["veth_tx_bytes_per_peer_per_s"], 0),
            f(r["veth_tx_bytes_per_s"] / 1000, 1),
            f(r["veth_rx_bytes_per_peer_per_s"], 0),
            r["hub_snapshot_body_bytes"],
            (f"{r['stream_bytes_out_per_peer_per_s']:.0f} / "
             f"{r['stream_bytes_in_per_peer_per_s']:.0f}" if r["sharing"] == "stream" else "–"),
            f"{r['spoke_cpu_pct_mean']:.2f} / {r['spoke_cpu_pct_max']:.2f}",
            f"{r['links_up']}/{r['links']}",
            f(r["start_to_links_up_s"], 1),
        ])
    print(f"## One hub agent with P real peers in the lab (interval 1 s, {args.settle:g} s "
          f"settle, {args.seconds:g} s window per row)\n")
    print(machine_line(info) + "\n")
    print(md_table(headers, table))
    print("\nprobe / reflect = the hub's counters x 82 B (40 B payload + IPv4/UDP + "
          "Ethernet). veth tx = every frame the hub's interface sent: probes, replies to "
          "the spokes' probes, and its sharing: polling, its snapshot fetches and the "
          "snapshots it serves to the P spokes (each fetches the hub's /v1/snapshot once a "
          "second); stream, its frames to the P followers and its followers' requests; "
          "stream out / in = the hub's frame bytes (counters). Spokes: P agents "
          f"with one link each, on the same {info['nproc']} CPUs. "
          f"Lab built in {built_s:.0f} s; whole run {total_s:.0f} s.")
    path = write_json(args.name, {
        "benchmark": "lab_scale",
        "machine": info,
        "params": vars(args),
        "lab_build_s": round(built_s, 1),
        "total_s": round(total_s, 1),
        "rows": rows,
    })
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
