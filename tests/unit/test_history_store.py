"""The agent's history store (agent/history/store.py): the rings' newest rows and the events go
to the database through its one thread; damage found while running is set aside and a
fresh file taken; reads wait for what is queued."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from types import SimpleNamespace

from exotray.agent.base.throttle import Throttled
from exotray.agent.history import store as store_mod
from exotray.agent.history.store import HistoryStore
from exotray.core.events import EventLog, event_time
from exotray.core.history import IFACE_COLUMNS, LINK_COLUMNS, Ring

T0 = 1_800_000_000.0


def _parts():
    link = SimpleNamespace(id="L1", history=Ring(LINK_COLUMNS, 100))
    eth = SimpleNamespace(vanished_at=None, history=Ring(IFACE_COLUMNS, 100))
    gone = SimpleNamespace(vanished_at=5.0, history=Ring(IFACE_COLUMNS, 100))
    return link, {"eth0": eth, "old0": gone}


def _tick(store: HistoryStore, link, ifaces, t: float) -> None:
    link.history.append((t, 0.5, 0.4, 0.6, 100.0, 200.0, None, "up", 0.3, 0.2, 80.0, None,
                           0.0))
    for st in ifaces.values():
        st.history.append((t, 10.0, 20.0, "up"))
    store.collect(t, [link], ifaces)


def test_rows_and_events_reach_the_database_and_come_back(tmp_path):
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    log = EventLog(sinks=[store.event])
    link, ifaces = _parts()

    async def run():
        assert await store.open() == 0
        for i in range(5):
            _tick(store, link, ifaces, T0 + i)
        log.emit("peer_up", T0 + 2, peer_id="p")
        _tick(store, link, ifaces, T0 + 5)
        now = T0 + 6
        hist = await store.answer("L1", None, T0, now, 100, now, 1.0, lambda: None)
        eth = await store.answer(None, "eth0", T0, now, 100, now, 1.0, lambda: None)
        old = await store.answer(None, "old0", T0, now, 100, now, 1.0, lambda: None)
        evs = await store.event_range(T0, now, 10, [])
        await store.close()
        return hist, eth, old, evs

    hist, eth, old, evs = asyncio.run(run())
    assert hist["link"] == "L1" and hist["tier"] == "raw" and len(hist["t"]) == 6
    assert hist["utilization"] == [None] * 6 and hist["state"][-1] == "up"
    assert eth["interface"] == "eth0" and eth["rx_bytes_per_s"][0] == 10.0
    assert old is None  # a vanished interface is not recorded
    assert [e["type"] for e in evs["events"]] == ["peer_up"]
    # the next run numbers its events on
    again = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))

    async def reopen():
        seq = await again.open()
        await again.close()
        return seq

    assert asyncio.run(reopen()) == 1


def test_damage_found_while_running_is_set_aside(tmp_path, caplog, monkeypatch):
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    link, ifaces = _parts()

    async def run():
        await store.open()
        _tick(store, link, ifaces, T0)
        await store.answer("L1", None, T0, T0 + 1, 100, T0 + 1, 1.0, lambda: None)
        bad = sqlite3.DatabaseError("database disk image is malformed")
        bad.sqlite_errorcode = 11  # SQLITE_CORRUPT
        first = store.db

        def broken(*a):
            raise bad

        monkeypatch.setattr(first, "write", broken)
        with caplog.at_level(logging.WARNING):
            _tick(store, link, ifaces, T0 + 1)
            await store.answer("L1", None, T0, T0 + 2, 100, T0 + 2, 1.0, lambda: None)
        assert store.db is not first
        _tick(store, link, ifaces, T0 + 2)
        hist = await store.answer("L1", None, T0, T0 + 3, 100, T0 + 3, 1.0, lambda: None)
        await store.close()
        return hist

    hist = asyncio.run(run())
    assert hist["t"] == [T0 + 1, T0 + 2]  # the fresh file: the batch that found it, then on
    assert len(list(tmp_path.glob("history.db.corrupt-*"))) == 1
    assert "went bad" in caplog.text


def test_a_stuck_thread_is_handed_no_more_than_max_backlog_batches(tmp_path, monkeypatch):
    """(What it could not take waits in the rings: test_history_backlog.py.)"""
    monkeypatch.setattr(store_mod, "MAX_BACKLOG", 2)
    monkeypatch.setattr(store_mod, "WRITE_EVERY", 1)
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    link, ifaces = _parts()
    import threading

    gate = threading.Event()

    async def run():
        await store.open()
        store._exec.submit(gate.wait)  # the disk hangs
        for i in range(5):
            _tick(store, link, ifaces, T0 + i)
        gate.set()
        await store.close()

    asyncio.run(run())
    assert store.dropped == 3


def test_rows_go_in_batches_and_nothing_waiting_is_lost(tmp_path):
    """Rows reach the thread every WRITE_EVERY intervals, one transaction each; a read
    hands over what waits first (it sees the last interval), and so does stopping; an
    event raised before any row is kept too."""
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    log = EventLog(sinks=[store.event])
    link, ifaces = _parts()
    writes = []

    async def run():
        await store.open()
        db_write = store.db.write
        store.db.write = lambda now, rows, events: (writes.append((now, len(rows), len(events))),
                                                    db_write(now, rows, events))[1]
        log.emit("peer_up", T0, peer_id="p")
        evs = await store.event_range(T0 - 1, T0 + 1, 10, [])  # before any row
        for i in range(2 * store_mod.WRITE_EVERY + 2):
            _tick(store, link, ifaces, T0 + i)
        await asyncio.get_running_loop().run_in_executor(store._exec, lambda: None)
        before_read = list(writes)  # (the one thread has done what was handed over)
        now = T0 + 2 * store_mod.WRITE_EVERY + 2
        hist = await store.answer("L1", None, T0, now, 100, now, 1.0, lambda: None)
        for i in range(3):
            _tick(store, link, ifaces, now + i)
        await store.close()
        return evs, before_read, hist

    evs, before_read, hist = asyncio.run(run())
    n = store_mod.WRITE_EVERY
    assert [e["type"] for e in evs["events"]] == ["peer_up"]
    assert writes[0] == (None, 0, 1)  # the event alone: no rollup without a row's time
    # two full batches of 5 intervals x (1 link + 1 interface), then the read's 2
    assert before_read[1:] == [(T0 + n - 1, 2 * n, 0), (T0 + 2 * n - 1, 2 * n, 0)]
    assert len(hist["t"]) == 2 * n + 2  # the read saw the intervals still waiting
    assert writes[3:] == [(T0 + 2 * n + 1, 4, 0), (T0 + 2 * n + 4, 6, 0)]  # read, stop

    again = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))

    async def reread():
        await again.open()
        got = await again.answer("L1", None, T0, T0 + 100, 1000, T0 + 100, 1.0, lambda: None)
        await again.close()
        return got

    assert len(asyncio.run(reread())["t"]) == 2 * n + 5  # stopping wrote the last 3


def test_the_batch_that_finds_damage_goes_to_the_fresh_file(tmp_path, monkeypatch):
    """Damage found by a write sets the file aside; what that write carried (now up to
    WRITE_EVERY intervals, and the events raised in them) is still good data."""
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    log = EventLog(sinks=[store.event])
    link, ifaces = _parts()
    n = store_mod.WRITE_EVERY

    async def run():
        await store.open()
        bad = sqlite3.DatabaseError("database disk image is malformed")
        bad.sqlite_errorcode = 11  # SQLITE_CORRUPT

        def broken(*a):
            raise bad

        monkeypatch.setattr(store.db, "write", broken)
        log.emit("link_saturated", T0 + 1, link_id="L1")
        for i in range(n):  # one batch: its write finds the damage
            _tick(store, link, ifaces, T0 + i)
        now = T0 + n
        hist = await store.answer("L1", None, T0, now, 100, now, 1.0, lambda: None)
        evs = await store.event_range(T0, now, 10, [])
        await store.close()
        return hist, evs

    hist, evs = asyncio.run(run())
    assert len(list(tmp_path.glob("history.db.corrupt-*"))) == 1
    assert hist is not None and len(hist["t"]) == n
    assert [e["type"] for e in evs["events"]] == ["link_saturated"]


def test_the_database_keeps_a_days_cap_of_events_per_peer_and_says_what_it_dropped(
        tmp_path, caplog):
    """Issue 33 point 9: a peer that flaps or saturates all day is not 30 days of events.
    Over MAX_EVENTS_PER_PEER_PER_DAY a peer a UTC day, its events are not stored: counted,
    said once when the first is dropped and once with the day's count; other peers, this
    node's own events and the next day are kept."""
    from exotray.agent.base.limits import MAX_EVENTS_PER_PEER_PER_DAY as CAP

    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    events = EventLog(sinks=[store.event])
    day = T0 - T0 % 86400 + 3600  # 01:00 UTC

    async def run():
        await store.open()
        for i in range(CAP + 50):
            events.emit("peer_down" if i % 2 else "peer_up", day + i, peer_id="flappy",
                        peer_name="flappy")
        for i in range(10):
            events.emit("link_saturated", day + i, peer_id="calm", peer_name="calm")
            events.emit("link_degraded", day + i, interface="eth0")  # this node's own
        for i in range(3):  # the next day
            events.emit("peer_up", day + 86400 + i, peer_id="flappy", peer_name="flappy")
        got = await store.event_range(day - 1, day + 2 * 86400, 10000, [])
        await store.close()
        return got["events"]

    with caplog.at_level(logging.WARNING, logger="exotray.agent.history.store"):
        stored = asyncio.run(run())
    by = {}
    for e in stored:
        key = (e.get("peer_id") or "", int(event_time(e) >= day + 86400))  # (who, day)
        by[key] = by.get(key, 0) + 1
    assert by == {("flappy", 0): CAP, ("calm", 0): 10, ("", 0): 10, ("flappy", 1): 3}
    assert store.cap.dropped == 50 and events.counts["peer_up"] == (CAP + 50) // 2 + 3
    said = [r.getMessage() for r in caplog.records]
    assert len([m for m in said if "events of flappy today" in m]) == 1, said
    assert [m for m in said if "not stored on" in m] == [
        f"history: events not stored on {store_mod.iso(day)[:10]} (over {CAP} a peer): "
        "flappy 50"], said


