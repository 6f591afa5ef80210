"""share/stream.py's FrameBudget on an injected clock (issue 33 point 8; the real flood
is in tests/integration/test_stream_sharing.py and tests/lab/test_lab_frame_flood.py)."""

from __future__ import annotations

import pytest

from exotray.agent.base import limits as L
from exotray.agent.share import wire as W
from exotray.agent.share.stream import FrameBudget


def test_a_burst_then_the_rate_then_refused():
    now = [0.0]
    b = FrameBudget(lambda: now[0])
    for _ in range(L.STREAM_FRAMES_BURST):
        b.take()
    with pytest.raises(W.FrameError) as e:
        b.take()
    assert e.value.reason == "too_fast"
    now[0] += 1.0  # a second later: a second's worth again
    for _ in range(L.MAX_STREAM_FRAMES_PER_S):
        b.take()
    with pytest.raises(W.FrameError):
        b.take()


def test_an_agent_at_the_shortest_interval_is_never_cut():
    now = [0.0]
    b = FrameBudget(lambda: now[0])
    for _ in range(20 * 600):  # ten minutes of a frame at every 0.05 s tick
        now[0] += 0.05
        b.take()
