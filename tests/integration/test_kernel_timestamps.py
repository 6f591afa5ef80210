"""Kernel receive timestamps on a real socket of this kernel, Linux's or (the macOS
workflow) xnu's; tests/unit has the parser on both platforms' layouts."""

from __future__ import annotations

import pytest


def test_a_real_socket_reports_what_stamped_each_datagram():
    """On this kernel every datagram is stamped by the kernel (Linux SCM_TIMESTAMPNS,
    xnu SCM_TIMESTAMP), and the counters say so."""
    import asyncio
    import socket
    import sys
    import time

    from exotray.agent.probe import udp as P

    if not (sys.platform.startswith("linux") or sys.platform == "darwin"):
        pytest.skip(f"no kernel receive stamps read on {sys.platform}")

    async def main() -> dict[str, int]:
        ps = P.ProbeSocket(lambda *a: None, lambda *a: None)
        ps.open("127.0.0.1", 0)
        port = ps.sock.getsockname()[1]
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.bind(("127.0.0.1", 0))
            s.setblocking(False)
            for seq in range(3):
                s.sendto(P.encode(P.Probe(P.REQUEST, seq, time.time_ns(), 0, 0)),
                         ("127.0.0.1", port))
            for _ in range(100):
                await asyncio.sleep(0.01)
                if ps.counters["requests_reflected"] == 3:
                    break
        ps.close()
        return ps.counters

    counters = asyncio.run(main())
    assert counters["rx_kernel_stamped"] == 3 and counters["rx_user_stamped"] == 0


@pytest.mark.skipif(__import__("sys").platform != "darwin",
                    reason="xnu's if_data64 counters (sysctl IFMIB): the macOS workflow runs it")
def test_lo0_byte_counters_grow_with_what_is_sent():
    """macOS: the agent's counters come from sysctl IFMIB's if_data64 (hw/macos_counters.py),
    not psutil's (rounded there); a megabyte sent over loopback shows in lo0's both ways."""
    import socket

    from exotray.agent.hw import sampler

    before = sampler.read_counters("darwin")["lo0"]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        rx.bind(("127.0.0.1", 0))
        for _ in range(128):
            tx.sendto(b"x" * 8192, rx.getsockname())
    after = sampler.read_counters("darwin")["lo0"]
    assert after[0] - before[0] >= 128 * 8192 and after[1] - before[1] >= 128 * 8192
