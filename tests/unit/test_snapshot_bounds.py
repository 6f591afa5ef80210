"""What a node sends always passes its peers' validation (issue 33 point 3): a local exo
with 20 instances over one link made every peer drop the node ("links.exo_instances:
Expected `array` of length <= 16"). Every list a snapshot carries is cut at the source to
the schema's bound (core/schema.list_bounds), and the snapshot's `omitted` counts what
was left out.

The real Agent builds its snapshot and stream frames from parts holding more than peers
take of every list; peers' own decoders (schema.parse_snapshot, the stream's Mirror)
take them. The interface list is the edge replaced (`monitor.read`), exo's state and the
hardware readers' bridge members are set as their readers would leave them."""

from __future__ import annotations

import copy
import json

import pytest
from helpers import counted_agent, manual_link

from exotray.agent.exo import state as exo
from exotray.agent.hw.read import HwLink
from exotray.agent.hw.sampler import NicInfo
from exotray.agent.share import views
from exotray.agent.share import wire as W
from exotray.core import schema

BRIDGE = "xtbr0"
#: more of each than peers take (the schema's bounds: 1024 links, 256 interfaces, 64
#: addresses and 32 members an interface, 16 exo instances and 8 RDMA ports a link)
N_LINKS, N_IFACES, N_ADDRESSES, N_MEMBERS, N_RINGS = 1030, 300, 70, 40, 20


def _nics() -> dict[str, NicInfo]:
    addrs = tuple(f"10.213.{170 + i // 250}.{1 + i % 250}" for i in range(N_ADDRESSES))
    nics = {BRIDGE: NicInfo(BRIDGE, True, 1000.0, addrs, ((addrs[0], 16),), multicast=True)}
    for i in range(N_IFACES - 1):  # a container host's veths
        nics[f"xtv{i:04d}"] = NicInfo(f"xtv{i:04d}", True, 10000.0, (), ())
    return nics


@pytest.fixture
def agent(tmp_path):
    a = counted_agent(tmp_path, BRIDGE, None)
    nics = _nics()
    a.monitor.read = lambda full: ({n: tuple(a.counters) for n in nics}, nics)
    members = tuple(f"xtm{i:02d}" for i in range(N_MEMBERS))
    a.monitor.hardware.links[BRIDGE] = HwLink(BRIDGE, 1000.0, members=members, bridge=True)
    links = [manual_link(a, f"10.213.{180 + i // 250}.{1 + i % 250}", BRIDGE)
             for i in range(N_LINKS)]
    first = links[0].target[0]
    rings = tuple(exo.ExoInstance(f"ring-{i}", "mlx-community/Llama-3.3-70B-Instruct-4bit",
                                  "ring", neighbours=(first,)) for i in range(N_RINGS))
    # a JACCL instance over every member of the bridge: its RDMA ports (not counted)
    jaccl = exo.ExoInstance("jaccl-1", "mlx-community/Qwen3-235B-A22B-4bit", "jaccl",
                            devices=tuple(f"rdma_{m}" for m in members))
    a.exo.state = exo.ExoState("me", (*rings, jaccl))
    for _ in range(2):
        a.ticker.sample(True)
        a.now_[0] += 1.0
    yield a
    a._unlock()


def _taken(agent, snap: dict) -> None:
    """Peers take `snap`: polled (the decoder peers use), and streamed, its full frame
    and a delta after exo changed."""
    body = json.dumps(snap, separators=(",", ":")).encode()  # (as served)
    assert len(body) <= schema.MAX_SNAPSHOT_BYTES, len(body)
    schema.parse_snapshot(body)
    state = W.split(snap)
    mirror = W.Mirror(None, None)
    mirror.full(W.full_body(state, 0.0))
    agent.exo.state = exo.ExoState("me", agent.exo.state.instances[::-1])
    new = W.split(agent.snapshot(), state)
    d = W.delta(state, new, 0.0)
    assert d["links"]["set"]  # the instances of every link moved
    mirror.delta(W.encode(d))


def test_every_list_at_its_bound_and_what_was_left_out_counted(agent):
    snap = agent.snapshot()
    _taken(agent, copy.deepcopy(snap))
    # every list the schema bounds was beyond its bound here (a list added to the schema
    # must be bounded too: it shows here as a place not counted)
    assert set(snap["omitted"]) == set(views.BOUNDS)
    links, ifaces, omitted = snap["links"], snap["interfaces"], snap["omitted"]
    assert len(links) + omitted["links"] == N_LINKS and len(links) <= 1024
    assert len(ifaces) + omitted["interfaces"] == N_IFACES and len(ifaces) <= 256
    (bridge,) = [i for i in ifaces if i["name"] == BRIDGE]  # the links' carrier is kept
    assert (len(bridge["addresses"]), len(bridge["members"])) == (64, 32)
    assert omitted["interfaces.addresses"] == N_ADDRESSES - 64
    assert omitted["interfaces.members"] == N_MEMBERS - 32
    assert [len(lk["exo_instances"]) for lk in links[:2]] == [16, 1]
    assert omitted["links.exo_instances"] == N_RINGS + 1 - 16
    assert {len(lk["rdma_ports"]) for lk in links} == {8}
    assert omitted["links.rdma_ports"] == 1024 * (N_MEMBERS - 8)


def test_a_snapshot_over_the_size_peers_take_leaves_out_links(agent):
    """Every link at its bound of exo instances, with names at the schema's 128
    characters: 5 MB of JSON, where peers take 1 MiB. Links are left out, and counted."""
    long = "mlx-community/" + "x" * 114
    agent.exo.state = exo.ExoState("me", tuple(
        exo.ExoInstance(f"{i:03d}" + "j" * 125, long, "jaccl", devices=("rdma_xtm00",))
        for i in range(17)))
    snap = agent.snapshot()
    _taken(agent, copy.deepcopy(snap))
    links, omitted = snap["links"], snap["omitted"]
    assert {len(lk["exo_instances"]) for lk in links} == {16}
    assert 0 < len(links) < 300 and len(links) + omitted["links"] == N_LINKS
    assert len(snap["interfaces"]) == 1  # the bridge only: the others carry no link


def test_the_lists_within_their_bounds_are_sent_whole(agent):
    agent.exo.state = exo.ExoState("me", agent.exo.state.instances[:3])
    agent.monitor.hardware.links.clear()
    for lk in list(agent.links.values())[100:]:
        agent.table.remove(lk.peer, "test")
    nics = {n: nic for n, nic in _nics().items() if n == BRIDGE or n < "xtv0050"}
    nics[BRIDGE] = NicInfo(BRIDGE, True, 1000.0, nics[BRIDGE].addresses[:64], ())
    agent.monitor.read = lambda full: ({n: tuple(agent.counters) for n in nics}, nics)
    agent.ticker.sample(True)
    snap = agent.snapshot()
    assert snap["omitted"] == {}
    assert (len(snap["links"]), len(snap["interfaces"])) == (100, 51)
    assert len(snap["links"][0]["exo_instances"]) == 3
    schema.parse_snapshot(json.dumps(snap).encode())
