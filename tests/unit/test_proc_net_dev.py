"""The Linux byte counters read from /proc/net/dev directly (sampler._proc_net_dev, four
times an interval): the same numbers psutil gives, from the same file. The text below
in tests/fixtures/linux/proc_net_dev.txt is this machine's /proc/net/dev (Debian 12,
2026-12-03), with one of the lab's veths."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from exotray.agent import sampler

PROC_NET_DEV = Path(__file__).resolve().parents[1] / "fixtures" / "linux" / "proc_net_dev.txt"


def test_proc_net_dev_gives_received_and_sent_bytes():
    assert sampler._proc_net_dev(str(PROC_NET_DEV)) == {
        "lo": (2082444373923, 2082444373923), "ifb0": (0, 0),
        "eth0": (7230292945, 9942117), "xt1d7ma": (418821, 59092)}


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
def test_it_lists_what_psutil_lists():
    assert sampler._proc_net_dev().keys() == sampler._psutil_counters().keys()
