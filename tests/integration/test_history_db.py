"""The history database with real agents on loopback (mDNS off): history and events
survive SIGKILL + restart, a bad database file never stops an agent, /v1/history picks
its tier and bounds its points, /v1/events answers a time range, export covers it all."""

from __future__ import annotations

import csv
import io
import signal
import subprocess
import sys
import time

import httpx
import pytest
from helpers import AgentProc, free_port, wait_for

from exotray.agent.history import db as historydb
from exotray.core.events import iso

DAY = 86400.0


def _up_link(agent: AgentProc) -> dict | None:
    links = agent.get("/v1/snapshot")["links"]
    return links[0] if links and links[0]["state"] == "up" else None


def test_history_and_events_survive_sigkill_and_restart(tmp_path):
    pa, pb = free_port(), free_port()
    a = AgentProc(tmp_path, "studio-1", pa, [pb], "--interval", "0.5")
    b = AgentProc(tmp_path, "studio-2", pb, [pa], "--interval", "0.5")
    a2 = None
    try:
        a.wait_ready()
        b.wait_ready()
        link = wait_for(lambda: _up_link(a), 10)
        assert link, a.log()
        lid = link["id"]
        assert wait_for(lambda: len(a.get("/v1/history", link=lid, seconds=600)["t"]) >= 10, 15)
        before = a.get("/v1/history", link=lid, seconds=600)
        assert before["tier"] == "raw"  # from the database, not the ring
        events_before = a.get("/v1/events")["events"]
        assert [e["type"] for e in events_before][:1] == ["peer_up"]
        a.kill(signal.SIGKILL)

        a2 = AgentProc(tmp_path, "studio-1", pa, [pb], "--interval", "0.5")
        a2.wait_ready()
        after = a2.get("/v1/history", link=lid, seconds=600)
        # every row the killed agent had written (served above) is still there
        assert set(before["t"]) <= set(after["t"]), (before["t"][-3:], after["t"][:3])
        old = after["t"].index(before["t"][-1])
        assert after["rtt_ms"][:old + 1] == before["rtt_ms"]
        # events of the first run, by time range; the new run numbers on from them
        start = before["t"][0] - 5
        ranged = a2.get("/v1/events", since=start, until=time.time() + 1)["events"]
        assert ranged[0] == events_before[0]
        assert wait_for(lambda: a2.get("/v1/events")["events"], 10)
        assert a2.get("/v1/events")["events"][0]["seq"] > events_before[-1]["seq"]
        # export reads the database too: every row of the last minutes, and the whole
        # retention (30 days: 1-minute rows, the newest minute from the finer tiers)
        for since in ("10m", "30d"):
            p = subprocess.run([sys.executable, "-m", "exotray", "export", "studio-2",
                                "--since", since, "--port", str(pa)], capture_output=True,
                               text=True, timeout=30)
            assert p.returncode == 0, p.stderr
            times = [float(r["unix_time_s"]) for r in csv.DictReader(io.StringIO(p.stdout))]
            if since == "10m":
                assert set(times) >= set(before["t"])
            else:
                assert times[0] <= before["t"][0] and times[-1] >= before["t"][-1]
                assert "rx_bytes_per_s_max" in p.stdout.splitlines()[0]
    finally:
        for agent in (a, b, a2):
            if agent is not None:
                agent.close()


@pytest.mark.parametrize("bad", ["garbage", "directory"])
def test_a_bad_database_file_never_stops_the_agent(tmp_path, bad):
    port = free_port()
    state = tmp_path / "state-solo"
    state.mkdir()
    db = state / "history.db"
    if bad == "garbage":
        db.write_bytes(b"\x00not sqlite\xff" * 1000)
    else:
        db.mkdir()  # cannot be opened, cannot be moved aside either
    agent = AgentProc(tmp_path, "solo", port, [], "--interval", "0.5")
    try:
        agent.wait_ready()
        hist = wait_for(lambda: (h := agent.get("/v1/history", interface="lo", seconds=60))
                        and len(h["t"]) >= 2 and h, 10)
        assert hist, agent.log()
        log = agent.log()
        if bad == "garbage":
            assert hist["tier"] == "raw"
            assert log.count("moved aside") == 1 and "history.db.corrupt-" in log
            assert len(list(state.glob("history.db.corrupt-*"))) == 1
        else:
            assert hist["tier"] == "memory"  # the in-memory hour, said once in the log
            assert log.count("cannot use history database") == 1
        assert agent.proc.poll() is None
    finally:
        agent.close()


