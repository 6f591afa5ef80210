"""Soak runs: agents on the virtual LAN for a while, with load bursts, sampling each
agent's RSS, open fds, threads and asyncio tasks. Used by tests/lab/test_soak.py (2 min)
and bench/soak.py (1 hour, opt-in)."""

from __future__ import annotations

import time
from pathlib import Path

import netlab
from netlab import Agents


def sample(agent) -> dict:
    pid = agent.proc.pid
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = int(next(ln.split()[1] for ln in status.splitlines() if ln.startswith("VmRSS")))
    snap = agent.get("/v1/snapshot")
    return {
        "rss_mib": rss_kb / 1024,
        "fds": len(list(Path(f"/proc/{pid}/fd").iterdir())),
        "threads": len(list(Path(f"/proc/{pid}/task").iterdir())),
        "tasks": snap["counters"]["asyncio_tasks"],
        "links_up": sum(1 for lk in snap["links"] if lk["state"] != "down"),
        "events": _lines(agent.events_path),
    }


def _lines(path: Path) -> int:
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return 0


def run(tmp: Path, hosts: int, seconds: float, every: float, burst_s: int = 5,
        log=print, extra: tuple[str, ...] = (), variants: list[dict] | None = None
        ) -> list[dict]:
    """Samples (one row per agent per round) over `seconds` of mDNS + probes + load.

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
                procs.append(agents.start(h, *extra, *v.get("extra", ()), name=f"n{i + 1}",
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
                        rows.append({"t": round(now - start, 1), "agent": a.name, **sample(a)})
                    log(f"[soak] t={now - start:.0f}s sampled {len(procs)} agents")
                    next_sample += every
                # a bounded load burst between two hosts, rotating
                src, dst = lab.hosts[pair % hosts], lab.hosts[(pair + 1) % hosts]
                pair += 1
                srv = lab.iperf_server(dst)
                cli = lab.iperf_client(src, dst, burst_s, "-b", "200M")  # bursts, not a hog
                cli.wait(burst_s + 30)
                srv.wait(10)
                time.sleep(1)
        finally:
            agents.close()
    return rows
