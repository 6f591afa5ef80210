"""The stream's producer builds this node's state only when a prompt change may be in
it, or for the heartbeat (agent/share/watch.py): the watch never says "nothing" when
building would have found a prompt change, and at rest it saves the build.

The real Agent, its parts and its producer with one subscriber; the interface counters
are the edge replaced (`monitor.read`), probe replies are handed to the prober as its
socket would, the clock is injected."""

from __future__ import annotations

import dataclasses
import random

import pytest
from helpers import counted_agent, manual_link

from exotray.agent.hw.sampler import NicInfo
from exotray.agent.share import watch as stream_watch
from exotray.agent.share import wire as W
from exotray.core import schema

IFACE = "xt0"
NIC = NicInfo(IFACE, True, 1000.0, ("10.213.161.1",), (("10.213.161.1", 24),), multicast=True)
PEERS = [f"10.213.161.{i}" for i in range(2, 8)]


@pytest.fixture
def agent(tmp_path):
    a = counted_agent(tmp_path, IFACE, NIC)
    for addr in PEERS:
        manual_link(a, addr, IFACE).last_reply = a.now_[0]
    a.sharing.tick = lambda: None  # no peers to follow here
    a.sub = a.sharing.producer.subscribe("ab" * 8)
    a.checked = {"moved": 0, "still": 0, "prompt": 0}
    yield a
    a._unlock()


def _check(a) -> None:
    """Before the producer's turn: would a build find a prompt change, and does the
    watch say one may be there?"""
    producer = a.sharing.producer
    old = producer.state
    moved = producer._watch.moved(old)
    new = W.split(a.snapshot(), old)
    prompt = W.prompt(old, W.delta(old, new, 0.0), a.ticker.own.peak, new)
    assert moved or not prompt, W.delta(old, new, 0.0)
    a.checked["moved" if moved else "still"] += 1
    a.checked["prompt"] += prompt


def _interval(a, rtt: dict[str, float | None], bytes_per_tick: int = 250) -> None:
    """One interval of four ticks; each link's probe answered in `rtt` ms (None: lost)."""
    for k in range(a.ticker.per_interval):
        a.now_[0] += 0.25
        a.counters[0] += bytes_per_tick
        a.counters[1] += bytes_per_tick
        if k == 0:
            for link in list(a.links.values()):
                ms = rtt.get(link.target[0], 0.3)
                if ms is None:
                    a.prober.on_lost(link.target, a.now_[0] - 0.5)
                else:
                    a.prober.on_reply(link.target, a.now_[0], ms)
        a.ticker.sample(k == 0)
        if k == 0:
            _check(a)
            a.ticker.share()
            a.sub.frames.clear()  # read (a subscriber that does not read is dropped)
        a.ticker.count += 1


def test_at_rest_only_the_heartbeat_is_built(agent):
    rng = random.Random(1)
    for _ in range(30):  # settle: baselines learned, the startup's busy hold over
        _interval(agent, {p: 0.3 + rng.uniform(-0.01, 0.01) for p in PEERS})
    counters = agent.sharing.counters
    skipped, frames = counters["stream_builds_skipped"], counters["stream_frames_built"]
    for _ in range(20):
        _interval(agent, {p: 0.3 + rng.uniform(-0.01, 0.01) for p in PEERS})
    assert counters["stream_frames_built"] - frames == 4  # the heartbeats, every 5
    assert counters["stream_builds_skipped"] - skipped == 16  # and nothing built between


@pytest.mark.parametrize("seed", [7, 8, 9])
def test_a_prompt_change_is_never_left_to_the_heartbeat(agent, seed):
    """A random walk through what moves a link or an interface: RTT steps and spikes,
    lost probes, traffic starting and stopping, a peer renamed, a link gone and one
    new, a capacity changed. At every interval, if building would find a prompt change,
    the watch said so."""
    rng = random.Random(seed)
    base = {p: 0.3 for p in PEERS}
    traffic = 250
    for _ in range(600):
        roll = rng.random()
        if roll < 0.02:
            p = rng.choice(PEERS)
            base[p] = rng.choice([0.05, 0.3, 0.45, 1.0, 3.0, 8.0])  # a path's RTT moved
        elif roll < 0.03:
            traffic = rng.choice([250, 250, 40_000, 400_000, 3_000_000])  # bytes a tick
        elif roll < 0.035:
            link = rng.choice(list(agent.links.values()))
            link.peer.name = rng.choice(["studio-2", "studio-3", None])
        elif roll < 0.04 and len(agent.peers) > 3:
            agent.table.remove(rng.choice(list(agent.peers.values())), "test")
        elif roll < 0.045:
            addr = f"10.213.161.{rng.randrange(10, 60)}"
            if (addr, 52480) not in agent.links:
                manual_link(agent, addr, IFACE).last_reply = agent.now_[0]
        elif roll < 0.05:
            agent.reconfigure(dataclasses.replace(
                agent.settings, capacity={IFACE: rng.choice([100.0, 1000.0])}))
        rtt = {}
        for link in agent.links.values():
            ms = base.get(link.target[0], 0.3) * rng.uniform(0.97, 1.03)
            rtt[link.target[0]] = None if rng.random() < 0.002 else ms
        _interval(agent, rtt, traffic)
    c = agent.checked
    assert c["prompt"] > 20 and c["still"] > 20  # both sides of the watch were exercised


def test_the_watch_compares_every_field_a_link_record_streams():
    """A field added to a link record must be compared by the watch (or be exo's: with
    exo running the state is always built), or its changes would wait for the
    heartbeat."""
    streamed = schema.wire_names(schema.Link) - schema.LOCAL_LINK_FIELDS
    assert streamed == stream_watch.CHECKED | stream_watch.EXO_FIELDS | {"id"}


def test_exo_stopping_is_built_at_once(agent):
    """While exo runs the state is always built; when it stops, its instances leave the
    links' records: a prompt change, built at the next interval, not at the heartbeat."""
    from exotray.agent.exo import state as exo

    inst = exo.ExoInstance("r1", "mlx-community/Llama-3.3-70B-Instruct-4bit", "ring",
                           neighbours=(PEERS[0],))
    agent.exo.state = exo.ExoState("me", (inst,))
    for _ in range(6):
        _interval(agent, {})
    (sent,) = [r for r in agent.sharing.producer.state[1].values()
               if r["peer_address"] == PEERS[0]]
    assert sent["exo_instances"] == [inst.wire()]
    agent.exo.state = None
    prompt = agent.checked["prompt"]
    _interval(agent, {})  # _check: the watch says yes whenever the build finds it
    assert agent.checked["prompt"] == prompt + 1
