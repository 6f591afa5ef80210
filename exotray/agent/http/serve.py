"""The agent's listening sockets (TCP and UDP on one port number, bound before anything
starts) and the HTTP server on the TCP one (uvicorn inside our loop)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

from exotray.agent.base import limits as L
from exotray.agent.base.fds import LISTEN_BACKLOG, Budget
from exotray.agent.http.guard import guarded_protocol


class _Server(uvicorn.Server):
    """uvicorn inside our loop: the agent owns signals, not uvicorn. Its main loop does
    not wake on a timer at all (uvicorn's wakes ten times a second, to renew the Date
    header and look at `should_exit`): no Date header is sent (`date_header=False`; no
    client of ours reads it), and setting `should_exit` wakes the loop at once. On this
    kind of machine an idle agent's CPU is about 0.37 ms per wake-up of its event loop,
    whatever the wake-up does (docs/benchmarks.md, "What an idle agent's CPU is")."""

    _exit: asyncio.Event | None = None
    _should_exit = False

    @property  # type: ignore[override]
    def should_exit(self) -> bool:
        return self._should_exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._should_exit = value
        if value and self._exit is not None:
            self._exit.set()

    async def main_loop(self) -> None:
        self._exit = asyncio.Event()
        if self._should_exit:
            self._exit.set()
        # on_tick(0) sets the default headers once (no Date: nothing to renew)
        should_exit = await self.on_tick(0)
        while not should_exit:
            await self._exit.wait()
            should_exit = await self.on_tick(1)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def bind_pair(bind: str, port: int, attempts: int = 20) -> tuple[socket.socket, socket.socket]:
    """A listening TCP socket and a UDP socket on the same port number."""
    for _ in range(attempts):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp.bind((bind, port))
            real = tcp.getsockname()[1]
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                udp.bind((bind, real))
            except OSError:
                udp.close()
                raise
        except OSError:
            tcp.close()
            if port != 0:
                raise
            continue
        tcp.listen(LISTEN_BACKLOG)
        tcp.setblocking(False)
        return tcp, udp
    raise OSError(f"no port free for both TCP and UDP on {bind}")


def make_server(app: Starlette, budget: Budget | None = None) -> uvicorn.Server:
    """uvicorn with h11 and the connection limits of http/guard.py (per LAN source and in
    total, a head timeout, a send timeout; loopback never refused). No uvicorn
    `limit_concurrency`: it answered loopback 503 once 128 idle LAN connections were
    open (issue 18 finding 6). `budget`: the caps sized from the open-files limit
    (base/fds.py; the ceilings of limits.py without one). asyncio listens with uvicorn's
    backlog and accepts up to that many connections at each wake-up: LISTEN_BACKLOG,
    which the budget keeps descriptors for."""
    return _Server(uvicorn.Config(
        app,
        http=guarded_protocol(budget),
        backlog=LISTEN_BACKLOG,
        log_config=None,
        log_level="warning",
        access_log=False,
        lifespan="off",
        server_header=False,
        date_header=False,
        timeout_keep_alive=int(L.KEEPALIVE_S),
        h11_max_incomplete_event_size=16 * 1024,
    ))
