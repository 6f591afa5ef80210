"""Readings from the OS: per-interface byte counters, link state, speed and addresses."""

from __future__ import annotations

import functools
import ipaddress
import logging
import os
import socket
import sys
from dataclasses import dataclass

import psutil

from exotray.agent.hw import macos_counters
from exotray.agent.hw.linux import SYS_NET

log = logging.getLogger(__name__)

#: why the macOS IFMIB counters are not used (set at their first failure, then psutil's)
_ifmib_failed: str | None = None


@dataclass(frozen=True)
class NicInfo:
    name: str
    up: bool
    #: NIC-reported speed in Mbit/s, None when the driver does not say (psutil gives 0)
    speed_mbit: float | None
    #: IPv4 addresses first, then IPv6 (without scope suffix)
    addresses: tuple[str, ...]
    #: (address, prefix length) of the IPv4 networks on this interface
    networks: tuple[tuple[str, int], ...]
    multicast: bool = False
    loopback: bool = False
    #: the largest frame it sends (bytes), None where the system does not say
    mtu: int | None = None
    #: its hardware address ("aa:bb:cc:dd:ee:ff"), None where it has none (loopback, tun)
    mac: str | None = None


def read_counters(platform: str | None = None) -> dict[str, tuple[int, int]]:
    """{name: (rx_bytes, tx_bytes)} as the kernel counts them, unwrapped by us, not psutil.

    On macOS from sysctl IFMIB (macos_counters): psutil's counters there are rounded to
    1 KiB and cut to 32 bits for us, which wraps several times a second on Thunderbolt.
    If that sysctl fails once, psutil's from then on (its 32-bit wraps are unwrapped by
    stats.counter_delta while they are slower than a sampling interval).
    """
    global _ifmib_failed
    if (platform or sys.platform) == "darwin" and _ifmib_failed is None:
        try:
            return macos_counters.read_counters()
        except OSError as e:
            _ifmib_failed = str(e)
            log.warning("cannot read 64-bit byte counters through sysctl IFMIB (%s); using "
                        "psutil's, which macOS rounds to 1 KiB and wraps at 4 GiB", e)
    return _psutil_counters()


def _psutil_counters() -> dict[str, tuple[int, int]]:
    counters = psutil.net_io_counters(pernic=True, nowrap=False)
    return {name: (c.bytes_recv, c.bytes_sent) for name, c in counters.items()}


