"""RTT accuracy on a 2-host lab link, idle and under a saturated 50 Mbit/s bottleneck.

What it measures (root, iperf3, ping; network namespaces, see bench/README.md)
    A 2-host lab (tests/lab/netlab.py): h1 and h2 on a bridge, an exotray agent in each
    (`--no-mdns`, each other as `--peer`). Three phases, one after the other:

    * idle (--seconds, 30): over the same seconds
        - ping: `ping -n -D -i 0.1` h1 -> h2, every reply's RTT;
        - exotray per probe: the root namespace polls h1's /v1/snapshot every --poll s
          (0.05) through the lab's monitor veth; a new probe result is recognised by a
          change of `counters.replies_received` and its `rtt_last_ms` is taken (the
          agent probes 4 times a second);
        - exotray rtt_ms: the agent's 10 s window median, as polled;
        - HTTP timing, the approach exotray replaces: a helper process inside h1's
          namespace GETs h2's /v1/snapshot with httpx, alternating (a) a new
          httpx.Client per request (the timer covers `client.get()`: TCP connect,
          request, response; not the client's construction) and (b) one keep-alive
          client, 0.1 s apart.
    * loaded: a `tbf rate 50mbit burst 32kbit latency 200ms` on the bridge port that
      delivers to h2 and `iperf3 -C cubic` h1 -> h2; after 4 s (the queue fills) the
      same measurements for --seconds.
    * episode: ping and exotray's per-probe RTT for --episode seconds (10,15,10): idle,
      an iperf3 -C cubic transfer through the shaper, idle again. A time series for
      the plot (bench/plot_rtt.py -> docs/benchmarks-rtt-vs-ping.png).

    The table gives median and p90 per method and the error of the median against
    ping's (µs idle, % loaded). It measures and prints; it asserts nothing.

How to run (as root, from the repository root, with exotray installed in the venv)
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_rtt.py
    .venv/bin/python bench/plot_rtt.py        # PNG from bench/results/lab_rtt.json

Output: Markdown on stdout, bench/results/lab_rtt.json.
Runtime with the defaults: about 30 + 36 + 36 s + ~10 s setup, i.e. ~2 min.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from _harness import machine_info, machine_line, md_table, write_json
from _labnet import (
    PORT,
    ProbePoller,
    median,
    percentile,
    ping,
    tool_versions,
    two_hosts,
    why_not_available,
)

#: runs inside h1's namespace: timed GETs of the peer's /v1/snapshot, one JSON line each
HTTP_HELPER = r"""
import json, sys, time
import httpx
url, seconds, max_n, pause = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
timeout = httpx.Timeout(5.0)
keep = httpx.Client(trust_env=False, timeout=timeout)
keep.get(url)  # open the keep-alive connection (not timed)
deadline = time.monotonic() + seconds
i = 0
while i < max_n and time.monotonic() < deadline:
    mode = "new" if i % 2 == 0 else "keepalive"
    rec = {"mode": mode}
    try:
        if mode == "new":
            c0 = time.perf_counter_ns()
            client = httpx.Client(trust_env=False, timeout=timeout)
            rec["construct_ms"] = (time.perf_counter_ns() - c0) / 1e6
            t0 = time.perf_counter_ns()
            r = client.get(url)
            t1 = time.perf_counter_ns()
            client.close()
        else:
            t0 = time.perf_counter_ns()
            r = keep.get(url)
            t1 = time.perf_counter_ns()
        rec.update(t=time.time(), ms=(t1 - t0) / 1e6, status=r.status_code, size=len(r.content))
    except httpx.HTTPError as e:
        rec.update(t=time.time(), error=type(e).__name__)
    print(json.dumps(rec), flush=True)
    i += 1
    time.sleep(pause)
