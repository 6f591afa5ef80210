"""http/readers.py: who may read the past at once (issue 33 point 2). The lab test
(tests/lab/test_lab_history_readers.py) floods a real agent with LAN reads."""

from __future__ import annotations

import asyncio

import pytest

from exotray.agent.base import limits as L
from exotray.agent.http.readers import Busy, Readers


def test_loopback_reads_have_their_own_places():
    async def run() -> None:
        r = Readers(clock=lambda: 0.0)
        held = [r.slot(local=True) for _ in range(L.MAX_LOCAL_HISTORY_READS)]
        for h in held:
            await h.__aenter__()
        with pytest.raises(Busy):
            async with r.slot(local=True):
                pass
        async with r.slot(local=False):  # a LAN read is not blocked by the local ones
            pass
        for h in held:
            await h.__aexit__(None, None, None)
        assert r.local == 0 and r.refused == 1

    asyncio.run(run())


def test_one_lan_read_at_a_time_and_at_most_half_the_time():
    now = [100.0]

    async def run() -> None:
        r = Readers(clock=lambda: now[0])
        async with r.slot(local=False):
            with pytest.raises(Busy):  # a second LAN read while one runs
                async with r.slot(local=False):
                    pass
            async with r.slot(local=True):  # loopback is not held up
                pass
            now[0] += 4.0  # the read took 4 s
        now[0] += 1.0
        with pytest.raises(Busy) as busy:  # the LAN waits as long as the read took
            async with r.slot(local=False):
                pass
        assert busy.value.retry_s == 3
        now[0] += 3.0
        async with r.slot(local=False):
            pass

    asyncio.run(run())


def test_lan_reads_get_fewer_rows():
    assert Readers.points(False, 50_000) == L.MAX_LAN_HISTORY_POINTS
    assert Readers.points(True, 50_000) == 50_000
    assert Readers.points(False, 100) == 100
