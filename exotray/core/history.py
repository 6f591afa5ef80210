"""Fixed-size ring buffers of samples: one hour at the sampling interval."""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence

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

_NAN = float("nan")


#: rows per storage block of a ring column (512 doubles: one 4 KiB page)
BLOCK_ROWS = 512


class Ring:
    """Rows of equal width with a time column, oldest first, capped at `maxlen`.

    Stored as typed columns, not rows of Python objects: numbers in array('d') (None as
    NaN), text columns as one byte per row indexing a small table of the strings seen.
    An hour of a link at 1 s is 3601 x 97 bytes (~341 KiB) instead of ~1.3 MiB of tuples.

    Each column is a list of fixed-size blocks of `block` rows, each allocated once at its
    full size when the ring reaches it, then written in place; once `maxlen` rows are held
    the ring wraps around. Not one array per column grown by append: growing ~70 arrays in
    step (a link's 10 columns) reallocates each of them ~60 times in the hour, and the
    holes they leave behind are each too small for the next, larger copy — in the lab soak
    glibc's free space grew as fast as the rings themselves (docs/benchmarks.md).

    Times must not go backwards: a row older than the newest one is dropped (the agent
    keys rows by a monotonic-derived wall time, so this only guards against misuse).
    """

    def __init__(self, columns: Sequence[str], maxlen: int, block: int = BLOCK_ROWS) -> None:
        if columns[0] != "t":
            raise ValueError("first column must be 't'")
        self.columns = tuple(columns)
        self._text = [c in TEXT_COLUMNS for c in self.columns]
        self._codes: list[dict[str, int]] = [{} for _ in self.columns]
        self._names: list[list[str | None]] = [[None] for _ in self.columns]  # code 0: None
        self._maxlen = max(1, maxlen)
        self._block = max(1, block)
        self._blocks: list[list[array]] = [[] for _ in self.columns]
        self._n = 0
        self._head = 0  # index of the oldest row once the ring is full

    def __len__(self) -> int:
        return self._n

    def _encode(self, i: int, value: object) -> float | int:
        if self._text[i]:
            if value is None:
                return 0
            code = self._codes[i].get(value)  # type: ignore[arg-type]
            if code is None:
                if len(self._names[i]) >= 255:
                    raise ValueError(f"column {self.columns[i]!r}: too many distinct values")
                code = self._codes[i][value] = len(self._names[i])  # type: ignore[index]
                self._names[i].append(value)  # type: ignore[arg-type]
            return code
        return _NAN if value is None else float(value)  # type: ignore[arg-type]

    def _new_block(self, i: int, rows: int) -> array:
        return array("B" if self._text[i] else "d", (0,)) * rows  # one allocation, no copy

    def append(self, row: Iterable) -> bool:
        row = tuple(row)
        if len(row) != len(self.columns):
            raise ValueError(f"row has {len(row)} values, expected {len(self.columns)}")
        n = self._n
        if n and row[0] < self._newest_t():
            return False
        values = [self._encode(i, v) for i, v in enumerate(row)]
        if n < self._maxlen:
            k, j = divmod(n, self._block)
            if j == 0:
                rows = min(self._block, self._maxlen - n)
                for i, blocks in enumerate(self._blocks):
                    blocks.append(self._new_block(i, rows))
            self._n = n + 1
        else:
            k, j = divmod(self._head, self._block)
            self._head = (self._head + 1) % self._maxlen
        for blocks, v in zip(self._blocks, values, strict=True):
            blocks[k][j] = v
        return True

    def _at(self, i: int, index: int) -> float | int:
        k, j = divmod(index, self._block)
        return self._blocks[i][k][j]

    def _newest_index(self) -> int:
        return (self._head - 1) % self._n if self._n == self._maxlen else self._n - 1

    def _newest_t(self) -> float:
        return self._at(0, self._newest_index())  # type: ignore[return-value]

    def _ordered(self, i: int) -> array:
        """Column i's rows, oldest first, as one array (a copy, for reads)."""
        col = array(self._blocks[i][0].typecode) if self._blocks[i] else array("d")
        for b in self._blocks[i]:
            col.extend(b)
        del col[self._n:]
        return col[self._head:] + col[: self._head] if self._head else col

    def _row(self, index: int) -> tuple:
        """The row stored at `index` (None for NaN, text decoded)."""
        k, j = divmod(index, self._block)
        return tuple(self._names[i][int(b[k][j])] if self._text[i] else (
                     None if b[k][j] != b[k][j] else b[k][j])
                     for i, b in enumerate(self._blocks))

    def last(self) -> tuple | None:
        """The newest row (None for NaN, text decoded), or None when empty."""
        return self._row(self._newest_index()) if self._n else None

    def rows(self, since: float, until: float, limit: int) -> tuple[list[tuple], float | None]:
        """Rows with since <= t < until, oldest first, at most `limit` of them; and the
        time of the first one left out (None when all are in)."""
        times = self._ordered(0)
        lo, hi = bisect.bisect_left(times, since), bisect.bisect_left(times, until)
        stop = min(hi, lo + max(0, limit))
        out = [self._row((self._head + j) % self._n) for j in range(lo, stop)]
        return out, (times[stop] if stop < hi else None)

    def resize(self, maxlen: int) -> None:
        """Keep the newest rows that fit a new capacity (the interval changed)."""
        maxlen = max(1, maxlen)
        cols = [self._ordered(i)[-maxlen:] for i in range(len(self.columns))]
        self._n = len(cols[0])
        self._head = 0
        self._maxlen = maxlen
        self._blocks = [[] for _ in self.columns]
        for start in range(0, maxlen, self._block):
            if start >= self._n:
                break
            rows = min(self._block, maxlen - start)
            for i, blocks in enumerate(self._blocks):
                b = self._new_block(i, rows)
                part = cols[i][start:start + rows]
                b[:len(part)] = part
                blocks.append(b)

    def since(self, t: float) -> dict[str, list]:
        """Columns of the rows with time >= t."""
        times = self._ordered(0)
        start = bisect.bisect_left(times, t)
        out: dict[str, list] = {}
        for i, c in enumerate(self.columns):
            vals = self._ordered(i)[start:]
            if self._text[i]:
                names = self._names[i]
                out[c] = [names[v] for v in vals]
            else:
                out[c] = [None if v != v else v for v in vals]  # NaN -> None
        return out

    def nbytes(self) -> int:
        """Bytes held by the columns (for the benchmarks)."""
        return sum(b.buffer_info()[1] * b.itemsize for blocks in self._blocks for b in blocks)


def ring_size(interval_s: float, span_s: float = 3600.0) -> int:
    return int(span_s / interval_s + 0.5) + 1
