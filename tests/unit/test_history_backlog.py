"""What the history database cannot take waits for it (agent/history/backlog.py, issue 33
point 10): rows of a full disk's intervals are read back from the rings and written when
it takes writes again, rolled up as if on time; events raised meanwhile are kept and
stored; reads take what the database lacks from the rings; a database that could not be
opened is tried again. The disk is simulated (SQLite's own "full" error); sample times are
given, nothing sleeps. tests/integration/test_history_full_disk.py fills a real one."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from types import SimpleNamespace

from exotray.agent.base.throttle import Throttled
from exotray.agent.history import backlog as backlog_mod
from exotray.agent.history import db as historydb
from exotray.agent.history import store as store_mod
from exotray.agent.history.store import HistoryStore
from exotray.core.events import EventLog
from exotray.core.history import IFACE_COLUMNS, LINK_COLUMNS, Ring

T0 = 1_800_000_000.0  # a multiple of 60: buckets start at T0


def _parts(keep: int = 3600):
    link = SimpleNamespace(id="L1", history=Ring(LINK_COLUMNS, keep))
    eth = SimpleNamespace(vanished_at=None, history=Ring(IFACE_COLUMNS, keep))
    return link, {"eth0": eth}


async def _tick(store: HistoryStore, link, ifaces, t: float, drain: bool = True) -> None:
    """A sample, then the thread is let do what it was handed (as a second between
    samples would)."""
    link.history.append((t, 0.5, 0.4, 0.6, 100.0, 200.0, None, "up", 0.3, 0.2, 80.0, None,
                           0.0))
    for st in ifaces.values():
        st.history.append((t, 10.0, 20.0, "up"))
    store.collect(t, [link], ifaces)
    if drain and store._exec is not None:
        await asyncio.get_running_loop().run_in_executor(store._exec, lambda: None)


class Disk:
    """The database's writes fail as on a full disk while `full`."""

    def __init__(self, store: HistoryStore) -> None:
        self.full = False
        self.failed = 0
        write = store.db.write

        def maybe(now, rows, events):
            if self.full:
                self.failed += 1
                e = sqlite3.OperationalError("database or disk is full")
                e.sqlite_errorcode = 13  # SQLITE_FULL
                raise e
            return write(now, rows, events)

        store.db.write = maybe


def _stored(tmp_path):
    """(raw link times, {10 s bucket: n}, event types) of the file, read afresh."""
    db = historydb.HistoryDB(tmp_path / store_mod.FILE, 30 * 86400.0)
    try:
        raw = [r[0] / 1000 for r in db.conn.execute("SELECT t FROM link_raw ORDER BY t")]
        tens = dict(db.conn.execute("SELECT t, n FROM link_10s"))
        types = [r[0] for r in db.conn.execute("SELECT type FROM events ORDER BY seq")]
    finally:
        db.close()
    return raw, {t / 1000: n for t, n in tens.items()}, types


def _memory(link, since):
    return lambda: {"link": link.id, **link.history.since(since)}


def test_a_full_disk_loses_no_rows_or_events_and_reads_come_from_the_rings(tmp_path, caplog):
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    log = EventLog(sinks=[store.event])
    link, ifaces = _parts()

    async def run():
        await store.open()
        disk = Disk(store)
        for i in range(20):
            await _tick(store, link, ifaces, T0 + i)
        disk.full = True
        for i in range(20, 80):
            if i == 30:
                log.emit("peer_down", T0 + i, peer_id="p")
            await _tick(store, link, ifaces, T0 + i)
        now = T0 + 80
        during = await store.answer("L1", None, T0, now, 2000, now, 1.0, _memory(link, T0))
        events = await store.event_range(T0, now, 10, [])
        assert disk.failed >= 2
        disk.full = False
        for i in range(80, 95):
            await _tick(store, link, ifaces, T0 + i)
        now = T0 + 95
        after = await store.answer("L1", None, T0, now, 2000, now, 1.0, lambda: None)
        await store.close()
        return during, events, after

    with caplog.at_level(logging.INFO):
        during, events, after = asyncio.run(run())
    # (c) during the outage: the database's 20 rows, then the ring's 60, every sample
    assert during["tier"] == "raw" and during["t"] == [T0 + i for i in range(80)]
    assert during["rtt_ms"][-1] == 0.5 and during["rtt_ms_max"][-1] == 0.5
    assert [e["type"] for e in events["events"]] == ["peer_down"]  # waiting, still served
    # (a), (b) after: every row and the event, once, in the file; 10 s buckets complete
    raw, tens, types = _stored(tmp_path)
    assert raw == [T0 + i for i in range(95)] and after["t"] == raw
    assert {t: n for t, n in tens.items() if t < T0 + 90} == {
        T0 + 10 * k: 10 for k in range(9)}
    assert types == ["peer_down"]
    said = caplog.text
    assert said.count("cannot write history database") == 1  # then throttled
    assert "takes writes again" in said and "has caught up" in said


