"""lab_detection.py --queueing: saturation by queueing delay (issue 13), no --capacity.

Each phase builds its own 2-host lab in 10.213.130.0/24 .. 10.213.139.0/24 (tbf on the
bridge port that delivers to h2), runs h1's agent with `cooldown = 0` and h2's agent as
its only peer, and tears everything down. See lab_detection.py's docstring.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import secrets
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from _lab import PORT, EventPoller, med_max, netlab, wait_until

DEEP, SHALLOW = "200ms", "5ms"


def _wall(iso_at: str) -> float:
    return datetime.fromisoformat(iso_at.replace("Z", "+00:00")).timestamp()


def _link(agent, addr: str) -> dict | None:
    return next((lk for lk in agent.get("/v1/snapshot")["links"]
                 if lk["peer_address"] == addr), None)


class _Pair:
    """A 2-host lab with agents; with `capacity`, h1's agent is told its veth carries
    50 Mbit/s (what the tbf lets through)."""

    def __init__(self, tmp: Path, latency: str | None, capacity: bool = False) -> None:
        self.lab = netlab.Lab(2, net=130 + 2 * secrets.randbelow(5))
        self.tmp, self.latency, self.capacity = tmp, latency, capacity

    def __enter__(self):
        lab = self.lab.__enter__()
        try:
            self.agents = netlab.Agents(lab, self.tmp)
            h1, h2 = lab.hosts
            if self.latency:
                lab.shape(h2, "50mbit", latency=self.latency)
            cfg = self.tmp / f"h1-{lab.tag}.toml"
            cfg.write_text("cooldown = 0\n")
            extra = ["--capacity", f"{h1.veth}=50"] if self.capacity else []
            self.a1 = self.agents.start(h1, *extra, "--config", str(cfg), name="h1",
                                        mdns=False, peers=[f"{h2.addr}:{PORT}"])
            self.agents.start(h2, name="h2", mdns=False, peers=[f"{h1.addr}:{PORT}"])
            if not wait_until(lambda: (lk := _link(self.a1, h2.addr)) and lk["state"] == "up"
                              and lk["queue_delay_ms"] is not None, 20):
                raise RuntimeError("h1 -> h2 link not up:\n" + self.a1.log())
            time.sleep(3.0)  # a few seconds of idle baseline
            self.ev = EventPoller(self.a1)
            self.ev.sync()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        if hasattr(self, "agents"):
            self.agents.close()
        self.lab.__exit__(*exc)


def _iperf_summary(path: Path) -> dict:
    try:
        rep = json.loads(path.read_text())
        return {"received_mbit_s": rep["end"]["sum_received"]["bits_per_second"] / 1e6,
                "retransmits": rep["end"]["sum_sent"].get("retransmits")}
    except (OSError, ValueError, KeyError):
        return {}


def _reps(p: _Pair, args, label: str) -> list[dict]:
    lab, a1, ev = p.lab, p.a1, p.ev
    h1, h2 = lab.hosts
    rows = []
    for r in range(args.reps):
        print(f"[lab_detection --queueing] {label}: repetition {r + 1}/{args.reps}",
              file=sys.stderr)
        srv = lab.iperf_server(h2)
        log = p.tmp / f"iperf-{lab.tag}-{r}.json"
        onset, onset_wall = time.monotonic(), time.time()
        client = lab.iperf_client(h1, h2, args.seconds, log=log)
        sat = ev.wait_for("link_saturated", args.seconds + 2.0)
        during = None
        with contextlib.suppress(Exception):
            during = _link(a1, h2.addr)
        client.wait(args.seconds + 30)
        end, end_wall = time.monotonic(), time.time()
        clr = ev.wait_for("link_cleared", 20.0)
        try:
            srv.wait(5)
        except Exception:
            srv.kill()
        rows.append({
            "rep": r + 1,
            "saturated_after_s": sat[0] - onset if sat else None,
            "saturated_after_s_event_at": _wall(sat[1]["at"]) - onset_wall if sat else None,
            "cause": sat[1].get("cause") if sat else None,
            "queue_delay_ms": sat[1].get("queue_delay_ms") if sat else None,
            "rtt_baseline_ms": sat[1].get("rtt_baseline_ms") if sat else None,
            "utilization": sat[1].get("utilization") if sat else None,
            "rtt_ms_during": during.get("rtt_ms") if during else None,
            "cleared_after_s": clr[0] - end if clr else None,
            "cleared_after_s_event_at": _wall(clr[1]["at"]) - end_wall if clr else None,
            "clear_cause": clr[1].get("cause") if clr else None,
            **_iperf_summary(log),
        })
        time.sleep(args.gap)
    return rows


def _watch(p: _Pair, duration: float, each_second=None) -> dict:
    """Poll h1's link once a second for `duration`; count link_saturated events."""
    h2 = p.lab.hosts[1]
    p.ev.sync()
    p.ev.seen.clear()
    delays, rates = [], []
    t0 = time.monotonic()
    while time.monotonic() - t0 < duration:
        if each_second is not None:
            each_second(time.monotonic() - t0)
        try:
            lk = _link(p.a1, h2.addr)
            if lk:
                if lk["queue_delay_ms"] is not None:
                    delays.append(lk["queue_delay_ms"])
                rates.append(max(lk["rx_bytes_per_s"] or 0, lk["tx_bytes_per_s"] or 0))
            p.ev.poll()
        except Exception:
            pass
        time.sleep(1.0)
    time.sleep(1.0)
    p.ev.poll()
    sat = [e for _, e in p.ev.seen if e["type"] == "link_saturated"]
    delays.sort()
    return {
        "seconds": round(time.monotonic() - t0, 1),
        "link_saturated_events": len(sat),
        "events": sat,
        "queue_delay_ms_max": delays[-1] if delays else None,
        "queue_delay_ms_p99": delays[min(len(delays) - 1, int(0.99 * len(delays)))]
        if delays else None,
        "readings": len(delays),
        "mean_rate_bytes_per_s": sum(rates) / len(rates) if rates else None,
    }


