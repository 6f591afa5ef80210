"""capacity.json is bounded and a bad one does not stop the agent (issue 33 point 7): a
file nested past Python's limit or over the size cap is set aside with one log line and
the store starts empty; at most MAX_RECORDS measurements are kept, the newest."""

from __future__ import annotations

import json
import logging

from exotray.agent.hw import capstore
from exotray.agent.hw.capstore import FILE, MAX_RECORDS, CapacityStore


def test_a_deeply_nested_file_is_set_aside_not_a_traceback(tmp_path, caplog):
    (tmp_path / FILE).write_text("[" * 200_000)
    with caplog.at_level(logging.WARNING):
        store = CapacityStore(tmp_path)
    assert store.items == {}
    assert not (tmp_path / FILE).exists()
    (aside,) = tmp_path.glob(f"{FILE}.unreadable-*")
    assert aside.read_text() == "[" * 200_000  # kept, for the user to look at
    assert len(caplog.records) == 1 and "set aside" in caplog.records[0].getMessage()


def test_a_file_over_the_cap_is_not_read(tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(capstore, "MAX_FILE_BYTES", 1000)
    big = {f"en{i}": {"mbit": 1000.0, "at": 1.0 + i, "speed_mbit": None} for i in range(40)}
    (tmp_path / FILE).write_text(json.dumps(big))
    with caplog.at_level(logging.WARNING):
        assert CapacityStore(tmp_path).items == {}
    assert "over" in caplog.records[0].getMessage()


def test_only_the_newest_records_are_kept(tmp_path):
    many = {f"en{i}": {"mbit": 1000.0, "at": 1.0 + i, "speed_mbit": None}
            for i in range(MAX_RECORDS + 50)}
    (tmp_path / FILE).write_text(json.dumps(many))
    store = CapacityStore(tmp_path)
    assert len(store.items) == MAX_RECORDS and "en0" not in store.items
    store.put("new0", 500.0, 1e9, None)
    assert len(store.items) == MAX_RECORDS and "new0" in store.items
    assert len(json.loads((tmp_path / FILE).read_text())) == MAX_RECORDS


def test_only_interfaces_seen_in_the_last_30_days_are_kept(tmp_path):
    """Issue 33 point 7: capacity.json kept every interface name that ever was."""
    store = CapacityStore(tmp_path)
    t = 1_764_720_000.0
    store.put("en3", 23000.0, t, 40000.0)
    store.put("en9", 900.0, t, 1000.0)  # a USB adapter
    store.seen({"en3", "en9"}, t + 10, force=True)
    store.seen({"en3"}, t + 29 * 86400, force=True)  # en9 unplugged 29 days
    assert set(store.items) == {"en3", "en9"}
    store.seen({"en3"}, t + 31 * 86400, force=True)
    assert set(store.items) == {"en3"}  # en9 not seen for 31 days; en3 seen, kept
    store.flush()
    again = CapacityStore(tmp_path)
    assert set(again.items) == {"en3"} and again.items["en3"].seen == t + 31 * 86400


def test_a_measurement_belongs_to_its_adapter_not_only_to_its_name(tmp_path):
    """Issue 35 point 6: macOS numbers USB and Thunderbolt adapters enX by plug order, so
    "en5" may be another adapter tomorrow; its hardware address tells them apart."""
    from exotray.agent.hw.kinds import InterfaceClassifier
    from exotray.agent.hw.monitor import InterfaceMonitor
    from exotray.agent.hw.sampler import NicInfo
    from exotray.core.settings import Settings

    store = CapacityStore(tmp_path)
    store.put("en5", 2300.0, 1_764_720_000.0, 2500.0, "aa:bb:cc:00:00:01")
    assert store.valid("en5", 2500.0, "aa:bb:cc:00:00:01").mbit == 2300.0
    assert store.valid("en5", 2500.0, None).mbit == 2300.0  # (address unknown: kept)
    store.flush()
    assert CapacityStore(tmp_path).items["en5"].mac == "aa:bb:cc:00:00:01"

    m = InterfaceMonitor(Settings(), InterfaceClassifier(platform="linux",
                                                         sysfs_root="/nonexistent"),
                         1.0, state_dir=tmp_path)
    other = NicInfo("en5", True, 2500.0, ("10.213.5.1",), (("10.213.5.1", 24),),
                    mac="aa:bb:cc:00:00:02")
    m.update({"en5": other}, 0.0)
    assert m.ifaces["en5"].capacity.source != "measured"  # another adapter: not its own
    assert "en5" not in m.store.items
