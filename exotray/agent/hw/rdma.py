"""RDMA traffic, which bypasses the IP interface counters (a busy JACCL link would look
idle without it).

Linux: the port counters of `/sys/class/infiniband/DEV/ports/N/counters/`
`port_xmit_data` and `port_rcv_data` count octets divided by 4 (the kernel's
Documentation/ABI/stable/sysfs-class-infiniband: "Total number of data octets, divided
by 4 (lanes), transmitted/received on all VLs"); the network interface a port belongs to
is `ports/N/gid_attrs/ndevs/0` (same document: "The net-device's name associated with
the GID resides at index <gid-index>") or, failing that, the device's `device/net/`
directory. A port without a net device is skipped. Kernels before 4.5 keep mlx4's 64-bit
counters in `counters_ext/port_{rcv,xmit}_data_64` (also in words; Prometheus procfs'
sysfs/class_infiniband.go reads them the same way); a device without a PMA answers
"N/A (no PMA)" (node_exporter's recorded i40iw0). Soft-RoCE (rxe) and soft-iWARP (siw)
have no `counters/` at all (the kernel makes it only for devices with `process_mad`):
their traffic goes through the net device, whose IP counters already count it.

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


#: A 32-bit PMA counter (PortXmitData / PortRcvData where the extended counters are not
#: used) stops at all ones (InfiniBand spec, PortCounters): from then on it says nothing.
SATURATED_32 = 2**32 - 1


@dataclass(frozen=True)
class PortCounters:
    """One RDMA port's data counters, in bytes (None: unknown) and its net device."""

    device: str
    port: str
    net: str | None
    rx_bytes: int | None
    tx_bytes: int | None
    #: the directory they came from ("counters", "counters_ext"), or why they are unknown
    source: str


def _count(path: Path) -> int | str:
    """A counter file -> its value in words, or why not ("missing", "N/A (no PMA)", …)."""
    text = _read(path)
    if text is None:
        return "missing"
    if not text.isdigit():
        return text[:32] or "empty"
    return int(text)


def _port_counters(port_dir: Path) -> tuple[int | None, int | None, str]:
    # kernels before 4.5 (mlx4) put the 64-bit counters apart, in counters_ext
    ext = (_count(port_dir / "counters_ext" / "port_rcv_data_64"),
           _count(port_dir / "counters_ext" / "port_xmit_data_64"))
    if all(isinstance(v, int) for v in ext):
        return ext[0] * WORD, ext[1] * WORD, "counters_ext"  # type: ignore[operator]
    rx, tx = (_count(port_dir / "counters" / "port_rcv_data"),
              _count(port_dir / "counters" / "port_xmit_data"))
    why = next((v for v in (rx, tx) if not isinstance(v, int)), None)
    if why is not None:
        return None, None, str(why)
    if SATURATED_32 in (rx, tx):
        return None, None, "saturated 32-bit counter"
    return rx * WORD, tx * WORD, "counters"  # type: ignore[operator]


def _net_of(dev_dir: Path, port: str) -> str | None:
    """The net device of an RDMA port: its GID 0's (RoCE), else the PCI device's only
    net device, else the one whose `dev_port` (0-based) is this port (IPoIB on a
    two-port HCA); None when that cannot be told."""
    ndev = _read(dev_dir / "ports" / port / "gid_attrs" / "ndevs" / "0")
    if ndev:
        return ndev
    try:
        nets = sorted(os.listdir(dev_dir / "device" / "net"))
    except OSError:
        return None
    if len(nets) == 1:
        return nets[0]
    for net in nets:
        dev_port = _read(dev_dir / "device" / "net" / net / "dev_port")
        if dev_port and dev_port.isdigit() and port.isdigit() and int(dev_port) + 1 == int(port):
            return net
    return None


def read_ports(root: str | Path = SYSFS_IB) -> list[PortCounters]:
    """Every RDMA port under `root` with its data counters (4-byte words -> bytes)."""
    out: list[PortCounters] = []
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
            rx, tx, source = _port_counters(root / dev / "ports" / port)
            out.append(PortCounters(dev, port, _net_of(root / dev, port), rx, tx, source))
    return out


def read_linux_counters(root: str | Path = SYSFS_IB) -> dict[str, tuple[int, int]]:
    """Network interface -> (received bytes, sent bytes) of the RDMA ports on it, summed
    over devices and ports. An interface with a port whose counters are unknown (missing,
    "N/A (no PMA)", a saturated 32-bit counter) is left out: its RDMA traffic is unknown,
    not zero. Empty where there is no RDMA (no such directory)."""
    out: dict[str, tuple[int, int]] = {}
    unknown: set[str] = set()
    for p in read_ports(root):
        if p.net is None:
            continue
        if p.rx_bytes is None or p.tx_bytes is None:
            unknown.add(p.net)
            continue
        r0, t0 = out.get(p.net, (0, 0))
        out[p.net] = (r0 + p.rx_bytes, t0 + p.tx_bytes)
    return {k: v for k, v in out.items() if k not in unknown}


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
