"""The history ring's storage kinds (core/history.py, Ring): a block is a constant while
all its rows hold one value (None too), 4-byte integers for a column written at a known
number of decimals, doubles for anything else, and each value read back (`since`, `rows`,
`last`: /v1/history, the export, the window's charts and the history file read these) is
exactly the value written: None for None and NaN, -0.0 as -0.0, every decimal."""

from __future__ import annotations

import collections
import math
import random
from array import array
from types import SimpleNamespace

import pytest

from exotray.agent.peers import links as linkstats
from exotray.core.history import DECIMALS, LINK_COLUMNS, Ring
from exotray.core.saturation import SaturationParams
from exotray.core.stats import Rate

COLS = ("t", "rtt_ms", "rx_bytes_per_s", "state", "plain")  # 4 decimals, 1, text, none


def _kinds(ring: Ring, column: str) -> str:
    """Each block of a column: C (a constant, no array) or its array's type code."""
    i = ring.columns.index(column)
    return "".join(b.typecode if isinstance(b, array) else "C" for b in ring._blocks[i])


def _written(v: object) -> object:
    """What a read must give for a value written: None for NaN, numbers as floats."""
    if v is None or isinstance(v, str):
        return v
    return None if v != v else float(v)  # type: ignore[arg-type]


def _same(a: object, b: object) -> bool:
    """Equal and of one type, a zero's sign too (0.0 == -0.0 in Python, not in JSON)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)  # type: ignore[arg-type]
    return a == b


def _check(ring: Ring, ref: collections.deque) -> None:
    """Every way of reading the ring gives exactly the reference's rows."""
    want = [tuple(_written(v) for v in r) for r in ref]
    got_since = ring.since(-math.inf)
    got_rows, more = ring.rows(-math.inf, math.inf, len(ref) + 1)
    assert more is None and len(got_rows) == len(want) == len(ring)
    for k, c in enumerate(ring.columns):
        assert len(got_since[c]) == len(want)
        for w, s, r in zip((x[k] for x in want), got_since[c], (x[k] for x in got_rows),
                           strict=True):
            assert _same(s, w) and _same(r, w), (c, w, s, r)
    last = ring.last()
    assert last is None if not want else all(map(_same, last, want[-1]))
    if len(want) > 2:  # a part of it, from a row in the middle
        t = want[len(want) // 2][0]
        part, _ = ring.rows(t, math.inf, 2)
        assert [tuple(map(repr, r)) for r in part] == [
            tuple(map(repr, r)) for r in want if r[0] >= t][:2]


def _fill(ring: Ring, rows: list[tuple]) -> collections.deque:
    ref: collections.deque = collections.deque(maxlen=ring._maxlen)
    for row in rows:
        assert ring.append(row)
        ref.append(row)
    return ref


def test_a_column_null_in_a_block_holds_no_array_and_reads_none():
    ring = Ring(COLS, 20, block=8)
    ref = _fill(ring, [(float(i), 0.5, None, "up", None) for i in range(8)])
    assert _kinds(ring, "rx_bytes_per_s") == _kinds(ring, "plain") == "C"
    assert _kinds(ring, "state") == _kinds(ring, "rtt_ms") == "C"
    assert ring.nbytes() == 8 * 8  # the time alone
    _check(ring, ref)
    ref += _fill(ring, [(8.0, 0.5, float("nan"), "up", float("nan"))])  # NaN reads None
    assert _kinds(ring, "rx_bytes_per_s") == "CC"
    _check(ring, ref)


@pytest.mark.parametrize(("column", "first", "then", "kind"), [
    ("rtt_ms", 0.25, 0.2501, "i"),
    ("rtt_ms", None, 0.1234, "i"),
    ("rx_bytes_per_s", 0.0, 123456.7, "i"),
    ("plain", 1.5, 1.25, "d"),
    ("plain", None, 2.0, "d"),
    ("state", "up", "saturated", "B"),
    ("state", None, "up", "B"),
    ("rtt_ms", 0.0, -0.0, "d"),  # equal in Python, but not the same value
    ("plain", -0.0, 0.0, "d"),
])
def test_a_constant_block_becomes_an_array_when_another_value_comes(column, first, then, kind):
    ring = Ring(COLS, 30, block=16)
    base = {"t": 0.0, "rtt_ms": 0.5, "rx_bytes_per_s": 10.5, "state": "up", "plain": 3.0}

    def row(i: int, v: object) -> tuple:
        return tuple(float(i) if c == "t" else v if c == column else base[c] for c in COLS)

    ref = _fill(ring, [row(i, first) for i in range(5)])
    assert _kinds(ring, column) == "C"
    ref += _fill(ring, [row(5, then), row(6, first), row(7, then)])  # mid-block
    assert _kinds(ring, column) == kind
    _check(ring, ref)
    ref += _fill(ring, [row(i, first) for i in range(8, 30)])
    assert _kinds(ring, column) == kind + "C"  # the next block: a constant again
    _check(ring, ref)


@pytest.mark.parametrize("odd", [
    123_456_789_012.3,  # a rate of 1e11 B/s at 0.1: beyond 4-byte integers
    214_748_364.8,  # just beyond them
    -214_748_364.8,
    0.123456789,  # more decimals than the column is written at
    1e-9,
    math.inf,
    -math.inf,
    -0.0,
])
def test_a_narrow_block_turns_to_doubles_for_a_value_it_cannot_give_back(odd):
    ring = Ring(COLS, 40, block=16)
    rows = [(float(i), 0.0001 * i, i / 10, "up", None) for i in range(6)]
    rows += [(6.0, odd, odd, "up", None)]
    rows += [(float(i), 0.0001 * i, i / 10, "up", None) for i in range(7, 10)]
    ref = _fill(ring, rows)
    assert _kinds(ring, "rtt_ms") == _kinds(ring, "rx_bytes_per_s") == "d"
    _check(ring, ref)


def test_narrow_blocks_hold_the_limits_of_their_range_and_decimals_exactly():
    ring = Ring(COLS, 40, block=16)
    rates = [214_748_364.6, -214_748_364.6, 0.1, 99_999_999.9, 1e8, None]
    rtts = [214_748.3646, -0.0001, 0.0001, 1234.5678, 0.3, None]
    ref = _fill(ring, [(float(i), rtts[i], rates[i], "up", None) for i in range(6)])
    assert _kinds(ring, "rtt_ms") == _kinds(ring, "rx_bytes_per_s") == "i"
    assert ring.nbytes() == 16 * (8 + 4 + 4)
    _check(ring, ref)


def test_wrap_around_goes_across_block_kinds_and_each_block_settles_when_complete():
    ring = Ring(COLS, 10, block=4)
    kinds = [(0.5, 1.5, "up", None),  # constants
             (None, 2e11, None, 1.0),  # null, doubles, text None, a plain number
             (0.1234, 7.5, "busy", None)]  # narrow, narrow, text
    rows, ref = [], collections.deque(maxlen=10)
    for i in range(45):
        rtt, rx, state, plain = kinds[(i // 3) % 3]
        if i % 5 == 0:
            rtt, rx = rtt if rtt is None else rtt + 0.0001, -0.0
        rows.append((float(i), rtt, rx, state, plain))
        assert ring.append(rows[-1])
        ref.append(rows[-1])
        _check(ring, ref)
    # one value in every row again: each block, once all its rows are rewritten, is a
    # constant again
    for i in range(45, 65):
        ring.append((float(i), 0.5, 1.5, "up", None))
        ref.append((float(i), 0.5, 1.5, "up", None))
    _check(ring, ref)
    assert ring.nbytes() == 10 * 8
    assert all(_kinds(ring, c) == "CCC" for c in COLS[1:])


@pytest.mark.parametrize("seed", range(6))
def test_random_values_round_trip_exactly_through_every_kind_wrap_and_resize(seed):
    rnd = random.Random(seed)
    pool = [None, float("nan"), 0.0, -0.0, 1, math.inf, 1e11 + 0.1, 214_748_364.7, 0.1,
            -3.0001, 2.5e-5, 1 / 3]
    maxlen, block = rnd.choice([(7, 3), (16, 4), (33, 8), (5, 512)])
    ring = Ring(COLS, maxlen, block=block)
    ref: collections.deque = collections.deque(maxlen=maxlen)
    value = rnd.choice(pool)
    for i in range(6 * maxlen):
        if rnd.random() < 0.3:  # runs of one value, so that constants come and go
            value = rnd.choice([*pool, round(rnd.uniform(-5, 5), 4), round(rnd.random(), 1)])
        row = (float(i), value, value, rnd.choice(["up", "up", None, "down"]),
               rnd.choice([value, None]))
        ring.append(row)
        ref.append(row)
        _check(ring, ref)
        if i == 3 * maxlen:
            keep = rnd.choice([1, maxlen // 2, maxlen + 3])
            ring.resize(keep)
            ref = collections.deque(ref, maxlen=keep)
            _check(ring, ref)
            maxlen = keep


def test_a_resize_keeps_each_block_in_its_kind_and_every_value(monkeypatch):
    """A resize (the interval changed) builds the new blocks from the stored pieces: a
    constant stays a constant, narrow stays narrow, text stays bytes; doubles only where
    a piece of them is kept, and narrow again where the doubles' odd value was left out.
    The wrap point and a split constant are crossed."""
    ring = Ring(COLS, 16, block=4)
    rows = [(float(i), 0.25 if i < 8 else round(0.1 * i, 4),
             1e11 + 0.5 if i == 15 else 1.5, "up" if i % 3 else "down", None)
            for i in range(22)]  # (wrapped: the oldest 6 gone)
    ref = _fill(ring, rows)

    def no_append(*_a) -> None:  # (a resize appending row by row took 0.25 s a long ring)
        raise AssertionError("resize must not append rows one by one")

    with monkeypatch.context() as m:
        m.setattr(Ring, "append", no_append)
        ring.resize(11)
    _check(ring, collections.deque(ref, maxlen=11))
    assert ring._head == 0 and len(ring) == 11
    assert _kinds(ring, "plain") == "CCC"
    assert _kinds(ring, "rtt_ms") == "iii"
    assert _kinds(ring, "rx_bytes_per_s") == "CdC"  # (row 15 of the 11 kept, 11..21: 4)
    assert _kinds(ring, "state") == "BBB"
    ring.resize(5)  # row 15 left out: its block narrow, or constant, again
    _check(ring, collections.deque(ref, maxlen=5))
    assert _kinds(ring, "rx_bytes_per_s") == "CC"
    for i in range(22, 30):  # and it goes on taking rows
        ring.append((float(i), 0.5, 2.5, "up", 1.0))
        ref.append((float(i), 0.5, 2.5, "up", 1.0))
    _check(ring, collections.deque(ref, maxlen=5))


def test_a_links_history_row_is_kept_narrow_and_read_back_as_written():
    """The columns' DECIMALS are the decimals history_row writes them at: its numbers go
    to 4-byte blocks and come back exactly as written."""
    peer = SimpleNamespace(key="h2", id="node-b", name="h2")
    link = linkstats.new_link("node-a", peer, ("10.213.130.2", 52480), 1.0,
                              SaturationParams())
    for i in range(8):
        link.rtt.reply(float(i), 0.123456789 + i / 7)
    link.rtt.lost(8.0)
    written = []
    for k in range(3):  # (the rates, utilization, own bytes and the maximum RTT change)
        link.rtt.reply(9.0 + k, 5.3 + k / 7)  # a new maximum
        rate = Rate(rx_bytes_per_s=1234567.891 + k / 3, tx_bytes_per_s=7654321.123 + k / 3,
                    dt=1.0)
        own = Rate(rx_bytes_per_s=11111.111 + k / 3, tx_bytes_per_s=22222.222 + k / 3, dt=1.0)
        linkstats.history_row(link, 9.5 + k, 1_800_000_000.0 + k, rate, 0.87654321 - k / 9,
                              own)
        written.append(link.history.last())
    row = dict(zip(LINK_COLUMNS, written[-1], strict=True))
    assert row["rx_bytes_per_s"] == 1234568.6 and row["flow_tx_bytes_per_s"] == 22222.9
    assert row["rtt_ms"] == round(row["rtt_ms"], 4) and row["utilization"] == 0.6543
    varying = {c for c in DECIMALS if len({r[LINK_COLUMNS.index(c)] for r in written}) == 3}
    assert {"rtt_max_ms", "rx_bytes_per_s", "tx_bytes_per_s", "utilization",
            "flow_rx_bytes_per_s", "flow_tx_bytes_per_s"} <= varying
    for c in DECIMALS:
        assert c in LINK_COLUMNS and _kinds(link.history, c) == ("i" if c in varying else "C"), c
    assert link.history.since(0.0) == {c: [r[i] for r in written]
                                       for i, c in enumerate(LINK_COLUMNS)}
