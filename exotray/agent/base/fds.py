"""The process's file descriptors: the open-files limit raised at start, and the budget
of connections the HTTP server may hold from it (issue 33, point 1).

Every connection the server accepts is a descriptor. With macOS's default soft limit of
256, sixteen LAN hosts holding sixteen stream followers each once took every descriptor:
the counters could not open /proc/net/dev, loopback clients could not connect, and
asyncio logged an accept failure hundreds of thousands of times. So:

- at start the soft limit is raised towards the hard one (`raise_limit`), to at most
  WANTED_FILES (macOS's OPEN_MAX: more makes every subprocess launch slower there);
- the server's caps come from what the process then has (`plan`): RESERVE_FILES are kept
  for the agent's own files and outgoing connections (counters, the probe socket, the
  history database, mDNS, exo, peers' streams), and LISTEN_BACKLOG for a burst of
  connections accepted before they are refused; of the rest, two thirds may be LAN
  connections and one third loopback ones, each under its fixed ceiling in limits.py;
- an accept that fails for want of descriptors is logged once a minute (`quiet_accepts`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
from dataclasses import dataclass
from typing import Any

from exotray.agent.base import limits as L
from exotray.agent.base.throttle import Throttled

log = logging.getLogger("exotray.agent.runtime")

#: the soft open-files limit asked for at start (never lowered; at most the hard limit)
WANTED_FILES = 10240
#: descriptors kept for the agent's own files and sockets: its fixed files (probe and mDNS
#: sockets, the history database with its journal, counters, exo, logs: 64) and every
#: outgoing HTTP connection it may open (MAX_CLIENT_CONNECTIONS)
RESERVE_FILES = 64 + L.MAX_CLIENT_CONNECTIONS
#: connections waiting to be accepted (the listen queue). asyncio accepts up to this many
#: each time the socket is readable, before any of them reaches the server, which may then
#: refuse it: so many descriptors are held for a moment beyond the caps
LISTEN_BACKLOG = 32
#: connections of each kind let in however low the limit (below this the agent says so)
FLOOR_CONNECTIONS = 8


@dataclass(frozen=True)
class Budget:
    """What the HTTP server may hold, from an open-files limit."""
    files: int            # the soft open-files limit the budget comes from
    lan: int              # connections from all non-loopback addresses together
    per_source: int       # ... from one of them
    loopback: int         # connections from loopback (the tray, the CLI, local scripts)

    @property
    def short(self) -> bool:
        """The limit leaves less than the fixed ceilings (a warning at start)."""
        return self.lan < L.MAX_LAN_CONNECTIONS or self.loopback < L.MAX_LOOPBACK_CONNECTIONS


def plan(files: int, in_use: int) -> Budget:
    """The server's caps for a soft limit of `files` with `in_use` descriptors open."""
    free = max(0, files - in_use - RESERVE_FILES - LISTEN_BACKLOG)
    lan = max(FLOOR_CONNECTIONS, min(L.MAX_LAN_CONNECTIONS, free * 2 // 3))
    loopback = max(FLOOR_CONNECTIONS, min(L.MAX_LOOPBACK_CONNECTIONS, free - free * 2 // 3))
    # at least four sources can hold their full share before the LAN total refuses one
    per_source = max(2, min(L.MAX_CONNECTIONS_PER_SOURCE, lan // 4))
    return Budget(files, lan, per_source, loopback)


def in_use() -> int:
    """Descriptors this process has open now (0 where the system cannot say)."""
    for d in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(d))
        except OSError:
            continue
    return 0


def raise_limit(wanted: int = WANTED_FILES) -> int:
    """Raise the soft open-files limit towards min(hard, `wanted`); the soft limit after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (OSError, ValueError) as e:  # macOS: above kern.maxfilesperproc
            log.info("open-files limit stays %d (cannot raise it to %d: %s)", soft, target, e)
    return WANTED_FILES if soft == resource.RLIM_INFINITY else soft


def budget_at_start() -> Budget:
    """Raise the limit, then plan from it; says so when the limit is low."""
    b = plan(raise_limit(), in_use())
    if b.short:
        log.warning("open-files limit %d: the API holds at most %d LAN connections (%d from "
                    "one address) and %d local ones; raise it (ulimit -n) for more",
                    b.files, b.lan, b.per_source, b.loopback)
    return b


_ACCEPT_FAILED = "socket.accept() out of system resource"


def quiet_accepts(loop: asyncio.AbstractEventLoop, throttled: Throttled) -> None:
    """asyncio logs a failed accept with a traceback, once per connection waiting in the
    backlog, every second while descriptors are short: say it once a minute instead.
    Anything else goes to the handler the loop had."""
    previous = loop.get_exception_handler()

    def handler(lp: asyncio.AbstractEventLoop, ctx: dict[str, Any]) -> None:
        if ctx.get("message") == _ACCEPT_FAILED:
            throttled("accept", logging.WARNING, "HTTP: cannot accept connections: %s",
                      ctx.get("exception"))
            return
        if previous is not None:
            previous(lp, ctx)
        else:
            lp.default_exception_handler(ctx)

    loop.set_exception_handler(handler)
