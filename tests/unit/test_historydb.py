"""The history database (agent/history/db.py) with time given by the test: tiers keep a
short peak, retention deletes, a range picks its tier and is bounded, bad files are set
aside, schemas migrate."""

from __future__ import annotations

import logging
import sqlite3

import pytest

from exotray.agent.history import schema as historyschema
from exotray.agent.history.db import HistoryDB, open_or_replace
from exotray.core.events import EventLog
from exotray.core.history import IFACE_COLUMNS, LINK_COLUMNS, Ring

DAY = 86400.0
T0 = 1_800_000_000.0  # a round-ish unix time


def _link_row(t: float, util: float = 0.1, state: str = "up", rtt: float | None = 0.5):
    return ("link", "L1", LINK_COLUMNS,
            (t, rtt, None if rtt is None else rtt - 0.1, None if rtt is None else rtt + 0.1,
             util * 1e9, util * 5e8, util, state, None if rtt is None else rtt - 0.2,
             None if rtt is None else 0.1, util * 4e8, util * 2e8, 0.0))


def _fill(db: HistoryDB, start: float, seconds: int, peak_at: float | None = None,
          step: float = 1.0) -> float:
    """One link sampled every `step` s; a 3 s saturation at peak_at."""
    t = start
    for i in range(int(seconds / step)):
        t = start + i * step
        hot = peak_at is not None and peak_at <= t < peak_at + 3
        db.write(t, [_link_row(t, 0.97 if hot else 0.1, "saturated" if hot else "up"),
                     ("iface", "eth0", IFACE_COLUMNS, (t, 10.0, 20.0, "up"))], [])
    return t


@pytest.fixture
def db(tmp_path):
    d = open_or_replace(tmp_path / "history.db", 30 * DAY)
    yield d
    d.close()


def test_a_three_second_peak_survives_into_the_thirty_day_view(db):
    end = _fill(db, T0, 2 * 3600, peak_at=T0 + 1234.0)
    now = end + 120  # every 1 min bucket of the fill is complete
    db.write(now, [], [])
    month = db.query("link", "L1", now - 30 * DAY, now, 2000, now)
    assert month["tier"] == "1m"
    assert max(month["utilization_max"]) == pytest.approx(0.97)
    assert "saturated" in month["state"]
    assert max(month["utilization"]) < 0.2  # the mean of the minute hides it; max does not
    assert max(month["rx_bytes_per_s_max"]) == pytest.approx(0.97e9)
    day = db.query("link", "L1", now - DAY, now, 2000, now)
    assert day["tier"] == "10s" and max(day["utilization_max"]) == pytest.approx(0.97)
    # the min of the RTT band is the min of the minimums
    assert min(month["rtt_min_ms_min"]) == pytest.approx(0.4)


def test_a_range_picks_its_tier_and_is_bounded(db):
    end = _fill(db, T0, 2 * 3600, step=1.0)
    now = end + 1
    hour = db.query("link", "L1", now - 3600, now, 2000, now)
    assert hour["tier"] == "raw" and 1800 <= len(hour["t"]) <= 2000  # 1 s rows, bucketed
    assert hour["step_s"] == pytest.approx(1.801, abs=0.01)
    ten = db.query("link", "L1", now - 600, now, 2000, now)
    assert ten["tier"] == "raw" and ten["step_s"] is None and len(ten["t"]) == 600
    assert ten["t"] == sorted(ten["t"]) and ten["state"][-1] == "up"
    few = db.query("link", "L1", now - 600, now, 50, now)
    assert len(few["t"]) <= 50
    week = db.query("link", "L1", now - 7 * DAY, now, 2000, now)
    assert week["tier"] == "1m" and len(week["t"]) <= 120 + 6 + 10
    # the minute not rolled up yet comes from the finer tiers: the view reaches now
    assert week["t"][-1] == end and week["t"] == sorted(week["t"])
    for points in (10, 20, 50):
        assert len(db.query("link", "L1", now - 7 * DAY, now, points, now)["t"]) <= points
    span = db.query("link", "L1", T0 + 100, T0 + 200, 2000, now)
    assert span["t"][0] >= T0 + 100 and span["t"][-1] <= T0 + 200
    assert db.query("link", "nobody", now - 60, now, 10, now) is None
    assert db.query("iface", "eth0", now - 60, now, 2000, now)["rx_bytes_per_s"][-1] == 10.0


def test_unknown_stays_unknown_in_every_tier(db):
    for i in range(120):
        db.write(T0 + i, [_link_row(T0 + i, rtt=None)], [])
    now = T0 + 200
    db.write(now, [], [])
    for since in (now - 600, now - DAY, now - 20 * DAY):
        q = db.query("link", "L1", since, now, 2000, now)
        assert q["t"] and all(v is None for v in q["rtt_ms"] + q["rtt_max_ms_max"])


