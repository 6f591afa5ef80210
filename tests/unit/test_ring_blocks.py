"""The history ring's storage: fixed-size blocks, each allocated once and written in place
(not arrays grown by append, whose reallocations left the allocator's free space growing
beside the rings in the lab soak: docs/benchmarks.md, "Ninety minutes of eight agents")."""

from __future__ import annotations

import collections
import math
from array import array

import pytest

from exotray.core.history import BLOCK_ROWS, LINK_COLUMNS, Ring, ring_size

COLS = ("t", "rx", "state")


def _row(i: int) -> tuple:
    return (float(i), None if i % 7 == 0 else i * 1.5, ("up", "busy", None)[i % 3])


def _buffers(ring: Ring) -> list[tuple[int, int]]:
    """Address and length of every array (a block that is a constant holds none)."""
    return [b.buffer_info() for blocks in ring._blocks for b in blocks if isinstance(b, array)]


def _varying(i: int, state: str) -> tuple:
    """A link's row whose numbers all differ from row to row, at the decimals they are
    written at (4, rates 1)."""
    x = (i % 1000) / 1e4
    return (float(i), x, x, x, i % 9999 / 10, i % 9998 / 10, x, state, x, x,
            i % 9997 / 10, i % 9996 / 10, x)


def test_an_hour_of_a_link_is_held_in_blocks_allocated_once_and_never_grown():
    size = ring_size(1.0)
    ring = Ring(LINK_COLUMNS, size)
    for i in range(size):
        ring.append(_varying(i, "up"))
    full = _buffers(ring)
    blocks = math.ceil(size / BLOCK_ROWS)
    assert len(full) == blocks * (len(LINK_COLUMNS) - 1)  # all but the constant state
    # exactly the hour's rows: the time in doubles, the other numbers in 4-byte integers
    # of their written decimals, the state (always "up") in no array; nothing spare
    assert ring.nbytes() == size * (8 + 4 * (len(LINK_COLUMNS) - 2))
    for i in range(size, 3 * size):  # two more hours: every block stays where it is
        ring.append(_varying(i, "up"))
    assert _buffers(ring) == full
    assert len(ring) == size and ring.last() == _varying(3 * size - 1, "up")


def test_blocks_are_filled_in_place_while_the_ring_grows():
    ring = Ring(COLS, 10, block=4)
    seen: dict[int, tuple[int, int]] = {}
    for i in range(10):
        ring.append(_row(i))
        for k, b in enumerate(ring._blocks[1]):
            if isinstance(b, array):  # (a block is a constant until a second value comes)
                # an array, once made, keeps its address and size (no realloc)
                assert seen.setdefault(k, b.buffer_info()) == b.buffer_info()
    assert [len(b) for b in ring._blocks[1]] == [4, 4, 2]  # the last one only as needed


@pytest.mark.parametrize("block", [1, 3, 4, 512])
@pytest.mark.parametrize("maxlen", [1, 5, 12])
def test_reads_match_a_plain_bounded_queue_across_block_edges(block, maxlen):
    ring = Ring(COLS, maxlen, block=block)
    ref: collections.deque = collections.deque(maxlen=maxlen)
    for i in range(3 * maxlen + 2):
        assert ring.append(_row(i))
        ref.append(_row(i))
        assert ring.last() == ref[-1]
        assert len(ring) == len(ref)
        got = ring.since(float(max(0, i - 4)))
        want = [r for r in ref if r[0] >= max(0, i - 4)]
        assert got == {c: [r[k] for r in want] for k, c in enumerate(COLS)}
    assert not ring.append((0.0, 1.0, "up"))  # older than the newest: dropped


@pytest.mark.parametrize("new", [2, 7, 9, 20])
def test_resize_keeps_the_newest_rows_and_goes_on_in_blocks(new):
    ring = Ring(COLS, 9, block=4)
    for i in range(14):
        ring.append(_row(i))
    ring.resize(new)
    ref = collections.deque((_row(i) for i in range(14)), maxlen=9)
    ref = collections.deque(ref, maxlen=new)
    assert ring.since(0.0) == {c: [r[k] for r in ref] for k, c in enumerate(COLS)}
    for i in range(14, 14 + 2 * new):
        ring.append(_row(i))
        ref.append(_row(i))
    assert ring.since(0.0) == {c: [r[k] for r in ref] for k, c in enumerate(COLS)}
    assert all(len(b) <= 4 for b in ring._blocks[0])
