"""base/fds.py: the open-files limit raised at start and the connection budget sized
from it (issue 33, point 1). The lab test (tests/lab/test_lab_fd_budget.py) runs an agent
with a limit of 256 against sixteen LAN hosts and a local flood."""

from __future__ import annotations

import asyncio
import logging
import resource
import subprocess
import sys

from exotray.agent.base import fds
from exotray.agent.base import limits as L
from exotray.agent.base.throttle import Throttled


def test_a_large_limit_gives_the_ceilings():
    b = fds.plan(10240, 20)
    assert (b.lan, b.per_source, b.loopback) == (
        L.MAX_LAN_CONNECTIONS, L.MAX_CONNECTIONS_PER_SOURCE, L.MAX_LOOPBACK_CONNECTIONS)
    assert not b.short


def test_macos_default_limit_leaves_the_reserve_free():
    b = fds.plan(256, 20)
    assert b.short
    # whatever the LAN and loopback clients hold, the reserve stays free
    assert 20 + b.lan + b.loopback + fds.RESERVE_FILES + fds.LISTEN_BACKLOG <= 256
    assert b.lan > b.loopback >= fds.FLOOR_CONNECTIONS
    assert b.per_source <= b.lan // 4


def test_a_tiny_limit_still_lets_a_few_in():
    b = fds.plan(64, 30)
    assert b.lan == b.loopback == fds.FLOOR_CONNECTIONS and b.per_source == 2


RAISE = """
import resource, sys
from exotray.agent.base import fds
resource.setrlimit(resource.RLIMIT_NOFILE, (256, 4096))
print(fds.raise_limit(), resource.getrlimit(resource.RLIMIT_NOFILE)[0])
resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))
print(fds.raise_limit())
"""


def test_the_soft_limit_is_raised_to_the_hard_one_never_lowered():
    # in a child: the test process keeps its own limit
    out = subprocess.run([sys.executable, "-c", RAISE], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["4096", "4096", "300"]
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert fds.raise_limit(wanted=16) == soft  # a lower wish never lowers it


def test_accept_failures_are_logged_once_a_minute_and_other_errors_pass_on(caplog):
    now = [0.0]
    seen: list[dict] = []

    async def run() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _lp, ctx: seen.append(ctx))
        fds.quiet_accepts(loop, Throttled(lambda: now[0]))
        err = OSError(24, "Too many open files")
        with caplog.at_level(logging.WARNING, logger="exotray.agent.runtime"):
            for i in range(2048 * 3):  # a backlog's worth, three seconds running
                now[0] = i / 2048
                loop.call_exception_handler(
                    {"message": "socket.accept() out of system resource", "exception": err})
            now[0] = 61.0
            loop.call_exception_handler(
                {"message": "socket.accept() out of system resource", "exception": err})
        loop.call_exception_handler({"message": "something else"})

    asyncio.run(run())
    lines = [r.getMessage() for r in caplog.records if "cannot accept" in r.getMessage()]
    assert len(lines) == 2 and "Too many open files" in lines[0]
    assert "6143 more" in lines[1]
    assert [c["message"] for c in seen] == ["something else"]
