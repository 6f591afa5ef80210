"""Path-MTU probes on the probe socket (issue 31, point 4; what they mean: core/pathmtu.py).

An MTU request is a probe header of type MTU_REQUEST (with its tag when a cluster key is
set) padded with zeros to the size asked for, less the IPv4 and UDP headers, sent with
"don't fragment" (Linux: IP_PMTUDISC_PROBE, which also ignores the kernel's cached path
MTU, so the frame really goes out at that size; macOS: IP_DONTFRAG). The reflector reads
only the header (the socket reads a probe's length: the padding is cut off, MSG_TRUNC)
and answers with the header alone, type MTU_REPLY: a reply no larger than a probe. An
agent before this one drops the datagram (wrong size) and never answers.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from exotray.agent.probe.datagram import (
    MAGIC,
    MTU_REPLY,
    MTU_REQUEST,
    PROBE_LEN,
    TAG_LEN,
    Probe,
    ProbeError,
    decode,
    encode,
    seal,
    unseal,
)

log = logging.getLogger(__name__)

#: IPv4 (20) and UDP (8) headers: a frame of `size` bytes carries size - 28 of payload
HEADERS = 28
#: Linux: IP_MTU_DISCOVER = 10, IP_PMTUDISC_PROBE = 3 (ip(7)); xnu: IP_DONTFRAG = 28
IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_PROBE = getattr(socket, "IP_PMTUDISC_PROBE", 3)
IP_DONTFRAG_DARWIN = 28

Target = tuple[str, int]


def is_mtu(data: bytes) -> bool:
    return len(data) > 4 and data[:4] == MAGIC and data[4] in (MTU_REQUEST, MTU_REPLY)


def request(key: bytes | None, seq: int, t1: int, size: int) -> bytes:
    head = seal(key, encode(Probe(MTU_REQUEST, seq, t1, 0, 0)))
    return head + bytes(max(0, size - HEADERS - len(head)))


def dont_fragment(sock: socket.socket, platform: str = sys.platform) -> bool:
    """Every datagram of the socket leaves with DF set (probes are small anyway)."""
    try:
        if platform.startswith("linux"):
            sock.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_PROBE)
        elif platform == "darwin":
            sock.setsockopt(socket.IPPROTO_IP, IP_DONTFRAG_DARWIN, 1)
        else:
            return False
    except OSError as e:
        log.info("no don't-fragment on the probe socket (%s): path MTU unknown", e)
        return False
    return True


class MtuProbes:
    """The MTU requests of one ProbeSocket: sent, answered, reflected, expired.
    `on_result(target, size, answered, sent_at)` for each of ours (`sent_at` on the
    socket's clock)."""

    def __init__(self, owner: Any,  # (the probe/udp.py ProbeSocket it is part of)
                 on_result: Callable[[Target, int, bool, float], None] | None = None,
                 ) -> None:
        self.owner = owner
        self.on_result = on_result or (lambda *_: None)
        self.pending: OrderedDict[int, tuple[Target, int, float, int]] = OrderedDict()
        self.enabled = False

    def send(self, target: Target, size: int, ifindex: int | None = None) -> bool:
        o = self.owner
        if o.sock is None or not self.enabled:
            return False
        o._seq = (o._seq + 1) & 0xFFFF_FFFF_FFFF_FFFF
        t1 = time.time_ns()
        data = request(o.key, o._seq, t1, size)
        try:
            if ifindex is None:
                o.sock.sendto(data, target)
            else:
                o._sendmsg_via(data, target, ifindex)
        except OSError as e:
            # EMSGSIZE: larger than the interface (or, on macOS, the path) takes
            o.counters["mtu_send_errors"] += 1
            if e.errno == errno.EMSGSIZE:
                self.on_result(target, size, False, o.clock())
            return False
        o.counters["mtu_probes_sent"] += 1
        self.pending[o._seq] = (target, size, o.clock(), t1)
        return True

    def read(self, data: bytes) -> Probe | None:
        """The header of an MTU datagram, None (counted) when it is not a valid one."""
        o = self.owner
        try:
            return decode(unseal(o.key, data[:PROBE_LEN + (TAG_LEN if o.key else 0)]))
        except ProbeError as e:
            o.counters["datagrams_unauthenticated" if str(e) == "auth"
                       else "datagrams_malformed"] += 1
            return None

    def datagram(self, p: Probe, addr: tuple, arrived: tuple[int, str] | None = None,
                 ) -> None:
        """A valid MTU datagram (`read`): a peer's request answered, through the
        interface it came in on as a probe's is (a Mac's 169.254/16 on two interfaces),
        or the answer to one of ours."""
        o = self.owner
        if p.type == MTU_REQUEST:
            if o.sock is None or not o._budget.allow(addr[0], o.clock()):
                o.counters["requests_rate_limited"] += 1
                return
            if o.answer(seal(o.key, encode(Probe(MTU_REPLY, p.seq, p.t1, 0, 0))), addr,
                        arrived):
                o.counters["mtu_requests_reflected"] += 1
            return
        got = self.pending.get(p.seq)
        if got is None or got[0] != (addr[0], addr[1]) or got[3] != p.t1:
            return
        del self.pending[p.seq]
        o.counters["mtu_replies"] += 1
        self.on_result(got[0], got[1], True, got[2])

    def expire(self, horizon: float) -> None:
        while self.pending:
            seq, (target, size, sent, _) = next(iter(self.pending.items()))
            if sent > horizon:
                break
            del self.pending[seq]
            self.on_result(target, size, False, sent)

    def forget(self, target: Target) -> None:
        for seq in [s for s, v in self.pending.items() if v[0] == target]:
            del self.pending[seq]
