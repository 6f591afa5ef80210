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
)
UNITS = {"t": "s (unix time)", "rtt_ms": "ms", "rtt_min_ms": "ms", "rtt_max_ms": "ms",
         "rx_bytes_per_s": "bytes/s", "tx_bytes_per_s": "bytes/s", "utilization": "ratio",
         "state": "up | saturated | down"}


def parse_since(text: str) -> float:
    """'90', '90s', '10m', '1h' -> seconds (at most one hour: the agent keeps one)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if not m:
        raise ValueError(f"--since {text!r}: expected e.g. 90s, 10m or 1h")
    seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    if not 1 <= seconds <= 3600:
        raise ValueError(f"--since {text!r}: between 1 s and 1 h (the agent keeps one hour)")
    return seconds


def rows(history: dict[str, Any]) -> list[dict[str, Any]]:
    n = len(history.get("t", []))
    return [{c: history.get(c, [None] * n)[i] for c, _ in COLUMNS} for i in range(n)]


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
    w.writerow(["time_utc", *(h for _, h in COLUMNS)])
    for r in rows(history):
        iso = datetime.fromtimestamp(r["t"], UTC).isoformat(timespec="milliseconds")
        w.writerow([iso.replace("+00:00", "Z"), *(csv_cell(r[c]) for c, _ in COLUMNS)])
    return out.getvalue()


def to_json(history: dict[str, Any], link: dict[str, Any] | None = None) -> str:
    return json.dumps({"link": history.get("link"), "interval_s": history.get("interval_s"),
                       "about": link, "units": UNITS, "rows": rows(history)}, indent=1)
