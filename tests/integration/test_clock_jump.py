"""A wall-clock step (as after a laptop sleeps, or NTP steps the clock) while probing:
no negative or absurd RTT, the link stays up, history stays monotonic. The step is made
in this process only (its time.time_ns), never on the machine."""

from __future__ import annotations

import asyncio
import time

from helpers import AgentProc, free_port

from exotray.agent.probe import udp as probe_mod
from exotray.agent.runtime import Agent
from exotray.core.settings import Settings


def test_wall_clock_steps_forward_and_back(tmp_path, monkeypatch):
    offset = [0]
    real = time.time_ns
    monkeypatch.setattr(probe_mod.time, "time_ns", lambda: real() + offset[0])
    # Kernel receive stamps follow the real clock, which this test cannot step: use
    # user-space stamps so the whole probe sees the stepped clock, as it would for real.
    monkeypatch.setattr(probe_mod, "SO_TIMESTAMPNS", 0x7FFF)
    peer = AgentProc(tmp_path, "peer", free_port(), [])
    peer.wait_ready()

    async def main() -> dict:
        s = Settings(name="me", bind="127.0.0.1", port=0, mdns=False, interval=0.5,
                     peers=(f"127.0.0.1:{peer.port}",), state_dir=str(tmp_path / "me"))
        agent = Agent(s)
        await agent.start()
        try:
            assert not agent.probe.kernel_timestamps
            for _ in range(40):
                await asyncio.sleep(0.1)
                if agent.snapshot()["links"][0]["state"] == "up":
                    break
            seen: list[dict] = []
            for step in (3600 * 10**9, -7200 * 10**9, 3600 * 10**9):
                offset[0] += step
                for _ in range(20):  # 2 s after each step
                    await asyncio.sleep(0.1)
                    seen.append(agent.snapshot()["links"][0])
            hist = agent.history(agent.snapshot()["links"][0]["id"], None, 600)
            return {"seen": seen, "hist": hist, "counters": agent.snapshot()["counters"]}
        finally:
            await agent.stop()

    try:
        out = asyncio.run(main())
    finally:
        peer.close()
    seen = out["seen"]
    assert all(lk["state"] == "up" for lk in seen[5:]), [lk["state"] for lk in seen]
    # A step measured as an RTT would be ±3,600,000 ms: a loaded loopback's RTT, even
    # hundreds of ms on a busy CI machine, is nowhere near it.
    for lk in seen:
        for key in ("rtt_last_ms", "rtt_max_ms"):
            assert lk[key] is None or 0 <= lk[key] < 1000, (key, lk[key])
    t = out["hist"]["t"]
    assert t == sorted(t) and len(t) >= 8
    # Steps may fall inside a probe's flight: such samples are discarded, not measured.
    assert out["counters"]["replies_received"] > 0
