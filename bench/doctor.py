"""How long `exotray doctor` takes on an 8-agent loopback mesh (issue 32: at most 2 s).

    .venv/bin/python bench/doctor.py [--agents 8] [--runs 10]

Starts N agents on 127.0.0.1 (mDNS off), each given every other as --peer, the first with
a database holding `--history-days` (1) of each of its links, waits until the first sees
all its links up, then runs `python -m exotray doctor --json` against it `--runs` times:
the wall time of each whole command (interpreter start, imports, the HTTP reads — the
view, the day's events, each link's last 24 h of loss —, the checks, the output), and
apart from it the checks alone on the cluster view it read (core/doctor.run, in this
process). Loopback only; about half a minute.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from _harness import AgentGroup, get_json, machine_info, machine_line, md_table, write_json

from exotray.core import doctor


def past_history(state: Path, port: int, peers: list[int], days: float) -> None:
    """A state dir whose database holds `days` of every link the agent will have (its
    peers on loopback), in every tier, as that much sampling leaves it."""
    from history_db import fill

    from exotray.agent.history.db import HistoryDB
    from exotray.agent.peers.links import link_id

    state.mkdir(parents=True, exist_ok=True)
    node_id = f"b0d0c7{port:06x}"
    (state / "node_id").write_text(f"{node_id}\n")
    db = HistoryDB(state / "history.db", 30 * 86400.0)
    now = time.time()
    db.conn.execute("BEGIN")
    rows = sum(fill(db, "link", link_id(node_id, ("127.0.0.1", p)), now, 1.0, days, seed=p)
               for p in peers)
    db.conn.execute("COMMIT")
    db.close()
    print(f"n0's database: {rows} rows of {len(peers)} links, {days:g} days", file=sys.stderr)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--agents", type=int, default=8)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--history-days", type=float, default=1.0,
                    help="days of 1 s history the first agent's database holds for each "
                    "of its links before it starts (the loss check reads the last one)")
    args = ap.parse_args()
    group = AgentGroup()
    try:
        ports = [group.reserve() for _ in range(args.agents)]
        if args.history_days:
            past_history(group.root / "n0", ports[0], ports[1:], args.history_days)
        for i, port in enumerate(ports):
            group.start(f"n{i}", port, [p for p in ports if p != port])
        group.wait_ready(60)
        first = group.agents[0]
        group.wait_links_up(first, args.agents - 1, timeout=60)
        url = f"http://127.0.0.1:{ports[0]}"
        deadline = time.monotonic() + 60
        while len(get_json(f"{url}/v1/cluster")["nodes"]) < args.agents:
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster view never held every node")
            time.sleep(0.2)
        walls, codes = [], []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "exotray", "doctor", "--json",
                                "--port", str(ports[0])], capture_output=True, text=True,
                               timeout=60, cwd=group.root)
            walls.append(time.perf_counter() - t0)
            codes.append(r.returncode)
        checks = json.loads(r.stdout)["checks"]
        cluster = get_json(f"{url}/v1/cluster")
        events = get_json(f"{url}/v1/events?after=0")["events"]
        pure = []
        for _ in range(50):
            t0 = time.perf_counter()
            doctor.run(cluster, events, time.time())
            pure.append(time.perf_counter() - t0)
    finally:
        group.close()
    info = machine_info()
    result = {
        "agents": args.agents, "runs": args.runs, "exit_codes": codes,
        "wall_s": {"median": statistics.median(walls), "max": max(walls),
                   "min": min(walls)},
        "checks_only_ms": {"median": statistics.median(pure) * 1e3,
                           "max": max(pure) * 1e3},
        "statuses": {c["id"]: c["status"] for c in checks},
        "machine": info,
    }
    write_json("doctor", result)
    print(machine_line(info))
    print(md_table(["agents", "runs", "wall median", "wall max", "checks alone (median)",
                    "exit codes"],
                   [[str(args.agents), str(args.runs), f"{result['wall_s']['median']:.2f} s",
                     f"{result['wall_s']['max']:.2f} s",
                     f"{result['checks_only_ms']['median']:.2f} ms",
                     " ".join(sorted(set(map(str, codes))))]]))


if __name__ == "__main__":
    main()
