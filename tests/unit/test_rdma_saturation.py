"""RDMA traffic is the link's traffic for everything that judges or keeps it: a link whose
IP counters are idle while its RDMA port counters are busy saturates, its history rows
and its snapshot carry the total (IP + RDMA) and say RDMA is in it.

The real Agent, its interface monitor, saturation detector, history ring and exo watch;
the edges replaced are the two things that cannot be real here: the interface counters
(no 10 Gbit/s traffic on this machine; `monitor.read`) and the RDMA device (a recorded
/sys/class/infiniband tree, tests/fixtures/linux/infiniband_procfs.ttar, whose counters
the test advances). The clock is injected: no sleeping."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import manual_link
from ttar import untar

from exotray.agent.exo import state as exo
from exotray.agent.hw.sampler import NicInfo
from exotray.agent.runtime import Agent
from exotray.core.settings import Settings

PROCFS = Path(__file__).resolve().parents[1] / "fixtures" / "linux" / "infiniband_procfs.ttar"
IFACE, PEER = "ib0", "10.213.150.2"
NIC = NicInfo(IFACE, True, None, ("10.213.150.1",), (("10.213.150.1", 24),), multicast=True)
#: words of 4 bytes sent per second over RDMA: 2.4 GB/s against a 20 Gbit/s (2.5 GB/s) port
WORDS_PER_S = 600_000_000


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux RDMA counters")
def test_idle_ip_busy_rdma_link_saturates_and_history_holds_the_total(tmp_path):
    tree = untar(PROCFS, tmp_path / "sys")
    (tree / "hfi1_0" / "device" / "net" / IFACE).mkdir(parents=True)  # its IPoIB device
    xmit = tree / "hfi1_0" / "ports" / "1" / "counters" / "port_xmit_data"
    words = int(xmit.read_text())
    now = [5000.0]
    s = Settings(name="a", bind="127.0.0.1", port=0, mdns=False, interval=1.0,
                 state_dir=str(tmp_path / "state"), history_days=0,
                 capacity={IFACE: 20_000.0}, exo_url="http://127.0.0.1:9")
    agent = Agent(s, clock=lambda: now[0])
    agent.exo.sysfs_ib = tree
    ip = [1_000_000, 2_000_000]  # the interface's own counters: 1 kB/s each way, idle
    agent.monitor.carriers.sysfs = None  # (counters given: every tick reads them)
    agent.monitor.read = lambda full: ({IFACE: tuple(ip)}, {IFACE: NIC})
    link = manual_link(agent, PEER, IFACE)

    def second() -> None:
        """One second of the agent: four counter readings, one RDMA read (exowatch's
        poll reads the sysfs tree in its worker thread: called directly here)."""
        for _ in range(4):
            now[0] += 0.25
            ip[0] += 250
            ip[1] += 250
            agent._sample_tick()
        nonlocal words
        words += WORDS_PER_S
        xmit.write_text(f"{words}\n")
        agent.exo._read_host(exo.ExoState(None))

    for _ in range(3):  # IP only, RDMA not yet moving: idle
        agent.exo._read_host(exo.ExoState(None))
        for _ in range(4):
            now[0] += 0.25
            ip[0] += 250
            ip[1] += 250
            agent._sample_tick()
    assert link.state == "up"
    for _ in range(6):
        second()
    assert link.state == "saturated"
    (event,) = agent.events.after(0)
    assert event["type"] == "link_saturated" and event["cause"] == "utilization"
    assert event["rdma"] == "counted"
    assert event["tx_bytes_per_s"] == pytest.approx(2.4e9 + 1000, rel=1e-3)
    assert event["utilization"] == pytest.approx(0.96, abs=0.01)

    # the history rows hold the total, as the detector judged it
    hist = link.history.since(0)
    assert hist["tx_bytes_per_s"][-1] == pytest.approx(2.4e9 + 1000, rel=1e-3)
    assert hist["utilization"][-1] == pytest.approx(0.96, abs=0.01)
    assert hist["state"][-1] == "saturated"
    assert hist["tx_bytes_per_s"][1] == pytest.approx(1000, rel=0.05)  # before: IP only

    # and the snapshot says so, with the same numbers
    (lk,) = agent.snapshot()["links"]
    assert lk["rdma"] == "counted" and lk["state"] == "saturated"
    assert lk["tx_bytes_per_s"] == pytest.approx(hist["tx_bytes_per_s"][-1], rel=1e-3)
    assert (lk["rdma_enabled"], lk["rdma_ports"]) == (None, [])

    # RDMA stops: the link clears, on the total again
    for _ in range(8):
        for _ in range(4):
            now[0] += 0.25
            ip[0] += 250
            ip[1] += 250
            agent._sample_tick()
        agent.exo._read_host(exo.ExoState(None))
    assert [e["type"] for e in agent.events.after(0)] == ["link_saturated", "link_cleared"]
    assert link.state == "up"