def test_retention_deletes_old_rows_and_events(tmp_path):
    db = open_or_replace(tmp_path / "h.db", 2 * DAY)
    ev = {"seq": 1, "at": "2027-01-15T08:00:00.000Z", "type": "peer_up"}
    _fill(db, T0, 300)
    db.write(T0 + 300, [], [dict(ev, at=_iso(T0 + 10))])
    assert db.events(T0, T0 + 400, 10)[0]
    counts = _counts(db)
    assert counts["link_raw"] == 300 and counts["link_10s"] == 30 and counts["link_1m"] == 5
    later = T0 + 7 * 3600  # past the 6 h of full resolution
    db.write(later, [_link_row(later)], [])
    assert _counts(db)["link_raw"] == 1 and _counts(db)["link_10s"] == 30
    gone = T0 + 3 * DAY  # past the retention
    db.write(gone, [_link_row(gone)], [])
    assert _counts(db) == {"link_raw": 1, "link_10s": 0, "link_1m": 0}
    assert db.events(0, gone, 10) == ([], False)
    db.close()


def _counts(db: HistoryDB) -> dict[str, int]:
    return {f"link_{t}": db.conn.execute(f"SELECT count(*) FROM link_{t}").fetchone()[0]
            for t in ("raw", "10s", "1m")}


def _iso(t: float) -> str:
    from exotray.core.events import iso

    return iso(t)


def test_events_by_time_range_and_seq_across_restarts(tmp_path):
    path = tmp_path / "h.db"
    db = open_or_replace(path, 30 * DAY)
    log = EventLog()
    evs = [log.emit("peer_up", T0 + i * 60, peer_id="p") for i in range(5)]
    db.write(T0 + 300, [], evs)
    got, more = db.events(T0 + 60, T0 + 180, 10)
    assert [e["seq"] for e in got] == [2, 3, 4] and not more
    got, more = db.events(T0, T0 + 1000, 2)
    assert [e["seq"] for e in got] == [1, 2] and more
    db.close()
    db = open_or_replace(path, 30 * DAY)  # the next run numbers on
    log2 = EventLog()
    log2.resume(db.last_seq())
    assert log2.emit("peer_down", T0 + 400)["seq"] == 6
    db.close()


def test_kill_between_writes_keeps_every_commit(tmp_path):
    """What one write committed is there for the next opener, without a clean close."""
    path = tmp_path / "h.db"
    db = open_or_replace(path, 30 * DAY)
    _fill(db, T0, 30)
    other = open_or_replace(path, 30 * DAY)  # as a restarted agent would, while db is open
    q = other.query("link", "L1", T0, T0 + 30, 2000, T0 + 30)
    assert len(q["t"]) == 30
    other.close()
    db.close()


@pytest.mark.parametrize(("content", "why"), [
    (b"this is not a database at all\n" * 200, "corrupt"),
    (b"SQLite format 3\x00" + b"\xff" * 4000, "corrupt"),
])
def test_a_corrupt_file_is_set_aside_and_a_fresh_one_started(tmp_path, caplog, content, why):
    path = tmp_path / "history.db"
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING):
        db = open_or_replace(path, 30 * DAY)
    _fill(db, T0, 5)
    assert len(db.query("link", "L1", T0, T0 + 5, 10, T0 + 5)["t"]) == 5
    db.close()
    aside = [p for p in tmp_path.iterdir() if p.name.startswith(f"history.db.{why}-")]
    assert len(aside) == 1 and aside[0].read_bytes() == content
    lines = [r.getMessage() for r in caplog.records if "moved aside" in r.getMessage()]
    assert len(lines) == 1 and aside[0].name in lines[0]


def test_a_damaged_page_is_found_and_set_aside(tmp_path, caplog):
    path = tmp_path / "history.db"
    db = open_or_replace(path, 30 * DAY)
    _fill(db, T0, 2000)
    db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    raw = bytearray(path.read_bytes())
    page = 4096
    for off in range(2 * page, len(raw), 3 * page):  # scribble over some b-tree pages
        raw[off:off + 64] = b"\xa5" * 64
    path.write_bytes(bytes(raw))
    with caplog.at_level(logging.WARNING):
        db = open_or_replace(path, 30 * DAY)
    assert db.query("link", "L1", T0, T0 + 10, 10, T0 + 10) is None  # fresh
    db.close()
    assert any("corrupt" in r.getMessage() for r in caplog.records)


def test_a_foreign_database_is_set_aside_untouched(tmp_path, caplog):
    path = tmp_path / "history.db"
    other = sqlite3.connect(path)
    other.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, name TEXT)")
    other.execute("INSERT INTO photos VALUES (1, 'cat')")
    other.commit()
    other.close()
    with caplog.at_level(logging.WARNING):
        open_or_replace(path, 30 * DAY).close()
    aside = next(tmp_path.glob("history.db.foreign-*"))
    assert sqlite3.connect(aside).execute("SELECT name FROM photos").fetchone() == ("cat",)
    assert "not an exotray history" in caplog.text


