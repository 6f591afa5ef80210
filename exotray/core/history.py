"""Fixed-size ring buffers of samples: one hour at the sampling interval."""

from __future__ import annotations

import bisect
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from math import copysign
from operator import call

#: columns of /v1/history?link=ID (the agent's per-link ring), in order
LINK_COLUMNS = (
    "t",
    "rtt_ms",
    "rtt_min_ms",
    "rtt_max_ms",
    "rx_bytes_per_s",
    "tx_bytes_per_s",
    "utilization",
    "state",
    "rtt_baseline_ms",
    "queue_delay_ms",
    # the link's own TCP bytes, where read (agent/hw/flows.py; issue 30)
    "flow_rx_bytes_per_s",
    "flow_tx_bytes_per_s",
    # the share of the RTT window's probes not answered, as the snapshot's `loss`
    # (a ratio; exotray doctor's `loss` check reads its last day, issue 32)
    "loss",
)
#: columns of /v1/history?interface=NAME ("carrier": "up" or "down", so that every change
#: of it stays in the interface's history)
IFACE_COLUMNS = ("t", "rx_bytes_per_s", "tx_bytes_per_s", "carrier")


#: columns that hold short text (a link's state, an interface's carrier) rather than numbers
TEXT_COLUMNS = frozenset({"state", "carrier"})

#: decimals each number column is written at (`r(x, nd)` in agent/peers/links.py's
#: history_row and agent/hw/monitor.py's record_history). A block of such a column is kept
#: as 4-byte integers of value x 10**nd while every value in it comes back exactly so.
DECIMALS = {"rtt_ms": 4, "rtt_min_ms": 4, "rtt_max_ms": 4, "rx_bytes_per_s": 1,
            "tx_bytes_per_s": 1, "utilization": 4, "rtt_baseline_ms": 4, "queue_delay_ms": 4,
            "flow_rx_bytes_per_s": 1, "flow_tx_bytes_per_s": 1, "loss": 4}

_NAN = float("nan")
_NULL = -2**31  # None in a block of integers
_LIM = 2**31 - 1.0


#: rows per storage block of a ring column (a block of 512 doubles is one 4 KiB page)
BLOCK_ROWS = 512


def _number(v: object) -> float | None:
    return None if v is None or v != v else float(v)  # type: ignore[arg-type]  # NaN: None


def _narrow(v: float | None, sc: float) -> int | None:
    """v as an integer of a narrow block (v x sc), or None where that would not read back
    exactly v: out of range, more decimals than the column's, infinite, or -0.0."""
    if v is None:
        return _NULL
    x = v * sc
    if -_LIM < x < _LIM:
        q = round(x)
        if q / sc == v and (q or copysign(1.0, v) > 0):
            return q
    return None


def _widen(b: array, sc: float) -> array:
    """Integers of a narrow block (x 10**decimals, None as _NULL) as doubles (None as NaN)."""
    return array("d", [_NAN if q == _NULL else q / sc for q in b])


def _same(a: object, b: object) -> bool:
    """One constant: equal, a zero's sign too (None is None)."""
    return a == b and (a != 0 or copysign(1.0, a) == copysign(1.0, b))  # type: ignore[arg-type]


def _take(pieces: deque, n: int) -> list[tuple]:
    """The first `n` rows of `pieces` (taken off it; a piece split where it must)."""
    out = []
    while n > 0:
        p, m = pieces.popleft()
        if m > n:
            rest = p if p.__class__ is tuple else p[n:]
            pieces.appendleft((rest, m - n))
            p, m = (p if p.__class__ is tuple else p[:n]), n
        out.append((p, m))
        n -= m
    return out


