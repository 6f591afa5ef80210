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
)
#: columns of /v1/history?interface=NAME
IFACE_COLUMNS = ("t", "rx_bytes_per_s", "tx_bytes_per_s")


#: columns that hold short text (a link's state) rather than numbers
TEXT_COLUMNS = frozenset({"state"})

_NAN = float("nan")


class Ring:
    """Rows of equal width with a time column, oldest first, capped at `maxlen`.

    Stored as typed columns, not rows of Python objects: numbers in array('d') (None as
    NaN), text columns as one byte per row indexing a small table of the strings seen.
    An hour of a link at 1 s is 3601 x 57 bytes (~200 KiB) instead of ~1 MiB of tuples.
    The arrays grow to `maxlen` rows, then wrap around.

    Times must not go backwards: a row older than the newest one is dropped (the agent
    keys rows by a monotonic-derived wall time, so this only guards against misuse).
    """

    def __init__(self, columns: Sequence[str], maxlen: int) -> None:
        if columns[0] != "t":
            raise ValueError("first column must be 't'")
        self.columns = tuple(columns)
        self._text = [c in TEXT_COLUMNS for c in self.columns]
        self._codes: list[dict[str, int]] = [{} for _ in self.columns]
        self._names: list[list[str | None]] = [[None] for _ in self.columns]  # code 0: None
        self._maxlen = max(1, maxlen)
        self._cols: list[array] = [array("B" if txt else "d") for txt in self._text]
        self._head = 0  # index of the oldest row once the arrays are full

    def __len__(self) -> int:
        return len(self._cols[0])

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

    def append(self, row: Iterable) -> bool:
        row = tuple(row)
        if len(row) != len(self.columns):
            raise ValueError(f"row has {len(row)} values, expected {len(self.columns)}")
        n = len(self)
        if n and row[0] < self._newest_t():
            return False
        values = [self._encode(i, v) for i, v in enumerate(row)]
        if n < self._maxlen:
            for col, v in zip(self._cols, values, strict=True):
                col.append(v)
        else:
            for col, v in zip(self._cols, values, strict=True):
                col[self._head] = v
            self._head = (self._head + 1) % self._maxlen
        return True

    def _newest_t(self) -> float:
        t = self._cols[0]
        return t[(self._head - 1) % len(t)] if len(t) == self._maxlen else t[-1]

    def _ordered(self, col: array) -> array:
        return col[self._head:] + col[: self._head] if self._head else col

    def last(self) -> tuple | None:
        """The newest row (None for NaN, text decoded), or None when empty."""
        n = len(self)
        if not n:
            return None
        i = (self._head - 1) % n if n == self._maxlen else n - 1
        return tuple(self._names[j][int(c[i])] if self._text[j] else (None if c[i] != c[i]
                     else c[i]) for j, c in enumerate(self._cols))

    def resize(self, maxlen: int) -> None:
        """Keep the newest rows that fit a new capacity (the interval changed)."""
        maxlen = max(1, maxlen)
        self._cols = [self._ordered(c)[-maxlen:] for c in self._cols]
        self._head = 0
        self._maxlen = maxlen

    def since(self, t: float) -> dict[str, list]:
        """Columns of the rows with time >= t."""
        times = self._ordered(self._cols[0])
        start = bisect.bisect_left(times, t)
        out: dict[str, list] = {}
        for i, c in enumerate(self.columns):
            vals = self._ordered(self._cols[i])[start:]
            if self._text[i]:
                names = self._names[i]
                out[c] = [names[v] for v in vals]
            else:
                out[c] = [None if v != v else v for v in vals]  # NaN -> None
        return out

    def nbytes(self) -> int:
        """Bytes held by the columns (for the benchmarks)."""
        return sum(c.buffer_info()[1] * c.itemsize for c in self._cols)


def ring_size(interval_s: float, span_s: float = 3600.0) -> int:
    return int(span_s / interval_s + 0.5) + 1