def test_catching_up_goes_in_pieces_and_what_left_the_ring_is_a_gap(tmp_path, monkeypatch,
                                                                     caplog):
    """Rows go back in CATCH_UP_ROWS a batch (a read in between sees them all, from the
    file or the ring); rows older than the ring's span are not kept: a gap, said once."""
    monkeypatch.setattr(backlog_mod, "CATCH_UP_ROWS", 10)
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    link, ifaces = _parts(keep=40)  # the rings keep 40 samples
    batches = []

    async def run():
        await store.open()
        disk = Disk(store)
        write = store.db.write
        store.db.write = lambda now, rows, ev: (batches.append(len(rows)), write(now, rows, ev))[1]
        for i in range(10):
            await _tick(store, link, ifaces, T0 + i)
        disk.full = True
        for i in range(10, 70):  # 60 s full: its first 20 s leave the rings
            await _tick(store, link, ifaces, T0 + i)
        disk.full = False
        reads = []
        for i in range(70, 90):
            await _tick(store, link, ifaces, T0 + i)
            now = T0 + i + 1
            reads.append(await store.answer("L1", None, T0 + 20, now, 2000, now, 1.0,
                                            _memory(link, T0 + 20)))
        await store.close()
        return reads

    with caplog.at_level(logging.INFO):
        reads = asyncio.run(run())
    raw, _, _ = _stored(tmp_path)
    kept = raw[10]  # the oldest row the ring still had when the disk took writes again
    assert T0 + 30 < kept < T0 + 70 and raw == [T0 + i for i in range(10)] + [
        kept + k for k in range(int(T0 + 90 - kept))]
    for i, got in enumerate(reads):  # every read, mid-way or not: each second once
        first = got["t"][0]
        assert first <= kept and got["t"] == [first + k for k in range(int(T0 + 71 + i - first))]
    assert max(batches) <= 10 + 2  # a piece read back, with the batch's own rows
    assert caplog.text.count("no longer in memory") == 1
    assert store.backlog.lost_s == kept - (T0 + 10) and store.backlog.since is None


def test_a_database_that_cannot_be_opened_is_tried_again_and_gets_what_was_kept(
        tmp_path, monkeypatch, caplog):
    """(d) the disk is full when the agent starts: it runs on its rings, tries the file
    again every REOPEN_EVERY_S of samples (quietly), and once it opens, writes the rows and
    events since start; the event numbering goes on from the file's."""
    real = historydb.open_or_replace
    earlier = real(tmp_path / store_mod.FILE, 30 * 86400.0)  # a previous run's events
    earlier.write(None, [], [{"seq": 41, "at": "2027-01-15T07:00:00.000Z", "type": "peer_up"}])
    earlier.close()
    full = {"on": True, "tries": 0}

    def open_(path, retention_s):
        full["tries"] += 1
        if full["on"]:
            raise sqlite3.OperationalError("database or disk is full")
        return real(path, retention_s)

    monkeypatch.setattr(historydb, "open_or_replace", open_)
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    log = EventLog(sinks=[store.event])
    store.on_open = log.resume
    link, ifaces = _parts()
    reopen = store_mod.REOPEN_EVERY_S

    async def run():
        seq = await store.open()
        log.resume(seq)
        log.emit("peer_up", T0 + 1, peer_id="p")
        for i in range(int(2.5 * reopen)):  # two tries, both failing
            await _tick(store, link, ifaces, T0 + i)
            await store.answer("L1", None, T0, T0 + i, 100, T0 + i, 1.0, lambda: None)
        tries = full["tries"]
        full["on"] = False
        end = int(4 * reopen)
        for i in range(int(2.5 * reopen), end):
            await _tick(store, link, ifaces, T0 + i)
            await store.answer("L1", None, T0, T0 + i, 100, T0 + i, 1.0, lambda: None)
        log.emit("peer_down", T0 + end, peer_id="p")
        await store.close()
        return seq, tries, end

    with caplog.at_level(logging.DEBUG):
        seq, tries, end = asyncio.run(run())
    assert seq == 0 and tries == 3  # at start, then every REOPEN_EVERY_S
    raw, _, types = _stored(tmp_path)
    assert raw == [T0 + i for i in range(end)]  # from the agent's first sample
    assert types == ["peer_up", "peer_up", "peer_down"]
    assert log.last_seq == 42  # numbered on from the file's once it opened
    # the day's cap goes on from what the file holds of its day, once it opened
    assert store.cap.kept.get("") == 1
    assert caplog.text.count("cannot use history database") == 1
    assert caplog.text.count("still cannot be opened") == 2


def test_a_stuck_thread_keeps_what_waits_and_writes_it_once_free(tmp_path, monkeypatch):
    """Batches not handed over to a stuck thread leave their rows to the rings and their
    events waiting, both written once the thread is back."""
    import threading

    monkeypatch.setattr(store_mod, "MAX_BACKLOG", 2)
    monkeypatch.setattr(store_mod, "WRITE_EVERY", 1)
    store = HistoryStore(tmp_path, 30, Throttled(lambda: 0.0))
    log = EventLog(sinks=[store.event])
    link, ifaces = _parts()
    gate = threading.Event()

    async def run():
        await store.open()
        store._exec.submit(gate.wait)  # the disk hangs
        for i in range(6):
            log.emit("peer_up" if i % 2 else "peer_down", T0 + i, peer_id="p")
            await _tick(store, link, ifaces, T0 + i, drain=False)
        gate.set()
        await asyncio.get_running_loop().run_in_executor(store._exec, lambda: None)
        for i in range(6, 9):
            await _tick(store, link, ifaces, T0 + i)
        await store.close()

    asyncio.run(run())
    raw, _, types = _stored(tmp_path)
    assert store.dropped == 4
    assert raw == [T0 + i for i in range(9)] and len(types) == 6
