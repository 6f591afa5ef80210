"""An httpx transport whose connections leave through one given interface (issue 16.3).

Snapshot fetches to a peer pinned to an on-link interface (a Mac's Thunderbolt Bridge
with 169.254/16, whose route points at Wi-Fi) must not follow the route table. httpx's
`socket_options` cannot do it: httpcore sets them only after `connect()` returns, when
the SYN has already left through the routed interface. So this transport connects its
own socket, with the option set before `connect()`:

* Linux: SO_BINDTODEVICE (SOL_SOCKET, 25) with the interface name (no privilege needed
  for an unbound socket since Linux 5.7);
* macOS: IP_BOUND_IF (IPPROTO_IP, 25) with the interface index (xnu netinet/in.h).

It plugs an httpcore network backend into httpx's own transport (which has no public
parameter for one; its `_pool` attribute has been stable since httpx 0.18).
"""

from __future__ import annotations

import asyncio
import socket
import sys
from typing import Any

import httpcore
import httpx

SO_BINDTODEVICE_LINUX = 25
SOL_SOCKET_LINUX = 1
IP_BOUND_IF_DARWIN = 25

SocketOption = tuple[int, int, int | bytes]


def bind_options(name: str, index: int, platform: str = sys.platform) -> list[SocketOption]:
    """Socket options that make a TCP socket leave through interface name/index."""
    if platform.startswith("linux"):
        return [(SOL_SOCKET_LINUX, SO_BINDTODEVICE_LINUX, name.encode() + b"\0")]
    if platform == "darwin":
        return [(socket.IPPROTO_IP, IP_BOUND_IF_DARWIN, index)]
    return []


class _Stream(httpcore.AsyncNetworkStream):
    """A connected non-blocking TCP socket, read and written through the running loop."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            async with asyncio.timeout(timeout):
                return await asyncio.get_running_loop().sock_recv(self._sock, max_bytes)
        except TimeoutError as e:
            raise httpcore.ReadTimeout(str(e)) from e
        except OSError as e:
            raise httpcore.ReadError(str(e)) from e

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        try:
            async with asyncio.timeout(timeout):
                await asyncio.get_running_loop().sock_sendall(self._sock, buffer)
        except TimeoutError as e:
            raise httpcore.WriteTimeout(str(e)) from e
        except OSError as e:
            raise httpcore.WriteError(str(e)) from e

    async def aclose(self) -> None:
        self._sock.close()

    async def start_tls(self, *args: Any, **kw: Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("TLS is not used between agents")

    def get_extra_info(self, info: str) -> Any:
        return self._sock if info == "socket" else None


async def bound_connect(host: str, port: int, options: list[SocketOption],
                        local_address: str | None = None) -> socket.socket:
    """A connected non-blocking TCP socket whose options (e.g. SO_BINDTODEVICE,
    IP_BOUND_IF) were set before connect(), so that even the SYN leaves through the
    interface they name. Closed again on any failure."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        for opt in options:
            sock.setsockopt(*opt)
        if local_address:
            sock.bind((local_address, 0))
        await asyncio.get_running_loop().sock_connect(sock, (host, port))
    except BaseException:
        sock.close()
        raise
    return sock


class BoundBackend(httpcore.AsyncNetworkBackend):
    """TCP connections with socket options applied before connect()."""

    def __init__(self, options: list[SocketOption]) -> None:
        self.options = options

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None,
                          socket_options: Any = None) -> httpcore.AsyncNetworkStream:
        options = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1), *self.options]
        try:
            async with asyncio.timeout(timeout):
                sock = await bound_connect(host, port, options, local_address)
        except TimeoutError as e:
            raise httpcore.ConnectTimeout(str(e)) from e
        except OSError as e:
            raise httpcore.ConnectError(str(e)) from e
        return _Stream(sock)

    async def connect_unix_socket(self, *args: Any, **kw: Any) -> httpcore.AsyncNetworkStream:
        raise httpcore.UnsupportedProtocol("no unix sockets here")

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def bound_transport(options: list[SocketOption], limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    t = httpx.AsyncHTTPTransport(limits=limits, trust_env=False)
    t._pool = httpcore.AsyncConnectionPool(
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=BoundBackend(options),
    )
    return t
