"""Each link's own bytes on a shared carrier (issue 30): which peer fills `en0`.

A link's `rx`/`tx` are its carrier's (the interface, or the bridge cable to its peer). When
two or more links share a carrier that carries traffic, the kernel's per-connection
counters tell each link's part: the TCP bytes between the link's local interface's
addresses and its peer's address (Linux: hw/sockdiag.py, `source` "sockets"; macOS:
nettop's samples, hw/nettop_source.py, "nettop"; elsewhere none, `source` None).
What is not TCP between the two (UDP, RDMA, other hosts) is the carrier's remainder.

- `FlowBytes`: bytes per (local address, remote address), cumulated from the connections'
  counters. Per connection (by its kernel cookie) the last counters seen are kept; a
  connection's growth since then is counted at each read, and a connection that closed
  is counted by its last counters in the kernel's destroy message. A remote address is
  counted from the read after it is first wanted (the first read only notes where its
  open connections stand, else all their past bytes would land in one interval).
  Which connections there are comes from a dump of the kernel's table, which walks all of
  it (its fixed cost grows with the host's memory, not with its connections); a read
  dumps only when the namespace has established a TCP connection since the last dump
  (sockdiag.tcp_opens, /proc/net/snmp), and once more at the read after (a connection
  accepted is counted a moment before the kernel files it), and every REWALK_S; else it
  asks for the connections it knows, each by its hash (sockdiag.lookup_request). A new
  connection is thus counted from its first byte at the read after it opened.
- `Flows`: when to read (at the full tick, only while a shared carrier carries ≥ 1 Mbit/s
  beyond our own traffic, and HOLD_S after; otherwise the sockets are closed and nothing
  is read) and each link's rates over the interval between two reads (two of nettop's
  samples on macOS: a read that finds no newer one leaves the rates as they were).

Residual error: the last bytes of a connection whose destroy message was lost to a full
buffer (`SockDiag.overflows`), and `tcpi_bytes_acked` counts a SYN and FIN as a byte
each. Bytes sent but not yet acknowledged are counted when acknowledged. On macOS, what
a connection carried after nettop's last sample of it and before it closed.
"""

from __future__ import annotations

import logging
import math
import shutil
import sys
from collections.abc import Callable, Iterable
from typing import NamedTuple

from exotray.agent.base.throttle import Throttled
from exotray.agent.hw import sockdiag
from exotray.agent.hw.nettop_source import NettopSource
from exotray.core.queueing import QueueParams
from exotray.core.stats import Rate

log = logging.getLogger("exotray.agent.hw.monitor")

#: a carrier "carries traffic" from this many bytes/s beyond our own (1 Mbit/s, the
#: queueing cause's bound, core/queueing.py)
CARRYING_BYTES_PER_S = QueueParams().carrying_bytes_per_s
#: connection counters are read for this long after the carrier was last carrying, so
#: that a pause in a transfer does not lose the counters' baseline
HOLD_S = 30.0
#: a connection gone from the reads is remembered for its destroy message until one was
#: lost (the destroy socket's buffer overflowed) and this long passed; else for
#: FORGET_LONG_S: a connection reset by its peer leaves the kernel's table at once, but its
#: destroy message waits for its owner's close(), which may come much later
FORGET_S = 10.0
FORGET_LONG_S = 3600.0
#: the kernel's table is walked at least this often, whatever the count of opens says (a
#: connection established in the same interval as an embryonic one failed leaves the
#: count as it was): the longest a connection can go uncounted
REWALK_S = 30.0

Pair = tuple[bytes, bytes]