def test_a_newer_schema_is_refused_and_kept(tmp_path, caplog, monkeypatch):
    path = tmp_path / "history.db"
    db = open_or_replace(path, 30 * DAY)
    db.conn.execute("UPDATE meta SET value='99' WHERE key='schema'")
    db.close()
    with caplog.at_level(logging.WARNING):
        open_or_replace(path, 30 * DAY).close()
    assert next(tmp_path.glob("history.db.newer-*")).exists()
    assert "newer schema (99" in caplog.text


def test_an_older_schema_is_migrated_in_place(tmp_path, monkeypatch):
    path = tmp_path / "history.db"
    db = open_or_replace(path, 30 * DAY)
    _fill(db, T0, 10)
    db.close()
    ran = []
    monkeypatch.setattr(historyschema, "SCHEMA_VERSION", 2)
    monkeypatch.setattr(historyschema, "MIGRATIONS", {1: lambda conn: ran.append(conn)})
    db = open_or_replace(path, 30 * DAY)
    assert len(ran) == 1
    assert db.conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone() == ("2",)
    assert len(db.query("link", "L1", T0, T0 + 10, 100, T0 + 10)["t"]) == 10  # kept
    db.close()


def test_a_column_added_later_is_added_to_every_tier(tmp_path, monkeypatch):
    """Another issue adds a link column: the old file gains it, old rows read None."""
    path = tmp_path / "history.db"
    db = open_or_replace(path, 30 * DAY)
    _fill(db, T0, 10)
    db.close()
    wider = (*LINK_COLUMNS, "rdma_rx_bytes_per_s")
    monkeypatch.setitem(historyschema.KINDS, "link", wider)
    db = open_or_replace(path, 30 * DAY)
    for tier in ("raw", "10s", "1m"):
        cols = {r[1] for r in db.conn.execute(f"PRAGMA table_info(link_{tier})")}
        assert ("rdma_rx_bytes_per_s" if tier == "raw" else "rdma_rx_bytes_per_s_max") in cols
    t = T0 + 11
    db.write(t, [("link", "L1", wider, (t, 0.5, 0.4, 0.6, 1.0, 1.0, 0.1, "up", 0.3, 0.2,
                                        None, None, 0.0, 2500.0))], [])
    q = db.query("link", "L1", T0, t, 100, t)
    assert q["rdma_rx_bytes_per_s"][0] is None and q["rdma_rx_bytes_per_s"][-1] == 2500.0
    db.close()


def test_set_aside_keeps_only_the_newest_few(tmp_path):
    path = tmp_path / "history.db"
    for i in range(historyschema.KEEP_ASIDE + 3):
        path.write_bytes(b"junk %d" % i * 100)
        historyschema.set_aside(path, f"corrupt{i}")
    assert len(list(tmp_path.glob("history.db.*"))) == historyschema.KEEP_ASIDE


def test_ring_last_row():
    r = Ring(("t", "x", "state"), 3)
    assert r.last() is None
    for i in range(5):
        r.append((float(i), None if i == 4 else i * 2.0, "up" if i % 2 else "down"))
        assert r.last()[0] == float(i)
    assert r.last() == (4.0, None, "down")


def test_the_page_cache_is_bounded_explicitly(tmp_path):
    """SQLite's default cache (2000 KiB) filled as the file grew and showed as agent RSS
    creeping up for hours; the connection sets its own small bound, also on a reopen
    (cache_size is per connection, not stored in the file)."""
    want = -historyschema.CACHE_KIB
    for _ in range(2):
        d = open_or_replace(tmp_path / "history.db", 30 * DAY)
        try:
            assert d.conn.execute("PRAGMA cache_size").fetchone()[0] == want
            _fill(d, T0, 30)
        finally:
            d.close()
    assert historyschema.CACHE_KIB <= 1024


def test_an_interfaces_carrier_changes_stay_in_its_history(db):
    """Issue 31 point 3: each change of an interface's carrier is in its history, and a
    minute that had a drop says "down" in the month's view."""
    for i in range(7200):
        t = T0 + i
        carrier = "down" if 1234 <= i < 1236 else "up"
        db.write(t, [("iface", "eth0", IFACE_COLUMNS, (t, 10.0, 20.0, carrier))], [])
    now = T0 + 7200 + 120
    db.write(now, [], [])
    raw = db.query("iface", "eth0", T0 + 1200, T0 + 1300, 2000, now)
    assert raw["carrier"].count("down") == 2
    month = db.query("iface", "eth0", now - 30 * DAY, now, 2000, now)
    assert month["tier"] == "1m" and month["carrier"].count("down") == 1
