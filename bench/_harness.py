"""Shared helpers for the exotray benchmarks: loopback agents, ports, machine info, output.

Everything here stays on 127.0.0.1: agents are started with ``--bind 127.0.0.1 --no-mdns``
and loopback peers only, and the HTTP helper refuses any other host and ignores proxy
environment variables. Every wait is bounded by a deadline. Agents are stopped by the PID
of the process this module started (SIGTERM, then SIGKILL after a grace period).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

LOOPBACK = "127.0.0.1"
RESULTS_DIR = Path(__file__).resolve().parent / "results"
# no proxy, ever: every request goes straight to 127.0.0.1
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


# -- HTTP ------------------------------------------------------------------------------
def http_get(url: str, timeout: float = 2.0) -> tuple[bytes, int]:
    """GET a loopback URL; return (body, approximate size of status line + headers)."""
    host = urllib.parse.urlsplit(url).hostname
    if host != LOOPBACK:
        raise ValueError(f"refusing non-loopback URL {url!r}")
    with _OPENER.open(url, timeout=timeout) as resp:
        body = resp.read()
        head = len(f"HTTP/1.1 {resp.status} {resp.reason}\r\n") + len(resp.headers.as_bytes())
        return body, head


def get_json(url: str, timeout: float = 2.0) -> dict:
    return json.loads(http_get(url, timeout)[0])


# -- ports -----------------------------------------------------------------------------
def free_port(taken: set[int], attempts: int = 50) -> int:
    """A port free for both TCP and UDP on 127.0.0.1 (exotray uses the same number)."""
    for _ in range(attempts):
        t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            t.bind((LOOPBACK, 0))
            port = t.getsockname()[1]
            if port in taken:
                continue
            u.bind((LOOPBACK, port))
            taken.add(port)
            return port
        except OSError:
            continue
        finally:
            t.close()
            u.close()
    raise RuntimeError("no free TCP+UDP port pair on 127.0.0.1")


# -- agents ----------------------------------------------------------------------------
@dataclass
class Agent:
    name: str
    port: int
    proc: subprocess.Popen
    log_path: Path
    peers: list[int] = field(default_factory=list)

    @property
    def base(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def snapshot(self, timeout: float = 2.0) -> dict:
        return get_json(self.base + "/v1/snapshot", timeout)

    def log_tail(self, n: int = 20) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


class AgentGroup:
    """Starts agents under one temporary directory; `stop_all()` ends exactly those."""

    def __init__(self, python: str = sys.executable, interval: float | None = None,
                 extra_args: tuple[str, ...] = ()) -> None:
        self.python = python
        self.interval = interval
        #: more `exotray agent` options for every agent (e.g. --sharing stream)
        self.extra_args = tuple(extra_args)
        self.tmp = tempfile.TemporaryDirectory(prefix="exotray-bench-")
        self.root = Path(self.tmp.name)
        self.agents: list[Agent] = []
        self.ports: set[int] = set()

    def reserve(self) -> int:
        return free_port(self.ports)

    def start(self, name: str, port: int, peer_ports: list[int],
              runner: tuple[str, ...] = ("-m", "exotray"),
              env_extra: dict[str, str] | None = None) -> Agent:
        """Start `exotray agent` (through `runner`: a script that takes exotray's
        arguments, e.g. bench/_loop_counter.py) in the group's temporary directory: not in
        the caller's, where `-m exotray` would find a checkout before PYTHONPATH's."""
        state = self.root / name
        state.mkdir(parents=True, exist_ok=True)
        config = state / "config.toml"  # its own: a settings change is saved there, and
        config.touch()  # the user's config is neither read nor written
        cmd = [
            self.python,
            *runner,
            "agent",
            "--name",
            name,
            "--bind",
            LOOPBACK,
            "--port",
            str(port),
            "--no-mdns",
            "--state-dir",
            str(state),
            "--config",
            str(config),
        ]
        if self.interval is not None:
            cmd += ["--interval", str(self.interval)]
        cmd += list(self.extra_args)
        for p in peer_ports:
            cmd += ["--peer", f"{LOOPBACK}:{p}"]
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        env.update(env_extra or {})
        log_path = self.root / f"{name}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=self.root,
            )
        agent = Agent(name, port, proc, log_path, list(peer_ports))
        self.agents.append(agent)
        return agent

    def wait_ready(self, timeout: float = 20.0) -> None:
        """Until every agent answers /v1/snapshot (bounded by `timeout`)."""
        deadline = time.monotonic() + timeout
        pending = list(self.agents)
        while pending:
            if time.monotonic() > deadline:
                names = ", ".join(a.name for a in pending)
                raise RuntimeError(
                    f"agents not ready after {timeout} s: {names}\n" + pending[0].log_tail()
                )
            for a in list(pending):
                if a.proc.poll() is not None:
                    raise RuntimeError(
                        f"agent {a.name} exited with {a.proc.returncode}:\n" + a.log_tail()
                    )
                try:
                    a.snapshot(timeout=0.5)
                    pending.remove(a)
                except OSError:
                    pass
            time.sleep(0.1)

    def wait_links_up(self, agent: Agent, n: int, timeout: float = 20.0) -> dict:
        """Until `agent` reports `n` links all 'up' with an RTT; returns that snapshot."""
        deadline = time.monotonic() + timeout
        snap: dict = {}
        while time.monotonic() < deadline:
            try:
                snap = agent.snapshot()
                links = snap.get("links", [])
                if len(links) >= n and all(
                    lk.get("state") == "up" and lk.get("rtt_ms") is not None for lk in links
                ):
                    return snap
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(
            f"{agent.name}: {n} links not up after {timeout} s: "
            f"{[(lk.get('peer_name'), lk.get('state')) for lk in snap.get('links', [])]}"
        )

    def stop_all(self, grace: float = 5.0) -> None:
        """SIGTERM each agent we started (by PID), wait, SIGKILL what is left."""
        for a in self.agents:
            if a.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    a.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace
        for a in self.agents:
            try:
                a.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                a.proc.kill()
                a.proc.wait(timeout=5)
        self.agents.clear()

    def close(self) -> None:
        try:
            self.stop_all()
        finally:
            self.tmp.cleanup()


# -- machine info and output -----------------------------------------------------------
def machine_info() -> dict:
    cpu_model = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "cpu model", "Hardware"):
                cpu_model = value.strip()
                break
    except OSError:
        pass
    try:
        ping_version = subprocess.run(
            ["ping", "-V"], capture_output=True, text=True, timeout=5
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        ping_version = None
    try:
        from importlib.metadata import version

        exotray_version = version("exotray")
    except Exception:
        exotray_version = None
    return {
        "nproc": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": platform.python_version(),
        "python_impl": platform.python_implementation(),
        "cpu_model": cpu_model,
        "platform": platform.platform(),
        "kernel": platform.release(),
        "exotray": exotray_version,
        "ping": ping_version,
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def machine_line(info: dict) -> str:
    return (
        f"Machine: {info['cpu_model'] or 'unknown CPU'}, nproc {info['nproc']}, "
        f"Python {info['python']} ({info['python_impl']}), {info['platform']}, "
        f"exotray {info['exotray']}"
    )


def md_table(headers: list[str], rows: list[list[str]]) -> str:
    out = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if i else "---" for i in range(len(headers))) + "|",
    ]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def write_json(name: str, data: dict) -> Path:
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
    return path
