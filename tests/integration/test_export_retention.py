"""`exotray export` covers the whole retention (issue 15 point 2): a real agent on
loopback (mDNS off) whose database holds 30 days of one link, written through the
database's own code as 30 days of sampling leave it, exports every 1-minute row."""

from __future__ import annotations

import csv
import time

from helpers import AgentProc, free_port

from exotray.agent.history.db import HistoryDB
from exotray.agent.peers.links import link_id
from exotray.cli import main as cli
from exotray.cli import reads as cli_reads
from exotray.core.history import LINK_COLUMNS

DAY = 86400.0
NODE_ID = "e4b0a7ed0001"


def _row(t: float, i: int) -> tuple:
    values = {"t": t, "rtt_ms": 0.2 + (i % 7) / 100, "rtt_min_ms": 0.1, "rtt_max_ms": 0.4,
              "rx_bytes_per_s": 1000.0 + i, "tx_bytes_per_s": 500.0, "utilization": 0.01,
              "state": "up", "rtt_baseline_ms": 0.1, "queue_delay_ms": 0.1,
              "flow_rx_bytes_per_s": 400.0 + i, "flow_tx_bytes_per_s": None, "loss": 0.0}
    return tuple(values[c] for c in LINK_COLUMNS)


def _times(path) -> list[float]:
    return [float(r["unix_time_s"]) for r in csv.DictReader(path.read_text().splitlines())]


def test_a_30_day_export_has_every_minute(tmp_path, monkeypatch):  # the CLI in-process
    port, peer_port = free_port(), free_port()
    state = tmp_path / "state-studio-1"
    state.mkdir(mode=0o700)
    (state / "node_id").write_text(f"{NODE_ID}\n")
    lid = link_id(NODE_ID, ("127.0.0.1", peer_port))
    now = time.time()
    start = (now - 30 * DAY) // 60 * 60 + 60
    minutes = int((now - 120 - start) // 60)
    db = HistoryDB(state / "history.db", 30 * DAY)
    # one sample a minute, in the middle of it: each becomes one 1-minute row
    db.write(now - 60, [("link", lid, LINK_COLUMNS, _row(start + 60 * i + 30, i))
                        for i in range(minutes)], [])
    db.close()
    agent = AgentProc(tmp_path, "studio-1", port, [peer_port])  # the peer is not there
    try:
        agent.wait_ready()
        out = tmp_path / "30d.csv"
        assert cli.main(["export", lid, "--since", "30d", "--port", str(port),
                         "-o", str(out)]) == 0
        # a retention longer than one answer holds comes in several, row for row the same
        # (here 7-day answers, as 35 days and more would be at 50,000 rows)
        monkeypatch.setattr(cli_reads, "EXPORT_WINDOW_S", 7 * DAY)
        chunked = tmp_path / "30d-in-weeks.csv"
        assert cli.main(["export", lid, "--since", "30d", "--port", str(port),
                         "-o", str(chunked)]) == 0
    finally:
        agent.close()
    text = out.read_text()
    rows = list(csv.DictReader(text.splitlines()))
    times = [float(r["unix_time_s"]) for r in rows]
    old = [t for t in times if t < now - 3 * 3600]  # before the finer tiers' stretch
    # every minute of the 30 days (but the first, which may start before --since) is
    # there, once, as its own 1-minute row: nothing grouped, nothing dropped
    expected = {start + 60 * i for i in range(1, minutes) if start + 60 * i < now - 3 * 3600}
    assert set(old) >= expected and len(old) <= len(expected) + 1
    assert len(rows) >= 30 * 24 * 60 - 10
    rx = {float(r["unix_time_s"]): r["rx_bytes_per_s"] for r in rows}
    assert float(rx[start + 60]) == 1001.0 and float(rx[start + 60 * 20000]) == 21000.0
    assert "rx_bytes_per_s_max" in text.splitlines()[0]
    single, weeks = _times(out), _times(chunked)
    assert weeks == sorted(set(weeks))  # oldest first, none twice at the seams
    old = [t for t in single if single[0] + 120 <= t < now - 3 * 3600]
    assert [t for t in weeks if single[0] + 120 <= t < now - 3 * 3600] == old
