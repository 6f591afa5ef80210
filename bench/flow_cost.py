"""What reading each link's own bytes costs (issue 30, agent/hw/flows.py).

What it measures
    In this process, no agent: --conns TCP connections on loopback, of which --to-peers
    go to --peers peer addresses (127.X.Y.1..N, all on `lo`) and the rest to an address
    no link has, both ends held here (so the kernel holds twice as many sockets as a host
    whose peers are elsewhere), each carrying a little every read. One `Flows` with a link
    per peer address on the shared carrier `lo` reads them --reads times, as the agent's
    full tick does once an interval; each read is timed in CPU time of this thread (user
    + system: the netlink work is mostly the kernel's). Reported per case: the median
    and mean read, the mean as a share of one core at one read a second (the default
    interval; the clock given to the reads advances 1 s a read, so every 30th walks the
    table whatever happened, flows.REWALK_S),
    and how many reads walked the kernel's table (a dump) or looked the known connections
    up. Cases: the connections as they are (no connection opened between reads: lookups);
    every connection to a peer; a connection opened and closed between every two reads
    (each read walks the table); no shared carrier carrying traffic (nothing is read, no
    socket opened). It asserts nothing.

    As root it runs in a network namespace of its own (`unshare --net`, only `lo`), so no
    other process's new connections make a read walk the table; otherwise in this one,
    and says so.

How to run (from the repository root; Linux)
    .venv/bin/python bench/flow_cost.py
    .venv/bin/python bench/flow_cost.py --conns 400 --peers 16 --to-peers 32

Output: a Markdown table on stdout and bench/results/flow_cost.json.
Runtime: a few seconds.
"""

from __future__ import annotations

import argparse
import os
import random
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _harness import machine_info, machine_line, md_table, write_json

from exotray.agent.hw.flows import FlowLink, Flows


def _open(peers: list[str], other: str, n: int, to_peers: int,
          ) -> tuple[list[socket.socket], list[socket.socket]]:
    """`n` connections from 127.0.0.1, `to_peers` of them spread over the peers'
    listeners and the rest to `other`'s, both ends kept."""
    listeners = [socket.create_server((p, 0), backlog=n) for p in [*peers, other]]
    held: list[socket.socket] = []
    for i in range(n):
        lst = listeners[i % len(peers)] if i < to_peers else listeners[-1]
        c = socket.create_connection(lst.getsockname(), timeout=5,
                                     source_address=("127.0.0.1", 0))
        s, _ = lst.accept()
        held += [c, s]
    return listeners, held


def _short(listener: socket.socket, k: int) -> None:
    for _ in range(k):
        with socket.create_connection(listener.getsockname(), timeout=5,
                                      source_address=("127.0.0.1", 0)) as c:
            s, _ = listener.accept()
            with s:
                c.sendall(b"x" * 10_000)
                s.recv(1 << 16)


def _time(reads: int, step, flows: Flows, links, carrying) -> list[float]:
    out = []
    for i in range(reads):
        step()
        t0 = time.thread_time()
        flows.tick(1000.0 + i, links, carrying)
        out.append(time.thread_time() - t0)
    return out


def _case(args, peers: list[str], other: str, to_peers: int, closing: int,
          carrying: bool) -> dict:
    links = [FlowLink(f"L{i}", "lo", ("127.0.0.1",), p) for i, p in enumerate(peers)]
    listeners, held = _open(peers, other, args.conns, to_peers)
    clients = held[0::2]

    def step() -> None:  # a little on every connection, so every counter moves
        for c in clients:
            c.send(b"y" * 100)
        _short(listeners[0], closing)

    try:
        flows = Flows()
        says = (lambda _: True) if carrying else (lambda _: False)
        flows.tick(999.0, links, says)  # (counting starts)
        times = _time(args.reads, step, flows, links, says)
        reader = flows.reader
        opened = reader is not None and reader.source.is_open
        walks, lookups = (reader.dumps, reader.lookups) if reader is not None else (0, 0)
        flows.stop()
    finally:
        for s in [*held, *listeners]:
            s.close()
    return {"median_s": statistics.median(times), "mean_s": statistics.fmean(times),
            "p90_s": sorted(times)[int(0.9 * len(times))], "sockets_open": opened,
            "table_walks": walks, "lookups": lookups}


def _in_own_namespace() -> None:
    """As root, run again in a new network namespace with only `lo` (up)."""
    cmd = " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv])
    env = {**os.environ, "EXOTRAY_FLOW_COST_NETNS": "1"}
    sys.exit(subprocess.run(["unshare", "--net", "sh", "-c", f"ip link set lo up && exec {cmd}"],
                            env=env).returncode)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conns", type=int, default=200)
    ap.add_argument("--peers", type=int, default=8)
    ap.add_argument("--to-peers", type=int, default=16,
                    help="connections to the peers (2 each by default: exo's, ours)")
    ap.add_argument("--reads", type=int, default=200)
    ap.add_argument("--closing", type=int, default=10)
    ap.add_argument("--here", action="store_true",
                    help="stay in this network namespace even as root")
    args = ap.parse_args()
    own = os.environ.get("EXOTRAY_FLOW_COST_NETNS") == "1"
    if not own and not args.here and os.geteuid() == 0 and shutil.which("unshare"):
        _in_own_namespace()
    net = f"127.{random.randrange(2, 250)}.{random.randrange(1, 250)}"
    peers, other = [f"{net}.{i + 1}" for i in range(args.peers)], f"{net}.250"
    n, k = args.conns, min(args.to_peers, args.conns)
    cases = {
        f"{n} connections, {k} to the {args.peers} peers": (k, 0, True),
        f"{n} connections, all to the peers": (n, 0, True),
        f"{n} connections, {k} to the peers, {args.closing} opened and closed between reads":
            (k, args.closing, True),
        "no shared carrier carrying traffic": (k, 0, False),
    }
    raw, rows = {}, []
    for name, (to_peers, closing, carrying) in cases.items():
        r = raw[name] = _case(args, peers, other, to_peers, closing, carrying)
        rows.append((name, f"{r['median_s'] * 1e3:.3f} ms", f"{r['mean_s'] * 1e3:.3f} ms",
                     f"{r['mean_s'] * 100:.3f} %",
                     f"{r['table_walks']} / {r['lookups']}",
                     "yes" if r["sockets_open"] else "no"))
        print(f"{name}: {r['median_s'] * 1e3:.3f} ms a read", file=sys.stderr)
    info = machine_info()
    where = ("a network namespace of its own" if own else
             "this network namespace: other processes' new connections make reads walk "
             "the table")
    print(machine_line(info) + f"; {where}")
    print(md_table(["case", "CPU a read (median)", "(mean)", "of one core at 1 read/s (mean)",
                    "reads that walked the table / looked up", "netlink sockets open"],
                   [list(r) for r in rows]))
    write_json("flow_cost", {"machine": info, "args": vars(args), "namespace": where,
                             "cases": raw})


if __name__ == "__main__":
    main()
