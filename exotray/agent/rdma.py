"""RDMA traffic, which bypasses the IP interface counters (a busy JACCL link would look
idle without it).

Linux: the port counters of `/sys/class/infiniband/DEV/ports/N/counters/`
`port_xmit_data` and `port_rcv_data` count octets divided by 4 (the kernel's
Documentation/ABI/stable/sysfs-class-infiniband: "Total number of data octets, divided
by 4 (lanes), transmitted/received on all VLs"); the network interface a port belongs to
is `ports/N/gid_attrs/ndevs/0` (same document: "The net-device's name associated with
the GID resides at index <gid-index>") or, failing that, the device's `device/net/`
directory. A port without a net device is skipped.

macOS: no counters. `rdma_ctl status` says whether RDMA is enabled (exo's own reader,
src/exo/utils/info_gatherer/info_gatherer.py `RdmaCtlStatus`, looks for "enabled" /
"disabled" in it) and `ibv_devinfo` lists each device (`hca_id: rdma_en3`) with its
ports (`port: 1`, `state: PORT_ACTIVE (4)`; the format of rdma-core's ibv_devinfo, the
one exo's app parses in app/EXO/EXO/Services/NetworkStatusService.swift). The commands
run through a `run` seam so the parsing is tested on Linux.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

SYSFS_IB = "/sys/class/infiniband"
#: the counters count 4-byte words
WORD = 4
COMMAND_TIMEOUT_S = 3.0


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def read_linux_counters(root: str | Path = SYSFS_IB) -> dict[str, tuple[int, int]]:
    """Network interface -> (received bytes, sent bytes) of the RDMA ports on it, summed
    over devices and ports. Empty where there is no RDMA (no such directory)."""
    out: dict[str, tuple[int, int]] = {}
    root = Path(root)
    try:
        devices = sorted(os.listdir(root))
    except OSError:
        return out
    for dev in devices:
        try:
            ports = sorted(os.listdir(root / dev / "ports"))
        except OSError:
            continue
        for port in ports:
            p = root / dev / "ports" / port
            rx, tx = _read(p / "counters" / "port_rcv_data"), _read(p / "counters" /
                                                                    "port_xmit_data")
            if rx is None or tx is None or not (rx.isdigit() and tx.isdigit()):
                continue
            ndev = _read(p / "gid_attrs" / "ndevs" / "0")
            if not ndev:
                try:
                    nets = sorted(os.listdir(root / dev / "device" / "net"))
                except OSError:
                    nets = []
                ndev = nets[0] if nets else None
            if not ndev:
                continue
            r0, t0 = out.get(ndev, (0, 0))
            out[ndev] = (r0 + int(rx) * WORD, t0 + int(tx) * WORD)
    return out


@dataclass
class RdmaRates:
    """Byte rates per interface from successive counter readings (wrap or reset: no
    rate for that reading)."""

    last: dict[str, tuple[float, int, int]] = field(default_factory=dict)
    rates: dict[str, tuple[float, float]] = field(default_factory=dict)

    def update(self, now: float, counters: dict[str, tuple[int, int]]) -> None:
        rates = {}
        for name, (rx, tx) in counters.items():
            prev = self.last.get(name)
            if prev is not None and now > prev[0] and rx >= prev[1] and tx >= prev[2]:
                dt = now - prev[0]
                rates[name] = ((rx - prev[1]) / dt, (tx - prev[2]) / dt)
            self.last[name] = (now, rx, tx)
        for gone in set(self.last) - set(counters):
            del self.last[gone]
        self.rates = rates


# -- macOS ----------------------------------------------------------------------------


def parse_rdma_ctl(text: str) -> bool | None:
    """`rdma_ctl status` -> enabled? (None: cannot tell)."""
    t = text.lower()
    if "disabled" in t:
        return False
    if "enabled" in t:
        return True
    return None


def parse_ibv_devinfo(text: str) -> dict[str, str]:
    """`ibv_devinfo` -> {"rdma_en3": "PORT_ACTIVE", "rdma_en3/2": …} (first port by the
    device's name, further ports as DEV/N)."""
    out: dict[str, str] = {}
    dev = port = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("hca_id:"):
            dev, port = s.split(":", 1)[1].strip() or None, None
        elif s.startswith("port:"):
            port = s.split(":", 1)[1].strip()
        elif s.startswith("state:") and dev and port:
            state = s.split(":", 1)[1].split()
            if state:
                out[dev if port == "1" else f"{dev}/{port}"] = state[0]
    return out


def _run(cmd: list[str]) -> str | None:
    if shutil.which(cmd[0]) is None:
        return None
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                           check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


def macos_status(run: Callable[[list[str]], str | None] = _run) -> dict | None:
    """{"enabled": bool | None, "ports": {device: state}}, or None without rdma_ctl."""
    ctl = run(["rdma_ctl", "status"])
    if ctl is None:
        return None
    info = run(["ibv_devinfo"])
    return {"enabled": parse_rdma_ctl(ctl), "ports": parse_ibv_devinfo(info or "")}
