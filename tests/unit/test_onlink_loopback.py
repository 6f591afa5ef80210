"""The two ways out through a chosen interface, on loopback only (127.0.0.1, no lab):
a probe sent with IP_PKTINFO, and an HTTP fetch whose socket is bound to the interface
before connect(). The lab test (tests/lab/test_onlink.py) shows them choosing between
two interfaces; these show that they work at all, also where the lab cannot run."""

from __future__ import annotations

import asyncio
import socket
import sys

import httpx
import pytest

from exotray.agent.base.bound_http import bind_options, bound_transport
from exotray.agent.probe import udp as P

pytestmark = pytest.mark.skipif(not sys.platform.startswith(("linux", "darwin")),
                                reason="IP_PKTINFO and interface binding: Linux and macOS")


def _lo() -> tuple[str, int]:
    for index, name in socket.if_nameindex():
        if name in ("lo", "lo0"):
            return name, index
    pytest.skip("no loopback interface by name")


def test_probe_sent_through_an_interface_index_and_answered_through_it():
    _name, index = _lo()
    replies: list[float] = []
    asked: list[tuple[str, int]] = []

    def reply_via(src: str, arrived: int) -> int | None:
        asked.append((src, arrived))
        return arrived

    async def main() -> None:
        refl = P.ProbeSocket(lambda *a: None, lambda *a: None, reply_via=reply_via)
        refl.open("127.0.0.1", 0)
        ps = P.ProbeSocket(lambda t, at, rtt, *_: replies.append(rtt), lambda *a: None)
        ps.open("127.0.0.1", 0)
        try:
            target = refl.sock.getsockname()
            assert ps.send(target, index) is not None
            for _ in range(100):
                await asyncio.sleep(0.01)
                if replies:
                    break
        finally:
            ps.close()
            refl.close()
        assert ps.counters["probes_sent_pinned"] == 1
        assert refl.counters["replies_sent_pinned"] == 1

    asyncio.run(main())
    assert len(replies) == 1
    assert asked == [("127.0.0.1", index)]


def test_fetch_through_a_bound_interface():
    name, index = _lo()
    body = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok"

    async def main() -> tuple[int, bytes]:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(body)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=2)
        async with server, httpx.AsyncClient(
                transport=bound_transport(bind_options(name, index), limits),
                trust_env=False, timeout=2.0) as client:
            r = await client.get(f"http://127.0.0.1:{port}/v1/snapshot")
            return r.status_code, r.content

    assert asyncio.run(main()) == (200, b"ok")


def test_fetch_through_a_missing_interface_is_a_connect_error():
    async def main() -> None:
        limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
        opts = bind_options("xtnosuchif", 999_999)
        async with httpx.AsyncClient(transport=bound_transport(opts, limits),
                                     trust_env=False, timeout=1.0) as client:
            await client.get("http://127.0.0.1:9/")

    with pytest.raises(httpx.ConnectError):
        asyncio.run(main())