def test_an_agent_restarted_the_same_day_goes_on_with_the_days_cap(tmp_path):
    """The day's cap counts what the database already holds of its newest day: a peer
    that flapped all morning does not get another day's worth after a restart; another
    peer, and the next day, are kept."""
    from exotray.agent.base.limits import MAX_EVENTS_PER_PEER_PER_DAY as CAP

    day = T0 - T0 % 86400 + 3600

    async def run(first: int, then: list[tuple[str, float]]) -> None:
        store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
        events = EventLog(sinks=[store.event])
        await store.open()
        for i in range(first):
            events.emit("peer_up", day + i, peer_id="flappy", peer_name="flappy")
        for who, t in then:
            events.emit("peer_down", t, peer_id=who, peer_name=who)
        await store.close()

    async def stored() -> dict:
        store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
        await store.open()
        got = await store.event_range(day - 1, day + 2 * 86400, 3 * CAP, [])
        await store.close()
        by: dict = {}
        for e in got["events"]:
            key = (e["peer_id"], int(event_time(e) >= day + 86400))
            by[key] = by.get(key, 0) + 1
        return by

    asyncio.run(run(CAP - 5, []))  # the morning: 5 short of the cap
    asyncio.run(run(0, [("flappy", day + CAP + i) for i in range(20)]
                    + [("calm", day + CAP)] + [("flappy", day + 86400 + 1)]))
    assert asyncio.run(stored()) == {("flappy", 0): CAP, ("calm", 0): 1, ("flappy", 1): 1}
