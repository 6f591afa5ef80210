"""Fixed-size ring buffers of samples: one hour at the sampling interval."""

from __future__ import annotations

from collections import deque
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
)
#: columns of /v1/history?interface=NAME
IFACE_COLUMNS = ("t", "rx_bytes_per_s", "tx_bytes_per_s")


class Ring:
    """Rows of equal width with a time column, oldest first, capped at `maxlen`.

    Times must not go backwards: a row older than the newest one is dropped (the agent
    keys rows by a monotonic-derived wall time, so this only guards against misuse).
    """

    def __init__(self, columns: Sequence[str], maxlen: int) -> None:
        if columns[0] != "t":
            raise ValueError("first column must be 't'")
        self.columns = tuple(columns)
        self._rows: deque[tuple] = deque(maxlen=max(1, maxlen))

    def __len__(self) -> int:
        return len(self._rows)

    def append(self, row: Iterable) -> bool:
        row = tuple(row)
        if len(row) != len(self.columns):
            raise ValueError(f"row has {len(row)} values, expected {len(self.columns)}")
        if self._rows and row[0] < self._rows[-1][0]:
            return False
        self._rows.append(row)
        return True

    def resize(self, maxlen: int) -> None:
        """Keep the newest rows that fit a new capacity (the interval changed)."""
        self._rows = deque(self._rows, maxlen=max(1, maxlen))

    def since(self, t: float) -> dict[str, list]:
        """Columns of the rows with time >= t."""
        rows = [r for r in self._rows if r[0] >= t]
        return {c: [r[i] for r in rows] for i, c in enumerate(self.columns)}


def ring_size(interval_s: float, span_s: float = 3600.0) -> int:
    return int(span_s / interval_s + 0.5) + 1
