"""Soak runs: agents on the virtual LAN for a while, with load bursts, sampling each
agent's RSS, open fds, threads and asyncio tasks. Used by tests/lab/test_soak.py (2 min)
and bench/soak.py (1 hour, opt-in)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import httpx
import netlab
from netlab import Agents

#: the sampler's read of an agent's snapshot: a slow answer (a busy 2-core machine, an
#: agent's own memory probe holding the GIL) is retried, then skipped for this round —
#: it never ends the run
SNAPSHOT_TIMEOUT_S = 10.0
SNAPSHOT_TRIES = 3


def _snapshot(agent, log) -> dict | None:
    for attempt in range(1, SNAPSHOT_TRIES + 1):
        try:
            r = httpx.get(agent.url + "/v1/snapshot", timeout=SNAPSHOT_TIMEOUT_S,
                          trust_env=False)
            r.raise_for_status()
            return r.json()
        except (httpx.HTTPError, ValueError) as e:
            log(f"[soak] {agent.name}: snapshot read {attempt}/{SNAPSHOT_TRIES} failed: "
                f"{type(e).__name__}: {e}")
    return None


def sample(agent, log=print) -> dict:
    """RSS, fds and threads from /proc; tasks and links from the agent's snapshot (None
    when the agent did not answer this round; `alive` False when the process is gone)."""
    pid = agent.proc.pid
    if agent.proc.poll() is not None:
        log(f"[soak] {agent.name}: process exited with {agent.proc.returncode}")
        return {"alive": False, "rss_mib": None, "fds": None, "threads": None,
                "tasks": None, "links_up": None, "events": _lines(agent.events_path)}
    snap = _snapshot(agent, log)
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss_kb = int(next(ln.split()[1] for ln in status.splitlines()
                          if ln.startswith("VmRSS")))
        fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
        threads = len(list(Path(f"/proc/{pid}/task").iterdir()))
    except (OSError, StopIteration):  # it exited while being read
        log(f"[soak] {agent.name}: /proc/{pid} gone while sampling")
        return {"alive": False, "rss_mib": None, "fds": None, "threads": None,
                "tasks": None, "links_up": None, "events": _lines(agent.events_path)}
    return {
        "alive": True,
        "rss_mib": rss_kb / 1024,
        "fds": fds,
        "threads": threads,
        "tasks": snap["counters"]["asyncio_tasks"] if snap else None,
        "links_up": (sum(1 for lk in snap["links"] if lk["state"] != "down")
                     if snap else None),
        "events": _lines(agent.events_path),
    }


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def run(tmp: Path, hosts: int, seconds: float, every: float, burst_s: int = 5,
        log=print, extra: tuple[str, ...] = (), variants: list[dict] | None = None,
        capacity_mbit: float | None = None) -> list[dict]:
    """Samples (one row per agent per round) over `seconds` of mDNS + probes + load.
    `capacity_mbit`: each agent's LAN interface has this capacity (--capacity), so that a
    200 Mbit/s burst above it saturates its links: events raised and cleared.

    `variants` (one per host, optional): how each agent differs — "extra" arguments,
    "mdns": False (then it is given every other host with --peer, and the others are
    given it), "runner" and "env" (see helpers.AgentProc)."""
    variants = variants or [{} for _ in range(hosts)]
    rows: list[dict] = []
    with netlab.Lab(hosts) as lab:
        agents = Agents(lab, tmp)
        try:
            quiet = [h for h, v in zip(lab.hosts, variants, strict=True) if v.get("mdns") is False]
            procs = []
            for i, (h, v) in enumerate(zip(lab.hosts, variants, strict=True)):
                mdns = v.get("mdns", True)
                peers = [f"{o.addr}:52480" for o in (lab.hosts if not mdns else quiet)
                         if o is not h]
                cap = ("--capacity", f"{h.veth}={capacity_mbit:g}") if capacity_mbit else ()
                procs.append(agents.start(h, *extra, *cap, *v.get("extra", ()),
                                          name=f"n{i + 1}",
                                          mdns=mdns, peers=peers, runner=v.get("runner"),
                                          env=v.get("env")))
            for a in procs:
                a.wait_ready()
            time.sleep(5)
            start = time.monotonic()
            pair = 0
            next_sample = start
            while (now := time.monotonic()) - start < seconds:
                if now >= next_sample:
                    for a in procs:
                        rows.append({"t": round(now - start, 1), "agent": a.name,
                                     **sample(a, log)})
                    log(f"[soak] t={now - start:.0f}s sampled {len(procs)} agents")
                    next_sample += every
                # a bounded load burst between two hosts, rotating
                src, dst = lab.hosts[pair % hosts], lab.hosts[(pair + 1) % hosts]
                pair += 1
                srv = lab.iperf_server(dst)
                cli = lab.iperf_client(src, dst, burst_s, "-b", "200M")  # bursts, not a hog
                for p, wait in ((cli, burst_s + 30), (srv, 10)):
                    try:
                        p.wait(wait)
                    except subprocess.TimeoutExpired:  # a hung burst is ended, not the run
                        log(f"[soak] iperf3 {p.args[3:5]} did not end in {wait} s: killed")
                        p.kill()
                        p.wait(5)
                time.sleep(1)
        finally:
            agents.close()
    return rows
