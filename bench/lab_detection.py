"""How fast a real bottleneck is reported and cleared, and whether noise raises false alarms.

What it measures (root, iperf3; network namespaces, see bench/README.md)
    A 2-host lab (tests/lab/netlab.py) with a tbf of 50 Mbit/s on the bridge port that
    delivers to h2 (a forwarding hop that queues). The agent on h1 runs with
    `--capacity <h1 veth>=50` and a config file with `cooldown = 0`, so every repetition
    produces its own link_saturated (the default 60 s cooldown would suppress all but
    the first); h2's agent is its only peer (`--peer`, no mDNS).

    * Detection, --reps times (10): an `iperf3 -C cubic -t 8` transfer h1 -> h2. The
      script polls h1's /v1/events every 50 ms and records onset (just before iperf3 is
      started) -> link_saturated, and end (iperf3 exited) -> link_cleared. After the
      clear it idles --gap seconds (2) before the next repetition. The event's own `at`
      time (agent clock) is recorded too, which removes the 50 ms polling granularity.
    * False events: --idle-minutes (1) of UDP background noise at 60 % of capacity,
      `iperf3 -u -b 30M` in bursts of --burst-on s (5) separated by --burst-off s (3),
      counting link_saturated events; the link's utilization is read once a second from
      /v1/snapshot. `--idle-minutes 10` is the explicit opt-in for a 10-minute run.

    With --queueing (issue 13): saturation by queueing delay, with NO --capacity (the
    lab's veths claim 10 Gbit/s, like a fast local NIC in front of a slower hop), cooldown 0:
    * deep buffer (tbf latency 200ms) and shallow buffer (latency 5ms), --reps each:
      onset -> link_saturated (its cause and queueing delay) and end -> link_cleared;
    * --idle-minutes of bursty UDP averaging 60 %% of the tbf rate (iperf3 -u -b 40M,
      3 s on / 1 s off: bursts at 80 %%), counting link_saturated events;
    * --cpu-minutes of an idle link with both hosts' CPUs busy (two bounded Python busy
      loops per host: the machine has 2 cores), counting link_saturated events;
    * capacity known (`--capacity <veth>=50`), deep buffer, --reps: which cause fired.

    It measures and prints; it asserts nothing.

How to run (as root, from the repository root, with exotray installed in the venv)
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_detection.py
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_detection.py --reps 20 --idle-minutes 10
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_detection.py --queueing \
        --idle-minutes 10 --cpu-minutes 10      # ~30 min

Output: Markdown on stdout, bench/results/lab_detection.json.
Runtime with the defaults: about 10 x 16 s + 60 s + ~10 s setup, i.e. ~4 min.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _harness import machine_line, md_table, write_json
from _lab import PORT, EventPoller, lab_machine_info, med_max, netlab, require_lab, wait_until


def _wall(iso_at: str) -> float:
    return datetime.fromisoformat(iso_at.replace("Z", "+00:00")).timestamp()


def _link_to(agent, addr: str) -> dict | None:
    for lk in agent.get("/v1/snapshot")["links"]:
        if lk["peer_address"] == addr:
            return lk
    return None


def _iperf_summary(path: Path) -> dict:
    try:
        rep = json.loads(path.read_text())
        sent, rcvd = rep["end"]["sum_sent"], rep["end"]["sum_received"]
        return {"received_mbit_s": rcvd["bits_per_second"] / 1e6,
                "retransmits": sent.get("retransmits")}
    except (OSError, ValueError, KeyError):
        return {}


def run(args: argparse.Namespace, tmp: Path) -> dict:
    cfg = tmp / "h1.toml"
    cfg.write_text("cooldown = 0\n")
    with netlab.Lab(2) as lab:
        agents = netlab.Agents(lab, tmp)
        try:
            h1, h2 = lab.hosts
            lab.shape(h2, "50mbit")
            a1 = agents.start(h1, "--capacity", f"{h1.veth}=50", "--config", str(cfg),
                              name="h1", mdns=False, peers=[f"{h2.addr}:{PORT}"])
            agents.start(h2, name="h2", mdns=False, peers=[f"{h1.addr}:{PORT}"])
            if not wait_until(lambda: (lk := _link_to(a1, h2.addr)) and lk["state"] == "up",
                              15):
                raise RuntimeError("h1 -> h2 link not up:\n" + a1.log())
            time.sleep(2.0)
            ev = EventPoller(a1)
            ev.sync()

            reps = []
            for r in range(args.reps):
                print(f"[lab_detection] repetition {r + 1}/{args.reps}", file=sys.stderr)
                srv = lab.iperf_server(h2)
                log = tmp / f"iperf{r}.json"
                onset = time.monotonic()
                onset_wall = time.time()
                client = lab.iperf_client(h1, h2, args.seconds, log=log)
                sat = ev.wait_for("link_saturated", args.seconds + 2.0)
                client.wait(args.seconds + 30)
                end = time.monotonic()
                end_wall = time.time()
                clr = ev.wait_for("link_cleared", 20.0)
                try:
                    srv.wait(5)
                except Exception:
                    srv.kill()
                row = {
                    "rep": r + 1,
                    "saturated_after_s": sat[0] - onset if sat else None,
                    "saturated_after_s_event_at": _wall(sat[1]["at"]) - onset_wall if sat else None,
                    "saturated_utilization": sat[1].get("utilization") if sat else None,
                    "cleared_after_s": clr[0] - end if clr else None,
                    "cleared_after_s_event_at": _wall(clr[1]["at"]) - end_wall if clr else None,
                    **_iperf_summary(log),
                }
                reps.append(row)
                time.sleep(args.gap)

            # -- false events under noise below the threshold ---------------------------
            print(f"[lab_detection] noise run: {args.idle_minutes:g} min of "
                  f"{args.noise_mbit:g} Mbit/s UDP bursts", file=sys.stderr)
            ev.sync()
            ev.seen.clear()
            srv = h2.popen("iperf3", "-s", "-B", h2.addr, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            time.sleep(0.3)
            duration = args.idle_minutes * 60.0
            period = args.burst_on + args.burst_off
            n_bursts = max(1, math.ceil(duration / period))
            utils: list[float] = []
            t0 = time.monotonic()
            try:
                for _ in range(n_bursts):  # counted loop, each burst bounded by -t
                    left = duration - (time.monotonic() - t0)
                    if left <= 0:
                        break
                    on = max(1, min(args.burst_on, math.ceil(left)))
                    burst = h1.popen("iperf3", "-c", h2.addr, "-u", "-b",
                                     f"{args.noise_mbit:g}M", "-t", str(on),
                                     stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
                    stop = time.monotonic() + on + args.burst_off
                    while time.monotonic() < stop and time.monotonic() - t0 < duration + 1:
                        try:
                            lk = _link_to(a1, h2.addr)
                            if lk and lk.get("utilization") is not None:
                                utils.append(lk["utilization"])
                            ev.poll()
                        except Exception:
                            pass
                        time.sleep(1.0)
                    burst.wait(on + 15)
            finally:
                srv.terminate()
                srv.wait(5)
            noise_wall = time.monotonic() - t0
            time.sleep(1.0)
            ev.poll()
            false_sat = [e for _, e in ev.seen if e["type"] == "link_saturated"]
            return {
                "reps": reps,
                "noise": {
                    "seconds": round(noise_wall, 1),
                    "bursts": n_bursts,
                    "noise_mbit_s": args.noise_mbit,
                    "link_saturated_events": len(false_sat),
                    "events": false_sat,
                    "utilization_max": max(utils) if utils else None,
                    "utilization_samples": [round(u, 3) for u in utils],
                },
                "h1_veth": h1.veth,
            }
        finally:
            agents.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--reps", type=int, default=10, help="saturation repetitions (10)")
    ap.add_argument("--seconds", type=int, default=8, help="iperf3 transfer length, s (8)")
    ap.add_argument("--gap", type=float, default=2.0,
                    help="idle seconds after each link_cleared (2)")
    ap.add_argument("--idle-minutes", type=float, default=1.0,
                    help="length of the noise run in minutes (1; 10 for the long run)")
    ap.add_argument("--noise-mbit", type=float, default=30.0,
                    help="UDP noise rate in Mbit/s during bursts (30 = 60 %% of 50)")
    ap.add_argument("--burst-on", type=int, default=5, help="seconds per noise burst (5)")
    ap.add_argument("--burst-off", type=int, default=3, help="seconds between bursts (3)")
    ap.add_argument("--name", default=None, help="results file name")
    ap.add_argument("--queueing", action="store_true",
                    help="saturation by queueing delay, no --capacity (issue 13)")
    ap.add_argument("--cpu-minutes", type=float, default=1.0,
                    help="--queueing: idle link with busy CPUs, minutes (1; 0 = skip)")
    ap.add_argument("--capacity-reps", type=int, default=5,
                    help="--queueing: repetitions with the capacity known (5; 0 = skip)")
    ap.add_argument("--from-json", default=None,
                    help="--queueing: print the report of a saved results file, run nothing")
    args = ap.parse_args(argv)
    args.name = args.name or ("lab_detection_queueing" if args.queueing else "lab_detection")
    if args.reps < 1 or args.seconds < 1 or args.idle_minutes <= 0 or args.idle_minutes > 60:
        ap.error("--reps, --seconds >= 1; --idle-minutes in (0, 60]")
    if not args.from_json:
        require_lab("lab_detection")

    info = lab_machine_info()
    def fmt(v: float | None, nd: int = 2) -> str:
        return "–" if v is None else f"{v:.{nd}f}"

    if args.queueing:
        import _lab_queueing

        if args.from_json:  # print the report of an earlier run again
            saved = json.loads(Path(args.from_json).read_text())
            _lab_queueing.report(argparse.Namespace(**saved["params"]), saved, md_table, fmt)
            return 0
        with tempfile.TemporaryDirectory(prefix="exotray-labbench-") as d:
            res = _lab_queueing.run(args, Path(d))
        print(machine_line(info) + f", {info.get('iperf3')}\n")
        _lab_queueing.report(args, res, md_table, fmt)
        path = write_json(args.name, {"benchmark": "lab_detection --queueing",
                                      "machine": info, "params": vars(args), **res})
        print(f"\nJSON: {path}", file=sys.stderr)
        return 0
    with tempfile.TemporaryDirectory(prefix="exotray-labbench-") as d:
        res = run(args, Path(d))
    reps, noise = res["reps"], res["noise"]

    rows = []
    for label, key in (
        ("onset → link_saturated (polled)", "saturated_after_s"),
        ("onset → link_saturated (event `at`)", "saturated_after_s_event_at"),
        ("end → link_cleared (polled)", "cleared_after_s"),
        ("end → link_cleared (event `at`)", "cleared_after_s_event_at"),
    ):
        med, mx, n = med_max([r[key] for r in reps])
        rows.append([label, f"{n}/{len(reps)}", fmt(med), fmt(mx)])
    print(f"## Saturation detection in the lab (tbf 50 Mbit/s, {args.seconds} s iperf3 "
          f"-C cubic, {args.reps} repetitions)\n")
    print(machine_line(info) + f", {info.get('iperf3')}\n")
    print(md_table(["measure", "seen", "median s", "max s"], rows))
    tp, _, _ = med_max([r.get("received_mbit_s") for r in reps])
    ut, _, _ = med_max([r.get("saturated_utilization") for r in reps])
    print(f"\nDefaults: threshold 0.90, sustain 3 s, clear 5 s, interval 1 s; events polled "
          f"every 50 ms. iperf3 goodput median {fmt(tp, 1)} Mbit/s; utilization in the "
          f"link_saturated event median {fmt(ut, 3)}.\n")
    print(md_table(
        ["false-event run", "seconds", "bursts", "noise", "util max", "link_saturated"],
        [[f"{args.burst_on} s on / {args.burst_off} s off", f"{noise['seconds']:.0f}",
          noise["bursts"], f"{args.noise_mbit:g} Mbit/s UDP",
          fmt(noise["utilization_max"], 3), noise["link_saturated_events"]]],
    ))
    path = write_json(args.name, {
        "benchmark": "lab_detection",
        "machine": info,
        "params": vars(args),
        **res,
    })
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
