"""exo's Thunderbolt facts used (issue 35 point 9): the stand-in exo on loopback answers
tests/fixtures/exo/state_tb5.json; exo's negotiated speed of a Thunderbolt port becomes
the port's speed and capacity where the hardware readers know none (hw/hardware.py,
source "exo"), never where they know one, and exo's RDMA and Thunderbolt Bridge facts
are in the snapshot's `exo` for health checks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from exo_standin import StandIn
from helpers import AgentProc, free_port, wait_for

from exotray.agent.exo.watch import ExoWatch
from exotray.agent.hw.hardware import Hardware
from exotray.agent.hw.kinds import InterfaceClassifier
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.hw.read import HwLink
from exotray.agent.hw.sampler import NicInfo
from exotray.agent.share import views
from exotray.core.capacity import MBIT
from exotray.core.settings import Settings

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "exo"
D = "4e1b9c07d2a85f36b0c1e9a7d4f26b83"  # studio-a in state_tb5.json
E = "9c3f52a1e07b4d68a2f1c0b39e8d7a5"  # studio-b
KINDS = {"en0": "ethernet", "en2": "thunderbolt", "en3": "thunderbolt",
         "en4": "thunderbolt", "bridge0": "thunderbolt", "en9": "thunderbolt"}


class Reader:
    """The hardware readers' answers: here they know en9's speed, and that bridge0 is a
    bridge of en2 and en3, but not the speed of any of those (system_profiler failed)."""

    def links(self, kinds):
        return {"bridge0": HwLink("bridge0", None, members=("en2", "en3"), bridge=True,
                                  source="bridge members"),
                "en9": HwLink("en9", 40000.0, source="thunderbolt")}

    def member_for_peer(self, bridge, ip):
        return None


@pytest.fixture
def standin(tmp_path):
    s = StandIn(tmp_path).start()
    s.say(node_id=json.dumps(D).encode(), state=(FIX / "state_tb5.json").read_bytes())
    yield s
    s.stop()


def nics() -> dict[str, NicInfo]:
    return {n: NicInfo(n, True, None, (), ()) for n in KINDS}


async def setup(url: str, tmp_path: Path) -> tuple[InterfaceMonitor, ExoWatch]:
    classifier = InterfaceClassifier(platform="linux", sysfs_root="/nonexistent")
    classifier.classify = lambda name: (KINDS[name], KINDS[name].title())
    m = InterfaceMonitor(Settings(), classifier, 1.0, Hardware(Reader()), tmp_path)
    m.update(nics(), 0.0)  # starts the hardware read (a worker thread)
    await m.hardware._task
    m.update(nics(), 1.0)  # takes its answer (after this update's capacities)
    m.update(nics(), 1.5)
    w = ExoWatch(url, monitor=m, links=lambda: [], clock=lambda: 0.0,
                 emit=lambda t, f: None, platform="test")
    return m, w


def capacities(m: InterfaceMonitor) -> dict[str, tuple[float | None, str]]:
    return {n: (st.capacity.bytes_per_s and st.capacity.bytes_per_s / MBIT,
                st.capacity.source) for n, st in m.ifaces.items() if n != "en0"}


def test_exo_s_speed_where_ours_is_unknown_and_only_there(standin, tmp_path):
    async def go():
        m, w = await setup(standin.url, tmp_path)
        unknown = capacities(m)
        await w.tick()
        m.update(nics(), 2.0)
        known = capacities(m)
        speeds = {n: m.speed_of(n)[0] for n in KINDS}
        sources = {i["name"]: i["speed_source"] for i in views.interfaces(m, [])["interfaces"]}
        standin.say(state=b"!500")  # exo unreadable: its speeds are gone with it
        await w.tick()
        m.update(nics(), 3.0)
        return unknown, known, speeds, sources, capacities(m), w.status
    unknown, known, speeds, sources, after, status = asyncio.run(go())
    assert unknown == {"en2": (None, "unknown"), "en3": (None, "unknown"),
                       "en4": (None, "unknown"), "bridge0": (None, "unknown"),
                       "en9": (40000, "kind")}
    # exo: en2 and en3 are cabled at 80 Gb/s; en4 is empty ("Up to 120 Gb/s": no speed);
    # the bridge takes its fastest member's, as it would take ours; en9 keeps ours
    assert known == {"en2": (80000, "kind"), "en3": (80000, "kind"), "en4": (None, "unknown"),
                     "bridge0": (80000, "kind"), "en9": (40000, "kind")}
    assert speeds == {"en0": None, "en2": 80000, "en3": 80000, "en4": None,
                      "bridge0": 80000, "en9": 40000}
    assert sources == {"en0": None, "en2": "exo", "en3": "exo", "en4": None,
                       "bridge0": "exo", "en9": "thunderbolt"}
    assert status == "unreadable" and after == unknown


def test_exo_s_speeds_are_this_node_s_and_never_events(standin, tmp_path):
    """studio-b's cable to studio-c is a Thunderbolt 4 one: 40 Gb/s on its en3. A speed
    from exo is no reading of ours: no link_degraded, however slow."""
    standin.say(node_id=json.dumps(E).encode())
    events = []

    async def go():
        m, w = await setup(standin.url, tmp_path)
        m.hardware.emit = lambda t, **f: events.append(t)
        await w.tick()
        m.update(nics(), 2.0)
        return capacities(m)
    assert asyncio.run(go())["en3"] == (40000, "kind")
    assert events == []


def test_the_snapshot_says_what_exo_knows_of_this_node_s_thunderbolt(tmp_path, standin):
    """A real agent on loopback reading the stand-in: the facts `exotray doctor`'s rdma
    and tb_bridge checks read, in its snapshot's `exo` (local clients only)."""
    a = AgentProc(tmp_path, "studio-a", free_port(), [], "--exo-url", standin.url)
    try:
        assert wait_for(lambda: a.get("/v1/snapshot")["exo"]["status"] == "ok", 15), a.log()
        ex = a.get("/v1/snapshot")["exo"]
        assert ex["node_id"] == D and ex["rdma_ctl"] is True
        assert ex["thunderbolt_ports"][:3] == [
            {"interface": "en2", "rdma_device": "rdma_en2", "link_speed": "80 Gb/s",
             "speed_mbit": 80000},
            {"interface": "en3", "rdma_device": "rdma_en3", "link_speed": "80 Gb/s",
             "speed_mbit": 80000},
            {"interface": "en4", "rdma_device": "rdma_en4", "link_speed": "Up to 120 Gb/s",
             "speed_mbit": None}]
        assert ex["tb_bridge"] == {"enabled": True, "exists": True,
                                   "service_name": "Thunderbolt Bridge"}
        assert (ex["tb_bridge_cycles"], ex["tb_bridge_cycle"]) == (1, [D, E])
    finally:
        a.close()
