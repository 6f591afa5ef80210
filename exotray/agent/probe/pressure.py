"""Whether the probe socket may be read only at the agent's ticks (probe/udp.py
`read_at_ticks`: where the kernel stamps receive times and ticks are at most
HOLD_TICK_MAX_S apart), and when it must be read as datagrams arrive again: when what
arrives between two ticks could fill its receive buffer, whose overflow would drop the
replies to our own probes and the peers' requests with the rest (every link would look
down).

The kernel charges each datagram its whole in-memory size (Linux: ~830 B for a 56-byte
probe on loopback, ~2.3 KiB for a 1,400-byte datagram; 208 KiB default buffer: 256
probes, or 90 large datagrams), while a drain reads at most 57 bytes of each. So the signs are:

* Linux: the buffer half full when a tick comes to read it, or the kernel's count of
  datagrams it dropped on this socket grown (SO_MEMINFO: sk_rmem_alloc, sk_rcvbuf,
  sk_drops);
* anywhere: a datagram longer than any probe (recvmsg's MSG_TRUNC: no probe is), or
  WATCH_AT datagrams or more between two ticks that were not replies to our own probes
  (those are bounded by what we sent; a 64-peer hub at rest gets 16 requests a tick,
  64 with every peer at its full rate).

Any sign reads the socket as datagrams arrive for WATCH_FOR_S, renewed while a sign
lasts. Pure bookkeeping; the socket and its reader are probe/udp.py's.
"""

from __future__ import annotations

import socket
import struct
import sys

#: a request may wait in the socket for the agent's next tick only where ticks come at
#: least this often (the default interval's come every 0.25 s): its prober subtracts the
#: wait (t3 - t2) up to 1 s, and it must stay well inside every prober's timeout
HOLD_TICK_MAX_S = 0.3
#: getsockopt(SOL_SOCKET, SO_MEMINFO): u32 sk_meminfo[] (include/uapi/linux/sock_diag.h:
#: SK_MEMINFO_RMEM_ALLOC 0, _RCVBUF 1, ..., _DROPS 8 since Linux 4.6)
SO_MEMINFO_LINUX = 55
_RMEM_ALLOC, _RCVBUF, _DROPS = 0, 1, 8
#: datagrams between two ticks, not replies to our probes, that read the socket at once
WATCH_AT = 96
#: the buffer this full at a tick reads the socket at once
FILL_FRACTION = 0.5
#: and for this long after the last sign
WATCH_FOR_S = 10.0


class Pressure:
    def __init__(self, platform: str = sys.platform) -> None:
        self._meminfo = platform.startswith("linux")
        self._drops: int | None = None
        #: datagrams read since the last tick that were not replies to our probes, and
        #: whether one of them was longer than any probe
        self.others = 0
        self.truncated = False

    def read(self, others: int, truncated: bool) -> None:
        """A read (the tick's or the reader's) handled `others` datagrams that were not
        replies to our own probes."""
        self.others += others
        self.truncated = self.truncated or truncated

    def kernel(self, sock: socket.socket) -> bool:
        """Linux, before a tick reads the socket: half full, or datagrams dropped since
        the last look. False where the kernel does not say."""
        if not self._meminfo:
            return False
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, SO_MEMINFO_LINUX, 4 * 9)
        except OSError:
            self._meminfo = False
            return False
        info = struct.unpack(f"{len(raw) // 4}I", raw[: len(raw) // 4 * 4])
        if len(info) <= _DROPS:
            return info[_RMEM_ALLOC] >= FILL_FRACTION * info[_RCVBUF]
        drops, last = info[_DROPS], self._drops
        self._drops = drops
        return (last is not None and drops != last) or (
            info[_RMEM_ALLOC] >= FILL_FRACTION * info[_RCVBUF])

    def tick(self, kernel: bool) -> bool:
        """At the tick, after its read: whether any sign showed since the last tick."""
        pressed = kernel or self.truncated or self.others >= WATCH_AT
        self.others, self.truncated = 0, False
        return pressed
