"""A link's own bytes (issue 30) are kept like its other numbers: in its ring, in a history
file made before they existed (the columns added on open), and in an export."""

from __future__ import annotations

import csv
import io

from exotray.agent.history import schema as historyschema
from exotray.agent.history.db import open_or_replace
from exotray.core import export
from exotray.core.history import LINK_COLUMNS

T0 = 1_800_000_000.0
FLOW = ("flow_rx_bytes_per_s", "flow_tx_bytes_per_s")
OLD = tuple(c for c in LINK_COLUMNS if c not in FLOW)  # a file of before issue 30


def _row(columns: tuple[str, ...], t: float, own: float | None) -> tuple:
    values = {"t": t, "rtt_ms": 0.5, "rtt_min_ms": 0.4, "rtt_max_ms": 0.6,
              "rx_bytes_per_s": 6e6, "tx_bytes_per_s": 6e6, "utilization": 0.5,
              "state": "up", "rtt_baseline_ms": 0.3, "queue_delay_ms": 0.1,
              "flow_rx_bytes_per_s": own, "flow_tx_bytes_per_s": None if own is None else 2 * own,
              "loss": 0.0}
    return tuple(values[c] for c in columns)


def test_a_file_made_before_the_own_bytes_gains_them_in_every_tier(tmp_path, monkeypatch):
    path = tmp_path / "history.db"
    monkeypatch.setitem(historyschema.KINDS, "link", OLD)
    db = open_or_replace(path, 30 * 86400.0)
    for i in range(5):
        db.write(T0 + i, [("link", "L1", OLD, _row(OLD, T0 + i, None))], [])
    db.close()
    monkeypatch.setitem(historyschema.KINDS, "link", LINK_COLUMNS)
    db = open_or_replace(path, 30 * 86400.0)
    try:
        for tier in ("raw", "10s", "1m"):
            cols = {r[1] for r in db.conn.execute(f"PRAGMA table_info(link_{tier})")}
            want = FLOW if tier == "raw" else tuple(f"{c}_max" for c in FLOW)
            assert set(want) <= cols, tier
        for i in range(5, 10):
            db.write(T0 + i, [("link", "L1", LINK_COLUMNS, _row(LINK_COLUMNS, T0 + i, 5e6))], [])
        q = db.query("link", "L1", T0, T0 + 10, 100, T0 + 10)
        assert q["flow_rx_bytes_per_s"][:5] == [None] * 5  # the old rows: not known
        assert q["flow_rx_bytes_per_s"][5:] == [5e6] * 5
        assert q["flow_tx_bytes_per_s"][5:] == [1e7] * 5
    finally:
        db.close()


def test_an_export_has_the_own_bytes_with_their_unit():
    history = {"t": [T0, T0 + 1], "rx_bytes_per_s": [6e6, 6e6],
               "flow_rx_bytes_per_s": [5e6, None], "flow_tx_bytes_per_s": [1e6, None]}
    rows = list(csv.DictReader(io.StringIO(export.to_csv(history))))
    assert rows[0]["flow_rx_bytes_per_s"] == "5000000.0"
    assert rows[0]["flow_tx_bytes_per_s"] == "1000000.0"
    assert rows[1]["flow_rx_bytes_per_s"] == ""  # not read: an empty cell, not 0
    assert export.UNITS["flow_rx_bytes_per_s"] == "bytes/s"