class FlowBytes:
    """Bytes per (local, remote) address pair, cumulated while open (see module)."""

    def __init__(self, source: sockdiag.SockDiag | NettopSource | None = None) -> None:
        self.source = source if source is not None else sockdiag.SockDiag()
        #: when the counters last read were read: the source's clock where it has one
        #: (nettop's sample times), else the reader's `now`; None before any
        self.at: float | None = None
        #: cookie -> each open connection as last seen (its counters then)
        self._seen: dict[int, sockdiag.Conn] = {}
        #: the namespace's count of TCP opens at the last dump (sockdiag.tcp_opens)
        self._opens: int | None = None
        self._again = False
        self._walked_at = -math.inf
        #: reads that dumped the kernel's table, and reads that looked connections up
        self.dumps = self.lookups = 0
        #: cookie -> when it was first missing from a read, and the destroy messages lost
        #: by then: gone, its destroy message on its way (at its owner's close())
        self._missing: dict[int, tuple[float, int]] = {}
        #: remote addresses whose connections are counted
        self.known: frozenset[bytes] = frozenset()
        #: (local, remote) -> [rx, tx] bytes since counted
        self.totals: dict[Pair, list[int]] = {}

    def close(self) -> None:
        self.source.close()
        self._seen.clear()
        self._missing.clear()
        self._opens, self._again, self._walked_at = None, False, -math.inf
        self.at = None
        self.known = frozenset()
        self.totals.clear()

    def read(self, wanted: frozenset[bytes], now: float) -> None:
        """Add what connections to `wanted` remote addresses carried since the last read
        (OSError when the kernel cannot be asked)."""
        src = self.source
        if not src.is_open:
            src.open()
            for _ in src.destroyed():  # (sockets closed before we listened: not ours)
                pass
        new = wanted - self.known
        opens = src.opens()  # (before the dump: a connection opened after it shows next)
        for c in src.destroyed(wanted):
            last = self._seen.pop(c.cookie, None)
            self._missing.pop(c.cookie, None)
            if c.remote not in new:  # (else a connection of before this address was counted)
                self._add(c, last)
        if (new or opens is None or opens != self._opens or self._again
                or now - self._walked_at >= REWALK_S):
            # once more at the next read after a change: a connection accepted is counted
            # in `opens` a moment before the kernel files it where a dump finds it
            self._again = opens != self._opens
            self._opens, self._walked_at = opens, now
            self.dumps += 1
            conns = src.connections(wanted)
        else:  # no connection opened since the last dump: the ones known are all there are
            self.lookups += 1
            conns = src.lookup([c.key for c in self._seen.values() if c.remote in wanted])
        answered = set()
        for c in conns:
            answered.add(c.cookie)
            if self._missing:
                self._missing.pop(c.cookie, None)
            last = self._seen.get(c.cookie)
            self._seen[c.cookie] = c
            if c.remote not in new:
                self._add(c, last)
        # a connection gone with no destroy message since messages were lost (a full
        # buffer), for FORGET_S: its message was one of them; forgotten (and at the
        # latest after FORGET_LONG_S: its owner never closed it)
        lost = src.overflows
        for cookie in set(self._seen) - answered:
            since, lost_then = self._missing.setdefault(cookie, (now, lost))
            if (now - since > FORGET_S and lost > lost_then) or now - since > FORGET_LONG_S:
                del self._seen[cookie], self._missing[cookie]
        at = getattr(src, "sampled_at", now)
        if at is None:
            return  # (nothing read yet: nettop's first sample is not whole)
        self.at, self.known = at, wanted
        for pair in [p for p in self.totals if p[1] not in wanted]:
            del self.totals[pair]
        for cookie in [k for k, c in self._seen.items() if c.remote not in wanted]:
            del self._seen[cookie]  # (a remote wanted again starts from where it stands)
            self._missing.pop(cookie, None)

    def _add(self, c: sockdiag.Conn, last: sockdiag.Conn | None) -> None:
        """What connection `c` carried since `last` (it then; None, or counters lower
        than then — another connection by the same name, nettop's: all of it)."""
        t = self.totals.setdefault((c.local, c.remote), [0, 0])
        if last is not None and (c.rx < last.rx or c.tx < last.tx):
            last = None
        t[0] += c.rx - (last.rx if last else 0)
        t[1] += c.tx - (last.tx if last else 0)


class FlowLink(NamedTuple):
    """What Flows knows of a link: its id, the carrier whose counters it shows, its local
    interface's addresses and its peer's address."""

    id: str
    carrier: str | None
    local: tuple[str, ...]
    peer: str


