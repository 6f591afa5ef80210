"""The probe rate follows need (agent/probe/pacing.py, issue 11's CPU): a link at rest is
probed once an interval, a link in question at every quarter-interval tick.

Real UDP on loopback: our Prober's socket and a reflector's; the clock is injected and
the ticks are called one by one (nothing sleeps; the sockets are read by the ticks'
drain, as a late loop would)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from exotray.agent.hw import onlink
from exotray.agent.peers import links
from exotray.agent.peers.table import PeerTable
from exotray.agent.probe import pacing
from exotray.agent.probe.prober import Prober
from exotray.agent.probe.udp import ProbeSocket
from exotray.agent.share import numbers as N
from exotray.core.queueing import LOSS, TOO_FEW_PROBES, QueueReading
from exotray.core.saturation import SaturationParams
from exotray.core.stats import Rate


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


class Nics:
    def __init__(self) -> None:
        self.nics: dict = {}


def _setup(clock: Clock):
    table = PeerTable(
        clock, lambda peer, target: links.new_link("me", peer, target, 1.0, SaturationParams()),
        down_after_s=2.5)
    reflector = ProbeSocket(lambda *a: None, lambda *a: None, clock=clock)
    reflector.open("127.0.0.1", 0)
    port = reflector.sock.getsockname()[1]
    peer = table.add_manual("127.0.0.1", port)
    peer.manual_targets = [("127.0.0.1", port)]
    table.set_targets(peer)
    prober = Prober(table, Nics(), onlink.IfIndex(), clock)
    table.on_link_dropped = prober.forget
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    prober.open("127.0.0.1", 0, udp, timeout_s=1.0, key=None)
    (link,) = table.links.values()
    return table, reflector, prober, link


def _run(clock: Clock, prober: Prober, reflector: ProbeSocket | None, ticks: int,
         start: int = 0) -> list[int]:
    """`ticks` quarter-interval ticks (every 4th a full one); probes sent at each."""
    sent = []
    for k in range(start, start + ticks):
        before = prober.socket.counters["probes_sent"]
        prober.tick(False, full=k % 4 == 0)
        sent.append(prober.socket.counters["probes_sent"] - before)
        if reflector is not None:
            reflector.drain()  # the peer answers at once
        clock.t += 0.25
    return sent


def test_a_link_at_rest_is_probed_once_an_interval_and_at_the_full_rate_when_busy():
    async def main() -> None:
        clock = Clock()
        _table, reflector, prober, link = _setup(clock)
        try:
            warm = _run(clock, prober, reflector, 4)
            assert link.up and warm[0] == 1
            rest = _run(clock, prober, reflector, 32, start=4)
            assert rest == [1, 0, 0, 0] * 8  # 8 s at rest: one probe an interval
            assert link.rtt.summary(clock()).loss == 0
            # busy (traffic seen by the judgement): every tick, for the RTT window
            pacing.mark(link, clock(), True)
            busy = _run(clock, prober, reflector, 44, start=36)
            assert busy[:40] == [1] * 40 and busy[40:] == [1, 0, 0, 0]
        finally:
            prober.close()
            reflector.close()

    asyncio.run(main())


def test_a_peer_that_stops_answering_is_probed_at_the_full_rate_and_down_in_time():
    """Liveness keeps its target at one probe an interval at rest: a probe unanswered at
    the next tick puts the link at the full rate, so two losses are in by the time its
    last reply is 2.5 intervals old."""
    async def main() -> None:
        clock = Clock()
        _table, reflector, prober, link = _setup(clock)
        try:
            _run(clock, prober, reflector, 12)
            assert link.up
            last_reply = link.last_reply
            reflector.close()  # the peer is killed right after answering
            sent = []
            k = 12
            while link.up:
                sent += _run(clock, prober, None, 1, start=k)
                k += 1
                assert clock() - last_reply < 4.0, "never marked down"
            # down at the first tick past 2.5 intervals without a reply
            assert clock() - 0.25 - last_reply == pytest.approx(2.5, abs=0.26)
            assert link.lost_since_reply >= 2
            # the probe of the full tick goes unanswered: every tick from the next one
            assert sent == [1] * len(sent)
        finally:
            prober.close()

    asyncio.run(main())


def _link():
    return links.new_link("me", type("P", (), {"key": "k", "id": None, "name": None})(),
                          ("10.213.0.2", 52480), 1.0, SaturationParams())


def _reading(baseline=0.05, delay=0.0, unknown=None):
    return QueueReading(baseline, delay, None, 8, 0, unknown)


@pytest.mark.parametrize("rate,util,own,expect", [
    (Rate(1000, 2000, 1.0), None, 0.0, False),  # idle
    (Rate(130_000, 0, 1.0), None, 0.0, True),  # carries 1 Mbit/s: the queueing cause's bound
    (Rate(130_000, 0, 1.0), None, 20_000.0, False),  # ...of which ours (probes, streams)
    (Rate(1000, 1000, 1.0), 0.3, 0.0, True),  # a third of its capacity
    (Rate(1000, 1000, 1.0), 0.1, 0.0, False),
    (None, None, 0.0, False),
])
def test_traffic_makes_a_link_busy_but_not_our_own(rate, util, own, expect):
    lk = _link()
    assert pacing.may_be_busy(lk, rate, util, own) is expect
    assert pacing.busy(lk, rate, util, _reading(), own) is expect


def test_a_link_whose_state_is_in_question_is_busy():
    lk = _link()
    idle = Rate(0, 0, 1.0)
    assert not pacing.busy(lk, idle, None, _reading())
    assert pacing.busy(lk, idle, None, _reading(delay=0.6))  # over half the 1 ms bound
    assert not pacing.busy(lk, idle, None, _reading(delay=0.3))
    assert pacing.busy(lk, idle, None, _reading(delay=None, unknown=LOSS))
    assert pacing.busy(lk, idle, None, _reading(delay=None, unknown=TOO_FEW_PROBES))
    lk.rtt.reply(999.0, 2.0)  # one probe 2 ms over a 0.05 ms baseline
    assert pacing.busy(lk, idle, None, _reading())
    lk.rtt.reply(999.25, 0.06)
    assert not pacing.busy(lk, idle, None, _reading())
    lk.detector.update(1000.0, 1.0, 0.95)  # counting towards a raise
    assert lk.detector.pending and pacing.busy(lk, idle, 0.0, _reading())


def test_full_rate_while_down_lost_searching_or_unanswered():
    lk = _link()
    assert pacing.full_rate(lk, 10.0, None)  # never answered
    lk.up, lk.last_reply, lk.answered_sent = True, 9.0, 9.0
    assert not pacing.full_rate(lk, 10.0, 9.0)
    assert pacing.full_rate(lk, 10.0, 9.5)  # the latest probe is still out
    lk.rtt.reply(9.0, 300.0)  # a far peer: 300 ms
    assert not pacing.full_rate(lk, 10.0, 9.75)  # its reply may still come
    assert pacing.full_rate(lk, 10.5, 9.75)
    lk.lost_since_reply = 1
    assert pacing.full_rate(lk, 10.0, 9.0)
    lk.lost_since_reply = 0
    lk.path.searching = True
    assert pacing.full_rate(lk, 10.0, 9.0)
    lk.path.searching = False
    pacing.mark(lk, 10.0, True)
    assert pacing.full_rate(lk, 19.9, 9.0) and not pacing.full_rate(lk, 20.1, 9.0)


def test_own_traffic_from_the_counters():
    own = pacing.OwnTraffic()
    probe = {"probes_sent": 0, "replies_received": 0, "requests_reflected": 0}
    sharing = {"stream_bytes_in": 0, "stream_bytes_out": 0, "stream_frames_in": 0,
               "stream_frames_built": 0, "stream_subscribers": 7}
    own.update(0.0, probe, sharing)
    probe.update(probes_sent=7, replies_received=7, requests_reflected=7)
    sharing.update(stream_bytes_in=1800, stream_bytes_out=1800, stream_frames_in=7,
                   stream_frames_built=1)
    own.update(1.0, probe, sharing)
    assert own.bytes_per_s == pytest.approx(82 * 28 + 140 * 14 + 3600 * (1 + 66 / 1448))


def test_the_per_interface_check_uses_the_same_bounds():
    assert pacing.iface_may_be_busy(Rate(130_000, 0, 1.0), None, 0.0, 0.9)
    assert not pacing.iface_may_be_busy(Rate(130_000, 0, 1.0), None, 20_000.0, 0.9)
    assert pacing.iface_may_be_busy(Rate(30_000, 0, 1.0), 100_000.0, 0.0, 0.9)  # 30 %
    assert not pacing.iface_may_be_busy(Rate(10_000, 0, 1.0), 100_000.0, 0.0, 0.9)
    assert not pacing.iface_may_be_busy(None, 100_000.0, 0.0, 0.9)


def test_own_traffic_peak_holds_the_largest_of_the_last_intervals():
    own = pacing.OwnTraffic()
    sent, peaks = 0, []
    for t in range(11):
        if t == 3:
            sent += 100_000  # a frame to many followers: a burst in one interval
        own.update(float(t), {}, {"stream_bytes_out": sent})
        peaks.append(own.peak)
    burst = 100_000 * pacing.SEGMENT_FACTOR
    assert own.bytes_per_s == 0.0
    # held for PEAK_INTERVALS updates, from the one that counted it, then gone
    assert peaks == [0.0] * 3 + [pytest.approx(burst)] * pacing.PEAK_INTERVALS + [0.0] * 2


def test_a_follower_more_is_not_a_burst_of_our_own_traffic():
    """stream_frames_built counts every frame since the start: one subscriber more (a
    follower connecting, or reconnecting after a resync) must not count all of them
    again as sent in this interval — the tempo would then take a traffic start of up to
    that much as our own for PEAK_INTERVALS intervals, and hold it for the heartbeat."""
    own = pacing.OwnTraffic()
    sharing = {"stream_frames_built": 17_280, "stream_subscribers": 7}  # a day at 1 s
    own.update(0.0, {}, sharing)
    sharing["stream_subscribers"] = 8
    own.update(1.0, {}, sharing)
    assert own.peak == 0.0
    assert N.prompt("rx_bytes_per_s", 2_000_000.0, 1_000.0, own=own.peak)  # 16 Mbit/s came
    sharing["stream_frames_built"] += 1  # one frame, to each of the 8
    own.update(2.0, {}, sharing)
    assert own.bytes_per_s == pytest.approx(8 * pacing.FRAME_OVERHEAD_BYTES)
