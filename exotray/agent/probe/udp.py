"""UDP RTT probes and the reflector that answers them (the TWAMP-light idea).

One UDP socket on the agent's port both answers peers' probes and sends our own, each
the fixed 40-byte datagram of probe/datagram.py. The reflector fills t2 (the kernel's
receive timestamp where the OS gives one) and t3 and returns a datagram of exactly the
request's size, so exotray can never amplify traffic. The sender computes RTT =
(t4 - t1) - (t3 - t2), removing the reflector's own delay; t4 is again the kernel's
receive timestamp.

Where the kernel stamps receive times the agent reads the socket only at its ticks
(`read_at_ticks`: no wake-up per datagram); a request waits there up to a tick, which
its prober subtracts (docs/design.md "The probe socket read at the tick").

Anything that is not a well-formed probe is dropped silently and counted; replies that
match no outstanding probe, or come from another address than the one probed, are
dropped and counted as well.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
import sys
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from exotray.agent.probe import mtu
from exotray.agent.probe.budget import SourceBudget
from exotray.agent.probe.datagram import (  # noqa: F401 (the datagram format, re-exported)
    IP_PKTINFO_DARWIN,
    IP_PKTINFO_LINUX,
    MAGIC,
    PROBE_LEN,
    REPLY,
    REQUEST,
    SCM_TIMESTAMP_DARWIN,
    SCM_TIMESTAMPNS,
    SO_TIMESTAMP_DARWIN,
    SO_TIMESTAMPNS,
    SOL_SOCKET_DARWIN,
    SOL_SOCKET_LINUX,
    TAG_LEN,
    Probe,
    ProbeError,
    decode,
    encode,
    ip_pktinfo_type,
    kernel_rx_ns,
    parse_pktinfo,
    pktinfo_cmsg,
    seal,
    tag,
    unseal,
)
from exotray.agent.probe.pressure import HOLD_TICK_MAX_S, WATCH_FOR_S, Pressure

log = logging.getLogger(__name__)

#: datagrams one tick's read handles at most (more than the default buffer holds)
DRAIN_MAX = 1024
#: a reflector holding a probe for longer than this is lying or broken
_MAX_REFLECT_DELAY_NS = 1_000_000_000
#: how far the wall clock may disagree with the monotonic clock over one probe
_CLOCK_SLACK_NS = 20_000_000

Target = tuple[str, int]
#: room for a timestamp (16 bytes) and an in_pktinfo (12 bytes) control message
_ANC_SPACE = socket.CMSG_SPACE(16) + socket.CMSG_SPACE(12)


@dataclass
class _Pending:
    target: Target
    t1: int
    sent_mono: float


class ProbeSocket:
    """The agent's UDP socket: reflector for peers, prober for our links.

    `on_reply(target, sent_mono, rtt_ms, received_mono, held_s)` is called for each
    valid reply (`received_mono`: when it arrived, on `clock`; `held_s`: how long the
    reflector held the request, t3 - t2) and `on_lost(target, sent_mono)` for each probe
    that timed out (`expire`).
    """

    def __init__(
        self,
        on_reply: Callable[[Target, float, float, float, float], None],
        on_lost: Callable[[Target, float], None],
        *,
        timeout_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        key: bytes | None = None,
        reply_via: Callable[[str, int], int | None] | None = None,
    ) -> None:
        self.key = key
        #: (requester's address, arrival interface index) -> the interface index to
        #: answer through, or None for the route table's choice (see hw/onlink.py)
        self.reply_via = reply_via
        self.on_reply = on_reply
        self.on_lost = on_lost
        self.timeout_s = timeout_s
        self.clock = clock
        self.sock: socket.socket | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seq = int.from_bytes(os.urandom(4), "big") << 16
        self._pending: OrderedDict[int, _Pending] = OrderedDict()
        self._budget = SourceBudget()
        self._kernel_ts: str | None = None
        self._pktinfo = False
        self._warned_no_stamp = False
        #: read at the agent's ticks only (`read_at_ticks`); whether a reader is
        #: registered now (always when not held; for a while after a flood when held)
        self._held = False
        self.watched = False
        self._watch_until = -1e18
        self._pressure = Pressure()
        #: path-MTU requests, ours and our peers' (probe/mtu.py)
        self.mtu = mtu.MtuProbes(self)
        #: a datagram came without the kernel's stamp: never held again (a held one
        #: would be stamped when read)
        self._stamps_missing = False
        #: probes refused in a row by sendto with EHOSTUNREACH, per target (reset by a send
        #: to it that works; core/health.py)
        self.unreachable: dict[Target, int] = {}
        self.counters: dict[str, int] = {
            "probes_sent": 0,
            "probe_send_errors": 0,
            # probes sent, and requests answered, through an interface we chose
            "probes_sent_pinned": 0,
            "replies_sent_pinned": 0,
            "replies_received": 0,
            "probes_lost": 0,
            "replies_late": 0,
            "replies_unmatched": 0,
            "replies_bad_times": 0,
            "requests_reflected": 0,
            "requests_rate_limited": 0,
            "datagrams_malformed": 0,
            "datagrams_unauthenticated": 0,
            # what really stamped each received datagram: the kernel, or we after recvmsg
            "rx_kernel_stamped": 0,
            "rx_user_stamped": 0,
            # ticks that found the socket crowded (read as datagrams arrive for a while:
            # probe/pressure.py)
            "probe_socket_crowded": 0,
            # path-MTU requests sent, not sent, answered; and peers' ones answered
            "mtu_probes_sent": 0, "mtu_send_errors": 0, "mtu_replies": 0,
            "mtu_requests_reflected": 0,
        }

    # -- lifecycle -------------------------------------------------------------------
    def open(self, bind: str, port: int, sock: socket.socket | None = None) -> None:
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                sock.bind((bind, port))
            except OSError:
                sock.close()
                raise
        sock.setblocking(False)
        if sys.platform.startswith("linux"):
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                self._kernel_ts = "ns"
            except OSError as e:
                log.info("no kernel receive timestamps (%s); using user-space time", e)
        elif sys.platform == "darwin":
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMP_DARWIN, 1)
                self._kernel_ts = "us"
            except OSError as e:
                log.info("no kernel receive timestamps (%s); using user-space time", e)
        type_ = ip_pktinfo_type()
        if type_ is not None:
            try:  # the arrival interface of each datagram (IP_RECVPKTINFO on macOS)
                sock.setsockopt(socket.IPPROTO_IP, type_, 1)
                self._pktinfo = True
            except OSError as e:
                log.info("no IP_PKTINFO on the probe socket (%s); replies use the routes", e)
        self.mtu.enabled = mtu.dont_fragment(sock)
        self.sock = sock
        #: how probes leave (the socket's sendto; the seam for OS refusals in tests)
        self.send_datagram: Callable[[bytes, Target], int] = sock.sendto
        #: how probes leave through a chosen interface (index)
        self.send_datagram_via: Callable[[bytes, Target, int], int] = self._sendmsg_via
        self._loop = asyncio.get_running_loop()
        self._watch(True)

    @property
    def kernel_timestamps(self) -> bool:
        return self._kernel_ts is not None

    def read_at_ticks(self, tick_s: float) -> bool:
        """Read the socket only when the agent's tick drains it (every `tick_s`) where the
        kernel stamps receive times and ticks come at least every HOLD_TICK_MAX_S; else
        whenever a datagram arrives. Returns whether it is read at the ticks."""
        self._held = (self._kernel_ts is not None and not self._stamps_missing
                      and tick_s <= HOLD_TICK_MAX_S)
        self._watch(not self._held or self.clock() < self._watch_until)
        return self._held

    def _watch(self, on: bool) -> None:
        if on == self.watched or self.sock is None or self._loop is None:
            return
        if on:
            self._loop.add_reader(self.sock.fileno(), self._readable)
        elif not self._loop.is_closed():
            self._loop.remove_reader(self.sock.fileno())
        self.watched = on

    def close(self) -> None:
        if self.sock is not None:
            self._watch(False)
            self.sock.close()
            self.sock = None

    # -- sending ---------------------------------------------------------------------
    def _sendmsg_via(self, data: bytes, target: Target, ifindex: int,
                     spec_dst: str = "0.0.0.0") -> int:
        assert self.sock is not None
        return self.sock.sendmsg([data], [pktinfo_cmsg(ifindex, spec_dst)], 0, target)

    def send(self, target: Target, ifindex: int | None = None) -> float | None:
        """Send one probe to target, through interface `ifindex` when given (else as the
        routes say); a send error counts as an immediate loss. Returns the send time
        (the `sent_at` its reply or loss will be reported with), None if it did not leave."""
        assert self.sock is not None
        self._seq = (self._seq + 1) & 0xFFFF_FFFF_FFFF_FFFF
        seq = self._seq
        now = self.clock()
        t1 = time.time_ns()
        data = seal(self.key, encode(Probe(REQUEST, seq, t1, 0, 0)))
        try:
            if ifindex is None:
                self.send_datagram(data, target)
            else:
                self.send_datagram_via(data, target, ifindex)
        except OSError as e:
            # Unreachable network, interface down, buffer full: the link learns it as loss.
            self.counters["probe_send_errors"] += 1
            if e.errno == errno.EHOSTUNREACH:
                # On macOS 15+ also what a denied Local Network permission looks like.
                self.unreachable[target] = self.unreachable.get(target, 0) + 1
            log.debug("probe to %s:%d not sent: %s", target[0], target[1], e)
            self.on_lost(target, now)
            return None
        self.counters["probes_sent"] += 1
        if ifindex is not None:
            self.counters["probes_sent_pinned"] += 1
        self.unreachable.pop(target, None)
        self._pending[seq] = _Pending(target, t1, now)
        return now

    def expire(self) -> None:
        """Resolve probes older than the timeout as lost (oldest first)."""
        horizon = self.clock() - self.timeout_s
        self.mtu.expire(horizon)
        while self._pending:
            seq, p = next(iter(self._pending.items()))
            if p.sent_mono > horizon:
                break
            del self._pending[seq]
            self.counters["probes_lost"] += 1
            self.on_lost(p.target, p.sent_mono)

    def forget(self, target: Target) -> None:
        """Drop outstanding probes to a target that is no longer probed."""
        self.mtu.forget(target)
        self.unreachable.pop(target, None)
        for seq in [s for s, p in self._pending.items() if p.target == target]:
            del self._pending[seq]

    # -- receiving -------------------------------------------------------------------
    def drain(self) -> None:
        """Handle what has arrived (the probe tick calls this before `expire`)."""
        if not self._held:
            self._read(256)
            self._pressure.tick(False)  # (what is crowded counts only while held)
            return
        kernel = self.sock is not None and self._pressure.kernel(self.sock)
        self._read(DRAIN_MAX)
        if self._pressure.tick(kernel):
            if not self.watched:
                log.info("probe socket crowded between ticks: read as datagrams arrive "
                         "for %.0f s", WATCH_FOR_S)
            self.counters["probe_socket_crowded"] += 1
            self._watch_until = self.clock() + WATCH_FOR_S
            self._watch(True)
        elif self.watched and self.clock() >= self._watch_until:
            self._watch(False)

    def _readable(self) -> None:
        self._read(256)  # bounded, so a flood cannot starve the loop

    def _read(self, most: int) -> None:
        """Read and handle up to `most` datagrams."""
        sock = self.sock
        if sock is None:
            return
        c = self.counters
        mine = c["replies_received"] + c["replies_bad_times"]
        n, truncated = 0, False
        for _ in range(most):
            try:
                data, anc, flags, addr = sock.recvmsg(PROBE_LEN + TAG_LEN + 1, _ANC_SPACE)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as e:
                # e.g. ECONNREFUSED queued by an ICMP port unreachable: nothing to read
                log.debug("probe socket: %s", e)
                continue
            n += 1
            arrived = parse_pktinfo(anc) if self._pktinfo else None
            if mtu.is_mtu(data) and (p := self.mtu.read(data)) is not None:
                self.mtu.datagram(p, addr, arrived)  # (padded: cut off, as meant)
                continue
            truncated = truncated or bool(flags & socket.MSG_TRUNC)
            self.datagram(data, addr, self._rx_time(anc), arrived)
        # (what was not a reply to our own probes: see probe/pressure.py)
        self._pressure.read(n - (c["replies_received"] + c["replies_bad_times"] - mine),
                            truncated)

    def _rx_time(self, anc: list) -> int:
        if self._kernel_ts is not None:
            stamp = kernel_rx_ns(anc, self._kernel_ts)
            if stamp is not None:
                self.counters["rx_kernel_stamped"] += 1
                return stamp
            if not self._warned_no_stamp:
                self._warned_no_stamp = True
                log.warning("kernel receive timestamps were asked for but a datagram came "
                            "without one; such datagrams use user-space time")
            if not self._stamps_missing:  # read as they arrive from now on
                self._stamps_missing = True
                self._held = False
                self._watch(True)
        self.counters["rx_user_stamped"] += 1
        return time.time_ns()

    def datagram(self, data: bytes, addr: tuple, rx_ns: int,
                 arrived: tuple[int, str] | None = None) -> None:
        """Handle one received datagram (public so tests can feed it directly);
        `arrived` is (interface index, local address) from IP_PKTINFO."""
        if mtu.is_mtu(data):
            if (p := self.mtu.read(data)) is not None:
                self.mtu.datagram(p, addr, arrived)
            return
        try:
            p = decode(unseal(self.key, data))
        except ProbeError as e:
            self.counters["datagrams_unauthenticated" if str(e) == "auth"
                          else "datagrams_malformed"] += 1
            return
        if p.type == REQUEST:
            self._reflect(p, addr, rx_ns, arrived)
        else:
            self._reply(p, addr, rx_ns)

    def _reflect(self, p: Probe, addr: tuple, rx_ns: int,
                 arrived: tuple[int, str] | None = None) -> None:
        if p.t2 or p.t3:
            self.counters["datagrams_malformed"] += 1
            return
        if not self._budget.allow(addr[0], self.clock()):
            self.counters["requests_rate_limited"] += 1
            return
        out = seal(self.key, encode(Probe(REPLY, p.seq, p.t1, rx_ns, time.time_ns())))
        if self.answer(out, addr, arrived):
            self.counters["requests_reflected"] += 1

    def answer(self, out: bytes, addr: tuple, arrived: tuple[int, str] | None) -> bool:
        """Send a reply to a request from `addr`: through the interface the request came
        in on, from the address it was sent to, where the route table may pick another
        (an on-link network two interfaces share: 169.254/16 on a Mac)."""
        assert self.sock is not None
        via = None
        if arrived is not None and self.reply_via is not None:
            via = self.reply_via(addr[0], arrived[0])
        try:
            if via is None:
                self.sock.sendto(out, addr)
            else:
                self._sendmsg_via(out, addr, via, arrived[1] if arrived else "0.0.0.0")
                self.counters["replies_sent_pinned"] += 1
        except OSError as e:
            log.debug("reply to %s failed: %s", addr, e)
            return False
        return True

    def _reply(self, p: Probe, addr: tuple, rx_ns: int) -> None:
        pending = self._pending.get(p.seq)
        if pending is None:
            self.counters["replies_late" if p.seq <= self._seq else "replies_unmatched"] += 1
            return
        if (addr[0], addr[1]) != pending.target or p.t1 != pending.t1:
            self.counters["replies_unmatched"] += 1
            return
        del self._pending[p.seq]
        now = self.clock()
        held = p.t3 - p.t2
        wall = rx_ns - p.t1
        mono_ns = (now - pending.sent_mono) * 1e9
        if not 0 <= held <= _MAX_REFLECT_DELAY_NS:
            self.counters["replies_bad_times"] += 1
            self.on_lost(pending.target, pending.sent_mono)
            return
        if wall < 0 or wall > mono_ns + _CLOCK_SLACK_NS or wall < mono_ns - 1e9:
            # The wall clock stepped while the probe was out: not a measurement.
            self.counters["replies_bad_times"] += 1
            return
        rtt_ns = max(0, wall - held)
        self.counters["replies_received"] += 1
        # (when it arrived, on the monotonic clock: the wall clock's span since the send,
        # just checked against the monotonic one, from the send's monotonic time)
        self.on_reply(pending.target, pending.sent_mono, rtt_ns / 1e6,
                      min(now, pending.sent_mono + wall / 1e9), held / 1e9)
