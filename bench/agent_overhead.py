"""Resource cost of one exotray agent as a function of its number of peers.

What it measures
    For each P in --peers (default "2,8") it starts one *measured* agent whose P peers
    are other real agents on loopback (each peer lists only the measured agent, so the
    measured agent has exactly P links and each peer has one). After the links are up
    it lets them settle (--settle, default 5 s), then samples the measured agent's
    process with psutil every --sample-interval seconds for --seconds (default 30):

    * CPU % of one core = (user + system CPU time delta) / wall time delta, over the
      whole window (and the largest per-sample value);
    * RSS in MiB (median and max), threads and open file descriptors;
    * UDP probe traffic the measured agent sends, per peer per second: the delta of
      `counters.probes_sent` from its /v1/snapshot x (40 B probe payload + 28 B IPv4/UDP
      headers); the replies it sends as a reflector for its peers' probes
      (`requests_reflected`) are reported separately;
    * snapshot HTTP bytes it fetches per peer per second, estimated as the size of a
      peer's /v1/snapshot body / the agent's interval (the agent fetches every peer's
      snapshot once per interval); header bytes are recorded in the JSON.

    The benchmark only reads the measured agent's /v1/snapshot twice per row (start
    and end of the window) so that it does not add to what it measures. Rows run one
    after another; all agents are stopped between rows. Everything stays on 127.0.0.1
    (agents run with --bind 127.0.0.1 --no-mdns and loopback peers only).

    It measures and prints; it asserts nothing about speed.

How to run (from the repository root, with exotray and psutil installed)
    python bench/agent_overhead.py                       # P = 2 and 8, 30 s each
    python bench/agent_overhead.py --peers 1,4,16 --seconds 60

Output: a Markdown table on stdout and bench/results/agent_overhead.json.
Runtime: about (settle + seconds + ~3 s start/stop) per P: ~80 s with the defaults.
Note that the peer agents run on the same machine and compete for its CPUs.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import psutil
from _harness import (
    AgentGroup,
    http_get,
    machine_info,
    machine_line,
    md_table,
    write_json,
)

PROBE_PAYLOAD = 40  # exotray probe datagram
IP_UDP_HEADERS = 28  # IPv4 (20) + UDP (8)
MIB = 1024 * 1024


def _cpu_s(p: psutil.Process) -> float:
    t = p.cpu_times()
    return t.user + t.system


def run_row(n_peers: int, args: argparse.Namespace) -> dict:
    group = AgentGroup(python=args.python)
    try:
        main_port = group.reserve()
        peer_ports = [group.reserve() for _ in range(n_peers)]
        measured = group.start("measured", main_port, peer_ports)
        peers = [
            group.start(f"peer{i + 1}", port, [main_port]) for i, port in enumerate(peer_ports)
        ]
        group.wait_ready(timeout=args.start_timeout)
        group.wait_links_up(measured, n_peers, timeout=args.start_timeout)
        time.sleep(args.settle)

        proc = psutil.Process(measured.proc.pid)
        peer_procs = [psutil.Process(a.proc.pid) for a in peers]

        snap0 = measured.snapshot()
        t0 = time.monotonic()
        cpu0 = _cpu_s(proc)
        peer_cpu0 = [_cpu_s(p) for p in peer_procs]
        rss, threads, fds, cpu_samples = [], [], [], []
        last_t, last_cpu = t0, cpu0
        end = t0 + args.seconds
        max_samples = int(args.seconds / args.sample_interval) + 2  # hard bound on the loop
        for _ in range(max_samples):
            now = time.monotonic()
            if now >= end:
                break
            time.sleep(min(args.sample_interval, end - now))
            with proc.oneshot():
                mem = proc.memory_info().rss
                nth = proc.num_threads()
                nfd = proc.num_fds()
                c = _cpu_s(proc)
            t = time.monotonic()
            rss.append(mem / MIB)
            threads.append(nth)
            fds.append(nfd)
            if t > last_t:
                cpu_samples.append(100.0 * (c - last_cpu) / (t - last_t))
            last_t, last_cpu = t, c
        t1 = time.monotonic()
        cpu1 = _cpu_s(proc)
        peer_cpu1 = [_cpu_s(p) for p in peer_procs]
        snap1 = measured.snapshot()
        wall = t1 - t0

        c0, c1 = snap0.get("counters", {}), snap1.get("counters", {})

        def rate(key: str) -> float:
            return (c1.get(key, 0) - c0.get(key, 0)) / wall

        interval = float(snap1.get("interval_s") or 1.0)
        probes_per_s = rate("probes_sent")
        reflected_per_s = rate("requests_reflected")
        wire = PROBE_PAYLOAD + IP_UDP_HEADERS

        peer_bodies, peer_heads = [], []
        for a in peers:
            body, head = http_get(a.base + "/v1/snapshot")
            peer_bodies.append(len(body))
            peer_heads.append(head)
        own_body, own_head = http_get(measured.base + "/v1/snapshot")

        links = snap1.get("links", [])
        row = {
            "peers": n_peers,
            "seconds": round(wall, 2),
            "samples": len(rss),
            "cpu_pct_one_core": 100.0 * (cpu1 - cpu0) / wall,
            "cpu_pct_max_sample": max(cpu_samples) if cpu_samples else None,
            "cpu_pct_samples": [round(x, 2) for x in cpu_samples],
            "rss_mib_median": statistics.median(rss),
            "rss_mib_max": max(rss),
            "threads_median": statistics.median(threads),
            "threads_max": max(threads),
            "fds_median": statistics.median(fds),
            "fds_max": max(fds),
            "interval_s": interval,
            "probes_sent_per_s": probes_per_s,
            "probes_sent_per_peer_per_s": probes_per_s / n_peers,
            "udp_probe_bytes_per_peer_per_s": probes_per_s / n_peers * wire,
            "replies_reflected_per_peer_per_s": reflected_per_s / n_peers,
            "udp_reflect_bytes_per_peer_per_s": reflected_per_s / n_peers * wire,
            "peer_snapshot_body_bytes": statistics.median(peer_bodies),
            "peer_snapshot_header_bytes": statistics.median(peer_heads),
            "snapshot_fetch_body_bytes_per_peer_per_s": statistics.median(peer_bodies) / interval,
            "own_snapshot_body_bytes": len(own_body),
            "own_snapshot_header_bytes": own_head,
            "links": len(links),
            "links_up": sum(1 for lk in links if lk.get("state") == "up"),
            "loss_mean": statistics.fmean(lk.get("loss") or 0.0 for lk in links) if links else None,
            "rtt_ms_median_of_links": (
                statistics.median(lk["rtt_ms"] for lk in links if lk.get("rtt_ms") is not None)
                if links
                else None
            ),
            "counters_delta": {
                k: c1.get(k, 0) - c0.get(k, 0) for k in c1 if isinstance(c1.get(k), int)
            },
            "peer_agents_cpu_pct_one_core_each": [
                round(100.0 * (b - a) / wall, 2) for a, b in zip(peer_cpu0, peer_cpu1, strict=False)
            ],
        }
        return row
    finally:
        group.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--peers", default="2,8", help="comma-separated peer counts, one row each (default 2,8)"
    )
    ap.add_argument(
        "--seconds",
        type=float,
        default=30.0,
        help="measurement window per row in seconds (default 30)",
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=5.0,
        help="seconds to wait after all links are up (default 5)",
    )
    ap.add_argument(
        "--sample-interval",
        type=float,
        default=1.0,
        help="psutil sampling period in seconds (default 1)",
    )
    ap.add_argument(
        "--start-timeout",
        type=float,
        default=20.0,
        help="max seconds for agents to start and links to come up (default 20)",
    )
    ap.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that has exotray installed (default: this one)",
    )
    ap.add_argument(
        "--name",
        default="agent_overhead",
        help="results file name under bench/results/ (default agent_overhead)",
    )
    args = ap.parse_args(argv)
    try:
        counts = [int(x) for x in args.peers.split(",") if x.strip()]
    except ValueError:
        ap.error("--peers takes integers like 2,8")
    if not counts or any(n < 1 or n > 64 for n in counts):
        ap.error("--peers: each count must be 1..64")
    if args.seconds <= 0 or args.sample_interval <= 0:
        ap.error("--seconds and --sample-interval must be > 0")

    info = machine_info()
    rows = []
    for n in counts:
        print(f"[agent_overhead] P={n}: starting {n + 1} agents ...", file=sys.stderr)
        rows.append(run_row(n, args))

    headers = [
        "P",
        "CPU % (1 core)",
        "CPU % max 1 s",
        "RSS MiB med",
        "RSS MiB max",
        "threads",
        "fds",
        "probes/s/peer",
        "UDP probe B/s/peer",
        "UDP reflect B/s/peer",
        "snapshot fetch B/s/peer",
        "own snapshot B",
        "links up",
        "loss",
    ]
    table = [
        [
            r["peers"],
            f"{r['cpu_pct_one_core']:.2f}",
            f"{r['cpu_pct_max_sample']:.1f}" if r["cpu_pct_max_sample"] is not None else "–",
            f"{r['rss_mib_median']:.1f}",
            f"{r['rss_mib_max']:.1f}",
            f"{r['threads_median']:g} (max {r['threads_max']})",
            f"{r['fds_median']:g} (max {r['fds_max']})",
            f"{r['probes_sent_per_peer_per_s']:.2f}",
            f"{r['udp_probe_bytes_per_peer_per_s']:.0f}",
            f"{r['udp_reflect_bytes_per_peer_per_s']:.0f}",
            f"{r['snapshot_fetch_body_bytes_per_peer_per_s']:.0f}",
            r["own_snapshot_body_bytes"],
            f"{r['links_up']}/{r['links']}",
            f"{r['loss_mean']:.3f}" if r["loss_mean"] is not None else "–",
        ]
        for r in rows
    ]

    print(f"## exotray agent overhead ({args.seconds:g} s window, {args.settle:g} s settle)\n")
    print(machine_line(info) + "\n")
    print(md_table(headers, table))
    print(
        "\nUDP bytes = datagrams x (40 B payload + 28 B IPv4/UDP headers). "
        "Snapshot fetch = body of one peer's /v1/snapshot per interval "
        f"(~{rows[0]['peer_snapshot_header_bytes']:.0f} B of response headers not included). "
        "Peer agents: "
        + "; ".join(
            f"P={r['peers']}: mean {statistics.fmean(r['peer_agents_cpu_pct_one_core_each']):.2f} % CPU each"
            for r in rows
        )
        + "."
    )
    path = write_json(
        args.name,
        {
            "benchmark": "agent_overhead",
            "machine": info,
            "params": {k: v for k, v in vars(args).items()},
            "rows": rows,
        },
    )
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
