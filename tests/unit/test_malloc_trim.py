"""The agent's trim loop (agent/base/trim.py): glibc's malloc_trim gives the pages of freed
memory back (RSS falls, blocks in use stay), and where there is no malloc_trim a
trimmer does nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from exotray.agent.base import trim


def _rss_mib() -> float:
    for ln in Path("/proc/self/status").read_text().splitlines():
        if ln.startswith("VmRSS"):
            return int(ln.split()[1]) / 1024
    raise AssertionError("no VmRSS")


@pytest.mark.skipif(trim.libc_malloc_trim() is None, reason="needs glibc's malloc_trim")
def test_trim_gives_freed_pages_back():
    assert sys.platform.startswith("linux")
    # 32 MiB in 16 KiB blocks from malloc (over pymalloc's 512 B), every 16th kept: the
    # freed ones leave holes between live blocks, which glibc keeps resident
    blocks = [bytearray(16384) for _ in range(2048)]
    for b in blocks:
        b[::4096] = b"\x01" * 4  # touch every page
    kept = blocks[::16]
    del blocks
    before = _rss_mib()
    t = trim.Trimmer()
    assert t.available
    assert t() is True
    after = _rss_mib()
    assert t.calls == 1
    assert before - after > 8, (before, after)  # most of the ~30 MiB of holes
    assert all(b[0] == 1 for b in kept)  # blocks in use untouched


def test_without_malloc_trim_nothing_runs():
    t = trim.Trimmer(None)
    assert not t.available
    assert t() is False and t.calls == 0


def test_counts_calls_and_releases():
    answers = iter([1, 0, 1])
    seen = []

    def fake(pad: int) -> int:  # stands for a C library's malloc_trim
        seen.append(pad)
        return next(answers)

    t = trim.Trimmer(fake)
    assert [t(), t(), t()] == [True, True, True]
    assert seen == [0, 0, 0] and t.calls == 3 and t.released == 2
