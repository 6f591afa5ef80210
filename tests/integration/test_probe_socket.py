"""The UDP reflector on a real socket: well-formed probes are answered with a datagram
of exactly their size; everything else is dropped silently and counted."""

from __future__ import annotations

import os
import select
import socket
import time

import pytest
from helpers import AgentProc, free_port, wait_for

from exotray.agent.probe import udp as P


@pytest.fixture
def agent(tmp_path):
    a = AgentProc(tmp_path, "refl", free_port(), [])
    try:
        a.wait_ready()
        yield a
    finally:
        a.close()


def _request(seq: int = 7) -> bytes:
    return P.encode(P.Probe(P.REQUEST, seq, time.time_ns(), 0, 0))


GARBAGE = [
    pytest.param(b"", id="empty"),
    pytest.param(b"x", id="one-byte"),
    pytest.param(_request()[:-1], id="truncated"),
    pytest.param(_request() + b"\0", id="one-byte-too-long"),
    pytest.param(_request() * 30, id="oversized-1200"),
    pytest.param(os.urandom(P.PROBE_LEN), id="random-right-size"),
    pytest.param(b"\0" * 1400, id="zeros-1400"),
    pytest.param(b"XTP\x01" + _request()[4:], id="wrong-magic"),
    pytest.param(_request()[:4] + b"\x09" + _request()[5:], id="unknown-type"),
    pytest.param(P.encode(P.Probe(P.REQUEST, 1, 5, 6, 7)), id="request-with-reflector-times"),
    pytest.param(P.encode(P.Probe(P.REPLY, 99, 5, 6, 7)), id="unsolicited-reply"),
]


def test_reflector_answers_with_same_size_and_drops_garbage(agent):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.settimeout(1.0)
    try:
        req = _request(1234)
        s.sendto(req, ("127.0.0.1", agent.port))
        data, addr = s.recvfrom(4096)
        assert addr == ("127.0.0.1", agent.port)
        assert len(data) == len(req)
        reply = P.decode(data)
        assert reply.type == P.REPLY and reply.seq == 1234
        assert reply.t1 == P.decode(req).t1 and reply.t2 <= reply.t3

        before = agent.get("/v1/snapshot")["counters"]
        for case in GARBAGE:
            s.sendto(case.values[0], ("127.0.0.1", agent.port))
        # A valid probe sent after the garbage: its reply is the only datagram we get.
        s.sendto(_request(5678), ("127.0.0.1", agent.port))
        data, _ = s.recvfrom(4096)
        assert P.decode(data).seq == 5678
        s.settimeout(0.3)
        with pytest.raises(TimeoutError):
            s.recvfrom(4096)
        after = wait_for(
            lambda: (c := agent.get("/v1/snapshot")["counters"])["datagrams_malformed"]
            >= before["datagrams_malformed"] + len(GARBAGE) - 1 and c,
            2.0,
        )
        assert after, "malformed datagrams were not counted"
        assert after["replies_unmatched"] + after["replies_late"] >= 1
        assert after["requests_reflected"] == before["requests_reflected"] + 1
    finally:
        s.close()
    assert agent.proc.poll() is None, agent.log()


@pytest.mark.parametrize("case", GARBAGE)
def test_decode_rejects(case):
    try:
        p = P.decode(case)
    except P.ProbeError:
        return
    # The only decodable cases are the two semantic ones the socket layer drops.
    assert (p.type == P.REQUEST and (p.t2 or p.t3)) or p.type == P.REPLY


def test_a_reply_that_waited_while_our_loop_was_late_is_a_reply(agent):
    """Issue 18 finding 10: the loop stalls past the probe timeout (a starved machine)
    while the reply waits in the socket; the next tick reads it before expiring anything,
    so it is a reply (RTT from kernel stamps), not a lost probe."""
    import asyncio

    replies: list[float] = []
    lost: list[float] = []

    async def run() -> None:
        ps = P.ProbeSocket(lambda _t, _s, rtt, *_: replies.append(rtt),
                           lambda _t, s: lost.append(s), timeout_s=0.2)
        ps.open("127.0.0.1", 0)
        try:
            ps.send(("127.0.0.1", agent.port))
            time.sleep(0.5)  # the loop stalls past the timeout; the reply arrives meanwhile
            # (the agent answers at its next tick, 0.25 s at most; a loaded machine, later)
            select.select([ps.sock], [], [], 10)
            ps.drain()  # what the probe tick now does first
            ps.expire()
        finally:
            ps.close()

    asyncio.run(run())
    assert len(replies) == 1 and not lost