def _seed(path, now: float) -> float:
    """Three days of 1-minute rows for interface lo, one with a peak, and an old event."""
    db = historydb.open_or_replace(path, 30 * DAY)
    sid = db._series_id("iface", "lo")
    peak = round((now - 2 * DAY) // 60 * 60)
    rows = []
    for m in range(3 * 24 * 60):
        t = round((now - 3 * DAY) // 60 * 60) + m * 60
        hot = 9e8 if t == peak else 1000
        rows.append((sid, t * 1000, 60, 900, 1000, hot, 900, 1000, 1100))
    db.conn.executemany("INSERT INTO iface_1m (series, t, n, rx_bytes_per_s_min, "
                        "rx_bytes_per_s_mean, rx_bytes_per_s_max, tx_bytes_per_s_min, "
                        "tx_bytes_per_s_mean, tx_bytes_per_s_max) VALUES (?,?,?,?,?,?,?,?,?)",
                        rows)
    db.write(now - 2 * DAY, [], [{"seq": 7, "at": iso(now - 2 * DAY), "type": "peer_down",
                                  "peer_id": "gone"}])
    db.close()
    return float(peak)


def test_history_range_picks_its_tier_and_bounds_points(tmp_path):
    port = free_port()
    (tmp_path / "state-solo").mkdir()
    now = time.time()
    peak = _seed(tmp_path / "state-solo" / "history.db", now)
    agent = AgentProc(tmp_path, "solo", port, [], "--interval", "0.5")
    try:
        agent.wait_ready()
        # (an agent's first rows reach its database within seconds; a loaded runner, a minute)
        assert wait_for(lambda: len(agent.get("/v1/history", interface="lo", seconds=30)["t"])
                        >= 3, 60)
        now = time.time()
        three = agent.get("/v1/history", interface="lo", since=now - 3 * DAY, until=now)
        assert three["tier"] == "1m" and 1000 <= len(three["t"]) <= 2000
        assert max(three["rx_bytes_per_s_max"]) == 9e8  # the one-minute peak survives
        hit = next(i for i, v in enumerate(three["rx_bytes_per_s_max"]) if v == 9e8)
        assert abs(three["t"][hit] - peak) <= three["step_s"]
        few = agent.get("/v1/history", interface="lo", since=now - 3 * DAY, until=now,
                        points=100)
        assert len(few["t"]) <= 100 and max(few["rx_bytes_per_s_max"]) == 9e8
        recent = agent.get("/v1/history", interface="lo", since=now - 20, until=now)
        assert recent["tier"] == "raw" and all(now - 21 <= t <= now for t in recent["t"])
        day = agent.get("/v1/history", interface="lo", seconds=DAY)
        assert day["tier"] == "10s"
        for params in ({"since": now, "until": now - 10}, {"since": now - 10, "seconds": 5},
                       {"seconds": 10, "points": 0}, {"since": "yesterday"}):
            r = httpx.get(agent.url + "/v1/history", params={"interface": "lo", **params},
                          trust_env=False, timeout=5)
            assert r.status_code == 400, params
        # events beyond the in-memory ring, by time
        old = agent.get("/v1/events", since=now - 3 * DAY, until=now - DAY)
        assert [e["type"] for e in old["events"]] == ["peer_down"] and not old["truncated"]
        assert agent.get("/v1/events", since=now - 3 * DAY, limit=1)["events"][0]["seq"] == 7
    finally:
        agent.close()