class SysfsCounters:
    """Linux: the byte counters of a few interfaces, read through files kept open
    (``statistics/rx_bytes`` and ``tx_bytes`` in sysfs: one decimal number each, the same
    dev_get_stats() as /proc/net/dev). The ticks between full ones need only the
    interfaces that carry links; psutil opens /proc/net/dev and parses every interface's
    line at each call (~290 µs on the benchmark machine's idle agent against ~20 µs for
    one interface here: docs/design.md, "The ticks between full ones").

    sysfs shows the network namespace it was mounted in, which need not be ours (`ip
    netns exec` mounts it again, a bare `unshare -n` does not): `open` accepts it only
    when its list of interfaces and their indexes is the kernel's list for our namespace
    (socket.if_nameindex), and carriers.CarrierReader checks its numbers against
    psutil's."""

    def __init__(self, root: str = SYS_NET) -> None:
        self.root = root
        self._fds: dict[str, tuple[int, int]] = {}

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self._fds)

    def open(self, names: frozenset[str]) -> bool:
        """Read these interfaces from now on; False (none open) when sysfs is not this
        namespace's, or one of them cannot be read there."""
        self.close()
        try:
            ours = {name: index for index, name in socket.if_nameindex()}
            listed = {n for n in os.listdir(self.root)  # (not bonding_masters, a file)
                      if os.path.isdir(os.path.join(self.root, n))}
            if listed != set(ours) or any(
                    _read_int(os.path.join(self.root, n, "ifindex")) != ours[n] for n in names
                    if n in ours):
                return False
        except (OSError, ValueError):
            return False
        for name in names:
            if name not in ours or not self._open_one(name):
                self.close()
                return False
        return True

    def _open_one(self, name: str) -> bool:
        stats = os.path.join(self.root, name, "statistics")
        try:
            rx = os.open(os.path.join(stats, "rx_bytes"), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            tx = os.open(os.path.join(stats, "tx_bytes"), os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            os.close(rx)
            return False
        self._fds[name] = (rx, tx)
        return True

    def read(self) -> dict[str, tuple[int, int]]:
        """{name: (rx_bytes, tx_bytes)} of the open interfaces that could be read (one
        that vanished is closed and left out: the next full read says what happened)."""
        out = {}
        pread = os.pread
        for name, (rx, tx) in list(self._fds.items()):
            try:
                out[name] = (int(pread(rx, 24, 0)), int(pread(tx, 24, 0)))
            except (OSError, ValueError):
                self._close_one(name)
        return out

    def _close_one(self, name: str) -> None:
        for fd in self._fds.pop(name, ()):
            os.close(fd)

    def close(self) -> None:
        for name in list(self._fds):
            self._close_one(name)


def _read_int(path: str) -> int:
    with open(path, "rb") as f:
        return int(f.read())


@functools.lru_cache(maxsize=64)
def _prefix(netmask: str | None) -> int | None:
    if not netmask:
        return None
    try:
        return ipaddress.IPv4Network(f"0.0.0.0/{netmask}").prefixlen
    except ValueError:
        return None


def read_nics() -> dict[str, NicInfo]:
    stats = psutil.net_if_stats()
    addrs = psutil.net_if_addrs()
    out: dict[str, NicInfo] = {}
    for name in set(stats) | set(addrs):
        st = stats.get(name)
        v4: list[str] = []
        v6: list[str] = []
        nets: list[tuple[str, int]] = []
        mac = None
        for a in addrs.get(name, ()):
            if a.family == psutil.AF_LINK and a.address and a.address.count(":") == 5:
                mac = a.address.lower().replace("-", ":")
            if a.family == socket.AF_INET:
                v4.append(a.address)
                p = _prefix(a.netmask)
                if p is not None:
                    nets.append((a.address, p))
            elif a.family == socket.AF_INET6:
                v6.append(a.address.split("%", 1)[0])
        flags = set((getattr(st, "flags", "") or "").split(",")) if st else set()
        out[name] = NicInfo(
            name=name,
            up=bool(st and st.isup),
            speed_mbit=float(st.speed) if st and st.speed and st.speed > 0 else None,
            addresses=tuple(v4 + v6),
            networks=tuple(nets),
            multicast="multicast" in flags,
            loopback="loopback" in flags or any(a.startswith("127.") for a in v4),
            mtu=int(st.mtu) if st and getattr(st, "mtu", 0) else None,
            mac=mac if mac != "00:00:00:00:00:00" else None,
        )
    return out


def source_address(peer: str) -> str | None:
    """The local address the kernel would use to reach `peer` (no packet is sent)."""
    family = socket.AF_INET6 if ":" in peer else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        try:
            s.connect((peer, 9))
            return s.getsockname()[0]
        except OSError:
            return None


def interface_of(address: str | None, nics: dict[str, NicInfo]) -> str | None:
    if address is None:
        return None
    for name, nic in nics.items():
        if address in nic.addresses:
            return name
    return None


#: rtnetlink multicast groups: links, IPv4 and IPv6 addresses (linux/rtnetlink.h)
_RTMGRP_LINK, _RTMGRP_IPV4_IFADDR, _RTMGRP_IPV6_IFADDR = 0x1, 0x10, 0x100


class NicChanges:
    """Whether the interface list may have changed since the last look, so that
    `read_nics` (~0.4 ms: an ioctl per interface and getifaddrs) runs when something
    happened rather than every interval. On Linux a non-blocking rtnetlink socket
    subscribed to link and address changes says so (read at each look, never on the
    loop's reader list); elsewhere, or if it cannot be opened, every look says "maybe".
    The caller still re-reads now and then (the NIC speed changes without a message)."""

    def __init__(self, platform: str | None = None) -> None:
        self.sock: socket.socket | None = None
        if (platform or sys.platform).startswith("linux") and hasattr(socket, "AF_NETLINK"):
            try:
                s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_NONBLOCK,
                                  0)  # NETLINK_ROUTE
                s.bind((0, _RTMGRP_LINK | _RTMGRP_IPV4_IFADDR | _RTMGRP_IPV6_IFADDR))
                self.sock = s
            except OSError as e:
                log.info("no rtnetlink change notices (%s): interfaces read every interval", e)

    def changed(self) -> bool:
        """Whether anything changed since the last call (True when it cannot tell)."""
        if self.sock is None:
            return True
        got = False
        for _ in range(1024):  # bounded: a burst of changes is one change
            try:
                if not self.sock.recv(65536):
                    break
                got = True
            except BlockingIOError:
                break
            except OSError:  # ENOBUFS: messages were lost, so something changed
                got = True
                break
        return got

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None
