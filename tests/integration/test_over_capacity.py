"""Traffic above a user-given capacity is real: it is shown as "over capacity" (utilization
above 1), never thrown away as an impossible rate. Only what the hardware could not carry
(the NIC's own speed) is impossible."""

from __future__ import annotations

from helpers import AgentProc, free_port, wait_for

from exotray.ui.demo import PacedStream


def test_rate_above_an_override_is_kept(tmp_path):
    # 1 Mbit/s = 125 kB/s given by the user for loopback; stream about 3x that.
    agent = AgentProc(tmp_path, "over", free_port(), [], "--capacity", "lo=1",
                      "--interval", "0.5")
    stream = PacedStream(400_000, on_s=30.0, off_s=0.0)
    try:
        agent.wait_ready()
        stream.start()

        def lo_over_capacity():
            snap = agent.get("/v1/snapshot")
            lo = next(i for i in snap["interfaces"] if i["name"] == "lo")
            if lo["rx_bytes_per_s"] and lo["rx_bytes_per_s"] > 2 * 125_000:
                return snap, lo
            return None

        got = wait_for(lo_over_capacity, 10.0)
        assert got, f"loopback rate never went over its override:\n{agent.log()}"
        snap, lo = got
        assert lo["capacity_source"] == "override"
        assert lo["capacity_bytes_per_s"] == 125_000
        assert snap["counters"]["rates_rejected_absurd"] == 0
        assert "impossible" not in agent.log()
    finally:
        stream.stop_event.set()
        stream.join(5)
        agent.close()
