"""Shared helpers for the lab benchmarks lab_detection, lab_liveness and lab_scale
(network namespaces; root needed, iperf3 for lab_detection).

The lab itself is the test suite's `tests/lab/netlab.py`: N namespaces ``xt<tag>h<i>`` on
a bridge in ``xt<tag>br``, addresses from 10.213.0.0/16, IPv6 off, plus a monitor veth
in the root namespace so this process reaches the agents' HTTP APIs. Agents are started
*inside* the namespaces (`netlab.Agents` / `helpers.AgentProc`), with mDNS either off or
limited to their lab address. Everything is torn down by `Lab.close()` in a `with` block.

The HTTP helpers here ignore proxy settings and refuse any host outside 10.213.0.0/16.
(Other lab benchmarks keep their own helpers in `_labnet.py`.)
"""

from __future__ import annotations

import ipaddress
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

_ROOT = Path(__file__).resolve().parent.parent
for _p in (_ROOT / "tests" / "lab", _ROOT / "tests"):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import netlab  # noqa: E402
from helpers import AgentProc  # noqa: E402

__all__ = [
    "LAB_NET",
    "PORT",
    "AgentProc",
    "EventPoller",
    "cpu_s",
    "lab_body_len",
    "lab_get",
    "lab_machine_info",
    "med_max",
    "netlab",
    "require_lab",
    "wait_until",
]

PORT = 52480
LAB_NET = ipaddress.ip_network("10.213.0.0/16")
_CLIENT = httpx.Client(trust_env=False, timeout=2.0)


def _lab_url(url: str) -> str:
    host = urllib.parse.urlsplit(url).hostname or ""
    if ipaddress.ip_address(host) not in LAB_NET:
        raise ValueError(f"refusing non-lab URL {url!r}")
    return url


def lab_get(url: str, timeout: float = 2.0) -> Any:
    """GET JSON from an agent inside the lab; refuses any address outside 10.213/16."""
    r = _CLIENT.get(_lab_url(url), timeout=timeout)
    r.raise_for_status()
    return r.json()


def lab_body_len(url: str, timeout: float = 5.0) -> int:
    """Size of the body of a GET to an agent inside the lab (same guard as `lab_get`)."""
    r = _CLIENT.get(_lab_url(url), timeout=timeout)
    r.raise_for_status()
    return len(r.content)


def require_lab(tool: str) -> None:
    """Exit with status 2 and the reason when the lab cannot be built here."""
    reason = netlab.why_not_available()
    if reason:
        print(f"[{tool}] cannot run: {reason}", file=sys.stderr)
        sys.exit(2)
    netlab.cleanup_stale()  # only labs whose creating process is gone


def wait_until(pred: Callable[[], Any], timeout: float, every: float = 0.05) -> Any:
    """Poll `pred` until truthy (returned) or the deadline (None); HTTP errors count as
    falsy."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            v = pred()
        except (httpx.HTTPError, OSError, ValueError, KeyError, IndexError):
            v = None
        if v:
            return v
        if time.monotonic() >= deadline:
            return None
        time.sleep(every)


class EventPoller:
    """Reads /v1/events?after=SEQ of one agent; remembers when each event was first seen
    (monotonic time of the response that carried it)."""

    def __init__(self, agent: AgentProc) -> None:
        self.agent = agent
        self.seq = 0
        self.seen: list[tuple[float, dict]] = []

    def sync(self) -> None:
        """Skip everything emitted so far."""
        self.seq = int(self.agent.get("/v1/events")["last_seq"])

    def poll(self) -> list[tuple[float, dict]]:
        data = self.agent.get("/v1/events", after=self.seq)
        now = time.monotonic()
        new = [(now, e) for e in data["events"]]
        if new:
            self.seq = max(e["seq"] for _, e in new)
        self.seen += new
        return new

    def wait_for(self, type_: str, timeout: float, every: float = 0.05,
                 ) -> tuple[float, dict] | None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                for t, e in self.poll():
                    if e["type"] == type_:
                        return t, e
            except (httpx.HTTPError, OSError):
                pass
            if time.monotonic() >= deadline:
                return None
            time.sleep(every)


def cpu_s(proc: Any) -> float:
    t = proc.cpu_times()
    return t.user + t.system


def med_max(values: list[float | None]) -> tuple[float | None, float | None, int]:
    """(median, max, n) of the values that are not None."""
    vs = [v for v in values if v is not None]
    if not vs:
        return None, None, 0
    return statistics.median(vs), max(vs), len(vs)


def lab_machine_info() -> dict:
    from _harness import machine_info

    info = machine_info()
    try:
        info["iperf3"] = subprocess.run(
            ["iperf3", "--version"], capture_output=True, text=True, timeout=5
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        info["iperf3"] = None
    return info
