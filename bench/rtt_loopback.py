"""exotray's loopback RTT next to ping and a plain Python UDP echo.

What it measures
    Starts two exotray agents on 127.0.0.1 peered with each other (A and B). After the
    link is up and a settle time (--settle, default 3 s) it runs
    `ping -n -c 50 -i 0.05 127.0.0.1` (bounded by a timeout) and, over the same period,
    polls A's /v1/snapshot every --poll seconds (default 0.5), collecting for the A->B
    link `rtt_ms` (the agent's median over its 10 s window), `rtt_min_ms`, and the
    per-probe view `rtt_last_ms` (the latest single probe at each poll).

    Then, with both agents still running, it measures a reference: a plain Python UDP
    echo (its own echo server, a separate process bound to 127.0.0.1) with --count
    round trips of 40-byte datagrams at the same pacing as ping, timed in the client
    with perf_counter_ns.

    The table puts ping's median/min/avg, exotray's median/min and the echo's side by
    side, each with its difference from ping in µs. Because the agent's `rtt_ms` is a
    10 s window median, both its value at the last poll and the median of the values
    polled during the ping period are reported. exotray subtracts the reflector's own
    processing time and uses kernel receive timestamps on both ends, so it should come
    out below a userspace echo and near ping (which also uses kernel timestamps).

    It measures and prints; it asserts nothing about speed. Everything stays on
    127.0.0.1 (agents run with --bind 127.0.0.1 --no-mdns and each other as peers).

How to run (from the repository root, with exotray installed; needs iputils `ping`)
    python bench/rtt_loopback.py
    python bench/rtt_loopback.py --count 200 --ping-interval 0.02

Output: a Markdown table on stdout and bench/results/rtt_loopback.json.
Runtime: about settle + 2 x count x interval + ~3 s: ~12 s with the defaults.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import time

from _harness import LOOPBACK, AgentGroup, machine_info, machine_line, md_table, write_json

ECHO_SERVER = r"""
import socket, sys, time
limit_s, max_n = float(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1], flush=True)
s.settimeout(0.5)
deadline = time.monotonic() + limit_s
n = 0
while n < max_n and time.monotonic() < deadline:
    try:
        data, addr = s.recvfrom(2048)
    except socket.timeout:
        continue
    if addr[0] == "127.0.0.1":
        s.sendto(data, addr)
        n += 1
