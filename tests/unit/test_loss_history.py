"""A link's loss (issue 32: the doctor's `loss` check reads its last day) is kept like its
other numbers: in its ring, in a history file made before it existed (the column added on
open, old rows null), in the coarse tiers as mean and max, and in an export."""

from __future__ import annotations

import csv
import io
from types import SimpleNamespace

from exotray.agent.history import schema as historyschema
from exotray.agent.history.db import open_or_replace
from exotray.agent.peers import links as linkstats
from exotray.core import export
from exotray.core.history import LINK_COLUMNS
from exotray.core.saturation import SaturationParams

T0 = 1_800_000_000.0
OLD = tuple(c for c in LINK_COLUMNS if c != "loss")  # a file of before the column
DAY = 86400.0


def _row(columns: tuple[str, ...], t: float, loss: float | None) -> tuple:
    values = {"t": t, "rtt_ms": 0.5, "rtt_min_ms": 0.4, "rtt_max_ms": 0.6,
              "rx_bytes_per_s": 6e6, "tx_bytes_per_s": 6e6, "utilization": 0.5,
              "state": "up", "rtt_baseline_ms": 0.3, "queue_delay_ms": 0.1,
              "flow_rx_bytes_per_s": None, "flow_tx_bytes_per_s": None, "loss": loss}
    return tuple(values[c] for c in columns)


def test_a_links_history_row_keeps_the_loss_of_its_rtt_window():
    peer = SimpleNamespace(key="h2", id="node-b", name="h2")
    link = linkstats.new_link("node-a", peer, ("10.213.130.2", 52480), 1.0,
                              SaturationParams())
    for i in range(8):
        link.rtt.reply(float(i), 0.3)
    link.rtt.lost(8.0)
    link.rtt.lost(9.0)
    linkstats.history_row(link, 9.5, T0, None, None)
    row = dict(zip(LINK_COLUMNS, link.history.last(), strict=True))
    assert row["loss"] == 0.2  # 2 of the window's 10 probes, as the snapshot says


def test_a_file_made_before_the_loss_gains_it_and_its_buckets_keep_mean_and_max(
        tmp_path, monkeypatch):
    path = tmp_path / "history.db"
    monkeypatch.setitem(historyschema.KINDS, "link", OLD)
    db = open_or_replace(path, 30 * DAY)
    for i in range(5):
        db.write(T0 + i, [("link", "L1", OLD, _row(OLD, T0 + i, None))], [])
    db.close()
    monkeypatch.setitem(historyschema.KINDS, "link", LINK_COLUMNS)
    db = open_or_replace(path, 30 * DAY)
    try:
        for tier in ("raw", "10s", "1m"):
            cols = {r[1] for r in db.conn.execute(f"PRAGMA table_info(link_{tier})")}
            want = {"loss"} if tier == "raw" else {"loss_min", "loss_mean", "loss_max"}
            assert want <= cols, tier
        # 5 s to 125 s: a minute and a bit, lossless but for 6 s at 30 % in the first minute
        for i in range(5, 126):
            loss = 0.3 if 20 <= i < 26 else 0.0
            db.write(T0 + i, [("link", "L1", LINK_COLUMNS, _row(LINK_COLUMNS, T0 + i, loss))],
                     [])
        q = db.query("link", "L1", T0, T0 + 126, 1000, T0 + 126)
        assert q["tier"] == "raw"
        assert q["loss"][:5] == [None] * 5  # the old rows: not known
        assert q["loss"][20:26] == [0.3] * 6
        # a day back is the 10 s tier (raw keeps 6 h): the buckets keep mean and max
        q = db.query("link", "L1", T0 + 126 - DAY, T0 + 126, 100, T0 + 126)
        assert q["tier"] == "10s"
        bucket = {t: (m, x) for t, m, x in zip(q["t"], q["loss"], q["loss_max"], strict=True)}
        assert bucket[T0 + 20] == (0.18, 0.3)  # 6 of its 10 s at 30 %
        assert bucket[T0 + 10] == (0.0, 0.0)
        # the minute tier: the minute's mean (6 s at 30 % of 60 s: 3 %) and its peak
        q = db.query("link", "L1", T0, T0 + 59, 100, T0 + 49 * 3600)
        assert q["tier"] == "1m"
        assert q["loss"] == [0.03] and q["loss_max"] == [0.3]
    finally:
        db.close()


def test_an_export_has_the_loss_as_a_ratio():
    history = {"t": [T0, T0 + 1], "rx_bytes_per_s": [6e6, 6e6], "loss": [0.25, None]}
    rows = list(csv.DictReader(io.StringIO(export.to_csv(history))))
    assert rows[0]["loss_ratio"] == "0.25"
    assert rows[1]["loss_ratio"] == ""  # not known: an empty cell, not 0
    assert export.UNITS["loss"] == "ratio"
