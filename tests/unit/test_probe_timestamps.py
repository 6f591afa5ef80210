"""Kernel receive timestamps as each kernel delivers them in recvmsg's control messages.

Linux: level SOL_SOCKET (1), type SCM_TIMESTAMPNS (35, equal to the option), a struct
timespec (64-bit seconds, 64-bit nanoseconds). macOS (xnu bsd/sys/socket.h): the option
is SO_TIMESTAMP (0x400) but the message arrives as level SOL_SOCKET (0xffff), type
SCM_TIMESTAMP (0x02), a struct timeval (64-bit seconds, 32-bit microseconds, 4 bytes of
padding on 64-bit). The layouts below are built from those headers; no Mac runs here.
"""

from __future__ import annotations

import struct

import pytest

from exotray.agent.probe.udp import (
    SCM_TIMESTAMP_DARWIN,
    SO_TIMESTAMP_DARWIN,
    SOL_SOCKET_DARWIN,
    SOL_SOCKET_LINUX,
    kernel_rx_ns,
)

SEC = 1_764_720_000
LINUX = (SOL_SOCKET_LINUX, 35, struct.pack("qq", SEC, 123_456_789))
DARWIN = (SOL_SOCKET_DARWIN, SCM_TIMESTAMP_DARWIN, struct.pack("qi", SEC, 654_321) + b"\0" * 4)


@pytest.mark.parametrize(
    ("anc", "mode", "sol", "expected"),
    [
        pytest.param([LINUX], "ns", SOL_SOCKET_LINUX, SEC * 10**9 + 123_456_789, id="linux"),
        pytest.param([DARWIN], "us", SOL_SOCKET_DARWIN, SEC * 10**9 + 654_321_000, id="macos"),
        # What the agent matched before: macOS never sends a message of the option's number.
        pytest.param([(SOL_SOCKET_DARWIN, SO_TIMESTAMP_DARWIN, DARWIN[2])], "us",
                     SOL_SOCKET_DARWIN, None, id="macos-option-number-is-not-the-type"),
        pytest.param([DARWIN], "us", SOL_SOCKET_LINUX, None, id="other-level"),
        pytest.param([(SOL_SOCKET_LINUX, 35, b"\0" * 8)], "ns", SOL_SOCKET_LINUX, None,
                     id="truncated"),
        pytest.param([(0, 8, b"x"), LINUX], "ns", SOL_SOCKET_LINUX, SEC * 10**9 + 123_456_789,
                     id="after-another-message"),
        pytest.param([], "ns", SOL_SOCKET_LINUX, None, id="none"),
    ],
)
def test_kernel_rx_ns(anc, mode, sol, expected):
    assert kernel_rx_ns(anc, mode, sol_socket=sol) == expected