class Ring:
    """Rows of equal width with a time column, oldest first, capped at `maxlen`.

    Stored as typed columns, not rows of Python objects; each column is a list of blocks
    of `block` rows, and once `maxlen` rows are held the ring wraps around. The time's
    blocks are array('d'); every other column's block is one of
    - a constant, `(value,)`, while all its rows hold one value (None too): no array at
      all (a link's own bytes are None unless its carrier is shared; its baseline, state
      and loss seldom change);
    - array('B') for text: one byte per row indexing a small table of the strings seen;
    - array('i') for a number column written at a known number of decimals (`DECIMALS`):
      value x 10**decimals, None as -2**31, while every value in the block reads back
      exactly so;
    - array('d') otherwise, None as NaN: a value the narrow block would not give back
      exactly (a rate over 214 MB/s at 0.1, more decimals than the column's, infinity,
      -0.0) turns its block to doubles first.
    A constant becomes an array when a differing value arrives; a block whose last row
    was just written becomes a constant, or narrow, again when all its values allow it.
    Reads give back exactly the values written (NaN as None). An hour of a link at 1 s
    with bench/history_memory.py's rows holds 3601 x 41 bytes of arrays (~144 KiB), where
    doubles in every column held 97 bytes a row.

    Each array is allocated at its block's full size and, when its block changes kind,
    replaced whole, never grown. Not one array per column grown by append: growing ~70
    arrays in step (a link's 10 columns) reallocated each of them ~60 times in the hour,
    and the holes they left behind were each too small for the next, larger copy: in the
    lab soak glibc's free space grew as fast as the rings themselves (docs/benchmarks.md).

    Times must not go backwards: a row older than the newest one is dropped (the agent
    keys rows by a monotonic-derived wall time, so this only guards against misuse).
    """

    def __init__(self, columns: Sequence[str], maxlen: int, block: int = BLOCK_ROWS) -> None:
        if columns[0] != "t":
            raise ValueError("first column must be 't'")
        self.columns = tuple(columns)
        self._text = [c in TEXT_COLUMNS for c in self.columns]
        # 10**decimals of a column that may be kept narrow, 0.0 if not (never the time),
        # None for text
        self._scale = [None if self._text[i] else 0.0 if i == 0 or c not in DECIMALS
                       else float(10 ** DECIMALS[c]) for i, c in enumerate(self.columns)]
        self._codes: list[dict[str, int]] = [{} for _ in self.columns]
        self._names: list[list[str | None]] = [[None] for _ in self.columns]  # code 0: None
        self._maxlen = max(1, maxlen)
        self._block = max(1, block)
        self._blocks: list[list] = [[] for _ in self.columns]  # arrays and (constant,)
        self._encoders = [float] + [partial(self._code, i) if t else _number
                                    for i, t in enumerate(self._text) if i]
        self._n = 0
        self._head = 0  # index of the oldest row once the ring is full
        self._last_t = _NAN  # the newest row's time

    def __len__(self) -> int:
        return self._n

    def _code(self, i: int, value: object) -> int:
        if value is None:
            return 0
        code = self._codes[i].get(value)  # type: ignore[arg-type]
        if code is None:
            if len(self._names[i]) >= 255:
                raise ValueError(f"column {self.columns[i]!r}: too many distinct values")
            code = self._codes[i][value] = len(self._names[i])  # type: ignore[index]
            self._names[i].append(value)  # type: ignore[arg-type]
        return code

    def append(self, row: Iterable) -> bool:
        row = tuple(row)
        if len(row) != len(self.columns):
            raise ValueError(f"row has {len(row)} values, expected {len(self.columns)}")
        n = self._n
        if n and row[0] < self._last_t:
            return False
        # every value encoded before one is written: a row that fails changes nothing
        values = list(map(call, self._encoders, row))
        self._last_t = values[0]
        blocks = self._blocks
        if n < self._maxlen:
            k, j = divmod(n, self._block)
            self._n = n + 1
            if j == 0:  # a new block: the time's array, every other column a constant
                tb = array("d", (0.0,)) * min(self._block, self._maxlen - n)
                tb[0] = values[0]  # type: ignore[assignment]  # (a float: see _encoders)
                blocks[0].append(tb)
                for col, v in zip(blocks[1:], values[1:], strict=True):
                    col.append((v,))
                return True
        else:
            k, j = divmod(self._head, self._block)
            self._head = (self._head + 1) % self._maxlen
        rows = len(blocks[0][k])
        for col, sc, v in zip(blocks, self._scale, values, strict=True):
            b = col[k]
            if b.__class__ is tuple:
                c = b[0]
                if c == v and (c != 0 or copysign(1.0, c) == copysign(1.0, v)):  # type: ignore[arg-type]
                    continue  # the same value (a zero's sign too): nothing to write
                b = col[k] = self._materialise(sc, c, v, rows)
            tc = b.typecode
            if tc == "i":  # (_narrow, inline: this is most of the numbers)
                if v is None:
                    b[j] = _NULL
                    continue
                x = v * sc
                if -_LIM < x < _LIM:
                    q = round(x)
                    if q / sc == v and (q or copysign(1.0, v) > 0):
                        b[j] = q
                        continue
                b = col[k] = _widen(b, sc)
                b[j] = v
            elif tc == "d":
                b[j] = _NAN if v is None else v
            else:
                b[j] = v
        if j == rows - 1:
            self._settle(k)
        return True

    @staticmethod
    def _materialise(sc: float | None, c: float | int | None, v: float | int | None,
                     rows: int) -> array:
        """A block of `rows` rows, all `c` (a constant until now), as an array that can
        hold v too (`sc`: the column's scale, None for text)."""
        if sc is None:
            return array("B", (c,)) * rows  # type: ignore[arg-type]
        if sc:
            qc, qv = _narrow(c, sc), _narrow(v, sc)  # type: ignore[arg-type]
            if qc is not None and qv is not None:
                return array("i", (qc,)) * rows
        return array("d", (_NAN if c is None else c,)) * rows  # type: ignore[arg-type]

    def _settle(self, k: int) -> None:
        """Block k's last row was just written: each column's block a constant where it
        holds one value, narrow where doubles are not needed."""
        for i in range(1, len(self.columns)):
            col = self._blocks[i]
            b = col[k]
            if b.__class__ is tuple:
                continue
            if b.tobytes() == b[:1].tobytes() * len(b):  # (bytes: NaN and -0.0 too)
                v = b[0]
                if b.typecode == "i":
                    v = None if v == _NULL else v / self._scale[i]
                elif b.typecode == "d" and v != v:
                    v = None
                col[k] = (v,)
            elif b.typecode == "d" and (sc := self._scale[i]):
                qs = []
                for x in b:  # (stopped at the first that would not read back)
                    q = _narrow(None if x != x else x, sc)
                    if q is None:
                        break
                    qs.append(q)
                else:
                    col[k] = array("i", qs)

    def _decode(self, i: int, k: int, j: int, e: int) -> list:
        """Column i's values in rows j..e-1 of block k (None for NaN, text decoded)."""
        b = self._blocks[i][k]
        if b.__class__ is tuple:
            return [self._names[i][b[0]] if self._text[i] else b[0]] * (e - j)
        part = b[j:e]
        if b.typecode == "d":
            return [None if x != x else x for x in part]
        if b.typecode == "i":
            sc = self._scale[i]
            return [None if q == _NULL else q / sc for q in part]
        names = self._names[i]
        return [names[c] for c in part]

    def _pieces(self, lo: int, hi: int) -> Iterator[tuple[int, int, int]]:
        """Rows lo..hi-1, counted from the oldest, as (block, first row, end) in it, in
        order: across the wrap point, the stored rows from the head on, then from 0."""
        h, n, size = self._head, self._n, self._block
        a, b = h + lo, h + hi
        spans = ([(a, b)] if b <= n else [(a - n, b - n)] if a >= n
                 else [(a, n), (0, b - n)])
        for a, b in spans:
            while a < b:
                k, j = divmod(a, size)
                e = min(size, j + b - a)
                yield k, j, e
                a += e - j

    def _column(self, i: int, lo: int, hi: int) -> list:
        """Column i's values of rows lo..hi-1, counted from the oldest."""
        out: list = []
        for k, j, e in self._pieces(lo, hi):
            out += self._decode(i, k, j, e)
        return out

    def _newest_index(self) -> int:
        return (self._head - 1) % self._n if self._n == self._maxlen else self._n - 1

    def _times(self) -> array:
        """The time of every row, oldest first, as one array (a copy, for reads)."""
        col = array("d")
        for b in self._blocks[0]:
            col.extend(b)
        del col[self._n:]
        return col[self._head:] + col[: self._head] if self._head else col

    def last(self) -> tuple | None:
        """The newest row (None for NaN, text decoded), or None when empty."""
        if not self._n:
            return None
        k, j = divmod(self._newest_index(), self._block)
        return tuple(self._decode(i, k, j, j + 1)[0] for i in range(len(self.columns)))

    def rows(self, since: float, until: float, limit: int) -> tuple[list[tuple], float | None]:
        """Rows with since <= t < until, oldest first, at most `limit` of them; and the
        time of the first one left out (None when all are in)."""
        times = self._times()
        lo, hi = bisect.bisect_left(times, since), bisect.bisect_left(times, until)
        stop = max(lo, min(hi, lo + max(0, limit)))
        cols = [self._column(i, lo, stop) for i in range(len(self.columns))]
        return list(zip(*cols, strict=True)), (times[stop] if stop < hi else None)

    def resize(self, maxlen: int) -> None:
        """Keep the newest rows that fit a new capacity (the interval changed). Built
        from the stored blocks' pieces, each kept in its kind where it can be (a value
        is re-encoded only where a narrow piece joins doubles): the agent's loop waits
        on this, and re-appending row by row took ~0.25 s a ring of 72,001 rows."""
        maxlen = max(1, maxlen)
        keep = min(self._n, maxlen)
        pieces = [deque(self._raw_column(i, self._n - keep, self._n))
                  for i in range(len(self.columns))]
        size = self._block
        blocks: list[list] = [[] for _ in self.columns]
        for s in range(0, keep, size):
            rows = min(size, maxlen - s)  # (a block's arrays have its full size)
            n = min(keep, s + size) - s
            for i, col in enumerate(blocks):
                col.append(self._block_of(i, _take(pieces[i], n), rows))
        self._maxlen, self._blocks, self._n, self._head = maxlen, blocks, keep, 0
        for k in range(len(blocks[0])):
            if len(blocks[0][k]) == min(size, keep - k * size):  # (a block written whole)
                self._settle(k)

    def _raw_column(self, i: int, lo: int, hi: int) -> list[tuple]:
        """Column i's rows lo..hi-1 (from the oldest) as stored: (array slice, n) or
        ((constant,), n) pieces."""
        out = []
        for k, j, e in self._pieces(lo, hi):
            blk = self._blocks[i][k]
            out.append((blk if blk.__class__ is tuple else blk[j:e], e - j))
        return out

    def _block_of(self, i: int, part: list[tuple], rows: int) -> array | tuple:
        """Column i's block of `rows` rows from pieces (`_raw`), the rows past them filled
        in; a constant where every piece is one same constant."""
        if i and all(p.__class__ is tuple and _same(p[0], part[0][0][0]) for p, _ in part):
            return part[0][0]
        sc = self._scale[i]
        if i == 0:
            tc, fill = "d", 0.0
        elif sc is None:
            tc, fill = "B", 0
        elif sc and all(p.typecode == "i" if p.__class__ is array
                        else _narrow(p[0], sc) is not None for p, _ in part):
            tc, fill = "i", _NULL
        else:
            tc, fill = "d", _NAN
        out = array(tc)
        for p, n in part:
            if p.__class__ is tuple:
                v = p[0]
                v = (_narrow(v, sc) if tc == "i" else _NAN if v is None and tc == "d"
                     else v)
                out.extend(array(tc, (v,)) * n)
            elif p.typecode == tc:
                out.extend(p)
            else:  # (narrow rows joining doubles)
                out.extend(_widen(p, sc))
        out.extend(array(tc, (fill,)) * (rows - len(out)))
        return out

    def since(self, t: float) -> dict[str, list]:
        """Columns of the rows with time >= t."""
        start = bisect.bisect_left(self._times(), t)
        return {c: self._column(i, start, self._n) for i, c in enumerate(self.columns)}

    def nbytes(self) -> int:
        """Bytes held by the columns' arrays (for the benchmarks; a constant holds none)."""
        return sum(b.buffer_info()[1] * b.itemsize for blocks in self._blocks
                   for b in blocks if b.__class__ is array)


def ring_size(interval_s: float, span_s: float = 3600.0) -> int:
    return int(span_s / interval_s + 0.5) + 1
