"""What reading each link's own bytes costs (issue 30, agent/hw/flows.py).

What it measures
    In this process, no agent: --conns TCP connections on loopback spread over --peers
    peer addresses (127.X.Y.1..N, all on `lo`), both ends held here (so the kernel dumps
    twice as many sockets as a host whose peers are elsewhere: the worse case), each
    carrying a little every read. One `Flows` with a link per peer address on the shared
    carrier `lo` reads them --reads times, as the agent's full tick does once an
    interval; each read is timed in CPU time of this thread (user + system: the netlink
    dump is mostly the kernel's). Reported: the median read, and what it is as a share of
    one core at one read a second (the default interval). Then the same with --closing
    connections opened and closed between reads (their last bytes come from the kernel's
    destroy messages), and the tick when no shared carrier carries traffic (nothing is
    read: no socket is opened). It asserts nothing.

How to run (from the repository root; Linux)
    .venv/bin/python bench/flow_cost.py
    .venv/bin/python bench/flow_cost.py --conns 400 --peers 16

Output: a Markdown table on stdout and bench/results/flow_cost.json.
Runtime: a few seconds.
"""

from __future__ import annotations

import argparse
import random
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _harness import machine_info, machine_line, md_table, write_json

from exotray.agent.hw.flows import FlowLink, Flows


def _open(peers: list[str], n: int) -> tuple[list[socket.socket], list[socket.socket]]:
    """`n` connections from 127.0.0.1 to the peers' listeners, both ends kept."""
    listeners = [socket.create_server((p, 0), backlog=n) for p in peers]
    held: list[socket.socket] = []
    for i in range(n):
        lst = listeners[i % len(peers)]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--conns", type=int, default=200)
    ap.add_argument("--peers", type=int, default=8)
    ap.add_argument("--reads", type=int, default=200)
    ap.add_argument("--closing", type=int, default=10)
    args = ap.parse_args()
    net = f"127.{random.randrange(2, 250)}.{random.randrange(1, 250)}"
    peers = [f"{net}.{i + 1}" for i in range(args.peers)]
    links = [FlowLink(f"L{i}", "lo", ("127.0.0.1",), p) for i, p in enumerate(peers)]
    listeners, held = _open(peers, args.conns)
    clients = held[0::2]
    try:
        def move() -> None:  # a little on every connection, so every counter moves
            for c in clients:
                c.send(b"y" * 100)

        rows, raw = [], {}
        for name, step, carrying in (
                (f"{args.conns} open connections, {args.peers} peers", move, True),
                (f"+ {args.closing} connections closed between reads",
                 lambda: (move(), _short(listeners[0], args.closing)), True),
                ("no shared carrier carrying traffic", lambda: None, False)):
            flows = Flows()
            says = (lambda _: True) if carrying else (lambda _: False)
            flows.tick(999.0, links, says)  # (counting starts)
            times = _time(args.reads, step, flows, links, says)
            opened = flows.reader is not None and flows.reader.source.is_open
            flows.stop()
            med = statistics.median(times)
            raw[name] = {"median_s": med, "p90_s": sorted(times)[int(0.9 * len(times))],
                         "sockets_open": opened}
            rows.append((name, f"{med * 1e3:.3f} ms", f"{med * 100:.3f} %",
                         "yes" if opened else "no"))
            print(f"{name}: {med * 1e3:.3f} ms a read", file=sys.stderr)
    finally:
        for s in [*held, *listeners]:
            s.close()
    info = machine_info()
    print(machine_line(info))
    print(md_table(["case", "CPU a read (median)", "of one core at 1 read/s",
                    "netlink sockets open"], [list(r) for r in rows]))
    write_json("flow_cost", {"machine": info, "args": vars(args), "cases": raw})


if __name__ == "__main__":
    main()
