"""Who may start a capacity test and how often (issue 18 finding 8), on the responder's
CapacityTester with real loopback sockets and an injected clock."""

from __future__ import annotations

import asyncio
import logging

import pytest

from exotray.agent.base import limits as L
from exotray.agent.http import captest as C


class Clock:
    t = 100.0

    def __call__(self) -> float:
        return self.t


def test_only_known_peers_and_a_few_sessions_per_window():
    clock = Clock()
    known = {"10.213.0.2"}
    tester = C.CapacityTester("127.0.0.1", known=known.__contains__, clock=clock)

    async def run() -> None:
        with pytest.raises(PermissionError, match="not a peer"):
            await tester.grant("10.213.0.9", 1, 1)
        for _ in range(L.CAPTEST_SESSIONS_PER_SOURCE):  # finish, ask again...
            g = await tester.grant("10.213.0.2", 1, 1)
            assert tester.finish(g["token"]) is not None
            clock.t += 1
        with pytest.raises(C.RateLimited):
            await tester.grant("10.213.0.2", 1, 1)
        # loopback (a local process) is not limited
        g = await tester.grant("127.0.0.1", 1, 1)
        tester.finish(g["token"])
        clock.t += L.CAPTEST_WINDOW_S
        g = await tester.grant("10.213.0.2", 1, 1)
        tester.finish(g["token"])
        await tester.stop()

    asyncio.run(run())


def test_a_100_kb_first_line_is_one_log_line_and_no_traceback(caplog):
    tester = C.CapacityTester("127.0.0.1")
    errors: list[dict] = []

    async def run() -> bytes:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: errors.append(ctx))
        g = await tester.grant("127.0.0.1", 1, 1)
        got = b""
        for _ in range(3):
            reader, writer = await asyncio.open_connection("127.0.0.1", g["port"])
            writer.write(b"x" * 100_000)
            got += await asyncio.wait_for(reader.read(), 5)  # closed, nothing sent
            writer.close()
        tester.finish(g["token"])
        await tester.stop()
        return got

    with caplog.at_level(logging.WARNING):
        assert asyncio.run(run()) == b""
    assert not errors
    lines = [r for r in caplog.records if "first line over" in r.getMessage()]
    assert len(lines) == 1  # three such connections, one line (then once a minute)
    assert not any(r.exc_info for r in caplog.records)
