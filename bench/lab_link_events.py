"""How fast a cluster getting slower is told (issue 31), and whether busy traffic and busy
CPUs raise any of it falsely. Agents at the default 1 s interval, on the namespace lab.

What it measures (root, iperf3; see bench/README.md)
    * link_down / link_up / link_flapping: two hosts on two LANs; h1's cable on LAN B is
      pulled (the far end of its veth set down) and put back three times, 12 s apart, with
      --reps fresh agent pairs: pull -> link_down and put back -> link_up for the first two
      (the third return is link_flapping), by the events' own times.
    * link_slower: h1 -> forwarder (h3) -> h2, 30 ms added each way after a 30 s baseline:
      -> link_slower, and removed -> link_slower_cleared (--slower-reps).
    * mtu_mismatch: hosts at MTU 9000, the bridge's ports at 1500: agent start ->
      mtu_mismatch (--mtu-reps).
    * False events: --quiet-minutes (10) of two hosts on two LANs with 5 s iperf3 bursts
      at full speed every 8 s on each LAN in turn and both hosts' CPUs busy (two bounded
      busy loops each): every link_down, link_up, link_slower, link_flapping,
      mtu_mismatch and peer_down raised is counted (all false).

It measures and prints; it asserts nothing.

How to run (as root, from the repository root)
    flock /tmp/exotray-lab.lock .venv/bin/python bench/lab_link_events.py
    flock /tmp/exotray-lab.lock .venv/bin/python bench/lab_link_events.py --quiet-minutes 1

Output: Markdown on stdout, bench/results/lab_link_events.json. About 20 minutes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import machine_info, machine_line, md_table, write_json
from _lab import netlab, wait_until

from exotray.core.events import unix

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "lab"))
from test_lab_link_events import FORWARDER

PORT = 52480
CHANGES = ("link_down", "link_up", "link_slower", "link_slower_cleared", "link_flapping",
           "mtu_mismatch", "peer_down")


def _events(agent, *types: str) -> list[dict]:
    return [e for e in agent.get("/v1/events")["events"] if e["type"] in types]


def _after(agent, kind: str, since: float, limit: float) -> float | None:
    """Seconds from `since` (wall) to the first `kind` event at or after it."""
    def hit():
        return next((unix(e["at"]) for e in _events(agent, kind) if unix(e["at"]) >= since),
                    None)
    at = wait_until(hit, limit)
    return None if at is None else at - since


def _cables(tmp: Path, reps: int) -> dict:
    out: dict = {"down": [], "up": [], "flapping_at_third": []}
    for rep in range(reps):
        with netlab.Lab(2) as lab:
            h1, h2 = lab.hosts
            lab.add_lan([h1, h2])
            agents = netlab.Agents(lab, tmp / f"cable{rep}")
            (tmp / f"cable{rep}").mkdir()
            try:
                a1 = agents.start(h1, name="h1", all_interfaces=True)
                agents.start(h2, name="h2", all_interfaces=True)
                a1.wait_ready()
                wait_until(lambda a=a1: len([lk for lk in a.get("/v1/snapshot")["links"]
                                             if lk["state"] == "up"]) == 2, 30)
                cable = f"xt{lab.tag}1d"
                for k in range(3):
                    t = time.time()
                    lab.bridge_exec("ip", "link", "set", cable, "down")
                    if k < 2:
                        out["down"].append(_after(a1, "link_down", t, 15))
                    else:
                        time.sleep(5)
                    t = time.time()
                    lab.bridge_exec("ip", "link", "set", cable, "up")
                    kind = "link_up" if k < 2 else "link_flapping"
                    got = _after(a1, kind, t, 15)
                    (out["up"] if k < 2 else out["flapping_at_third"]).append(got)
                    time.sleep(6)
            finally:
                agents.close()
    return out


def _slower(tmp: Path, reps: int) -> dict:
    out: dict = {"slower": [], "cleared": []}
    for rep in range(reps):
        with netlab.Lab(3) as lab:
            h1, h2, h3 = lab.hosts
            delay = tmp / f"delay{rep}"
            delay.write_text("0")
            fwd = h3.popen(sys.executable, "-c", FORWARDER, h3.addr, h2.addr, str(PORT),
                           str(delay), "300")
            agents = netlab.Agents(lab, tmp / f"slow{rep}")
            (tmp / f"slow{rep}").mkdir()
            try:
                agents.start(h2, name="h2", mdns=False)
                a1 = agents.start(h1, name="h1", mdns=False, peers=[f"{h3.addr}:{PORT}"])
                a1.wait_ready()
                time.sleep(30)
                t = time.time()
                delay.write_text("30")
                out["slower"].append(_after(a1, "link_slower", t, 120))
                t = time.time()
                delay.write_text("0")
                out["cleared"].append(_after(a1, "link_slower_cleared", t, 60))
            finally:
                agents.close()
                fwd.terminate()
                fwd.wait(5)
    return out


def _mtu(tmp: Path, reps: int) -> dict:
    out: dict = {"mismatch_after_start": []}
    for rep in range(reps):
        with netlab.Lab(2) as lab:
            for h in lab.hosts:
                h.exec("ip", "link", "set", h.veth, "mtu", "9000")
            agents = netlab.Agents(lab, tmp / f"mtu{rep}")
            (tmp / f"mtu{rep}").mkdir()
            try:
                t = time.time()
                a1 = agents.start(lab.hosts[0], name="h1")
                agents.start(lab.hosts[1], name="h2")
                a1.wait_ready()
                out["mismatch_after_start"].append(_after(a1, "mtu_mismatch", t, 240))
            finally:
                agents.close()
    return out


def _quiet(tmp: Path, minutes: float) -> dict:
    seconds = minutes * 60
    with netlab.Lab(2) as lab:
        h1, h2 = lab.hosts
        second = lab.add_lan([h1, h2])
        b_addr = f"10.213.{lab.net + 1}.2"
        agents = netlab.Agents(lab, tmp / "quiet")
        (tmp / "quiet").mkdir()
        loop = ("import time\nt = time.monotonic()\n"
                f"while time.monotonic() - t < {seconds + 2:.0f}:\n    pass\n")
        try:
            a1 = agents.start(h1, name="h1", all_interfaces=True)
            a2 = agents.start(h2, name="h2", all_interfaces=True)
            a1.wait_ready()
            wait_until(lambda: len([lk for lk in a1.get("/v1/snapshot")["links"]
                                    if lk["state"] == "up"]) == 2, 30)
            time.sleep(5)
            busy = [h.popen(sys.executable, "-c", loop) for h in lab.hosts for _ in range(2)]
            start, bursts = time.monotonic(), 0
            srv = lab.iperf_server(h2)
            while time.monotonic() - start < seconds:
                dst = h2.addr if bursts % 2 == 0 else b_addr
                cli = h1.popen("iperf3", "-c", dst, "-t", "5", "-C", "cubic",
                               stdout=-1, stderr=-1)
                cli.wait(40)
                bursts += 1
                time.sleep(3)
            srv.terminate()
            srv.wait(5)
            for b in busy:
                b.wait(seconds + 30)
            counts = {k: len(_events(a, k)) for a in (a1, a2) for k in CHANGES}
            per = {a.name: {k: len(_events(a, k)) for k in CHANGES} for a in (a1, a2)}
        finally:
            agents.close()
    return {"minutes": minutes, "bursts": bursts, "lan_b": second[0], "events": per,
            "false_total": sum(counts.values())}


def _fmt(xs: list) -> str:
    got = [x for x in xs if x is not None]
    if not got:
        return f"none of {len(xs)}"
    missed = f", {len(xs) - len(got)} missed" if len(got) < len(xs) else ""
    return (f"median {statistics.median(got):.2f} s, max {max(got):.2f} s "
            f"(n={len(got)}{missed})")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=3, help="fresh pairs for the cable pulls")
    ap.add_argument("--slower-reps", type=int, default=2)
    ap.add_argument("--mtu-reps", type=int, default=2)
    ap.add_argument("--quiet-minutes", type=float, default=10.0)
    args = ap.parse_args()
    netlab.cleanup_stale()
    res: dict = {}
    with tempfile.TemporaryDirectory(prefix="exotray-linkev-") as tmp:
        tmp_p = Path(tmp)
        res["cables"] = _cables(tmp_p, args.reps)
        res["slower"] = _slower(tmp_p, args.slower_reps)
        res["mtu"] = _mtu(tmp_p, args.mtu_reps)
        if args.quiet_minutes > 0:
            res["quiet"] = _quiet(tmp_p, args.quiet_minutes)
    rows = [["link_down (pull -> event)", "≤ 3 s", _fmt(res["cables"]["down"])],
            ["link_up (back -> event)", "", _fmt(res["cables"]["up"])],
            ["link_flapping (third return -> event)", "at the third change",
             _fmt(res["cables"]["flapping_at_third"])],
            ["link_slower (+30 ms each way -> event)", "≤ 45 s", _fmt(res["slower"]["slower"])],
            ["link_slower_cleared (delay gone -> event)", "", _fmt(res["slower"]["cleared"])],
            ["mtu_mismatch (agent start -> event)", "≤ 2 min",
             _fmt(res["mtu"]["mismatch_after_start"])]]
    print("## exotray lab_link_events\n")
    print(machine_line(machine_info()) + "\n")
    print(md_table(["event", "target", "measured"], rows))
    if "quiet" in res:
        q = res["quiet"]
        print(f"\nFalse events: {q['false_total']} in {q['minutes']:g} min of {q['bursts']} "
              f"full-speed iperf3 bursts over both links, both hosts' CPUs busy: {q['events']}")
    write_json("lab_link_events", {"machine": machine_info(), "args": vars(args), **res})
    return 0


if __name__ == "__main__":
    sys.exit(main())
