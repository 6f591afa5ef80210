"""What reading exo costs the agent: one poll of a stand-in exo on loopback (tests/
exo_standin.py, states shaped like exo's: tests/exo_state.py) with 1, 8 and 64 ring
instances, each with its model cards as exo sends them.

    .venv/bin/python bench/exo_poll.py [--polls 50]

For each size: the /state body, the parse alone (exo.decode_state + parse_state, which
the agent runs in a worker thread), a whole ExoWatch.tick (two HTTP GETs, parse, slow-
path check) and the longest time the event loop was blocked during the ticks (a 1 ms
ticker coroutine's worst lateness: what the probes and the sampler would feel), next to
the same ticker's worst lateness over as long without any poll (the machine's own noise).
Loopback only; no agent process; a few seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import exo_state as ex
from _harness import machine_info, machine_line, md_table, write_json
from exo_standin import StandIn

from exotray.agent.exo import state as exo
from exotray.agent.exo.watch import ExoWatch
from exotray.core.capacity import Capacity

ME = "6a1f0c2e93b44d7ab0f11c2d3e4f5a60"


def state_of(n: int) -> bytes:
    nodes = {ME: {"name": "n0", "interfaces": [("en0", "10.213.140.1", "ethernet")]}}
    inst = {}
    for i in range(n):
        other = f"node-{i:04d}-0000-4000-8000-000000000000"
        nodes[other] = {"name": f"n{i + 1}", "interfaces": [("en0", f"10.213.141.{i + 1}",
                                                              "ethernet")]}
        inst[f"inst-{i}"] = ex.ring_instance(f"inst-{i}", ex.MODEL_70B,
                                             [(ME, "10.213.140.1"), (other, f"10.213.141.{i + 1}")])
    return ex.dumps(ex.state(inst, nodes))


async def ticks(w: ExoWatch | None, polls: int, idle_s: float = 0.0
                ) -> tuple[list[float], float]:
    """`polls` ticks of `w` (or, without one, as long asleep: the ticker's baseline on
    this machine at this moment)."""
    worst = 0.0
    done = False

    async def ticker() -> None:
        nonlocal worst
        while not done:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - t - 0.001)

    task = asyncio.create_task(ticker())
    times = []
    for _ in range(polls):
        t = time.perf_counter()
        if w is None:
            await asyncio.sleep(idle_s)
        else:
            await w.tick()
        times.append(time.perf_counter() - t)
    done = True
    await task
    if w is not None:
        await w.aclose()
    return times, worst


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--polls", type=int, default=50)
    args = ap.parse_args()
    rows, raw = [], []
    mon = SimpleNamespace(ifaces={},
                          numbers=lambda n, p=None: (None, Capacity(None, "unknown"), None))
    with tempfile.TemporaryDirectory() as tmp:
        s = StandIn(Path(tmp)).start()
        try:
            for n in (1, 8, 64):
                body = state_of(n)
                s.say(node_id=json.dumps(ME).encode(), state=body)
                parse = []
                for _ in range(args.polls):
                    t = time.perf_counter()
                    exo.parse_state(exo.decode_state(body), ME)
                    parse.append(time.perf_counter() - t)
                w = ExoWatch(s.url, monitor=mon, links=lambda: [], emit=lambda t, f: None,
                             clock=time.monotonic, platform="bench")
                times, worst = asyncio.run(ticks(w, args.polls))
                assert w.status == "ok" and len(w.state.instances) == n
                rows.append([str(n), f"{len(body) / 1024:.0f} KiB",
                             f"{statistics.median(parse) * 1e3:.2f} ms",
                             f"{statistics.median(times) * 1e3:.1f} ms",
                             f"{max(times) * 1e3:.1f} ms", f"{worst * 1e3:.1f} ms"])
                raw.append({"instances": n, "bytes": len(body), "parse_s": parse,
                            "tick_s": times, "loop_blocked_worst_s": worst})
                print(f"{n} instances done", file=sys.stderr)
                _, base = asyncio.run(ticks(None, args.polls, statistics.median(times)))
                rows.append([f"{n}, no poll", "", "", "", "", f"{base * 1e3:.1f} ms"])
                raw[-1]["loop_blocked_worst_baseline_s"] = base
        finally:
            s.stop()
    info = machine_info()
    print(machine_line(info))
    print(md_table(["instances", "/state", "parse (median)", "tick (median)", "tick (max)",
                    "loop blocked (worst)"], rows))
    write_json("exo_poll", {"machine": info, "polls": args.polls, "results": raw})
    return 0


if __name__ == "__main__":
    sys.exit(main())
