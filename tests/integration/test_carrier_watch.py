"""Two agents on loopback: once their links are up, each watches its links' carrier
(`lo`), and between full ticks reads that interface's counters alone, from sysfs; the
full ticks read every interface through psutil, as before. Real agents, sockets and
sysfs (Linux)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from helpers import free_port

from exotray.agent.hw import sampler
from exotray.agent.runtime import Agent
from exotray.core.settings import Settings

pytestmark = pytest.mark.skipif(not Path(sampler.SYS_NET, "lo").is_dir(),
                                reason="needs Linux's /sys/class/net with lo")


def test_between_full_ticks_only_the_links_carrier_is_read(tmp_path, monkeypatch):
    full_reads = []
    real = sampler.read_counters
    monkeypatch.setattr(sampler, "read_counters", lambda: full_reads.append(1) or real())
    p1, p2 = free_port(), free_port()

    async def main() -> None:
        agents = [Agent(Settings(name=n, bind="127.0.0.1", port=p, mdns=False, interval=0.4,
                                 peers=(f"127.0.0.1:{q}",), state_dir=str(tmp_path / n)))
                  for n, p, q in (("c1", p1, p2), ("c2", p2, p1))]
        for a in agents:
            await a.start()
        try:
            a = agents[0]
            for _ in range(100):
                if a.monitor.carriers.watched and a.snapshot()["links"][0]["state"] == "up":
                    break
                await asyncio.sleep(0.05)
            assert a.monitor.carriers.watched == {"lo"}
            quick = a.monitor.carriers.sysfs
            assert quick is not None
            quick_reads = []
            read = quick.read
            quick.read = lambda: quick_reads.append(1) or read()  # type: ignore[method-assign]
            fresh = []  # per partial reading: whether lo's rate is a new one
            update = a.monitor.update_rates

            def update_rates(now, counters, nics, partial=False):
                before = a.monitor.ifaces["lo"].rate
                update(now, counters, nics, partial)
                if partial:
                    fresh.append(a.monitor.ifaces["lo"].rate is not before)

            a.monitor.update_rates = update_rates  # type: ignore[method-assign]
            full_reads.clear()
            ticks = a.ticker.count
            await asyncio.sleep(1.2)  # three intervals
            ticks = a.ticker.count - ticks
            # (both agents read psutil at their full ticks: a quarter of each's ticks)
            assert len(full_reads) <= 2 * (ticks // 4 + 1)
            assert len(quick_reads) >= ticks - (ticks // 4 + 1)
            assert fresh and all(fresh)  # each fed lo's rate window (its links' detector)
        finally:
            for a in agents:
                await a.stop()
        assert all(a.monitor.carriers.watched is None for a in agents)

    asyncio.run(main())
