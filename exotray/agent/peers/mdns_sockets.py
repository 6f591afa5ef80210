"""mDNS sockets tied to one interface, so a record is known to have come in on it (issue 18).

python-zeroconf does not say on which interface a packet came in: one `Zeroconf` keeps
one cache, fed by all its sockets, and its listen socket (0.0.0.0:5353) is given on Linux
the mDNS multicast of *every* interface on which any socket of the host joined
224.0.0.251 (IP_MULTICAST_ALL is on by default), and unicast to any local address. So
discovery runs one `Zeroconf` per interface and `tie()`s its sockets to that interface:

- Linux: SO_BINDTODEVICE on the listen and responder sockets: a datagram, multicast or
  unicast, that came in on another interface is not delivered to them (allowed without
  privilege since Linux 5.7); and IP_MULTICAST_ALL=0 on the listen socket: only the
  groups it joined itself, on the interface it joined them on (any Linux since 2.6.31).
- macOS: multicast is delivered only to sockets that joined the group on the interface
  it came in on (xnu bsd/netinet/udp_usrreq.c: udp_input's imo_multi_filter(imo, ifp,
  ...)); IP_BOUND_IF binds the sockets to the interface for the rest
  (packaging/macos/CHECKLIST.md: to be shown on a Mac).

Datagrams that arrived between the socket's creation and these options are read and
dropped. When tying fails, `tie()` says why: that instance's records may then have come
in on any interface mDNS runs on, and discovery says so (and takes addresses on all of
their subnets, as before).
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
from collections.abc import Callable, Iterable

import psutil

SO_BINDTODEVICE = getattr(socket, "SO_BINDTODEVICE", 25)  # Linux <asm-generic/socket.h>
IP_MULTICAST_ALL = 49  # Linux <linux/in.h>; not in Python's socket module
IP_BOUND_IF = 25  # macOS <netinet/in.h>


def interface_of(address: str) -> str | None:
    """The name of the interface that has this IPv4 address, or None."""
    for name, addrs in psutil.net_if_addrs().items():
        if any(a.family == socket.AF_INET and a.address == address for a in addrs):
            return name
    return None


def group_by_interface(addresses: Iterable[str],
                       interface_of=interface_of) -> dict[str, tuple[str, ...]]:
    """{interface name: its addresses}; an address no interface has is its own key."""
    out: dict[str, list[str]] = {}
    for a in sorted(set(addresses)):
        out.setdefault(interface_of(a) or a, []).append(a)
    return {k: tuple(v) for k, v in out.items()}


def ifname(key: str, addrs: tuple[str, ...]) -> str | None:
    """The interface of a group_by_interface() key (None: the address is its own key)."""
    return None if key in addrs else key


def sockets_of(zc) -> list[socket.socket]:
    """The sockets a python-zeroconf instance reads from: its listen socket and its
    responder sockets (before its transports exist, and after)."""
    engine = getattr(zc, "engine", None)
    if engine is None:
        return []
    found = [getattr(engine, "_listen_socket", None),
             *(getattr(engine, "_respond_sockets", None) or [])]
    for t in [*getattr(engine, "readers", []), *getattr(engine, "senders", [])]:
        found.append(getattr(t, "sock", None))
    out: list[socket.socket] = []
    for s in found:
        if s is not None and s.fileno() >= 0 and all(s.fileno() != o.fileno() for o in out):
            out.append(s)
    return out


def _drain(s: socket.socket) -> int:
    n = 0
    while n < 10_000:
        try:
            s.recv(9000, socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            break
        except OSError:
            break
        n += 1
    return n


def tie(zc, ifname: str | None, platform: str = sys.platform) -> str | None:
    """Make the instance's sockets hear only `ifname`. None when done, else why not."""
    if ifname is None:
        return "no interface has this address"
    socks = sockets_of(zc)
    if not socks:
        return "python-zeroconf's sockets were not found"
    try:
        for s in socks:
            if platform.startswith("linux"):
                s.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, ifname.encode())
                if s.getsockname()[0] == "0.0.0.0":
                    s.setsockopt(socket.IPPROTO_IP, IP_MULTICAST_ALL, 0)
            elif platform == "darwin":
                s.setsockopt(socket.IPPROTO_IP, IP_BOUND_IF, socket.if_nametoindex(ifname))
            else:
                return f"not done on {platform}"
    except OSError as e:
        return f"cannot bind its sockets to {ifname}: {e.strerror or e}"
    for s in socks:
        _drain(s)
    return None


#: what a send refused by the system looks like: macOS 15+ without the Local Network
#: permission refuses sends to the local network (EHOSTUNREACH, or EPERM), multicast too
REFUSED_ERRNOS = frozenset({errno.EHOSTUNREACH, errno.EPERM, errno.EACCES})
LOCAL_NETWORK_HINT = ("on macOS: turn exotray on in System Settings › Privacy & Security "
                      "› Local Network, then quit and reopen exotray")


class SendRefused(logging.Handler):
    """python-zeroconf logs a refused send once per socket and moves on (its
    QuietLogger), and with the Local Network permission denied the kernel also drops
    incoming mDNS: a first run then had no peer and only the "peers appear when..." hint.
    This handler, on the "zeroconf" logger while discovery runs, hears those lines and
    calls `said(why)` with what the system said (issue 35 point 3)."""

    def __init__(self, said: Callable[[str], None]) -> None:
        super().__init__(logging.WARNING)
        self.said = said

    def emit(self, record: logging.LogRecord) -> None:
        for arg in record.args if isinstance(record.args, tuple) else ():
            if isinstance(arg, OSError) and arg.errno in REFUSED_ERRNOS:
                self.said(arg.strerror or errno.errorcode.get(arg.errno or 0, "refused"))
                return