"""

_TIME_RE = re.compile(r"icmp_seq=(\d+).*?time=([\d.]+) ms")
_SUMMARY_RE = re.compile(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms")


def run_ping(count: int, interval: float, agent_poll, poll_s: float) -> tuple[dict, list[dict]]:
    """Run ping while calling agent_poll() every poll_s; return (ping result, polls)."""
    cmd = ["ping", "-n", "-c", str(count), "-i", f"{interval:g}", "-W", "1", LOOPBACK]
    limit = count * interval + 10.0
    polls: list[dict] = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        start = time.monotonic()
        next_poll = start
        max_polls = int(limit / poll_s) + 2
        while proc.poll() is None and len(polls) < max_polls:
            now = time.monotonic()
            if now - start > limit:
                break
            if now >= next_poll:
                rec = agent_poll()
                rec["t"] = round(time.monotonic() - start, 3)
                polls.append(rec)
                next_poll += poll_s
            time.sleep(max(0.0, min(0.05, next_poll - time.monotonic())))
        out, err = proc.communicate(timeout=max(1.0, limit - (time.monotonic() - start)))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=5)
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"ping failed ({proc.returncode}): {err.strip()}")
    times = [float(m.group(2)) for m in _TIME_RE.finditer(out)]
    summary = _SUMMARY_RE.search(out)
    result = {
        "cmd": " ".join(cmd),
        "times_ms": times,
        "received": len(times),
        "sent": count,
        "median_ms": statistics.median(times) if times else None,
        "min_ms": float(summary.group(1)) if summary else (min(times) if times else None),
        "avg_ms": float(summary.group(2))
        if summary
        else (statistics.fmean(times) if times else None),
        "max_ms": float(summary.group(3)) if summary else None,
        "mdev_ms": float(summary.group(4)) if summary else None,
    }
    return result, polls


def udp_echo(count: int, interval: float, warmup: int = 5) -> dict:
    """`count` timed round trips of 40-byte datagrams to our own echo server process."""
    import socket

    limit = (count + warmup) * (interval + 1.0) + 10.0
    server = subprocess.Popen(
        [sys.executable, "-c", ECHO_SERVER, str(limit), str(count + warmup + 10)],
        stdout=subprocess.PIPE,
        text=True,
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        line = server.stdout.readline()  # the port; the server starts in well under a second
        port = int(line.strip())
        sock.bind((LOOPBACK, 0))
        sock.connect((LOOPBACK, port))
        sock.settimeout(1.0)
        rtts, lost = [], 0
        for i in range(warmup + count):
            payload = i.to_bytes(8, "big") + bytes(32)
            t0 = time.perf_counter_ns()
            sock.send(payload)
            try:
                while True:  # bounded by the 1 s socket timeout
                    data = sock.recv(2048)
                    if data[:8] == payload[:8]:
                        break
                t1 = time.perf_counter_ns()
                if i >= warmup:
                    rtts.append((t1 - t0) / 1e6)
            except TimeoutError:
                if i >= warmup:
                    lost += 1
            time.sleep(interval)
    finally:
        sock.close()
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=5)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=5)
    return {
        "times_ms": [round(x, 6) for x in rtts],
        "received": len(rtts),
        "lost": lost,
        "median_ms": statistics.median(rtts) if rtts else None,
        "min_ms": min(rtts) if rtts else None,
        "avg_ms": statistics.fmean(rtts) if rtts else None,
        "max_ms": max(rtts) if rtts else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--count", type=int, default=50, help="ping / echo round trips (default 50)")
    ap.add_argument(
        "--ping-interval",
        type=float,
        default=0.05,
        help="seconds between pings and between echo round trips (default 0.05)",
    )
    ap.add_argument(
        "--poll",
        type=float,
        default=0.5,
        help="seconds between polls of agent A's /v1/snapshot (default 0.5)",
    )
    ap.add_argument(
        "--settle",
        type=float,
        default=3.0,
        help="seconds after the link is up before measuring (default 3)",
    )
    ap.add_argument(
        "--start-timeout",
        type=float,
        default=20.0,
        help="max seconds for agents to start and the link to come up (default 20)",
    )
    ap.add_argument(
        "--python",
        default=sys.executable,
        help="interpreter that has exotray installed (default: this one)",
    )
    ap.add_argument(
        "--name",
        default="rtt_loopback",
        help="results file name under bench/results/ (default rtt_loopback)",
    )
    args = ap.parse_args(argv)
    if not 1 <= args.count <= 10000:
        ap.error("--count must be 1..10000")
    if not 0.01 <= args.ping_interval <= 5:
        ap.error("--ping-interval must be 0.01..5 s")
    if not 0.05 <= args.poll <= 10:
        ap.error("--poll must be 0.05..10 s")

    info = machine_info()
    group = AgentGroup(python=args.python)
    try:
        pa, pb = group.reserve(), group.reserve()
        a = group.start("a", pa, [pb])
        b = group.start("b", pb, [pa])
        group.wait_ready(timeout=args.start_timeout)
        group.wait_links_up(a, 1, timeout=args.start_timeout)
        group.wait_links_up(b, 1, timeout=args.start_timeout)
        time.sleep(args.settle)

        def poll() -> dict:
            try:
                snap = a.snapshot(timeout=1.0)
            except OSError as e:
                return {"error": str(e)}
            lk = (snap.get("links") or [{}])[0]
            return {
                k: lk.get(k)
                for k in (
                    "state",
                    "rtt_ms",
                    "rtt_min_ms",
                    "rtt_max_ms",
                    "rtt_p90_ms",
                    "rtt_last_ms",
                    "jitter_ms",
                    "loss",
                )
            } | {
                "kernel_timestamps": snap.get("kernel_timestamps"),
                "probes_sent": (snap.get("counters") or {}).get("probes_sent"),
            }

        ping, polls = run_ping(args.count, args.ping_interval, poll, args.poll)
        echo = udp_echo(args.count, args.ping_interval)
        final = poll()
    finally:
        group.close()

    ok = [p for p in polls if p.get("rtt_ms") is not None]
    if not ok:
        print("no RTT from agent A during the ping period", file=sys.stderr)
        return 1
    last = ok[-1]
    med_of_polls = statistics.median(p["rtt_ms"] for p in ok)
    min_of_polls = min(p["rtt_min_ms"] for p in ok if p.get("rtt_min_ms") is not None)
    lasts = [p["rtt_last_ms"] for p in ok if p.get("rtt_last_ms") is not None]
    exo = {
        "polls": len(polls),
        "polls_with_rtt": len(ok),
        "rtt_ms_last_poll": last["rtt_ms"],
        "rtt_ms_median_of_polls": med_of_polls,
        "rtt_min_ms_last_poll": last["rtt_min_ms"],
        "rtt_min_ms_min_of_polls": min_of_polls,
        "rtt_last_ms_median": statistics.median(lasts) if lasts else None,
        "rtt_last_ms_min": min(lasts) if lasts else None,
        "rtt_last_ms_mean": statistics.fmean(lasts) if lasts else None,
        "kernel_timestamps": last.get("kernel_timestamps"),
        "loss_last_poll": last.get("loss"),
        "jitter_ms_last_poll": last.get("jitter_ms"),
    }

    def ms(x):
        return "–" if x is None else f"{x:.4f}"

    def d_us(x, ref):
        return "–" if x is None or ref is None else f"{(x - ref) * 1000:+.1f}"

    pm, pmin, pavg = ping["median_ms"], ping["min_ms"], ping["avg_ms"]
    headers = [
        "measurement",
        "n",
        "median ms",
        "min ms",
        "avg ms",
        "Δ median vs ping µs",
        "Δ min vs ping µs",
    ]
    rows = [
        [
            "ping ICMP (kernel)",
            f"{ping['received']}/{ping['sent']}",
            ms(pm),
            ms(pmin),
            ms(pavg),
            "0",
            "0",
        ],
        [
            "exotray rtt_ms / rtt_min_ms at last poll (10 s window)",
            "1 poll",
            ms(exo["rtt_ms_last_poll"]),
            ms(exo["rtt_min_ms_last_poll"]),
            "–",
            d_us(exo["rtt_ms_last_poll"], pm),
            d_us(exo["rtt_min_ms_last_poll"], pmin),
        ],
        [
            "exotray median of rtt_ms polled / min of rtt_min_ms polled",
            f"{len(ok)} polls",
            ms(med_of_polls),
            ms(min_of_polls),
            "–",
            d_us(med_of_polls, pm),
            d_us(min_of_polls, pmin),
        ],
        [
            "exotray per-probe rtt_last_ms (polled)",
            f"{len(lasts)} polls",
            ms(exo["rtt_last_ms_median"]),
            ms(exo["rtt_last_ms_min"]),
            ms(exo["rtt_last_ms_mean"]),
            d_us(exo["rtt_last_ms_median"], pm),
            d_us(exo["rtt_last_ms_min"], pmin),
        ],
        [
            "Python UDP echo (userspace, both ends)",
            f"{echo['received']}/{args.count}",
            ms(echo["median_ms"]),
            ms(echo["min_ms"]),
            ms(echo["avg_ms"]),
            d_us(echo["median_ms"], pm),
            d_us(echo["min_ms"], pmin),
        ],
    ]
    print(
        f"## exotray RTT on loopback vs ping and a Python UDP echo "
        f"({args.count} x {args.ping_interval:g} s)\n"
    )
    print(machine_line(info) + f"; {info['ping']}\n")
    print(md_table(headers, rows))
    print(
        f"\nexotray: kernel timestamps {'on' if exo['kernel_timestamps'] else 'off'}, "
        f"loss {exo['loss_last_poll']}, jitter {ms(exo['jitter_ms_last_poll'])} ms at last poll; "
        f"ping max {ms(ping['max_ms'])} ms, mdev {ms(ping['mdev_ms'])} ms; "
        f"echo max {ms(echo['max_ms'])} ms, lost {echo['lost']}."
    )
    path = write_json(
        args.name,
        {
            "benchmark": "rtt_loopback",
            "machine": info,
            "params": vars(args),
            "ping": ping,
            "exotray": exo,
            "exotray_polls": polls,
            "exotray_final_poll": final,
            "udp_echo": echo,
        },
    )
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