keep.close()
"""


def http_timing(src, url: str, seconds: float, python: str) -> subprocess.Popen:
    max_n = int(seconds / 0.1) + 2
    return subprocess.Popen(
        ["ip", "netns", "exec", src.ns, python, "-c", HTTP_HELPER, url, f"{seconds:g}",
         str(max_n), "0.1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def collect_http(proc: subprocess.Popen, limit: float) -> dict:
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate(timeout=5)
    res: dict = {"new": {"t": [], "ms": [], "construct_ms": []},
                 "keepalive": {"t": [], "ms": [], "construct_ms": []}, "errors": 0}
    for line in out.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if "error" in rec:
            res["errors"] += 1
            continue
        d = res[rec["mode"]]
        d["t"].append(rec["t"])
        d["ms"].append(round(rec["ms"], 4))
        if "construct_ms" in rec:
            d["construct_ms"].append(round(rec["construct_ms"], 3))
        res["size"] = rec.get("size")
    if proc.returncode not in (0, None):
        res["stderr"] = err[-2000:]
    return res


def measure(h1, h2, a1, seconds: float, args) -> dict:
    """ping, exotray polls and HTTP timing over the same `seconds`."""
    count = round(seconds / args.ping_interval)
    result: dict = {}
    pinger = threading.Thread(target=lambda: result.update(
        ping=ping(h1, h2, count, args.ping_interval)))
    poller = ProbePoller(a1, h2.addr, every=args.poll, limit_s=seconds + 30)
    url = f"http://{h2.addr}:{PORT}/v1/snapshot"
    t_start = time.time()
    poller.start()
    pinger.start()
    helper = http_timing(h1, url, seconds, args.python)
    pinger.join(timeout=seconds + 30)
    poller.stop()
    http = collect_http(helper, limit=30)
    t_end = time.time()
    return {"t_start": t_start, "t_end": t_end, "ping": result.get("ping"),
            "exotray": poller.result(), "http": http}


def episode(lab, h1, h2, a1, args, tmp: Path) -> dict:
    idle1, load, idle2 = args.episode
    total = idle1 + load + idle2
    count = round(total / args.ping_interval)
    result: dict = {}
    pinger = threading.Thread(target=lambda: result.update(
        ping=ping(h1, h2, count, args.ping_interval)))
    poller = ProbePoller(a1, h2.addr, every=args.poll, limit_s=total + 30)
    t0 = time.time()
    poller.start()
    pinger.start()
    time.sleep(max(0.0, idle1 - 0.3))
    lab.iperf_server(h2)  # sleeps 0.3 s
    log = tmp / "iperf-episode.json"
    tx0 = time.time()
    client = lab.iperf_client(h1, h2, int(load), log=log)
    client.wait(load + 30)
    tx1 = time.time()
    pinger.join(timeout=total + 30)
    poller.stop()
    return {"t0": t0, "transfer_start": tx0, "transfer_end": tx1,
            "ping": result.get("ping"), "exotray": poller.result(),
            "iperf": iperf_summary(log)}


def iperf_summary(path: Path) -> dict:
    try:
        rep = json.loads(path.read_text())
        sent, rcvd = rep["end"]["sum_sent"], rep["end"]["sum_received"]
        return {"received_mbit_s": round(rcvd["bits_per_second"] / 1e6, 3),
                "retransmits": sent.get("retransmits"), "seconds": rcvd.get("seconds")}
    except (OSError, ValueError, KeyError) as e:
        return {"error": repr(e)}


def run(args, tmp: Path) -> dict:
    with two_hosts(tmp) as (lab, h1, h2, a1, _a2):
        time.sleep(args.settle)
        snap = a1.get("/v1/snapshot")
        print(f"[lab_rtt] idle phase, {args.seconds:g} s", file=sys.stderr)
        idle = measure(h1, h2, a1, args.seconds, args)

        print(f"[lab_rtt] loaded phase: tbf {args.rate} + iperf3 -C cubic", file=sys.stderr)
        lab.shape(h2, args.rate)
        lab.iperf_server(h2)
        log = tmp / "iperf-loaded.json"
        client = lab.iperf_client(h1, h2, int(args.fill + args.seconds + 2), log=log)
        try:
            time.sleep(args.fill)
            loaded = measure(h1, h2, a1, args.seconds, args)
        finally:
            client.wait(args.fill + args.seconds + 40)
        loaded["iperf"] = iperf_summary(log)
        time.sleep(2.0)

        print(f"[lab_rtt] episode {args.episode}", file=sys.stderr)
        ep = episode(lab, h1, h2, a1, args, tmp)
        return {"kernel_timestamps": snap.get("kernel_timestamps"),
                "h1": h1.addr, "h2": h2.addr, "idle": idle, "loaded": loaded, "episode": ep}


def method_values(phase: dict) -> dict[str, list[float]]:
    ex, http = phase["exotray"], phase["http"]
    return {
        "ping (-i 0.1)": (phase["ping"] or {}).get("rtt_ms", []),
        "exotray per probe (rtt_last_ms)": ex["rtt_last_ms"],
        "exotray rtt_ms (10 s median, polled)": ex["window_rtt_ms"],
        "HTTP GET, new httpx.Client each": http["new"]["ms"],
        "HTTP GET, keep-alive httpx.Client": http["keepalive"]["ms"],
    }


def summarize(res: dict) -> tuple[list[list[str]], dict]:
    stats: dict = {}
    for phase in ("idle", "loaded"):
        for name, xs in method_values(res[phase]).items():
            stats.setdefault(name, {})[phase] = {
                "n": len(xs), "median_ms": median(xs), "p90_ms": percentile(xs, 90),
                "min_ms": min(xs) if xs else None, "max_ms": max(xs) if xs else None,
            }
    ref = stats["ping (-i 0.1)"]
    rows = []
    for name, st in stats.items():
        i, lo = st["idle"], st["loaded"]
        err_us = err_pct = None
        if i["median_ms"] is not None and ref["idle"]["median_ms"] is not None:
            err_us = (i["median_ms"] - ref["idle"]["median_ms"]) * 1000
        if lo["median_ms"] is not None and ref["loaded"]["median_ms"]:
            err_pct = (lo["median_ms"] - ref["loaded"]["median_ms"]) / ref["loaded"]["median_ms"] * 100
        st["idle"]["error_us"] = err_us
        st["loaded"]["error_pct"] = err_pct
        ref_row = name.startswith("ping")

        def us(v):
            return "–" if v is None else f"{v * 1000:,.0f}"

        def ms(v):
            return "–" if v is None else f"{v:.1f}"

        rows.append([
            name, str(i["n"]), us(i["median_ms"]), us(i["p90_ms"]),
            "(ref)" if ref_row else ("–" if err_us is None else f"{err_us:+,.0f}"),
            str(lo["n"]), ms(lo["median_ms"]), ms(lo["p90_ms"]),
            "(ref)" if ref_row else ("–" if err_pct is None else f"{err_pct:+.1f}"),
        ])
    return rows, stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=30.0,
                    help="length of the idle and of the loaded measurement, s (30)")
    ap.add_argument("--ping-interval", type=float, default=0.1, help="ping -i (0.1)")
    ap.add_argument("--poll", type=float, default=0.05,
                    help="seconds between polls of h1's /v1/snapshot (0.05)")
    ap.add_argument("--rate", default="50mbit", help="tbf rate of the bottleneck (50mbit)")
    ap.add_argument("--fill", type=float, default=4.0,
                    help="seconds of transfer before the loaded measurement starts (4)")
    ap.add_argument("--episode", default="10,15,10",
                    help="idle,transfer,idle seconds of the time series (10,15,10)")
    ap.add_argument("--settle", type=float, default=2.0,
                    help="seconds after the link is up before measuring (2)")
    ap.add_argument("--python", default=sys.executable,
                    help="interpreter with exotray and httpx (default: this one)")
    ap.add_argument("--name", default="lab_rtt", help="results file name")
    args = ap.parse_args(argv)
    try:
        args.episode = [float(x) for x in args.episode.split(",")]
        assert len(args.episode) == 3 and all(x > 0 for x in args.episode)
    except (ValueError, AssertionError):
        ap.error("--episode takes three positive numbers: idle,transfer,idle")
    if not 5 <= args.seconds <= 120:
        ap.error("--seconds must be in 5..120")
    reason = why_not_available()
    if reason:
        print(f"[lab_rtt] cannot run: {reason}", file=sys.stderr)
        return 2

    info = {**machine_info(), **tool_versions()}
    with tempfile.TemporaryDirectory(prefix="exotray-labrtt-") as d:
        res = run(args, Path(d))
    rows, stats = summarize(res)

    print(f"## RTT on a 2-host lab link: idle, and through a saturated tbf {args.rate} "
          f"(iperf3 -C cubic h1 -> h2)\n")
    print(machine_line(info) + f", {info.get('iperf3')}\n")
    print(md_table(
        ["method", "idle n", "idle median µs", "idle p90 µs", "idle error µs",
         "loaded n", "loaded median ms", "loaded p90 ms", "loaded error %"],
        rows,
    ))
    ep = res["episode"]
    http = res["idle"]["http"]
    print(f"\nEach phase {args.seconds:g} s; ping -i {args.ping_interval:g}; exotray probes 4/s, "
          f"polled every {args.poll * 1000:.0f} ms (per-probe values recognised by "
          f"`replies_received`; {res['idle']['exotray']['replies_between_polls_not_seen']}"
          f"/{res['loaded']['exotray']['replies_between_polls_not_seen']} replies missed "
          f"idle/loaded). Kernel timestamps: {res['kernel_timestamps']}. HTTP: GET "
          f"/v1/snapshot ({http.get('size')} B) from inside h1; the new-client time excludes "
          f"building the client (median "
          f"{median(http['new']['construct_ms']) or 0:.1f} ms more). Loaded iperf3 goodput "
          f"{res['loaded']['iperf'].get('received_mbit_s')} Mbit/s, retransmits "
          f"{res['loaded']['iperf'].get('retransmits')}. Episode: "
          f"{len((ep['ping'] or {}).get('rtt_ms', []))} pings, "
          f"{len(ep['exotray']['rtt_last_ms'])} probes.")
    path = write_json(args.name, {
        "benchmark": "lab_rtt",
        "machine": info,
        "params": vars(args),
        "stats": stats,
        **res,
    })
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
