"""A saturated link whose traffic moves to another interface (its peer's address now
on-link elsewhere: a cable moved, a route changed): the saturation raised on the old
interface ends at once, its `link_cleared` naming that interface and saying where the
link goes now — not 5 s later under the new interface's name, as if the new path had
been saturated and cleared.

The real Agent and its parts (route lookup included: the link follows the on-link
address); the interface counters are the edge replaced (`monitor.read`), the clock is
injected."""

from __future__ import annotations

import pytest
from helpers import manual_link

from exotray.agent.hw.sampler import NicInfo
from exotray.agent.runtime import Agent
from exotray.core.settings import Settings
from exotray.ui.tray.summary import notification

A, B, PEER = "xt0", "xt1", "10.213.163.2"


def _nic(name: str, addr: str) -> NicInfo:
    return NicInfo(name, True, 1000.0, (addr,), ((addr, 24),), multicast=True)


@pytest.fixture
def agent(tmp_path):
    now = [5000.0]
    s = Settings(name="a", bind="127.0.0.1", port=0, mdns=False, interval=1.0,
                 state_dir=str(tmp_path), history_days=0, capacity={A: 100.0, B: 100.0},
                 exo_url="")
    a = Agent(s, clock=lambda: now[0])
    a.counters = {A: [0, 0], B: [0, 0]}
    a.nics = {A: _nic(A, "10.213.163.1"), B: _nic(B, "10.213.164.1")}
    a.monitor.carriers.sysfs = None  # (counters given: every tick reads them)
    a.monitor.read = lambda full: ({n: tuple(c) for n, c in a.counters.items()}, dict(a.nics))
    link = manual_link(a, PEER, A)
    link.last_reply = now[0]
    a.now_ = now
    a.sharing.produce = lambda: None
    a.sharing.tick = lambda: None
    yield a
    a._unlock()


def _seconds(a, n: float, per_s: dict[str, int]) -> None:
    """n seconds of ticks, each interface carrying per_s bytes a second each way."""
    for _ in range(round(n * a.ticker.per_interval)):
        a.now_[0] += 0.25
        for name, c in a.counters.items():
            c[0] += per_s.get(name, 1000) // 4
            c[1] += per_s.get(name, 1000) // 4
        k = a.ticker.count % a.ticker.per_interval
        if k == 0:
            for link in a.links.values():
                a.prober.on_reply(link.target, a.now_[0], 0.05)
        a.ticker.sample(k == 0)
        a.ticker.count += 1


def _link_events(a) -> list[dict]:
    return [e for e in a.events.after(0) if e["type"] in ("link_saturated", "link_cleared")]


def test_a_saturation_ends_where_it_was_when_the_link_moves(agent):
    (link,) = agent.links.values()
    _seconds(agent, 10, {})
    _seconds(agent, 5, {A: 12_500_000})  # the whole 100 Mbit/s of xt0
    (raised,) = _link_events(agent)
    assert (raised["type"], raised["local_interface"], link.state) == (
        "link_saturated", A, "saturated")
    # the peer's network is now on xt1 (the cable moved): the next full tick's route
    # lookup finds it there; xt0 stays busy with other traffic
    agent.nics = {A: _nic(A, "10.213.165.1"), B: _nic(B, "10.213.163.1")}
    _seconds(agent, 1, {A: 12_500_000})
    assert link.local_interface == B
    events = _link_events(agent)
    assert len(events) == 2
    cleared = events[1]
    assert cleared["type"] == "link_cleared" and cleared["reason"] == "path_changed"
    assert (cleared["local_interface"], cleared["now_interface"]) == (A, B)
    assert cleared["utilization"] == pytest.approx(1.0, abs=0.02)  # xt0's, where it was
    assert link.state == "up" and link.saturated_on is None
    title, body = notification(cleared, "a")
    assert title.startswith("Link moved:") and f"goes through {B}" in body
    # xt1 idle: nothing more; then busy: saturated there after the sustain time, its
    # raise inside the cooldown of the first: recorded, not notified (one notification
    # a minute per link, every saturation in the timeline)
    _seconds(agent, 6, {A: 12_500_000})
    assert len(_link_events(agent)) == 2 and link.state == "up"
    _seconds(agent, 4, {B: 12_500_000})
    assert link.state == "saturated" and link.saturated_on == (B, None)
    *_, again = _link_events(agent)
    assert len(_link_events(agent)) == 3 and again["type"] == "link_saturated"
    assert again["notify"] is False and again["local_interface"] == B
    assert [e["notify"] for e in _link_events(agent)[:2]] == [True, True]


def test_a_link_that_stays_put_clears_as_before(agent):
    (link,) = agent.links.values()
    _seconds(agent, 10, {})
    _seconds(agent, 5, {A: 12_500_000})
    _seconds(agent, 7, {})
    _raised, cleared = _link_events(agent)
    assert cleared["type"] == "link_cleared" and "reason" not in cleared
    assert cleared["local_interface"] == A and link.saturated_on is None


def test_a_bridge_cable_becoming_known_is_not_a_move(agent):
    """A saturation raised while the bridge cable to the peer was unknown stays when the
    cable becomes known (the same path, now known more closely); a pause reports
    nothing."""
    (link,) = agent.links.values()
    _seconds(agent, 10, {})
    _seconds(agent, 5, {A: 12_500_000})
    assert link.state == "saturated" and link.saturated_on == (A, None)
    agent.monitor.member = lambda name, peer, track=False: "xtm1" if name == A else None
    _seconds(agent, 1, {A: 12_500_000})
    assert len(_link_events(agent)) == 1 and link.state == "saturated"
    assert link.saturated_on == (A, "xtm1")
    # paused: a move is neither judged nor reported until the agent resumes
    agent.set_paused(True)
    agent.monitor.member = lambda name, peer, track=False: None
    agent.nics = {A: _nic(A, "10.213.165.1"), B: _nic(B, "10.213.163.1")}
    _seconds(agent, 2, {A: 12_500_000})
    assert len(_link_events(agent)) == 1
    agent.set_paused(False)
    _seconds(agent, 1, {A: 12_500_000})
    assert [e.get("reason") for e in _link_events(agent)] == [None, "path_changed"]


def test_an_rdma_counted_links_clear_has_its_rdma_numbers(agent):
    """exo's JACCL over xt0 with RDMA port counters (Linux): the link's rates include
    the RDMA bytes, so does the clear when it moves (not the IP counters alone)."""
    from exotray.agent.exo import state as exo

    (link,) = agent.links.values()
    inst = exo.ExoInstance("j1", "mlx-community/Llama-3.3-70B-Instruct-4bit", "jaccl",
                           devices=("rdma_xt0",))
    agent.exo.state = exo.ExoState("me", (inst,))
    agent.exo.rdma_rates.rates = {"xt0": (12_400_000.0, 12_400_000.0)}
    _seconds(agent, 10, {})
    (raised,) = _link_events(agent)  # RDMA alone fills xt0's 100 Mbit/s
    assert raised["rdma"] == "counted" and link.state == "saturated"
    agent.nics = {A: _nic(A, "10.213.165.1"), B: _nic(B, "10.213.163.1")}
    _seconds(agent, 1, {})
    cleared = _link_events(agent)[1]
    assert (cleared["reason"], cleared["local_interface"], cleared["rdma"]) == (
        "path_changed", A, "counted")
    assert cleared["utilization"] == pytest.approx(1.0, abs=0.02)
