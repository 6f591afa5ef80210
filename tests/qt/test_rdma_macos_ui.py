"""macOS RDMA in the window: a JACCL link's details, table and topology tooltip say RDMA
is enabled (`rdma_ctl status`) and its `rdma_enX` port's state (`ibv_devinfo`), and mark
its rx / tx "IP only: RDMA not counted" rather than showing an idle-looking link.

The real Agent builds the snapshot (exowatch with `platform="darwin"` and its command
seam fed with recorded outputs, tests/fixtures/macos/README.md; exo's state from the
built fixture state_jaccl.json); real widgets show it. The interface counters are the
only other stand-in (`monitor.read`): this machine has no Thunderbolt port."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import manual_link

from exotray.agent.exo import state as exo
from exotray.agent.hw.sampler import NicInfo
from exotray.agent.runtime import Agent
from exotray.core.settings import Settings
from exotray.ui.link import words as linkwords
from exotray.ui.link.model import EXO, UTIL
from exotray.ui.link.table import LinkTable
from exotray.ui.link.view import LinkDetails
from exotray.ui.topology.view import TopologyView

FIX = Path(__file__).resolve().parents[1] / "fixtures"
NODE = "6a1f0c2e93b44d7ab0f11c2d3e4f5a60"  # studio-1: rank 0, rdma_en3 to studio-2
PEER = "169.254.20.11"
NIC = NicInfo("en3", True, None, ("169.254.20.10",), (("169.254.20.10", 16),),
              multicast=True)


def agent_on_a_mac(tmp_path, ibv_devinfo: str | None, rdma_ctl: str | None) -> Agent:
    now = [100.0]
    s = Settings(name="studio-1", bind="127.0.0.1", port=0, mdns=False, interval=1.0,
                 state_dir=str(tmp_path / "state"), history_days=0,
                 capacity={"en3": 80_000.0}, exo_url="http://127.0.0.1:9")
    agent = Agent(s, clock=lambda: now[0])
    calls: list[list[str]] = []

    def run(cmd: list[str]) -> str | None:
        calls.append(cmd)
        return {"rdma_ctl": rdma_ctl, "ibv_devinfo": ibv_devinfo}[cmd[0]]

    agent.exo.platform, agent.exo.run = "darwin", run
    counters = [10_000, 20_000]
    agent.monitor.carriers.sysfs = None  # (counters given: every tick reads them)
    agent.monitor.read = lambda full: ({"en3": tuple(counters)}, {"en3": NIC})
    manual_link(agent, PEER, "en3")
    # one exo poll, its worker-thread half: exo's state, then the macOS commands
    state = exo.parse_state(exo.decode_state((FIX / "exo" / "state_jaccl.json").read_bytes()),
                            NODE)
    agent.exo.polls = 1
    agent.exo._read_host(state)
    agent.exo._set("ok", None, state)
    for _ in range(8):  # two seconds of a quiet interface: 1 kB/s of IP each way
        now[0] += 0.25
        counters[0] += 250
        counters[1] += 250
        agent._sample_tick()
    assert calls == [["rdma_ctl", "status"], ["ibv_devinfo"]][:2 if rdma_ctl else 1]
    return agent


def test_jaccl_link_on_a_mac_says_rdma_enabled_port_active_and_not_counted(qtbot, tmp_path):
    mini = (FIX / "macos" / "ibv_devinfo_macmini_m4pro_tn3205.txt").read_text()
    agent = agent_on_a_mac(tmp_path, mini, "enabled\n")
    cluster = agent.cluster()
    (lk,) = cluster["nodes"][0]["links"]
    assert [i["backend"] for i in lk["exo_instances"]] == ["jaccl"]
    assert (lk["rdma"], lk["rdma_enabled"], lk["rdma_ports"]) == (
        "not_counted", True, [{"device": "rdma_en3", "state": "PORT_ACTIVE"}])
    assert lk["tx_bytes_per_s"] == pytest.approx(1000, rel=0.05)  # IP only: looks idle

    view = LinkDetails()
    qtbot.addWidget(view)
    view.set_link(lk, "studio-1", linkwords.node_interfaces(cluster["nodes"][0]))
    sub = view.panel._subs["tx_bytes_per_s"]
    assert not sub.isHidden()
    assert sub.text() == "IP only: RDMA not counted · RDMA enabled · rdma_en3 PORT_ACTIVE"
    assert "rx / tx are IP traffic only" in view.numbers()["note"]
    # its utilization is unknown (the IP part alone is shown as such), not "idle"
    assert lk["utilization"] == 0.0  # the IP part (1 kB/s of 10 GB/s), a lower bound
    assert view.numbers()["utilization"] == "unknown"
    assert view.numbers()["utilization_detail"].startswith("IP alone: 0 %, ")

    table = LinkTable()
    qtbot.addWidget(table)
    table.set_cluster(cluster)
    assert not table.isColumnHidden(EXO)
    assert table.proxy.index(0, UTIL).data() == "IP 0 %"
    assert table.proxy.index(0, EXO).data() == (
        "Llama-3.3-70B-Instruct-4bit (jaccl) · RDMA not counted "
        "(RDMA enabled · rdma_en3 PORT_ACTIVE)")

    topo = TopologyView()
    qtbot.addWidget(topo)
    topo.set_cluster(cluster)
    (edge,) = topo._edges
    assert edge.utilization is None  # drawn as unknown, not as a calm (idle) link
    tip = topo.edge_tooltip(lk["id"])
    assert "(IP only)" in tip
    assert "not counted (no RDMA counters readable there)" in tip
    assert "RDMA enabled · rdma_en3 PORT_ACTIVE" in tip


def test_rdma_disabled_and_a_port_down_on_a_recorded_mac(qtbot, tmp_path):
    """The MacBook Pro recording lists rdma_en1/en6/en2, all down; with rdma_ctl saying
    "disabled" the link says so, and its own port (rdma_en3) is not listed at all."""
    mbp = (FIX / "macos" / "ibv_devinfo_macbookpro_m5max_macos27.txt").read_text()
    agent = agent_on_a_mac(tmp_path, mbp, "disabled\n")
    (lk,) = agent.snapshot()["links"]
    assert (lk["rdma"], lk["rdma_enabled"], lk["rdma_ports"]) == (
        "not_counted", False, [{"device": "rdma_en3", "state": None}])
    view = LinkDetails()
    qtbot.addWidget(view)
    view.set_link(lk, "studio-1", {})
    assert view.panel._subs["tx_bytes_per_s"].text() == (
        "IP only: RDMA not counted · RDMA disabled (rdma_ctl) · rdma_en3 not listed by "
        "ibv_devinfo")
    # without rdma_ctl (macOS before 26.2) exo's own nodeRdmaCtl is the word
    agent2 = agent_on_a_mac(tmp_path / "b", None, None)
    (lk2,) = agent2.snapshot()["links"]
    assert (lk2["rdma_enabled"], lk2["rdma_ports"]) == (
        True, [{"device": "rdma_en3", "state": None}])
