"""The agent's stop path and the RTT arithmetic of its probe socket, in process."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
import threading

import httpx
import pytest
from helpers import AgentProc, free_port

from exotray.agent.probe import udp as P
from exotray.agent.runtime import Agent
from exotray.agent.share import wire as W
from exotray.core.settings import Settings


def _fds() -> int:
    return len(os.listdir("/proc/self/fd")) if sys.platform.startswith("linux") else 0


def test_stop_leaves_no_task_thread_or_socket(tmp_path):
    threads_before = set(threading.enumerate())
    fds_before = _fds()
    peer_port = free_port()

    async def main() -> None:
        s = Settings(name="t", bind="127.0.0.1", port=0, mdns=False, interval=0.2,
                     peers=(f"127.0.0.1:{peer_port}",), state_dir=str(tmp_path))
        agent = Agent(s)
        await agent.start()
        async with httpx.AsyncClient(trust_env=False) as c:
            for path in ("/v1/snapshot", "/v1/cluster", "/v1/events"):
                r = await c.get(f"http://127.0.0.1:{agent.port}{path}")
                assert r.status_code == 200
        await asyncio.sleep(0.6)  # a few ticks of every loop, incl. failed peer fetches
        await agent.stop()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert others == [], f"tasks left behind: {others}"

    asyncio.run(main())
    leftover = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    assert leftover == []
    if sys.platform.startswith("linux"):
        assert _fds() == fds_before


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_cleanly(tmp_path, sig):
    a = AgentProc(tmp_path, "sig", free_port(), [])
    try:
        a.wait_ready()
        a.proc.send_signal(sig)
        assert a.proc.wait(5) == 0
        assert "exotray agent stopped" in a.log()
        assert "Traceback" not in a.log()
    finally:
        a.close()


def test_port_in_use_is_a_clear_error(tmp_path):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        a = AgentProc(tmp_path, "busy", port, [])
        try:
            assert a.proc.wait(10) == 1
            assert f"cannot listen on 127.0.0.1:{port}" in a.log()
        finally:
            a.close()


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


@pytest.mark.parametrize(
    ("held_ns", "wire_ns", "mono_s", "expect_ms"),
    [
        pytest.param(0, 1_000_000, 0.0011, 1.0, id="no-reflector-delay"),
        pytest.param(5_000_000, 6_000_000, 0.0061, 1.0, id="reflector-delay-subtracted"),
        pytest.param(0, 250_000_000, 0.2501, 250.0, id="loaded-link"),
        pytest.param(0, -1_000, 0.001, None, id="wall-clock-stepped-back"),
        pytest.param(0, 5_000_000_000, 0.001, None, id="wall-clock-stepped-forward"),
        pytest.param(2_000_000_000, 2_001_000_000, 0.001, None, id="reflector-held-too-long"),
        pytest.param(-5, 1_000_000, 0.0011, None, id="reflector-times-reversed"),
    ],
)
def test_rtt_arithmetic(held_ns, wire_ns, mono_s, expect_ms):
    replies: list[float] = []
    lost: list[float] = []
    clock = _Clock()

    async def main() -> None:
        target_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        target_sock.bind(("127.0.0.1", 0))
        target = target_sock.getsockname()
        ps = P.ProbeSocket(lambda t, at, rtt, *_: replies.append(rtt),
                           lambda t, at: lost.append(at), clock=clock)
        ps.open("127.0.0.1", 0)
        try:
            ps.send(target)
            req = P.decode(target_sock.recv(100))
            clock.t += mono_s
            t2 = req.t1 + 100
            reply = P.encode(P.Probe(P.REPLY, req.seq, req.t1, t2, t2 + held_ns))
            ps.datagram(reply, target, req.t1 + wire_ns)
        finally:
            ps.close()
            target_sock.close()

    asyncio.run(main())
    if expect_ms is None:
        assert replies == []
    else:
        assert replies == [pytest.approx(expect_ms)]


def test_timeouts_are_losses_not_rtts():
    clock = _Clock()
    replies: list[float] = []
    lost: list[float] = []

    async def main() -> None:
        ps = P.ProbeSocket(lambda t, at, rtt, *_: replies.append(rtt),
                           lambda t, at: lost.append(at), timeout_s=1.0, clock=clock)
        ps.open("127.0.0.1", 0)
        sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sink.bind(("127.0.0.1", 0))
        try:
            for _ in range(3):
                ps.send(sink.getsockname())
                clock.t += 0.4
            ps.expire()  # t=101.2: only the probe sent at 100.0 is over its 1 s timeout
            assert lost == [100.0]
            clock.t += 5
            ps.expire()
            assert lost == [100.0, pytest.approx(100.4), pytest.approx(100.8)]
            assert ps.counters["probes_lost"] == 3 and replies == []
        finally:
            ps.close()
            sink.close()

    asyncio.run(main())


def test_send_error_counts_as_loss():
    clock = _Clock()
    lost: list[float] = []

    async def main() -> None:
        ps = P.ProbeSocket(lambda *a: None, lambda t, at: lost.append(at), clock=clock)
        ps.open("127.0.0.1", 0)
        try:
            ps.send(("127.0.0.1", 0))  # port 0: the kernel refuses to send
        finally:
            ps.close()

    asyncio.run(main())
    assert lost == [100.0]


def test_kernel_timestamps_used_on_linux():
    if not sys.platform.startswith("linux"):
        pytest.skip("SO_TIMESTAMPNS is Linux-only")

    async def main() -> bool:
        ps = P.ProbeSocket(lambda *a: None, lambda *a: None)
        ps.open("127.0.0.1", 0)
        ps.close()
        return ps.kernel_timestamps

    assert asyncio.run(main())


def test_stop_with_streams_leaves_no_task_thread_or_socket(tmp_path):
    """Two stream-sharing agents following each other, one outside subscriber: stop
    ends the followers, the producer and every open stream."""
    threads_before = set(threading.enumerate())
    fds_before = _fds()
    p1, p2 = free_port(), free_port()

    async def main() -> None:
        agents = [Agent(Settings(name=n, bind="127.0.0.1", port=p, mdns=False, interval=0.2,
                                 peers=(f"127.0.0.1:{q}",), state_dir=str(tmp_path / n),
                                 sharing="stream"))
                  for n, p, q in (("s1", p1, p2), ("s2", p2, p1))]
        for a in agents:
            await a.start()
        async with httpx.AsyncClient(trust_env=False) as c, c.stream(
                "GET", f"http://127.0.0.1:{p1}/v1/stream",
            params={"nonce": "ab" * 16, "v": W.VERSION}) as resp:
            assert resp.status_code == 200
            for _ in range(100):
                if all(len(a.cluster()["nodes"]) == 2 for a in agents):
                    break
                await asyncio.sleep(0.05)
            assert all(a.cluster()["peers"][0]["sharing"] == "stream" for a in agents)
            t0 = asyncio.get_running_loop().time()
            for a in agents:
                await a.stop()
            assert asyncio.get_running_loop().time() - t0 < 3.0  # no 5 s server wait
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert others == [], f"tasks left behind: {others}"

    asyncio.run(main())
    leftover = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    assert leftover == []
    if sys.platform.startswith("linux"):
        assert _fds() == fds_before
