"""Fixtures the integration tests share."""

from __future__ import annotations

import pytest
from helpers import AgentProc, free_port


@pytest.fixture
def pair(tmp_path):
    """Two agents on loopback (mDNS off), each the other's manual peer, at 0.5 s."""
    p1, p2 = free_port(), free_port()
    a = AgentProc(tmp_path, "a", p1, [p2], "--interval", "0.5")
    b = AgentProc(tmp_path, "b", p2, [p1], "--interval", "0.5")
    try:
        a.wait_ready()
        b.wait_ready()
        yield a, b
    finally:
        a.close()
        b.close()
