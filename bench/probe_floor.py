"""The floor under an agent's per-peer CPU: its probe exchange alone, in CPython.

What it measures
    For each P in --peers, a "hub" process that does nothing but what the agent's UDP
    socket does for P peers at rest — exotray's own ProbeSocket sending one probe a
    second to each of P targets, reading their replies, reflecting their probes, expiring
    the lost — on one asyncio timer a second (the agent's tick, minus everything else);
    and one "spokes" process holding P ProbeSockets that each probe the hub once a second
    and reflect its probes. On loopback; no agent, no mDNS. After --settle s it samples
    the hub's CPU (user, system) over --seconds.

    That is 4 datagrams per peer per second through Python (a probe and a reply each
    way): what an agent pays per peer before it judges, records or shares anything. The
    agent's own figures (bench/idle_agent.py, bench/lab_scale.py) minus this floor are
    what its other per-peer work costs. It measures and prints; it asserts nothing.

How to run (from anywhere)
    flock /tmp/exotray-bench.lock python bench/probe_floor.py --peers 8,64

Output: a Markdown table on stdout and bench/results/probe_floor.json.
Runtime: P by P, settle + seconds + ~2 s each (~80 s with the defaults).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time

import psutil
from _harness import machine_info, machine_line, md_table, write_json


def _free_udp_ports(n: int) -> list[int]:
    socks, ports = [], []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        socks.append(s)
        ports.append(s.getsockname()[1])
    for s in socks:
        s.close()
    return ports


async def _run(role: str, hub: int, spokes: list[int], seconds: float) -> None:
    from exotray.agent.probe.udp import ProbeSocket

    replies = [0]
    mine = [hub] if role == "hub" else spokes
    socks = []
    for port in mine:
        ps = ProbeSocket(lambda *_: replies.__setitem__(0, replies[0] + 1), lambda *_: None)
        ps.open("127.0.0.1", port)
        socks.append(ps)
    targets = ([[("127.0.0.1", p) for p in spokes]] if role == "hub"
               else [[("127.0.0.1", hub)]] * len(spokes))
    end = time.monotonic() + seconds
    while time.monotonic() < end:  # bounded: one round a second until `seconds`
        for ps, tgts in zip(socks, targets, strict=True):
            ps.drain()
            ps.expire()
            for t in tgts:
                ps.send(t)
        await asyncio.sleep(1.0)
    for ps in socks:
        ps.close()
    print(f"{role}: {replies[0]} replies", file=sys.stderr)


def run_row(p: int, args: argparse.Namespace) -> dict:
    ports = _free_udp_ports(p + 1)
    hub, spokes = ports[0], ports[1:]
    life = args.settle + args.seconds + 5
    common = [sys.executable, __file__, "--_role", "x", "--_hub", str(hub),
              "--_spokes", ",".join(map(str, spokes)), "--_life", str(life)]
    procs = [subprocess.Popen([*common[:3], "spokes", *common[4:]]),
             subprocess.Popen([*common[:3], "hub", *common[4:]])]
    try:
        time.sleep(args.settle)
        hp = psutil.Process(procs[1].pid)
        c0, t0 = hp.cpu_times(), time.monotonic()
        time.sleep(args.seconds)
        c1, t1 = hp.cpu_times(), time.monotonic()
    finally:
        for pr in procs:
            pr.wait(timeout=life + 10)
    wall = t1 - t0
    user, system = (c1.user - c0.user) / wall * 100, (c1.system - c0.system) / wall * 100
    return {"peers": p, "seconds": round(wall, 2), "hub_cpu_pct": user + system,
            "hub_user_pct": user, "hub_system_pct": system,
            "per_peer_pct": (user + system) / p}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--peers", default="8,64")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--settle", type=float, default=5.0)
    ap.add_argument("--_role", help=argparse.SUPPRESS)
    ap.add_argument("--_hub", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--_spokes", help=argparse.SUPPRESS)
    ap.add_argument("--_life", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._role:
        asyncio.run(_run(args._role, args._hub, [int(x) for x in args._spokes.split(",")],
                         args._life))
        return 0
    counts = [int(x) for x in args.peers.split(",")]
    if any(not 1 <= c <= 200 for c in counts):
        ap.error("--peers: each 1..200")
    rows = [run_row(p, args) for p in counts]
    print("## The probe exchange alone (exotray's ProbeSocket, 1 probe/s per peer each "
          "way, loopback)\n")
    print(machine_line(machine_info()) + "\n")
    print(md_table(["P", "hub CPU % of a core", "user / system %", "per peer %"],
                   [[r["peers"], f"{r['hub_cpu_pct']:.2f}",
                     f"{r['hub_user_pct']:.2f} / {r['hub_system_pct']:.2f}",
                     f"{r['per_peer_pct']:.3f}"] for r in rows]))
    write_json("probe_floor", {"machine": machine_info(), "args": vars(args), "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
