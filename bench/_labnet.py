"""Shared helpers for the lab benchmarks (`lab_rtt.py`, `lab_throughput.py`).

They reuse the project's namespace lab (`tests/lab/netlab.py`): every host is a network
namespace named ``xt…`` on a bridge in its own namespace, with addresses from
10.213.0.0/16, and the root namespace reaches the agents' HTTP APIs only through the lab's
monitor veth. Agents run inside the namespaces with ``--no-mdns`` and each other as
``--peer``. ping and iperf3 run inside the namespaces, bounded by a count or ``-t``.
Everything is torn down by the `Lab` and `Agents` context (also on failure), and only
processes started here are stopped, by PID.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT / "tests", ROOT / "tests" / "lab"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import netlab  # noqa: E402
from helpers import wait_for  # noqa: E402

PORT = 52480


def why_not_available() -> str | None:
    return netlab.why_not_available()


def tool_versions() -> dict:
    out: dict = {}
    for name, cmd in (("iperf3", ["iperf3", "--version"]), ("ethtool", ["ethtool", "--version"])):
        try:
            out[name] = subprocess.run(cmd, capture_output=True, text=True,
                                       timeout=5).stdout.splitlines()[0]
        except (OSError, subprocess.SubprocessError, IndexError):
            out[name] = None
    return out


@contextlib.contextmanager
def two_hosts(tmp: Path, *extra_agent_args: str,
              start_timeout: float = 20.0) -> Iterator[tuple]:
    """A 2-host lab with an agent on each (h1, h2), peered manually, mDNS off.

    Yields (lab, h1, h2, agent1, agent2) once each agent has its link up.
    """
    netlab.cleanup_stale()
    with netlab.Lab(2) as lab:
        agents = netlab.Agents(lab, tmp)
        try:
            h1, h2 = lab.hosts
            a1 = agents.start(h1, *extra_agent_args, name="h1", mdns=False,
                              peers=[f"{h2.addr}:{PORT}"])
            a2 = agents.start(h2, *extra_agent_args, name="h2", mdns=False,
                              peers=[f"{h1.addr}:{PORT}"])
            for a in (a1, a2):
                ok = wait_for(lambda a=a: any(lk["state"] == "up" and lk["rtt_ms"] is not None
                                              for lk in a.get("/v1/snapshot")["links"]),
                              start_timeout, every=0.1)
                if not ok:
                    raise RuntimeError(f"agent {a.name}: link not up after {start_timeout} s\n"
                                       + a.log()[-2000:])
            yield lab, h1, h2, a1, a2
        finally:
            agents.close()


def link_to(agent, addr: str, snap: dict | None = None) -> dict:
    snap = snap if snap is not None else agent.get("/v1/snapshot")
    for lk in snap["links"]:
        if lk["peer_address"] == addr:
            return lk
    raise LookupError(f"no link to {addr}")


# -- ping -----------------------------------------------------------------------------
_PING_RE = re.compile(r"^\[(\d+\.\d+)\].*icmp_seq=(\d+).*?time=([\d.]+) ms", re.M)


def ping(src, dst, count: int, interval: float) -> dict:
    """`ping -D` inside src's namespace: per-packet (wall time of the reply, RTT ms)."""
    deadline = int(count * interval + 10)
    cmd = ["ip", "netns", "exec", src.ns, "ping", "-n", "-D", "-c", str(count), "-i",
           f"{interval:g}", "-W", "2", "-w", str(deadline), dst.addr]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=deadline + 10)
    rows = [(float(m.group(1)), int(m.group(2)), float(m.group(3)))
            for m in _PING_RE.finditer(r.stdout)]
    return {"cmd": " ".join(cmd[4:]), "sent": count, "received": len(rows),
            "t": [x[0] for x in rows], "seq": [x[1] for x in rows],
            "rtt_ms": [x[2] for x in rows]}


# -- exotray per-probe RTTs ------------------------------------------------------------
class ProbePoller(threading.Thread):
    """Polls an agent's /v1/snapshot every `every` s until stopped (or `limit_s`).

    A new probe result is recognised by a change of the agent's `replies_received`
    counter (the agent here has exactly one link), so equal consecutive RTTs are not
    lost and an unchanged value is not counted twice. `skipped` counts replies that
    arrived between two polls beyond the first (only the latest is visible).
    """

    def __init__(self, agent, peer_addr: str, every: float = 0.05, limit_s: float = 120) -> None:
        super().__init__(daemon=True)
        self.agent, self.peer_addr, self.every, self.limit_s = agent, peer_addr, every, limit_s
        self.stop_evt = threading.Event()
        self.t: list[float] = []
        self.rtt_last_ms: list[float] = []
        self.window_t: list[float] = []
        self.window_ms: list[float] = []
        self.polls = 0
        self.poll_errors = 0
        self.skipped = 0
        self.lost_start: int | None = None
        self.lost_end: int | None = None

    def run(self) -> None:
        last_replies = None
        deadline = time.monotonic() + self.limit_s
        nxt = time.monotonic()
        while not self.stop_evt.is_set() and time.monotonic() < deadline:
            try:
                snap = self.agent.get("/v1/snapshot")
                now = time.time()
                self.polls += 1
                c = snap["counters"]
                if self.lost_start is None:
                    self.lost_start = c.get("probes_lost", 0)
                self.lost_end = c.get("probes_lost", 0)
                lk = link_to(self.agent, self.peer_addr, snap)
                replies = c["replies_received"]
                if last_replies is not None and replies != last_replies \
                        and lk["rtt_last_ms"] is not None:
                    self.t.append(now)
                    self.rtt_last_ms.append(lk["rtt_last_ms"])
                    self.skipped += max(0, replies - last_replies - 1)
                last_replies = replies
                if lk["rtt_ms"] is not None:
                    self.window_t.append(now)
                    self.window_ms.append(lk["rtt_ms"])
            except Exception:  # an HTTP hiccup: count it and go on
                self.poll_errors += 1
            nxt += self.every
            self.stop_evt.wait(max(0.0, nxt - time.monotonic()))

    def stop(self) -> None:
        self.stop_evt.set()
        self.join(timeout=5)

    def result(self) -> dict:
        return {"poll_s": self.every, "polls": self.polls, "poll_errors": self.poll_errors,
                "replies_between_polls_not_seen": self.skipped,
                "probes_lost": (self.lost_end or 0) - (self.lost_start or 0),
                "t": self.t, "rtt_last_ms": self.rtt_last_ms,
                "window_t": self.window_t, "window_rtt_ms": self.window_ms}


# -- statistics -----------------------------------------------------------------------
def percentile(xs: list[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100)."""
    if not xs:
        return None
    s = sorted(xs)
    k = (len(s) - 1) * q / 100.0
    lo = int(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def median(xs: list[float]) -> float | None:
    return percentile(xs, 50)
