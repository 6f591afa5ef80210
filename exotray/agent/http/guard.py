"""What the agent's HTTP server refuses before a request reaches the API (issue 18).

Connections (`guarded_protocol`, uvicorn's h11 protocol with limits): at most
`per_source` open from one non-loopback address, `lan` from all of them and `loopback`
from loopback, each counted apart (base/fds.py sizes them from the open-files limit); a
connection that has not sent a whole request head within HEADER_TIMEOUT_S is closed; a
response the client does not take within SEND_TIMEOUT_S (the write buffer stays over its
high-water mark) ends the connection. LAN and loopback clients have budgets of their own,
so idle LAN connections cannot make the local agent look dead to the tray, and a local
process holding hundreds of connections cannot shut out the peers.

Requests (`RequestGuard`, ASGI middleware): the Host header must name this machine
by an IP address, `localhost`, or its own host name (a page that rebinds a DNS name to
the agent sends its own name, and is refused: 421); a request with an Origin header
(browsers send it) is refused unless the origin is on the same host; and a request that
changes state (POST, PUT, DELETE, PATCH) must carry `content-type: application/json`,
which no cross-site page can send without a CORS preflight that this server never
approves.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from starlette.responses import JSONResponse
from uvicorn.protocols.http.h11_impl import H11Protocol

from exotray.agent.base import limits as L
from exotray.agent.base.fds import Budget
from exotray.agent.http.control import is_loopback

log = logging.getLogger("exotray.agent.runtime")

_STATE_CHANGING = {"POST", "PUT", "DELETE", "PATCH"}


class _Counts:
    """Open connections per non-loopback source and from loopback, shared by one
    server's connections, within a descriptor budget (base/fds.py)."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.by_source: Counter[str] = Counter()
        self.total = 0
        self.loopback = 0
        self.refused = 0

    def take(self, host: str) -> bool:
        b = self.budget
        if is_loopback(host):
            if self.loopback < b.loopback:
                self.loopback += 1
                return True
            return self._refuse(host, f"{self.loopback} open from loopback")
        if self.by_source[host] >= b.per_source or self.total >= b.lan:
            return self._refuse(host, f"{self.by_source[host]} open from it, {self.total} "
                                      "from the LAN")
        self.by_source[host] += 1
        self.total += 1
        return True

    def _refuse(self, host: str, why: str) -> bool:
        self.refused += 1
        if self.refused == 1 or str(self.refused).strip("0") == "1":
            log.warning("HTTP: refusing a connection from %s (%s; refusal %d)", host, why,
                        self.refused)
        return False

    def give(self, host: str) -> None:
        if is_loopback(host):
            self.loopback -= 1
            return
        self.by_source[host] -= 1
        if self.by_source[host] <= 0:
            del self.by_source[host]
        self.total -= 1


def guarded_protocol(budget: Budget | None = None) -> type[H11Protocol]:
    """An h11 protocol class with the connection limits above (one count per server);
    without a budget, the ceilings of limits.py."""
    counts = _Counts(budget or Budget(0, L.MAX_LAN_CONNECTIONS, L.MAX_CONNECTIONS_PER_SOURCE,
                                      L.MAX_LOOPBACK_CONNECTIONS))

    class Guarded(H11Protocol):
        _source: str | None = None
        _head_timer: asyncio.TimerHandle | None = None
        _send_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            peer = transport.get_extra_info("peername")
            host = peer[0] if peer else None
            if host is None or not counts.take(host):
                transport.abort()
                return
            self._source = host
            self._head_timer = self.loop.call_later(L.HEADER_TIMEOUT_S, self._no_head)

        def _no_head(self) -> None:
            if self.cycle is None and not self.transport.is_closing():
                self.transport.abort()  # connected and said nothing whole: a slowloris

        def connection_lost(self, exc: Exception | None) -> None:
            for timer in (self._head_timer, self._send_timer):
                if timer is not None:
                    timer.cancel()
            if self._source is not None:
                counts.give(self._source)
                self._source = None
            super().connection_lost(exc)

        def pause_writing(self) -> None:
            super().pause_writing()
            if self._send_timer is None:
                self._send_timer = self.loop.call_later(L.SEND_TIMEOUT_S, self._too_slow)

        def resume_writing(self) -> None:
            super().resume_writing()
            if self._send_timer is not None:
                self._send_timer.cancel()
                self._send_timer = None

        def _too_slow(self) -> None:
            self._send_timer = None
            if not self.transport.is_closing():
                self.transport.abort()  # it does not read what it asked for

    Guarded.counts = counts  # type: ignore[attr-defined]
    return Guarded


def own_names() -> set[str]:
    """The names this machine answers to in a Host header besides IP addresses."""
    names = {"localhost"}
    for name in (socket.gethostname(), socket.getfqdn()):
        name = name.lower().rstrip(".")
        if name:
            names |= {name, name.split(".")[0], name.split(".")[0] + ".local"}
    return names


def _host_of(value: str) -> str:
    """The host part of a Host header or an origin's netloc, lower case, no port."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def allowed_host(host: str, names: set[str]) -> bool:
    h = _host_of(host)
    try:
        ipaddress.ip_address(h)
        return True
    except ValueError:
        return h.rstrip(".") in names


class RequestGuard:
    """ASGI middleware: Host, Origin and content type (see the module's docstring)."""

    def __init__(self, app: Any, names: set[str] | None = None) -> None:
        self.app = app
        self.names = names if names is not None else own_names()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            why = self.refusal(scope)
            if why is not None:
                status, message = why
                await JSONResponse({"error": message}, status_code=status)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def refusal(self, scope: dict) -> tuple[int, str] | None:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if not host or not allowed_host(host, self.names):
            return 421, (f"Host {host[:60]!r} is not this agent's address or name (a page "
                         "rebinding a DNS name to it?)")
        origin = headers.get("origin")
        if origin is not None:
            netloc = urlsplit(origin).netloc if origin != "null" else ""
            if not netloc or _host_of(netloc) != _host_of(host):
                return 403, f"cross-origin request from {origin[:60]!r} refused"
        if scope.get("method") in _STATE_CHANGING:
            ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if ctype != "application/json":
                return 415, "a request that changes state must be application/json"
        return None
