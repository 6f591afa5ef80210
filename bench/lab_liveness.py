"""How fast peers are discovered, declared down and seen up again, in a namespace lab.

What it measures (root, iperf3 not needed; network namespaces, see bench/README.md)
    A 3-host lab (tests/lab/netlab.py) with an agent in each namespace, discovering each
    other by mDNS limited to its lab address (`--mdns-interface`). The script polls the
    agents' /v1/snapshot every --poll s (0.05) from the lab's monitor address and
    records, --reps times each (5):

    * discovery: a new host (its own namespace, created beforehand) starts a 4th agent;
      time from starting the process until every running agent has a link to it in
      state "up", and until the new agent has all three links up. The time until its API
      first answers is shown too (Python start-up and imports). The new agent is then
      stopped with SIGTERM (an mDNS goodbye) before the next repetition, so each
      repetition is a new peer joining a 3-agent cluster.
    * SIGKILL: h3's agent is killed with -9; time until h1 and h2 both show the link to
      h3 "down" (no probe replies for down_after x interval = 2.5 s). Then it is
      restarted (same state dir, same node id); time until both show it "up" again.
    * link down: `ip link set <h3 veth> down` inside h3's namespace, agent still
      running; time until h1 and h2 show h3 "down", and until h3's own agent shows its
      links down. --hold s (4) after it went down, `ip link set ... up`; time until h1
      and h2 show h3 "up", and until h3's own agent shows them up. h3's own view cannot
      be polled while its veth is down (the monitor reaches it through that veth), so it
      comes from the wall-clock `at` of its peer_down / peer_up events.

    Each time is "until the last observer saw it" (the first observer is in the JSON).
    Before each SIGKILL and each veth down or up the script waits a random 0-1 s
    (--seed): a repetition starts right after the previous one was seen, and that is
    at an agent's tick, so without it every repetition hits the agents' ticks at the
    same phase, and a time that depends on the next tick (an interface change is read
    at the next full tick) came out the same, high or low, five times over.
    It measures and prints; it asserts nothing.

How to run (as root, from the repository root)
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_liveness.py
    flock /tmp/exotray-bench.lock .venv/bin/python bench/lab_liveness.py --reps 10

Output: Markdown on stdout, bench/results/lab_liveness.json.
Runtime with the defaults: about 2 min.
"""

from __future__ import annotations

import argparse
import random
import signal
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _harness import machine_line, md_table, write_json
from _lab import EventPoller, lab_machine_info, med_max, netlab, require_lab, wait_until


def _wall(iso_at: str) -> float:
    return datetime.fromisoformat(iso_at.replace("Z", "+00:00")).timestamp()


def _state(agent, addr: str) -> str | None:
    """State of `agent`'s link to `addr` (None: no such link, or no answer)."""
    try:
        for lk in agent.get("/v1/snapshot")["links"]:
            if lk["peer_address"] == addr:
                return lk["state"]
    except Exception:
        return None
    return None


def _watch(checks: dict[str, object], timeout: float, every: float) -> dict[str, float | None]:
    """Poll each named predicate until all are true; returns seconds since the call at
    which each first was true (None if never within `timeout`)."""
    t0 = time.monotonic()
    done: dict[str, float | None] = dict.fromkeys(checks)
    deadline = t0 + timeout
    while time.monotonic() < deadline and any(v is None for v in done.values()):
        for name, pred in checks.items():
            if done[name] is None:
                try:
                    ok = pred()
                except Exception:
                    ok = False
                if ok:
                    done[name] = time.monotonic() - t0
        time.sleep(every)
    return done


def _last(d: dict[str, float | None], keys: list[str]) -> float | None:
    vals = [d[k] for k in keys]
    return None if any(v is None for v in vals) else max(vals)


def _first(d: dict[str, float | None], keys: list[str]) -> float | None:
    vals = [d[k] for k in keys if d[k] is not None]
    return min(vals) if vals else None


