"""A peer that flaps (issue 33 point 9): the peer table's state stays live, its
peer_up/peer_down events are held (peers/flaps.py). The clock is the test's: a peer
answering probes for 0.8 s of every 4 s, probed at 0.25 s ticks, as in the issue."""

from __future__ import annotations

import pytest

from exotray.agent.base import limits as L
from exotray.agent.peers import links
from exotray.agent.peers.discovery import PeerRecord
from exotray.agent.peers.table import PeerTable
from exotray.core.saturation import SaturationParams

TICK = 0.25
DOWN_AFTER_S = 2.5  # an interval of 1 s, down_after 2.5


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


def _flapper():
    clock = Clock()
    said: list[tuple[float, bool]] = []
    holds: list[float] = []
    table = PeerTable(
        clock, lambda peer, t: links.new_link("me", peer, t, 1.0, SaturationParams()),
        down_after_s=DOWN_AFTER_S,
        on_peer_event=lambda peer, up, why: said.append((clock.t, up)),
        on_peer_flapping=lambda peer: holds.append(clock.t))
    table.mdns_found(PeerRecord("b._exotray._tcp.local.", "bbbbbbbbbbbb", "studio-2", "0.1.0",
                                1, 52480, ("10.0.0.2",)))
    (link,) = table.links.values()
    (peer,) = table.peers.values()

    def run(seconds: float, answers) -> int:
        """Tick for `seconds`: a probe answered where `answers(t)` (t from the start
        of this run), else lost; the changes of the peer's real state."""
        start, changes = clock.t, 0
        for _ in range(round(seconds / TICK)):
            clock.t += TICK
            was = peer.was_up
            if answers(clock.t - start):
                table.replied(link, clock.t)
            else:
                link.lost_since_reply += 1
            table.update_liveness(clock.t)
            assert peer.was_up == link.up  # the table is never held
            changes += peer.was_up != was
        return changes

    return table, peer, link, clock, said, holds, run


def flapping(t: float) -> bool:
    return t % 4.0 < 0.8


def test_without_a_hold_every_change_is_said():
    """The baseline: a peer that goes down and back a few times is told each time."""
    _table, _peer, _link, _clock, said, holds, run = _flapper()
    changes = run(29.0, lambda t: t % 10.0 < 5.0)  # up, down 3 times: 6 changes
    assert changes == L.FLAP_CHANGES == len(said) and holds == []


@pytest.mark.parametrize("after", ["down", "up", "flapping"])
def test_a_flapping_peer_makes_a_bounded_number_of_events_and_its_last_is_true(after):
    _table, peer, link, clock, said, holds, run = _flapper()
    changes = run(120.0, flapping)
    assert changes >= 58  # the 60 peer_up/peer_down in 2 minutes
    # the first FLAP_CHANGES said as they came, then the change that began the hold
    assert len(said) == L.FLAP_CHANGES + 1 and len(holds) == 1
    assert [up for _, up in said] == [True, False] * (L.FLAP_CHANGES // 2) + [True]
    # then: dead, back for good, or flapping on for an hour
    seconds = 3600.0 if after == "flapping" else L.FLAP_HOLD_S
    run(seconds, {"down": lambda t: False, "up": lambda t: True, "flapping": flapping}[after])
    holds_total = -(-(clock.t - holds[0]) // L.FLAP_HOLD_S)
    # at most one of each state per hold (the state at a hold's end counts in the next)
    assert len(said) <= L.FLAP_CHANGES + 1 + 2 * holds_total
    if after == "flapping":
        assert peer.flaps.held_until is not None and len(holds) == 1
        run(L.FLAP_HOLD_S, lambda t: True)  # it settles, up
    assert peer.was_up == link.up == (after != "down")
    assert said[-1][1] == peer.was_up, said[-3:]  # the last said is the truth
    assert peer.flaps.held_until is None  # released: what comes next is said at once
    n = len(said)
    run(6.0, lambda t: False)  # one more outage, and back
    run(6.0, lambda t: True)
    assert [up for _, up in said[n:]] == ([True] if after == "down" else [False, True])


def test_a_peer_held_down_but_said_up_is_said_down_when_it_leaves():
    table, peer, _link, _clock, said, _holds, run = _flapper()
    run(120.0, flapping)
    run(3.0, lambda t: False)
    assert not peer.was_up and said[-1][1] is True  # held: the down not said
    table.mdns_removed("bbbbbbbbbbbb")
    assert said[-1][1] is False and table.peers == {}
