"""Link history as CSV or JSON, with units in the headers (`exotray export`, the window)."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import UTC, datetime
from typing import Any

#: (history column, CSV header with its unit)
COLUMNS = (
    ("t", "unix_time_s"),
    ("rtt_ms", "rtt_median_ms"),
    ("rtt_min_ms", "rtt_min_ms"),
    ("rtt_max_ms", "rtt_max_ms"),
    ("rx_bytes_per_s", "rx_bytes_per_s"),
    ("tx_bytes_per_s", "tx_bytes_per_s"),
    ("utilization", "utilization_ratio"),
    ("state", "state"),
    # the link's own TCP bytes where its carrier is shared (empty: not read)
    ("flow_rx_bytes_per_s", "flow_rx_bytes_per_s"),
    ("flow_tx_bytes_per_s", "flow_tx_bytes_per_s"),
    # the share of the RTT window's probes lost (empty: none sent yet, or an older row)
    ("loss", "loss_ratio"),
)
UNITS = {"t": "s (unix time)", "rtt_ms": "ms", "rtt_min_ms": "ms", "rtt_max_ms": "ms",
         "rx_bytes_per_s": "bytes/s", "tx_bytes_per_s": "bytes/s", "utilization": "ratio",
         "state": "up | saturated | down", "flow_rx_bytes_per_s": "bytes/s",
         "flow_tx_bytes_per_s": "bytes/s", "loss": "ratio"}


#: the longest --since (the agent keeps what its history_days says, at most this)
MAX_SINCE_DAYS = 3650


def parse_since(text: str) -> float:
    """'90', '90s', '10m', '1h', '30d' -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", text)
    if not m:
        raise ValueError(f"--since {text!r}: expected e.g. 90s, 10m, 1h or 30d")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    if not 1 <= seconds <= MAX_SINCE_DAYS * 86400:
        raise ValueError(f"--since {text!r}: between 1 s and {MAX_SINCE_DAYS} d")
    return seconds


def _columns(history: dict[str, Any]) -> list[tuple[str, str]]:
    """COLUMNS, then each number's min and max over its bucket when the rows are buckets
    (the agent's coarser tiers: a row keeps its peaks)."""
    if not history.get("step_s"):  # every sample: min = max = the value
        return list(COLUMNS)
    extra = [(f"{c}{s}", f"{h}{s}") for c, h in COLUMNS[1:] if c != "state"
             for s in ("_min", "_max") if f"{c}{s}" in history]
    return [*COLUMNS, *extra]


def rows(history: dict[str, Any]) -> list[dict[str, Any]]:
    n = len(history.get("t", []))
    # each column looked up once: a default list built per cell made a 30-day export
    # (43,200 rows) quadratic, minutes long
    cols = [(c, history.get(c) or [None] * n) for c, _ in _columns(history)]
    return [{c: values[i] for c, values in cols} for i in range(n)]


#: what makes a spreadsheet read a cell as a formula (or, tab and CR, hide one behind)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value for a CSV cell that a spreadsheet shows as the value: text (which may come
    from a peer) starting like a formula gets a leading ' (OWASP's CSV injection rule);
    numbers, negative ones too, stay numbers; None is an empty cell."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def to_csv(history: dict[str, Any]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    cols = _columns(history)
    w.writerow(["time_utc", *(h for _, h in cols)])
    for r in rows(history):
        iso = datetime.fromtimestamp(r["t"], UTC).isoformat(timespec="milliseconds")
        w.writerow([iso.replace("+00:00", "Z"), *(csv_cell(r[c]) for c, _ in cols)])
    return out.getvalue()


def to_json(history: dict[str, Any], link: dict[str, Any] | None = None) -> str:
    return json.dumps({"link": history.get("link"), "interval_s": history.get("interval_s"),
                       "tier": history.get("tier"), "step_s": history.get("step_s"),
                       "about": link, "units": UNITS, "rows": rows(history)}, indent=1)
