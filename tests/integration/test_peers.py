"""Peer bookkeeping of the agent with an injected clock: mDNS and manual peers merge,
goodbyes remove at once, silent mDNS peers leave the view after 10 minutes."""

from __future__ import annotations

from exotray.agent.base.limits import NEVER_UP_FORGET_S
from exotray.agent.peers.discovery import PeerRecord
from exotray.agent.peers.table import PEER_FORGET_S
from exotray.agent.runtime import Agent
from exotray.core.settings import Settings


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


def _agent(tmp_path, **kw) -> tuple[Agent, Clock]:
    clock = Clock()
    s = Settings(name="me", mdns=False, state_dir=str(tmp_path), **kw)
    return Agent(s, clock=clock), clock


def _rec(addrs=("10.213.0.2", "169.254.1.2"), id_="bbbbbbbbbbbb"):
    return PeerRecord("b._exotray._tcp.local.", id_, "studio-2", "0.1.0", 1, 52480, addrs)


def test_one_link_per_address_and_goodbye_removes(tmp_path):
    agent, _ = _agent(tmp_path)
    agent.table.mdns_found(_rec())
    assert sorted(agent.links) == [("10.213.0.2", 52480), ("169.254.1.2", 52480)]
    assert len({lk.id for lk in agent.links.values()}) == 2
    agent.table.mdns_removed("bbbbbbbbbbbb")
    assert agent.links == {} and agent.peers == {}


def test_address_list_update_adds_and_drops_links(tmp_path):
    agent, _ = _agent(tmp_path)
    agent.table.mdns_found(_rec())
    agent.table.mdns_found(_rec(addrs=("10.213.0.2", "10.213.1.2")))  # Wi-Fi joined, TB unplugged
    assert sorted(agent.links) == [("10.213.0.2", 52480), ("10.213.1.2", 52480)]


def test_manual_and_mdns_peer_merge_into_one(tmp_path):
    agent, _ = _agent(tmp_path, peers=("10.213.0.2:52480",))
    manual = next(iter(agent.peers.values()))
    manual.manual_targets = [("10.213.0.2", 52480)]
    agent.table.set_targets(manual)
    agent.table.mdns_found(_rec())
    assert len(agent.peers) == 2  # until the manual peer's id is known
    manual.id = "bbbbbbbbbbbb"  # learnt from its snapshot
    agent.table.merge_known_id(manual)
    assert list(agent.peers.values()) == [manual]
    assert manual.sources == {"manual", "mdns"}
    assert sorted(agent.links) == [("10.213.0.2", 52480), ("169.254.1.2", 52480)]
    assert all(lk.peer is manual for lk in agent.links.values())
    # A goodbye leaves the manual address monitored.
    agent.table.mdns_removed("bbbbbbbbbbbb")
    assert sorted(agent.links) == [("10.213.0.2", 52480)]
    assert manual.sources == {"manual"}


def test_silent_mdns_peer_leaves_after_ten_minutes_manual_stays(tmp_path):
    agent, clock = _agent(tmp_path, peers=("10.213.0.9:52480",))
    agent.table.mdns_found(_rec())
    mdns_target = next(t for t in agent.links if t[0] != "10.213.0.9")
    agent.prober.on_reply(mdns_target, clock(), 0.4)  # it answered once, then went silent
    clock.t += 3
    for _ in range(2):
        agent.prober.on_lost(mdns_target, clock())
    agent.table.update_liveness(clock())
    clock.t += PEER_FORGET_S - 1
    agent.table.prune(clock())
    assert len(agent.peers) == 2
    clock.t += 2
    agent.table.prune(clock())
    assert [p.key for p in agent.peers.values()] == ["10.213.0.9:52480"]
    assert all(lk.peer.key == "10.213.0.9:52480" for lk in agent.links.values())


def test_peer_that_replied_then_went_silent(tmp_path):
    agent, clock = _agent(tmp_path)
    agent.table.mdns_found(_rec(addrs=("10.213.0.2",)))
    target = ("10.213.0.2", 52480)
    agent.prober.on_reply(target, clock(), 0.4)
    assert agent.links[target].up and [e["type"] for e in agent.events.after(0)] == ["peer_up"]
    clock.t += 2.4  # under 2.5 intervals
    agent.table.update_liveness(clock())
    assert agent.links[target].up
    clock.t += 0.2
    agent.prober.on_lost(target, clock())
    agent.table.update_liveness(clock())
    assert agent.links[target].up  # silent long enough, but only one probe was lost
    agent.prober.on_lost(target, clock())
    agent.table.update_liveness(clock())
    assert not agent.links[target].up
    assert [e["type"] for e in agent.events.after(0)] == ["peer_up", "peer_down"]
    clock.t += PEER_FORGET_S + 1
    agent.table.prune(clock())
    assert agent.peers == {} and agent.links == {}


def test_stale_mdns_address_is_dropped_once_another_answers(tmp_path):
    agent, clock = _agent(tmp_path)
    agent.table.mdns_found(_rec(addrs=("10.213.0.2", "10.213.0.12")))  # .2 is a cached old one
    for lk in agent.links.values():
        lk.first_probe = clock()
    agent.prober.on_reply(("10.213.0.12", 52480), clock(), 0.3)
    clock.t += 10
    agent.table.prune(clock())
    assert len(agent.links) == 2  # not yet
    clock.t += 6
    agent.prober.on_reply(("10.213.0.12", 52480), clock(), 0.3)
    agent.table.prune(clock())
    assert list(agent.links) == [("10.213.0.12", 52480)]
    # A peer whose only address never answered keeps it (it is simply down)...
    agent2, clock2 = _agent(tmp_path / "b")
    agent2.table.mdns_found(_rec(addrs=("10.213.0.9",)))
    next(iter(agent2.links.values())).first_probe = clock2()
    clock2.t += NEVER_UP_FORGET_S - 1
    agent2.table.prune(clock2())
    assert len(agent2.links) == 1
    # ...until NEVER_UP_FORGET_S: then the peer is forgotten (its next announcement
    # brings it back), not kept for ten minutes as a flood's announcements would be.
    clock2.t += 2
    agent2.table.prune(clock2())
    assert agent2.links == {} and agent2.peers == {}


def _state(agent):
    links = [(lk.target, lk.up, lk.last_reply, lk.path.pinned, lk.local_interface)
             for lk in agent.links.values()]
    peers = [(p.key, p.was_up, p.down_since, p.snapshot_at) for p in agent.peers.values()]
    return links, peers, agent.events.last_seq


def test_reading_the_snapshot_changes_nothing(tmp_path):
    """Liveness and peer events move on the probe tick only: a snapshot or cluster read
    (every UI poll, every peer's fetch) is a pure read, even when it is overdue."""
    agent, clock = _agent(tmp_path)
    agent.table.mdns_found(_rec(addrs=("10.213.0.2",)))
    target = ("10.213.0.2", 52480)
    agent.prober.on_reply(target, clock(), 0.4)
    assert agent.links[target].up
    clock.t += 60  # far past down_after: the next liveness update takes it down
    for _ in range(2):
        agent.prober.on_lost(target, clock())
    before = _state(agent)
    first = agent.snapshot()
    for _ in range(3):
        assert agent.snapshot() == first
        agent.cluster()
        agent.history(first["links"][0]["id"], None, 600)
    assert _state(agent) == before
    assert first["links"][0]["state"] == "up"  # as of the last tick, not recomputed
    agent.table.update_liveness(clock())  # the tick
    assert not agent.links[target].up
    assert [e["type"] for e in agent.events.after(0)] == ["peer_up", "peer_down"]
