"""Kernel receive timestamps on a real socket of this kernel (tests/unit has the parser
on both platforms' layouts)."""

from __future__ import annotations

import pytest


def test_a_real_socket_reports_what_stamped_each_datagram():
    """On this kernel (Linux) every datagram is stamped by the kernel, and the counters
    say so: the snapshot's counters carry them, so a Mac shows whether it works too."""
    import asyncio
    import socket
    import sys
    import time

    from exotray.agent.probe import udp as P

    if not sys.platform.startswith("linux"):
        pytest.skip("the Linux layout is checked on a real socket; macOS: CHECKLIST.md")

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
