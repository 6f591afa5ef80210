"""link_down / link_up, link_flapping and link_slower (issue 31; peers/linkevents.py,
core/linkchanges.py) through a real peer table, its links and their queue trackers, on
the test's clock. The lab test (tests/lab/test_lab_link_events.py) does it with real
cables (veths) and a real delay."""

from __future__ import annotations

from exotray.agent.peers import links
from exotray.agent.peers.discovery import PeerRecord
from exotray.agent.peers.linkevents import LinkEvents
from exotray.agent.peers.table import PeerTable
from exotray.core.linkchanges import ChangeParams, SlowerWatch
from exotray.core.saturation import SaturationParams

TICK = 0.25


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


class Cluster:
    """One peer with two addresses: a Thunderbolt Bridge link and a Wi-Fi link."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.events: list[tuple[str, dict]] = []
        self.peer_events: list[bool] = []
        self.ev = LinkEvents(lambda kind, at, **f: self.events.append((kind, f)),
                             wall=lambda now: now, node=lambda: "studio-1",
                             label={"bridge0": "Thunderbolt Bridge", "en0": "Wi-Fi"}.get)
        self.table = PeerTable(
            self.clock, lambda peer, t: links.new_link("me", peer, t, 1.0, SaturationParams()),
            down_after_s=2.5, on_peer_event=lambda p, up, why: self.peer_events.append(up),
            on_link_change=self.ev.changed)
        self.table.mdns_found(PeerRecord("b._exotray._tcp.local.", "bbbbbbbbbbbb", "studio-2",
                                         "0.1.0", 1, 52480, ("10.213.1.2", "10.213.2.2")))
        self.tb, self.wifi = self.table.links.values()
        self.tb.local_interface, self.wifi.local_interface = "bridge0", "en0"
        self.rtt = {"tb": 0.4, "wifi": 6.1}
        self.answering = {"tb": True, "wifi": True}
        self.named = {"tb": self.tb, "wifi": self.wifi}

    def run(self, seconds: float, rate: float = 0.0) -> None:
        for _ in range(round(seconds / TICK)):
            self.clock.t += TICK
            now = self.clock.t
            for name, ok in self.answering.items():
                lk = self.named[name]
                if ok:
                    lk.rtt.reply(now, self.rtt[name])
                    lk.queue.reply(now, self.rtt[name])
                    self.table.replied(lk, now)
                else:
                    lk.lost_since_reply += 1
            self.table.update_liveness(now)
            if round(now / TICK) % 4 == 0:  # the full tick, once a second
                for lk in self.named.values():
                    self.ev.tick(lk, now, rate, None)

    def kinds(self) -> list[str]:
        return [k for k, _ in self.events]


def test_a_cable_pulled_while_the_peer_stays_up_on_wifi():
    c = Cluster()
    c.run(5)
    assert c.peer_events == [True] and c.events == []  # both up: peer_up only
    c.answering["tb"] = False
    c.run(4)
    assert c.kinds() == ["link_down"] and c.peer_events == [True]  # no peer_down
    down = c.events[0][1]
    assert down["link_id"] == c.tb.id and down["fallback_link_id"] == c.wifi.id
    assert (down["local_label"], down["fallback_label"]) == ("Thunderbolt Bridge", "Wi-Fi")
    assert (down["rtt_before_ms"], down["rtt_now_ms"]) == (0.4, 6.1)
    assert down["peer_name"] == "studio-2" and down["node"] == "studio-1"
    c.answering["tb"] = True
    c.run(2)
    assert c.kinds() == ["link_down", "link_up"] and c.events[1][1]["link_id"] == c.tb.id


def test_the_last_link_going_is_peer_down_only():
    c = Cluster()
    c.run(5)
    c.answering["wifi"] = False
    c.run(4)
    c.answering["tb"] = False
    c.run(4)
    assert c.kinds() == ["link_down"] and c.peer_events == [True, False]
    c.answering["tb"] = c.answering["wifi"] = True
    c.run(3)
    assert c.kinds() == ["link_down"] and c.peer_events == [True, False, True]


def test_a_cable_that_flaps_is_told_once_then_quiet_then_cleared():
    c = Cluster()
    c.run(5)
    for _ in range(5):  # down 4 s, up 4 s, five times
        c.answering["tb"] = False
        c.run(4)
        c.answering["tb"] = True
        c.run(4)
    kinds = c.kinds()
    # down, up, down, up, down, up: flapping at the third return, then nothing
    assert kinds == ["link_down", "link_up", "link_down", "link_up", "link_down",
                     "link_flapping"], kinds
    assert c.events[-1][1]["changes"] == 3
    c.run(ChangeParams().flap_quiet_s + 2)
    assert c.kinds()[-1] == "link_flapping_cleared" and c.events[-1][1]["state"] == "up"


def test_a_link_through_a_flapping_cable_is_not_told_flapping_once_more():
    """The interface's own carrier flaps (its link_flapping names the cable, hw/monitor.py):
    the links behind it flap with it, and are not told again, one per peer; nor their
    clear. A link whose interface is steady still is."""
    c = Cluster()
    c.ev.carrier_flapping = lambda name, _peer: name == "bridge0"
    c.run(5)
    for _ in range(5):
        c.answering["tb"] = False
        c.run(4)
        c.answering["tb"] = True
        c.run(4)
    assert "link_flapping" not in c.kinds()
    # its down told before its cable's flapping is not left without its return
    assert [k for k, f in c.events if f["link_id"] == c.tb.id][-2:] == ["link_down",
                                                                       "link_up"]
    c.run(ChangeParams().flap_quiet_s + 2)
    assert "link_flapping_cleared" not in c.kinds()
    for _ in range(3):
        c.answering["wifi"] = False
        c.run(4)
        c.answering["wifi"] = True
        c.run(4)
    assert [f["local_interface"] for k, f in c.events if k == "link_flapping"] == ["en0"]


def test_a_link_that_flaps_on_once_its_cable_is_steady_is_told_then():
    """Its cable's flapping told instead of its own, the link goes on flapping after the
    cable steadied: told at its next change, and cleared in its turn."""
    c = Cluster()
    carrier = {"flapping": True}
    c.ev.carrier_flapping = lambda name, _peer: name == "bridge0" and carrier["flapping"]
    c.run(5)
    for _ in range(4):
        c.answering["tb"] = False
        c.run(4)
        c.answering["tb"] = True
        c.run(4)
    assert "link_flapping" not in c.kinds()
    carrier["flapping"] = False  # (the cable's own carrier is steady: yet the link flaps)
    c.answering["tb"] = False
    c.run(4)
    assert c.kinds()[-1] == "link_flapping" and c.events[-1][1]["link_id"] == c.tb.id
    c.answering["tb"] = True
    c.run(ChangeParams().flap_quiet_s + 2)
    assert c.kinds()[-1] == "link_flapping_cleared"


def test_a_path_that_got_slower_is_told_after_30_s_and_cleared_when_back():
    c = Cluster()
    c.run(60)  # the baseline: 0.4 ms
    c.rtt["tb"] = 30.4  # 30 ms more each way... the forwarder's delay
    c.run(25)
    assert c.kinds() == []  # not yet: it must stay so for 30 s
    c.run(10)
    assert c.kinds() == ["link_slower"], c.kinds()
    ev = c.events[0][1]
    assert ev["link_id"] == c.tb.id and ev["rtt_before_ms"] == 0.4
    assert ev["rtt_now_ms"] == 30.4
    c.run(120)  # the queue's baseline learns 30.4 ms meanwhile; still slower than before
    assert c.kinds() == ["link_slower"]
    c.rtt["tb"] = 0.45
    c.run(15)
    assert c.kinds() == ["link_slower", "link_slower_cleared"]


def test_the_links_own_traffic_is_not_a_slower_path():
    c = Cluster()
    c.run(60)
    c.rtt["tb"] = 30.4  # a standing queue of its own transfer (2 MB/s)...
    c.run(120, rate=2e6)
    assert c.kinds() == []


def test_noise_that_leaves_some_probes_fast_is_not_slower():
    w = SlowerWatch()
    for i in range(600):  # Wi-Fi power save: most replies slow, the low stays 3 ms
        assert w.reading(float(i), 3.0, 3.0 if i < 60 else 3.2, True) is None
    assert not w.slower


def test_a_link_dropped_with_its_interface_is_down_and_its_return_is_up():
    """A pulled cable takes its interface's subnet with it: the peer's address there is
    no longer on a local network and its link is dropped from the table. That is a
    link_down too, and the link made again when the cable is back gets its link_up."""
    c = Cluster()
    c.run(5)
    rec = lambda *addrs: PeerRecord("b._exotray._tcp.local.", "bbbbbbbbbbbb",  # noqa: E731
                                    "studio-2", "0.1.0", 1, 52480, addrs)
    tb_id = c.tb.id
    c.table.mdns_found(rec("10.213.2.2"))  # only the Wi-Fi address is reachable now
    assert c.kinds() == ["link_down"] and c.events[0][1]["fallback_link_id"] == c.wifi.id
    del c.answering["tb"]
    c.run(3)
    c.table.mdns_found(rec("10.213.1.2", "10.213.2.2"))
    (tb,) = [lk for lk in c.table.links.values() if lk.id == tb_id]
    tb.local_interface = "bridge0"
    c.named["tb"], c.answering["tb"] = tb, True
    c.run(2)
    assert c.kinds() == ["link_down", "link_up"] and c.events[1][1]["link_id"] == tb_id
    assert c.peer_events == [True]


def test_a_peer_saying_goodbye_is_peer_down_alone_and_its_return_peer_up_alone():
    c = Cluster()
    c.run(5)
    (peer,) = c.table.peers.values()
    c.table.remove(peer, "goodbye")
    assert c.kinds() == [] and c.peer_events == [True, False]
    c.table.mdns_found(PeerRecord("b._exotray._tcp.local.", "bbbbbbbbbbbb", "studio-2",
                                  "0.1.0", 1, 52480, ("10.213.1.2", "10.213.2.2")))
    c.tb, c.wifi = c.table.links.values()
    c.named = {"tb": c.tb, "wifi": c.wifi}
    c.run(3)
    assert c.kinds() == [] and c.peer_events == [True, False, True]


def test_a_link_that_stops_flapping_down_is_told_so_and_its_return_is_link_up():
    c = Cluster()
    c.run(5)
    for _ in range(3):
        c.answering["tb"] = False
        c.run(4)
        c.answering["tb"] = True
        c.run(4)
    c.answering["tb"] = False  # it flaps, then dies
    c.run(ChangeParams().flap_quiet_s + 5)
    cleared = c.events[-1]
    assert cleared[0] == "link_flapping_cleared" and cleared[1]["state"] == "down"
    c.answering["tb"] = True
    c.run(3)
    assert c.kinds()[-1] == "link_up"


def test_what_was_told_of_a_link_gone_for_good_is_forgotten():
    c = Cluster()
    c.run(5)
    rec = lambda *addrs: PeerRecord("b._exotray._tcp.local.", "bbbbbbbbbbbb",  # noqa: E731
                                    "studio-2", "0.1.0", 1, 52480, addrs)
    c.table.mdns_found(rec("10.213.9.9", "10.213.2.2"))  # the Thunderbolt address changed
    assert c.kinds() == ["link_down"] and len(c.ev.said_down) == 1
    c.ev.prune(c.clock.t + 3601, c.table.links.values())
    assert c.ev.said_down == {}