def _bursty(p: _Pair, args) -> dict:
    h1, h2 = p.lab.hosts
    srv = h2.popen("iperf3", "-s", "-B", h2.addr, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    time.sleep(0.3)
    duration = args.idle_minutes * 60.0
    on, off = 3, 1
    state = {"next": 0.0, "burst": None, "n": 0}

    def each_second(elapsed: float) -> None:
        if elapsed >= state["next"] and elapsed < duration - 1:
            b = state["burst"]
            if b is not None:
                b.wait(on + 15)
            state["burst"] = h1.popen("iperf3", "-c", h2.addr, "-u", "-b", "40M", "-t",
                                      str(on), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            state["n"] += 1
            state["next"] = elapsed + on + off

    try:
        out = _watch(p, duration, each_second)
    finally:
        if state["burst"] is not None:
            state["burst"].wait(on + 15)
        srv.terminate()
        srv.wait(5)
    out["bursts"] = state["n"]
    return out


def _cpu(p: _Pair, args) -> dict:
    duration = args.cpu_minutes * 60.0
    loop = ("import time\nt = time.monotonic()\n"
            f"while time.monotonic() - t < {duration + 2:.0f}:\n    pass\n")
    busy = [h.popen(sys.executable, "-c", loop) for h in p.lab.hosts for _ in range(2)]
    try:
        return _watch(p, duration)
    finally:
        for b in busy:
            b.wait(duration + 30)


def run(args, tmp: Path) -> dict:
    res: dict = {}
    for name, latency in (("deep", DEEP), ("shallow", SHALLOW)):
        with _Pair(tmp, latency) as p:
            res[name] = _reps(p, args, f"{name} buffer ({latency})")
    if args.capacity_reps:
        with _Pair(tmp, DEEP, capacity=True) as p:
            a = argparse.Namespace(**{**vars(args), "reps": args.capacity_reps})
            res["capacity_known"] = _reps(p, a, "capacity known, deep buffer")
    if args.idle_minutes > 0:
        print(f"[lab_detection --queueing] bursty traffic: {args.idle_minutes:g} min",
              file=sys.stderr)
        with _Pair(tmp, DEEP) as p:
            res["bursty"] = _bursty(p, args)
    if args.cpu_minutes > 0:
        print(f"[lab_detection --queueing] idle, CPUs busy: {args.cpu_minutes:g} min",
              file=sys.stderr)
        with _Pair(tmp, DEEP) as p:
            res["cpu"] = _cpu(p, args)
    return res


def report(args, res: dict, md_table, fmt) -> None:
    rows = []
    for name, latency in (("deep", DEEP), ("shallow", SHALLOW)):
        reps = res[name]
        for label, key in (("onset → link_saturated (event `at`)", "saturated_after_s_event_at"),
                           ("end → link_cleared (event `at`)", "cleared_after_s_event_at"),
                           ("onset → link_saturated (polled)", "saturated_after_s"),
                           ("end → link_cleared (polled)", "cleared_after_s")):
            med, mx, n = med_max([r[key] for r in reps])
            rows.append([f"{name} ({latency})", label, f"{n}/{len(reps)}", fmt(med), fmt(mx)])
    print(f"## Saturation by queueing delay in the lab (tbf 50 Mbit/s, no --capacity, "
          f"{args.seconds} s iperf3 -C cubic, {args.reps} repetitions per buffer)\n")
    print(md_table(["buffer", "measure", "seen", "median s", "max s"], rows))
    for name in ("deep", "shallow"):
        reps = res[name]
        causes = sorted({str(r["cause"]) for r in reps})
        qd, qmax, _ = med_max([r["queue_delay_ms"] for r in reps])
        bl, _, _ = med_max([r["rtt_baseline_ms"] for r in reps])
        tp, _, _ = med_max([r.get("received_mbit_s") for r in reps])
        print(f"\n{name}: causes {causes}; queueing delay in link_saturated median "
              f"{fmt(qd, 1)} ms (max {fmt(qmax, 1)}); baseline median {fmt(bl, 3)} ms; "
              f"iperf3 goodput median {fmt(tp, 1)} Mbit/s")
    if "capacity_known" in res:
        reps = res["capacity_known"]
        counts: dict[str, int] = {}
        for r in reps:
            counts[str(r["cause"])] = counts.get(str(r["cause"]), 0) + 1
        med, mx, n = med_max([r["saturated_after_s_event_at"] for r in reps])
        cmed, cmx, cn = med_max([r["cleared_after_s_event_at"] for r in reps])
        qd, _, _ = med_max([r["queue_delay_ms"] for r in reps])
        # the other cause agreed when the queueing delay in the event was over its bound
        agree = sum(1 for r in reps if r["queue_delay_ms"] is not None
                    and r["rtt_baseline_ms"] is not None
                    and r["queue_delay_ms"] >= max(1.0, r["rtt_baseline_ms"]))
        print(f"\ncapacity known (--capacity veth=50), deep buffer, {len(reps)} repetitions: "
              f"first cause {counts}; queueing delay in the event median {fmt(qd, 1)} ms, "
              f"over the queueing bound in {agree}/{len(reps)}; onset → link_saturated "
              f"median {fmt(med)} s, max {fmt(mx)} s ({n} seen); end → link_cleared median "
              f"{fmt(cmed)} s, max {fmt(cmx)} s ({cn} seen)")
    frows = []
    for key, what in (("bursty", "bursty UDP, 40 Mbit/s 3 s on / 1 s off (avg 60 %)"),
                      ("cpu", "idle link, both hosts' CPUs busy (2 busy loops each)")):
        if key in res:
            r = res[key]
            frows.append([what, f"{r['seconds']:.0f}", r["link_saturated_events"],
                          fmt(r["queue_delay_ms_p99"], 3), fmt(r["queue_delay_ms_max"], 3),
                          fmt((r["mean_rate_bytes_per_s"] or 0) * 8 / 1e6, 1)])
    if frows:
        print()
        print(md_table(["false-event run", "seconds", "link_saturated",
                        "queue delay p99 ms", "max ms", "mean rate Mbit/s"], frows))


__all__ = ["report", "run"]