def run(args: argparse.Namespace, tmp: Path) -> dict:
    rng = random.Random(args.seed)
    poll = args.poll
    with netlab.Lab(3) as lab:
        agents = netlab.Agents(lab, tmp)
        try:
            h1, h2, h3 = lab.hosts
            extra = [lab.add_host(4 + r) for r in range(args.reps)]
            a = {n: agents.start(h, name=n) for n, h in (("h1", h1), ("h2", h2), ("h3", h3))}

            def all_up(name: str, n: int):
                return lambda: sum(
                    1 for lk in a[name].get("/v1/snapshot")["links"] if lk["state"] == "up"
                ) >= n

            for n in a:
                if not wait_until(all_up(n, 2), 15):
                    raise RuntimeError(f"{n} did not see its 2 peers:\n" + a[n].log())
            time.sleep(1.0)

            # -- discovery of a new peer ------------------------------------------------
            disc = []
            for r, h in enumerate(extra):
                print(f"[lab_liveness] discovery {r + 1}/{args.reps}", file=sys.stderr)
                name = f"n{r + 1}"
                new = agents.start(h, name=name)
                checks = {
                    "api": lambda new=new: new.get("/v1/snapshot"),
                    "it_sees_all": lambda new=new: sum(
                        1 for lk in new.get("/v1/snapshot")["links"] if lk["state"] == "up"
                    ) >= 3,
                    **{f"{o}_sees_it": (lambda o=o, h=h: _state(a[o], h.addr) == "up")
                       for o in a},
                }
                t = _watch(checks, 20.0, poll)
                observers = [f"{o}_sees_it" for o in a]
                disc.append({
                    "rep": r + 1, **t,
                    "all_see_it": _last(t, observers),
                    "first_sees_it": _first(t, observers),
                })
                new.close()  # SIGTERM: goodbye; the others drop it at once
                wait_until(lambda h=h: all(_state(a[o], h.addr) is None for o in a), 5.0)
                time.sleep(1.0)

            obs = ["h1", "h2"]

            # -- SIGKILL and restart ------------------------------------------------------
            kill = []
            for r in range(args.reps):
                print(f"[lab_liveness] SIGKILL {r + 1}/{args.reps}", file=sys.stderr)
                time.sleep(rng.uniform(0.0, 1.0))  # (any phase of the ticks: see above)
                a["h3"].kill(signal.SIGKILL)
                down = _watch({o: (lambda o=o: _state(a[o], h3.addr) == "down") for o in obs},
                              15.0, poll)
                a["h3"] = agents.start(h3, name="h3")
                up = _watch({o: (lambda o=o: _state(a[o], h3.addr) == "up") for o in obs}
                            | {"api": lambda: a["h3"].get("/v1/snapshot")}, 20.0, poll)
                kill.append({
                    "rep": r + 1,
                    "down_all": _last(down, obs), "down_first": _first(down, obs),
                    "up_all": _last(up, obs), "up_first": _first(up, obs),
                    "restart_api": up["api"],
                })
                wait_until(all_up("h3", 2), 10)
                time.sleep(1.5)

            # -- the interface goes down and comes back ---------------------------------
            link = []
            for r in range(args.reps):
                print(f"[lab_liveness] link down {r + 1}/{args.reps}", file=sys.stderr)
                # h3's API is reached through the very veth that goes down: its own view
                # is read afterwards from its events (wall-clock `at`), not polled.
                own = EventPoller(a["h3"])
                own.sync()
                time.sleep(rng.uniform(0.0, 1.0))
                t_down = time.time()
                netlab.run("ip", "-n", h3.ns, "link", "set", h3.veth, "down")
                down = _watch({o: (lambda o=o: _state(a[o], h3.addr) == "down") for o in obs},
                              15.0, poll)
                # keep it down --hold s in all, so h3's own agent also gets to call it
                time.sleep(max(0.0, t_down + args.hold - time.time())
                           + rng.uniform(0.0, 1.0))
                t_up = time.time()
                netlab.run("ip", "-n", h3.ns, "link", "set", h3.veth, "up")
                up = _watch({o: (lambda o=o: _state(a[o], h3.addr) == "up") for o in obs},
                            20.0, poll)
                wait_until(all_up("h3", 2), 10)
                time.sleep(0.5)
                evs = [e for _, e in own.poll()]
                own_down = [_wall(e["at"]) - t_down for e in evs if e["type"] == "peer_down"]
                own_up = [_wall(e["at"]) - t_up for e in evs if e["type"] == "peer_up"]
                link.append({
                    "rep": r + 1,
                    "down_all": _last(down, obs), "down_first": _first(down, obs),
                    "down_h3_own": max(own_down) if len(own_down) == len(obs) else None,
                    "up_all": _last(up, obs), "up_first": _first(up, obs),
                    "up_h3_own": max(own_up) if len(own_up) == len(obs) else None,
                    "h3_events": evs,
                })
                time.sleep(1.0)
            return {"discovery": disc, "sigkill": kill, "link_down": link}
        finally:
            agents.close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--reps", type=int, default=5, help="repetitions of each case (5)")
    ap.add_argument("--poll", type=float, default=0.05, help="polling period, s (0.05)")
    ap.add_argument("--hold", type=float, default=4.0,
                    help="seconds the veth stays down in the link-down case (4)")
    ap.add_argument("--seed", type=int, default=1,
                    help="seed of the random waits before each kill or veth change (1)")
    ap.add_argument("--name", default="lab_liveness", help="results file name")
    args = ap.parse_args(argv)
    if not 1 <= args.reps <= 50 or args.poll <= 0:
        ap.error("--reps 1..50, --poll > 0")
    require_lab("lab_liveness")

    info = lab_machine_info()
    with tempfile.TemporaryDirectory(prefix="exotray-labbench-") as d:
        res = run(args, Path(d))

    def row(label: str, items: list[dict], key: str) -> list[str]:
        med, mx, n = med_max([it[key] for it in items])
        def f(v: float | None) -> str:
            return "–" if v is None else f"{v:.2f}"

        return [label, f"{n}/{len(items)}", f(med), f(mx)]

    d, k, lk = res["discovery"], res["sigkill"], res["link_down"]
    rows = [
        row("new peer: its API answers (process start →)", d, "api"),
        row("new peer: all 3 running agents see it up", d, "all_see_it"),
        row("new peer: it sees all 3 up", d, "it_sees_all"),
        row("SIGKILL → h1 and h2 show it down", k, "down_all"),
        row("restart → h1 and h2 show it up", k, "up_all"),
        row("restart → its API answers", k, "restart_api"),
        row("veth down → h1 and h2 show it down", lk, "down_all"),
        row("veth down → its own agent: both peers down (event `at`)", lk, "down_h3_own"),
        row("veth up → h1 and h2 show it up", lk, "up_all"),
        row("veth up → its own agent: both peers up (event `at`)", lk, "up_h3_own"),
    ]
    print(f"## Liveness in the lab (3 agents, mDNS on lab addresses, {args.reps} repetitions, "
          f"polled every {args.poll * 1000:.0f} ms)\n")
    print(machine_line(info) + "\n")
    print(md_table(["event → observed", "seen", "median s", "max s"], rows))
    print("\nDefaults: interval 1 s, 4 probes per link per interval while the link is in "
          "question and 1 at rest (agent/probe/pacing.py), down after 2.5 intervals "
          "without a reply. Times for several observers are until the last one saw it.")
    path = write_json(args.name, {
        "benchmark": "lab_liveness",
        "machine": info,
        "params": vars(args),
        **res,
    })
    print(f"\nJSON: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
