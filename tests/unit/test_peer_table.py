"""The peer table on its own: no agent, no sockets, the clock and the link factory
passed in (peers/table.py). Liveness as a table of (seconds since the last reply, up?)."""

from __future__ import annotations

import pytest

from exotray.agent.peers import links
from exotray.agent.peers.discovery import PeerRecord
from exotray.agent.peers.table import PEER_FORGET_S, PeerTable
from exotray.core.saturation import SaturationParams

INTERVAL = 1.0
DOWN_AFTER_S = 2.5


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


def _table():
    clock = Clock()
    calls: list[tuple] = []
    table = PeerTable(
        clock,
        lambda peer, target: links.new_link("me", peer, target, INTERVAL, SaturationParams()),
        down_after_s=DOWN_AFTER_S,
        on_link_added=lambda link: calls.append(("added", link.target)),
        on_link_dropped=lambda target: calls.append(("dropped", target)),
        on_peer_event=lambda peer, up, why: calls.append(("up" if up else "down", why)),
    )
    return table, clock, calls


def _rec(*addrs, id_="bbbbbbbbbbbb"):
    return PeerRecord("b._exotray._tcp.local.", id_, "studio-2", "0.1.0", 1, 52480, addrs)


@pytest.mark.parametrize(("silent_s", "up"), [(0.0, True), (2.4, True), (2.5, False),
                                              (60.0, False)])
def test_a_link_is_up_while_its_last_reply_is_recent(silent_s, up):
    table, clock, calls = _table()
    table.mdns_found(_rec("10.0.0.2"))
    link = table.links[("10.0.0.2", 52480)]
    table.replied(link, clock())
    clock.t += silent_s
    link.lost_since_reply = 10  # its probes went out meanwhile and were lost
    table.update_liveness(clock())
    assert link.up is up
    assert [c for c in calls if c[0] in ("up", "down")] == (
        [("up", "probes")] if up else [("up", "probes"), ("down", "no probe replies")])


def test_links_follow_addresses_and_callbacks_say_so():
    table, _clock, calls = _table()
    table.mdns_found(_rec("10.0.0.2", "169.254.0.2"))
    table.mdns_found(_rec("10.0.0.2", "10.1.0.2"))
    assert sorted(table.links) == [("10.0.0.2", 52480), ("10.1.0.2", 52480)]
    assert calls == [("added", ("10.0.0.2", 52480)), ("added", ("169.254.0.2", 52480)),
                     ("dropped", ("169.254.0.2", 52480)), ("added", ("10.1.0.2", 52480))]
    table.mdns_removed("bbbbbbbbbbbb")
    assert table.links == {} and table.peers == {}


def test_paused_liveness_does_not_move_and_resume_is_not_an_outage():
    table, clock, calls = _table()
    table.mdns_found(_rec("10.0.0.2"))
    link = table.links[("10.0.0.2", 52480)]
    table.replied(link, clock())
    table.paused = True
    clock.t += 600
    table.update_liveness(clock())
    assert link.up
    table.resume(clock(), INTERVAL)
    table.update_liveness(clock())
    assert link.up and calls[-1] == ("up", "probes")


def test_a_silent_mdns_peer_is_forgotten_a_manual_one_stays():
    table, clock, _calls = _table()
    manual = table.add_manual("10.0.0.9", 52480)
    table.mdns_found(_rec("10.0.0.2"))
    clock.t += PEER_FORGET_S + 1
    table.prune(clock())
    assert list(table.peers.values()) == [manual]


def test_identified_merges_a_manual_peer_with_its_mdns_record():
    table, _clock, _calls = _table()
    manual = table.add_manual("10.0.0.2", 52480)
    manual.manual_targets = [("10.0.0.2", 52480)]
    table.set_targets(manual)
    table.mdns_found(_rec("10.0.0.2", "169.254.0.2"))
    table.identified(manual, "bbbbbbbbbbbb", "studio-2")
    assert list(table.peers.values()) == [manual]
    assert manual.sources == {"manual", "mdns"}
    assert all(lk.peer is manual for lk in table.links.values())


@pytest.mark.parametrize(("lost", "up"), [(0, True), (1, True), (2, False)])
def test_a_late_loop_is_not_a_silent_peer(lost, up):
    """The agent's own loop stalled for 10 s (a starved machine): it sent no probes, so
    the peer cannot have missed them. Down takes probes that went out and were lost."""
    table, clock, _calls = _table()
    table.mdns_found(_rec("10.0.0.2"))
    link = table.links[("10.0.0.2", 52480)]
    table.replied(link, clock())
    clock.t += 10.0  # the stall
    link.lost_since_reply = lost
    table.update_liveness(clock())
    assert link.up is up
    table.replied(link, clock())  # a reply resets the count
    assert link.lost_since_reply == 0


def test_a_nameless_peers_up_waits_for_its_name_and_an_unsaid_up_has_no_down():
    """Issue 34 point 11: a manual peer answers before its first snapshot names it; its
    peer_up waits for the name (NAME_WAIT_S at most) rather than name it by address, and
    a down before the up was said is not said either."""
    from exotray.agent.peers.table import NAME_WAIT_S

    table, clock, calls = _table()

    def manual(host):  # --peer HOST:52480, resolved
        peer = table.add_manual(host, 52480)
        peer.manual_targets = [(host, 52480)]
        table.set_targets(peer)
        return peer

    peer = manual("10.0.0.3")
    link = table.links[("10.0.0.3", 52480)]
    table.replied(link, clock())
    assert [c for c in calls if c[0] == "up"] == [] and peer.up_unsaid_since == clock()
    clock.t += 0.5
    peer.name = "studio-3"  # its snapshot came
    table.update_liveness(clock())
    assert [c for c in calls if c[0] == "up"] == [("up", "probes")] and peer.said_up
    # another, never named: said by its address after NAME_WAIT_S
    other = manual("10.0.0.4")
    table.replied(table.links[("10.0.0.4", 52480)], clock())
    clock.t += NAME_WAIT_S - 0.1
    table.replied(table.links[("10.0.0.4", 52480)], clock())
    table.update_liveness(clock())
    assert len([c for c in calls if c[0] == "up"]) == 1 and not other.said_up
    clock.t += 0.2
    table.update_liveness(clock())
    assert len([c for c in calls if c[0] == "up"]) == 2 and other.said_up
    # a third goes down before its up was said: nothing either way
    third = manual("10.0.0.5")
    third_link = table.links[("10.0.0.5", 52480)]
    table.replied(third_link, clock())
    clock.t += 1.0
    for lk in table.links.values():
        if lk is not third_link:
            table.replied(lk, clock())
    third_link.lost_since_reply = 10
    clock.t += DOWN_AFTER_S
    for lk in table.links.values():
        if lk is not third_link:
            table.replied(lk, clock())
    table.update_liveness(clock())
    assert not third_link.up and third.up_unsaid_since is None and not third.said_up
    assert [c for c in calls if c[0] == "down"] == []
