"""The probe socket read at the agent's ticks (probe/udp.py `read_at_ticks`): where the
kernel stamps receive times, nothing wakes the agent when a probe or a reply arrives;
the tick's drain reads them, a request's wait there is subtracted by its prober, and a
reply counts for liveness from when it arrived, not from when it was read.

Real UDP sockets on loopback. Holds are real time (the kernel stamps the arrival, the
reflector its answer), so the few waits below are real, 50 ms each, and no assertion
depends on how long they took beyond "at least"; the rest of the clock is injected."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from types import SimpleNamespace

import pytest
from helpers import held_prober, reflected

from exotray.agent.hw import onlink
from exotray.agent.peers import links
from exotray.agent.peers.table import PeerTable
from exotray.agent.probe import pacing, pressure
from exotray.agent.probe import udp as P
from exotray.agent.probe.prober import Prober
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
    last reply is its arrival (kernel stamp), so liveness loses nothing to the wait.
    The clock is the real monotonic one here: the arrival is derived from it."""

    async def main():
        refl = P.ProbeSocket(lambda *a: None, lambda *a: None)
        refl.open("127.0.0.1", 0)  # answers at once
        _table, prober, link = held_prober(refl.sock.getsockname()[1], timeout_s=1.0,
                                           down_after_s=2.5)
        try:
            sent = time.monotonic()
            prober.tick(False)  # the probe leaves
            assert await reflected(refl) == 1  # the reflector answers ...
            await asyncio.sleep(WAIT_S)  # ... and our socket holds the reply
            assert link.last_reply is None
            read = time.monotonic()
            prober.tick(False, full=False)  # our next tick reads it
        finally:
            prober.close()
            refl.close()
        return link, sent, read

    link, sent, read = asyncio.run(main())
    assert link.up
    # its time is its arrival (when the reflector answered), not the read a wait later
    assert sent <= link.last_reply < read - WAIT_S / 2


def test_a_datagram_without_the_kernels_stamp_ends_the_hold():
    """Held, a datagram the kernel did not stamp would get the time it was read: its
    RTT (or its prober's) would grow by the wait. So the first one puts the reader back
    for good."""
    async def main() -> list[bool]:
        ps = P.ProbeSocket(lambda *a: None, lambda *a: None)
        ps.open("127.0.0.1", 0)
        try:
            seen = [ps.read_at_ticks(0.25), ps.watched]
            ps._rx_time([])  # the receive path's stamp, from no control message
            seen += [ps.watched, ps.read_at_ticks(0.25), ps.watched]
        finally:
            ps.close()
        return seen

    assert asyncio.run(main()) == [True, False, True, False, True]


async def _crowd(send, rcvbuf: int | None = None) -> tuple[bool, int]:
    """A held socket fed by `send(socket, address)`, then one tick's drain: whether it
    is read at once now, and how many ticks found it crowded."""
    ps = P.ProbeSocket(lambda *a: None, lambda *a: None, clock=Clock())
    ps.open("127.0.0.1", 0)
    if rcvbuf is not None:
        ps.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    ps.read_at_ticks(0.25)
    ps.drain()  # (the kernel's drop count: its first look)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            send(s, ps.sock.getsockname())
            await asyncio.sleep(WAIT_S)
            assert ps.counters["datagrams_malformed"] == 0  # held: nothing read yet
            ps.drain()
            return ps.watched, ps.counters["probe_socket_crowded"]
    finally:
        ps.close()


def _junk(n: int, size: int = 4):
    def send(s: socket.socket, to: tuple) -> None:
        for _ in range(n):
            s.sendto(bytes(size), to)
    return send


def test_a_few_datagrams_between_ticks_keep_the_hold():
    def send(s, to):
        for seq in range(10):
            s.sendto(_request(seq), to)

    assert asyncio.run(_crowd(send)) == (False, 0)


def test_many_datagrams_between_ticks_read_the_socket_at_once():
    assert asyncio.run(_crowd(_junk(10))) == (False, 0)
    assert asyncio.run(_crowd(_junk(pressure.WATCH_AT))) == (True, 1)


def test_a_datagram_longer_than_any_probe_reads_the_socket_at_once():
    assert asyncio.run(_crowd(_junk(1, 1400))) == (True, 1)


def test_a_buffer_half_full_or_overflowing_reads_the_socket_at_once():
    """Linux's SO_MEMINFO: the smallest buffer (the kernel's minimum) holds a few
    datagrams; half full is crowded, and so is past full (the kernel drops the rest)."""
    assert asyncio.run(_crowd(_junk(3), rcvbuf=1)) == (True, 1)
    assert asyncio.run(_crowd(_junk(40), rcvbuf=1)) == (True, 1)


def test_crowded_reads_at_once_while_it_lasts_and_holds_again_after(monkeypatch):
    monkeypatch.setattr(pressure, "WATCH_AT", 8)
    clock = Clock()

    async def main() -> list[tuple[bool, int]]:
        ps = P.ProbeSocket(lambda *a: None, lambda *a: None, clock=clock)
        ps.open("127.0.0.1", 0)
        ps.read_at_ticks(0.25)
        seen = []
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                to = ps.sock.getsockname()
                _junk(20)(s, to)
                await asyncio.sleep(WAIT_S)
                ps.drain()
                seen.append((ps.watched, ps.counters["datagrams_malformed"]))
                _junk(5)(s, to)
                await asyncio.sleep(WAIT_S)  # read at once: by the loop's reader
                seen.append((ps.watched, ps.counters["datagrams_malformed"]))
                clock.t += pressure.WATCH_FOR_S - 1
                _junk(10)(s, to)  # still flooding (read by the reader): renewed
                await asyncio.sleep(WAIT_S)
                ps.drain()
                ps.read_at_ticks(0.25)  # (a new interval keeps it too)
                seen.append((ps.watched, ps.counters["probe_socket_crowded"]))
                clock.t += pressure.WATCH_FOR_S - 1
                ps.drain()
                seen.append((ps.watched, ps.counters["probe_socket_crowded"]))
                clock.t += 1
                ps.drain()  # quiet for WATCH_FOR_S: back to the ticks
                seen.append((ps.watched, ps.counters["probe_socket_crowded"]))
        finally:
            ps.close()
        return seen

    assert asyncio.run(main()) == [(True, 20), (True, 25), (True, 2), (True, 2),
                                   (False, 2)]


def test_a_stopping_agent_reads_its_socket_at_once():
    """No tick drains it once the loops are stopped: peers' probes are answered as
    they come until the socket closes."""
    async def main() -> tuple[bool, bool]:
        table = PeerTable(Clock(), lambda peer, target: None, down_after_s=2.5)
        prober = Prober(table, SimpleNamespace(nics={}), onlink.IfIndex(),  # type: ignore[arg-type]
                        Clock())
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind(("127.0.0.1", 0))
        prober.open("127.0.0.1", 0, udp, timeout_s=1.0, key=None)
        try:
            held = prober.socket.read_at_ticks(0.25)
            prober.watch()
            return held, prober.socket.watched
        finally:
            prober.close()

    assert asyncio.run(main()) == (True, True)


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
    lk.hold_s = 0.8  # a stall, not a tick: no longer a grace than a tick's (down in time)
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
