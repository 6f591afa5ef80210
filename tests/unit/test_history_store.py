"""The agent's history store (agent/store.py): the rings' newest rows and the events go
to the database through its one thread; damage found while running is set aside and a
fresh file taken; reads wait for what is queued."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from types import SimpleNamespace

from exotray.agent import store as store_mod
from exotray.agent.store import HistoryStore
from exotray.agent.throttle import Throttled
from exotray.core.events import EventLog
from exotray.core.history import IFACE_COLUMNS, LINK_COLUMNS, Ring

T0 = 1_800_000_000.0


def _parts():
    link = SimpleNamespace(id="L1", history=Ring(LINK_COLUMNS, 100))
    eth = SimpleNamespace(vanished_at=None, history=Ring(IFACE_COLUMNS, 100))
    gone = SimpleNamespace(vanished_at=5.0, history=Ring(IFACE_COLUMNS, 100))
    return link, {"eth0": eth, "old0": gone}


def _tick(store: HistoryStore, link, ifaces, t: float) -> None:
    link.history.append((t, 0.5, 0.4, 0.6, 100.0, 200.0, None, "up", 0.3, 0.2))
    for st in ifaces.values():
        st.history.append((t, 10.0, 20.0))
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
    assert hist["t"] == [T0 + 2]  # the fresh file, written on
    assert len(list(tmp_path.glob("history.db.corrupt-*"))) == 1
    assert "went bad" in caplog.text


def test_a_stuck_thread_drops_batches_instead_of_queueing_forever(tmp_path, monkeypatch):
    monkeypatch.setattr(store_mod, "MAX_BACKLOG", 2)
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
