"""The agent's HTTP server (uvicorn inside the agent's loop, agent/http/serve.py) wakes the
event loop only for what it serves: no timer of its own (uvicorn's main loop woke ten
times a second, then once; each wake-up of an idle agent's loop costs about as much CPU
as the work it does). It still answers, and stops when asked.

A real server on a loopback socket; the loop's wake-ups are counted by wrapping
`_run_once` for this test's loop only."""

from __future__ import annotations

import asyncio

import httpx
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from exotray.agent.http.serve import bind_pair, make_server


class _CountingLoop(asyncio.SelectorEventLoop):
    wakeups = 0

    def _run_once(self) -> None:  # one per wake-up: what select returned + timers due
        self.wakeups += 1
        super()._run_once()


async def _idle_and_stop() -> tuple[int, str, bool]:
    app = Starlette(routes=[Route("/ping", lambda r: PlainTextResponse("pong"))])
    tcp, udp = bind_pair("127.0.0.1", 0)
    udp.close()
    server = make_server(app)
    serving = asyncio.create_task(server.serve(sockets=[tcp]))
    while not server.started:
        await asyncio.sleep(0.01)
    port = tcp.getsockname()[1]
    async with httpx.AsyncClient() as client:
        resp = await client.get(f"http://127.0.0.1:{port}/ping")
    loop = asyncio.get_running_loop()
    await asyncio.sleep(0.3)  # the connection's close handled
    before = loop.wakeups  # type: ignore[attr-defined]
    await asyncio.sleep(3.0)  # idle: one wake-up, this sleep's
    idle = loop.wakeups - before  # type: ignore[attr-defined]
    server.should_exit = True
    await asyncio.wait_for(serving, 5.0)  # (its own exit event wakes it: no timer left)
    return idle, resp.text, "date" in resp.headers


def test_an_idle_server_does_not_wake_the_loop_and_stops_when_asked():
    loop = _CountingLoop()
    try:
        idle, text, dated = loop.run_until_complete(_idle_and_stop())
    finally:
        loop.close()
    assert text == "pong" and not dated
    assert idle <= 2  # the test's own sleep (uvicorn's timer: 30 in 3 s; then 3 or 4)
