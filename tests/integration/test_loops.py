"""The agent's tasks are held by name: a changed interval restarts the periodic loops
by name (not by list position) and leaves the API, the resolver and the allocator's trim
alone; stop ends them all."""

from __future__ import annotations

import asyncio
import dataclasses

import httpx

from exotray.agent.base import trim
from exotray.agent.runtime import Agent
from exotray.core.settings import Settings

PERIODIC = {"tick", "exo"}
#: started once: the API, the manual peers' resolver, glibc's trim (where there is one)
ONCE = {"api", "resolve", *(["trim"] if trim.libc_malloc_trim() else [])}


def test_loops_by_name_restart_and_stop(tmp_path):
    async def main() -> None:
        s = Settings(name="t", bind="127.0.0.1", port=0, mdns=False, interval=0.2,
                     state_dir=str(tmp_path))
        agent = Agent(s)
        await agent.start()
        try:
            before = dict(agent.loops.tasks)
            assert set(before) == PERIODIC | ONCE
            assert all(t.get_name() == n for n, t in before.items())
            agent.reconfigure(dataclasses.replace(agent.settings, interval=0.3))
            after = agent.loops.tasks
            assert set(after) == set(before)
            for name in PERIODIC:
                assert after[name] is not before[name]
            # cancelled, and ended (a poll of exo unwinds its HTTP request first)
            await asyncio.wait([before[n] for n in PERIODIC], timeout=2.0)
            assert all(before[n].cancelled() or before[n].done() for n in PERIODIC)
            assert all(after[n] is before[n] for n in ONCE)
            async with httpx.AsyncClient(trust_env=False) as c:  # the API kept serving
                r = await c.get(f"http://127.0.0.1:{agent.port}/v1/snapshot")
                assert r.status_code == 200 and r.json()["interval_s"] == 0.3
        finally:
            await agent.stop()
        assert not agent.loops
        assert all(t.done() for t in before.values())

    asyncio.run(main())