class Flows:
    """Per-link rates of the TCP bytes between its addresses, read where needed."""

    def __init__(self, reader: FlowBytes | None = None, platform: str = sys.platform,
                 ) -> None:
        if reader is None and platform.startswith("linux"):
            reader = FlowBytes()
        elif reader is None and platform == "darwin" and shutil.which("nettop"):
            reader = FlowBytes(NettopSource())
        self.reader = reader
        #: the snapshot's `flow_source` while rates are read (its source's), else None
        self.name: str | None = reader.source.NAME if reader is not None else None
        #: link id -> its own rate, for the links of the carriers read at the last tick
        self.rates: dict[str, Rate] = {}
        self._carrying: dict[str, float] = {}  # carrier -> when it last carried
        self._last: tuple[float, dict[Pair, tuple[int, int]]] | None = None
        self._failed = False
        self._overflows = 0  # (the source's count, as last seen)
        self._now = 0.0
        #: once, then at most once a minute with a count (base/throttle.py)
        self._said = Throttled(lambda: self._now, logger=log)

    def source(self, link_id: str) -> str | None:
        return self.name if link_id in self.rates else None

    def rate(self, link_id: str) -> Rate | None:
        return self.rates.get(link_id)

    def tick(self, now: float, links: Iterable[FlowLink],
             carrying: Callable[[str], bool]) -> None:
        """At the full tick, after the carriers' rates: read the connections of the links
        on shared carriers that carry traffic (`carrying`), or close and forget."""
        if self.reader is None or self._failed:
            return
        by_carrier: dict[str, list[FlowLink]] = {}
        for lk in links:
            if lk.carrier:
                by_carrier.setdefault(lk.carrier, []).append(lk)
        for name, group in by_carrier.items():
            if len(group) >= 2 and carrying(name):
                self._carrying[name] = now
        for name in [n for n, at in self._carrying.items()
                     if now - at > HOLD_S or len(by_carrier.get(n, ())) < 2]:
            del self._carrying[name]
        read = [lk for name in self._carrying for lk in by_carrier[name]]
        wanted = frozenset(a for lk in read if (a := sockdiag.pack_address(lk.peer)))
        if not wanted:
            self.stop()
            return
        before = self.reader.known
        try:
            self.reader.read(wanted, now)
        except OSError as e:
            log.warning("cannot read TCP connection counters (%s): links show their "
                        "interface's traffic only", e)
            self._failed = True
            self.stop()
            return
        lost = self.reader.source.overflows
        if lost > self._overflows:
            self._overflows, self._now = lost, now
            self._said("flow-overflow", logging.WARNING,
                       "own bytes: the kernel's closing messages overflowed our buffer "
                       "(%d times so far): the last bytes of connections that closed then "
                       "are not counted", lost)
        at = self.reader.at
        if at is None or (self._last is not None and at <= self._last[0]):
            return  # (no counters newer than the last: nettop's next sample not yet whole)
        totals = {p: (t[0], t[1]) for p, t in self.reader.totals.items()}
        last, self._last = self._last, (at, totals)
        self.rates = {}
        if last is None:
            return
        dt = at - last[0]
        for lk in read:
            peer = sockdiag.pack_address(lk.peer)
            if peer is None or peer not in before:
                continue  # (counted from this read on: known at the next)
            rx = tx = 0
            for a in dict.fromkeys(sockdiag.pack_address(x) for x in lk.local):
                now_t, was = totals.get((a, peer), (0, 0)), last[1].get((a, peer), (0, 0))
                rx += now_t[0] - was[0]
                tx += now_t[1] - was[1]
            self.rates[lk.id] = Rate(max(0, rx) / dt, max(0, tx) / dt, dt)

    def stop(self) -> None:
        """Nothing to read: the sockets closed, every count forgotten."""
        if self.reader is not None:
            self.reader.close()
        self._carrying.clear()
        self._last = None
        self.rates = {}
