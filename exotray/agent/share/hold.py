"""The followed streams' frames read at the agent's ticks, not as they arrive (Linux).

An idle agent's CPU is its wake-ups (docs/design.md, "The ticks between full ones"); with
the probe socket read at the ticks, its peers' stream frames were the last of them at
phases it does not choose: at rest a heartbeat from each peer every few intervals (1.4
wake-ups a second at 8 peers). On Linux, epoll reports a TCP socket readable only once
SO_RCVLOWAT bytes are queued (socket(7)), and setting SO_RCVLOWAT signals it at once when
that many already are (tcp_set_rcvlowat, Linux 4.18 and later). So:

* a followed stream's socket gets a low-water mark of HOLD_BYTES after each read: a
  frame smaller than that waits in the kernel;
* at each tick, a held socket with bytes queued (FIONREAD) gets a mark of 1 and is read
  in the loop's next pass, in the same wake-up as the tick;
* a frame of HOLD_BYTES or more (a large cluster's full snapshot) is read at once;
* a connection no longer followed gets its mark of 1 back (it may go back to the pool).

Only where the ticks are at most HOLD_TICK_MAX_S apart (as the probe socket's hold: a
frame waits a tick at most, so a peer's change still reaches us well within an interval
+ 0.5 s) and on Linux 4.18 or later. Elsewhere frames are read as they arrive, as
before: an older kernel honours the mark but does not signal a socket when it is
lowered, and neither does macOS's kqueue, so a held frame would wait for the next one.
"""

from __future__ import annotations

import array
import fcntl
import logging
import os
import re
import socket
import sys
import termios
from typing import Any

from exotray.agent.probe.pressure import HOLD_TICK_MAX_S

log = logging.getLogger(__name__)

#: a frame shorter than this waits for the tick
HOLD_BYTES = 32 * 1024
#: the first Linux whose setsockopt(SO_RCVLOWAT) signals a socket that is readable now
LINUX_SIGNALS_LOWAT = (4, 18)


def kernel_signals_lowat(platform: str | None = None, release: str | None = None) -> bool:
    if not (platform or sys.platform).startswith("linux") or not hasattr(socket,
                                                                          "SO_RCVLOWAT"):
        return False
    m = re.match(r"(\d+)\.(\d+)", release if release is not None else os.uname().release)
    return m is not None and (int(m[1]), int(m[2])) >= LINUX_SIGNALS_LOWAT


class StreamHold:
    def __init__(self, platform: str | None = None, release: str | None = None) -> None:
        #: the kernel can hold; `holding`: it does, the ticks being short enough (`tick`)
        self.enabled = kernel_signals_lowat(platform, release)
        self.holding = False
        self._socks: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._socks)

    def add(self, key: str, sock: Any) -> None:
        """Hold what arrives on `sock` (a followed stream's connection) until a tick."""
        if self.holding and sock is not None and self._mark(sock, HOLD_BYTES):
            self._socks[key] = sock

    def rearm(self, key: str) -> None:
        """After a read: hold again what comes next (unless the tick has just let
        something through that is still queued: it is read in this wake-up)."""
        sock = self._socks.get(key)
        if sock is not None and self._queued(key, sock) == 0 and not self._mark(
                sock, HOLD_BYTES):
            del self._socks[key]

    def remove(self, key: str) -> None:
        sock = self._socks.pop(key, None)
        if sock is not None:
            self._mark(sock, 1)

    def tick(self, tick_s: float) -> None:
        """At a tick (`tick_s` apart): let every held socket with something queued be
        read now; with ticks too far apart, hold nothing from now on."""
        self.holding = self.enabled and tick_s <= HOLD_TICK_MAX_S
        if not self.holding:
            self.close()
            return
        for key, sock in list(self._socks.items()):
            if self._queued(key, sock) > 0 and not self._mark(sock, 1):
                del self._socks[key]

    def close(self) -> None:
        for key in list(self._socks):
            self.remove(key)

    def _queued(self, key: str, sock: Any) -> int:
        """Bytes waiting in the socket's receive queue (FIONREAD); -1, and no longer
        held, when it is closed under us (its reader ends by itself)."""
        buf = array.array("i", [0])
        try:
            fcntl.ioctl(sock.fileno(), termios.FIONREAD, buf, True)
        except (OSError, ValueError):
            del self._socks[key]
            return -1
        return buf[0]

    @staticmethod
    def _mark(sock: Any, n: int) -> bool:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, n)
            return True
        except (OSError, ValueError) as e:
            log.debug("stream socket: SO_RCVLOWAT %d: %s", n, e)
            return False
