"""The probe socket read at the agent's ticks (probe.py `read_at_ticks`): where the
kernel stamps receive times, nothing wakes the agent when a probe or a reply arrives;
the tick's drain reads them, a request's wait there is subtracted by its prober, and a
reply counts for liveness from when it arrived, not from when it was read.

Real UDP sockets on loopback. Holds are real time (the kernel stamps the arrival, the
reflector its answer), so the few waits below are real: 50 ms each; the rest of the
clock is injected."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from types import SimpleNamespace

import pytest

from exotray.agent import links, onlink, pacing
from exotray.agent import probe as P
from exotray.agent.peers import PeerTable
from exotray.agent.probing import Prober
from exotray.core.saturation import SaturationParams

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="kernel receive timestamps on this kernel (Linux)")

WAIT_S = 0.05


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


def _request(seq: int = 1) -> bytes:
    return P.encode(P.Probe(P.REQUEST, seq, time.time_ns(), 0, 0))


def test_only_ticks_that_come_often_enough_hold_requests():
    async def main() -> list[tuple[bool, bool]]:
        ps = P.ProbeSocket(lambda *a: None, lambda *a: None)
        ps.open("127.0.0.1", 0)
        try:
            seen = [(ps.watched, ps.kernel_timestamps)]
            for tick_s in (0.25, 0.5, 0.3, 0.0125):
                held = ps.read_at_ticks(tick_s)
                seen.append((held, ps.watched))
            ps._kernel_ts = None  # a kernel that does not stamp: read at once
            seen.append((ps.read_at_ticks(0.25), ps.watched))
        finally:
            ps.close()
        assert not ps.watched  # the reader is gone with the socket
        return seen

    assert asyncio.run(main()) == [
        (True, True),  # a new socket reads at once until told otherwise
        (True, False), (False, True), (True, False), (True, False),
        (False, True)]


def test_a_held_request_is_answered_at_the_drain_and_its_prober_subtracts_the_wait():
    replies: list[tuple] = []

    async def main() -> tuple[int, int]:
        refl = P.ProbeSocket(lambda *a: None, lambda *a: None)
        refl.open("127.0.0.1", 0)
        refl.read_at_ticks(0.25)
        ps = P.ProbeSocket(lambda *a: replies.append(a), lambda *a: None)
        ps.open("127.0.0.1", 0)  # the prober reads at once
        try:
            ps.send(refl.sock.getsockname())
            await asyncio.sleep(WAIT_S)  # the loop runs: nothing reads the reflector
            before = refl.counters["requests_reflected"]
            refl.drain()  # its tick
            for _ in range(100):
                await asyncio.sleep(0.01)
                if replies:
                    break
            return before, refl.counters["requests_reflected"]
        finally:
            ps.close()
            refl.close()

    before, after = asyncio.run(main())
    assert (before, after) == (0, 1)
    (_target, _sent, rtt_ms, _received, held_s), = replies
    assert held_s >= WAIT_S * 0.9  # the reflector's t3 - t2: the wait in its socket
    assert rtt_ms < held_s * 1000 / 2  # ...which is not in the RTT


def test_a_reply_read_late_counts_from_when_it_arrived():
    """The prober's socket is held too: the reply waits for our tick, but the link's
    last reply is its arrival (kernel stamp), so liveness loses nothing to the wait."""
    clock = Clock()

    async def main():
        table = PeerTable(clock, lambda peer, target: links.new_link(
            "me", peer, target, 1.0, SaturationParams()), down_after_s=2.5)
        refl = P.ProbeSocket(lambda *a: None, lambda *a: None)
        refl.open("127.0.0.1", 0)  # answers at once
        port = refl.sock.getsockname()[1]
        peer = table.add_manual("127.0.0.1", port)
        peer.manual_targets = [("127.0.0.1", port)]
        table.set_targets(peer)
        prober = Prober(table, SimpleNamespace(nics={}), onlink.IfIndex(), clock)  # type: ignore[arg-type]
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        prober.open("127.0.0.1", 0, udp, timeout_s=1.0, key=None)
        prober.socket.read_at_ticks(0.25)
        (link,) = table.links.values()
        try:
            prober.tick(False)  # the probe leaves at 1000.0
            real = time.monotonic()
            await asyncio.sleep(WAIT_S)  # the reflector answers; our socket holds it
            assert link.last_reply is None
            clock.t += 0.25  # our next tick, a quarter interval later
            prober.tick(False, full=False)
            waited = time.monotonic() - real
        finally:
            prober.close()
            refl.close()
        return link, waited

    link, waited = asyncio.run(main())
    assert link.up
    # arrived within the real wait after the send, not at the tick that read it
    assert 1000.0 <= link.last_reply <= 1000.0 + waited < 1000.25


def test_a_full_drain_watches_the_socket_again_for_a_while(monkeypatch):
    monkeypatch.setattr(P, "WATCH_AT", 8)
    clock = Clock()

    async def main() -> list[tuple[bool, int]]:
        ps = P.ProbeSocket(lambda *a: None, lambda *a: None, clock=clock)
        ps.open("127.0.0.1", 0)
        ps.read_at_ticks(0.25)
        seen = []
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                for _ in range(20):  # a flood: junk, counted and dropped
                    s.sendto(b"junk", ps.sock.getsockname())
                await asyncio.sleep(WAIT_S)
                assert ps.counters["datagrams_malformed"] == 0  # held: nothing read yet
                ps.drain()
                seen.append((ps.watched, ps.counters["datagrams_malformed"]))
                for _ in range(5):
                    s.sendto(b"junk", ps.sock.getsockname())
                await asyncio.sleep(WAIT_S)  # watched: the loop reads them at once
                seen.append((ps.watched, ps.counters["datagrams_malformed"]))
                clock.t += P.WATCH_AFTER_FLOOD_S - 1
                ps.drain()
                seen.append((ps.watched, ps.counters["drains_full"]))
                clock.t += 1
                ps.drain()  # quiet for WATCH_AFTER_FLOOD_S: back to the ticks
                seen.append((ps.watched, ps.counters["drains_full"]))
        finally:
            ps.close()
        return seen

    assert asyncio.run(main()) == [(True, 20), (True, 25), (True, 1), (False, 1)]


def _link():
    return links.new_link("me", type("P", (), {"key": "k", "id": None, "name": None})(),
                          ("10.213.0.2", 52480), 1.0, SaturationParams())


def test_a_peers_hold_is_a_replys_grace_before_the_full_rate():
    lk = _link()
    lk.up, lk.last_reply, lk.answered_sent = True, 9.0, 9.0
    assert pacing.full_rate(lk, 10.25, 10.0)  # a peer that answers at once: overdue
    lk.hold_s = 0.2  # one that reads at its ticks held our last request 0.2 s
    assert not pacing.full_rate(lk, 10.2, 10.0)
    assert pacing.full_rate(lk, 10.25, 10.0)  # past the hold and the margin
    lk.hold_s = 0.24  # just under our tick: overdue only at the tick after
    assert not pacing.full_rate(lk, 10.25, 10.0) and pacing.full_rate(lk, 10.5, 10.0)


def test_the_hold_follows_the_peer_up_at_once_and_down_slowly():
    table = PeerTable(Clock(), lambda peer, target: links.new_link(
        "me", peer, target, 1.0, SaturationParams()), down_after_s=2.5)
    peer = table.add_manual("10.213.0.2", 52480)
    peer.manual_targets = [("10.213.0.2", 52480)]
    table.set_targets(peer)
    prober = Prober(table, None, onlink.IfIndex(), Clock())  # type: ignore[arg-type]
    (link,) = table.links.values()
    target = link.target
    holds = []
    for held in (0.0, 0.2, 0.05, 0.05, 0.24):
        prober.on_reply(target, 1000.0, 0.1, 1000.0, held)
        holds.append(round(link.hold_s, 3))
    assert holds == [0.0, 0.2, 0.18, 0.162, 0.24]
