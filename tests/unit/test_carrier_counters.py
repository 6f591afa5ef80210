"""Between full ticks the agent reads only its links' carriers' byte counters, from sysfs
through files kept open (sampler.SysfsCounters, InterfaceMonitor.watch / read_watched):
they are the kernel's counters of this namespace, a partial reading leaves the other
interfaces' rates alone, and where sysfs is another namespace's (its interface list is
not ours, or its numbers run behind psutil's) every tick reads psutil's again.

Real sysfs and psutil on this machine's loopback (traffic sent over it); a small sysfs
tree in tmp_path mirrors this namespace's interfaces where a test needs numbers it
chooses. No clock: times are passed in."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import psutil
import pytest

from exotray.agent import monitor as M
from exotray.agent import sampler
from exotray.agent.hardware import Hardware
from exotray.agent.hwread import NoReader
from exotray.agent.interfaces import InterfaceClassifier
from exotray.agent.monitor import InterfaceMonitor
from exotray.core.settings import Settings
from exotray.core.stats import RateMeter

linux_sysfs = pytest.mark.skipif(not Path(sampler.SYS_NET, "lo").is_dir(),
                                 reason="needs Linux's /sys/class/net with lo")


def _lo_traffic(n: int = 50, size: int = 1000) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx, \
            socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as tx:
        rx.bind(("127.0.0.1", 0))
        for _ in range(n):
            tx.sendto(b"x" * size, rx.getsockname())


def _psutil_lo() -> tuple[int, int]:
    c = psutil.net_io_counters(pernic=True, nowrap=False)["lo"]
    return c.bytes_recv, c.bytes_sent


def _mirror(root: Path, values: dict[str, tuple[int, int]] | None = None) -> Path:
    """A sysfs tree listing this namespace's interfaces and indexes, with these counters
    (0 where not given)."""
    for index, name in socket.if_nameindex():
        d = root / name
        (d / "statistics").mkdir(parents=True)
        (d / "ifindex").write_text(f"{index}\n")
        rx, tx = (values or {}).get(name, (0, 0))
        (d / "statistics" / "rx_bytes").write_text(f"{rx}\n")
        (d / "statistics" / "tx_bytes").write_text(f"{tx}\n")
    return root


def _set(root: Path, name: str, rx: int, tx: int) -> None:
    # (written in place: the reader keeps its files open, as it does sysfs's)
    for f, v in (("rx_bytes", rx), ("tx_bytes", tx)):
        with open(root / name / "statistics" / f, "r+b") as fh:
            fh.truncate(0)
            fh.write(f"{v}\n".encode())


@linux_sysfs
def test_sysfs_counters_are_the_kernels_of_this_namespace():
    reader = sampler.SysfsCounters()
    try:
        assert reader.open(frozenset({"lo"}))
        assert reader.names == {"lo"}
        _lo_traffic()
        before = _psutil_lo()
        _lo_traffic()
        got = reader.read()["lo"]
        _lo_traffic()
        after = _psutil_lo()
        assert before[0] < got[0] < after[0] and before[1] < got[1] < after[1]
    finally:
        reader.close()
    assert reader.names == frozenset()


@linux_sysfs
def test_an_interface_that_is_not_here_opens_nothing():
    reader = sampler.SysfsCounters()
    assert not reader.open(frozenset({"lo", "xt-no-such0"}))
    assert reader.names == frozenset() and reader.read() == {}


def test_another_namespaces_sysfs_is_not_used(tmp_path):
    root = _mirror(tmp_path / "net")
    (root / "xtother0" / "statistics").mkdir(parents=True)  # not an interface of ours
    reader = sampler.SysfsCounters(str(root))
    assert not reader.open(frozenset({"lo"}))
    assert reader.names == frozenset()


def test_an_interface_whose_index_differs_is_not_used(tmp_path):
    root = _mirror(tmp_path / "net")
    (root / "lo" / "ifindex").write_text("4242\n")
    assert not sampler.SysfsCounters(str(root)).open(frozenset({"lo"}))


def test_an_unreadable_counter_is_left_out_and_closed(tmp_path):
    root = _mirror(tmp_path / "net", {"lo": (10, 20)})
    reader = sampler.SysfsCounters(str(root))
    assert reader.open(frozenset({"lo"}))
    assert reader.read() == {"lo": (10, 20)}
    with open(root / "lo" / "statistics" / "tx_bytes", "r+b") as fh:
        fh.truncate(0)
        fh.write(b"not a number\n")
    assert reader.read() == {}
    assert reader.names == frozenset()


def test_a_partial_reading_leaves_the_other_interfaces_alone():
    meter = RateMeter(window_s=1.0)
    meter.update(0.0, {"lo": (0, 0), "eth0": (0, 0)})
    rates = meter.update(1.0, {"lo": (1000, 0), "eth0": (5000, 0)})
    assert rates["eth0"].rx_bytes_per_s == 5000
    rates = meter.update(1.25, {"lo": (1250, 0)}, partial=True)
    assert set(rates) == {"lo"}
    rates = meter.update(2.0, {"lo": (2000, 0), "eth0": (10000, 0)})
    assert rates["eth0"].rx_bytes_per_s == pytest.approx(5000)  # nothing vanished
    assert rates["lo"].rx_bytes_per_s == pytest.approx(1000)
    assert set(meter.update(3.0, {"lo": (3000, 0)})) == {"lo"}  # a full one: eth0 gone


def _monitor(tmp_path: Path, root: Path) -> InterfaceMonitor:
    m = InterfaceMonitor(Settings(), InterfaceClassifier(platform="linux",
                                                         sysfs_root=tmp_path / "none"),
                         1.0, Hardware(NoReader()), tmp_path / "state")
    m._quick = sampler.SysfsCounters(str(root))
    return m


def test_the_monitor_reads_the_watched_alone_and_keeps_the_rest(tmp_path, monkeypatch):
    root = _mirror(tmp_path / "net", {"lo": (1000, 1000)})
    full = {name: (0, 0) for _, name in socket.if_nameindex()} | {"lo": (500, 500)}
    monkeypatch.setattr(sampler, "read_counters", lambda: dict(full))
    m = _monitor(tmp_path, root)
    assert m.read_watched() is None  # nothing watched yet: every tick reads all
    counters, _ = m.read(False)
    assert counters == full and not m.partial
    m.watch(["lo", None])
    assert m.watched == {"lo"}
    assert m.read_watched() == {"lo": (1000, 1000)} and m.partial
    assert m.raw_counters == full | {"lo": (1000, 1000)}  # (/metrics: the latest of each)
    m.watch([])  # no links: between full ticks nothing is read
    assert m.watched == frozenset() and m.read_watched() == {}


def test_counters_running_behind_psutil_end_the_sysfs_reading(tmp_path, monkeypatch, caplog):
    root = _mirror(tmp_path / "net", {"lo": (1000, 1000)})
    full = {"lo": (5000, 5000)}  # psutil's: sysfs is someone else's, behind ours
    monkeypatch.setattr(sampler, "read_counters", lambda: dict(full))
    m = _monitor(tmp_path, root)
    m.watch(["lo"])
    caplog.set_level(logging.INFO, logger="exotray.agent.monitor")
    for i in range(M.DISAGREE_MAX):  # each sysfs reading behind the psutil one before
        m._now = float(i)
        m.read(False)
        m.read_watched()
    assert m.watched is None and m._quick is None and m.read_watched() is None
    assert "went back" in caplog.text and "disagree again" in caplog.text
    m.watch(["lo"])  # for good: psutil's at every tick
    assert m.watched is None


def test_one_interface_recreated_opens_the_files_again(tmp_path, monkeypatch, caplog):
    root = _mirror(tmp_path / "net", {"lo": (1000, 1000)})
    full = {"lo": (900, 900)}
    monkeypatch.setattr(sampler, "read_counters", lambda: dict(full))
    m = _monitor(tmp_path, root)
    m.watch(["lo"])
    m.read(False)
    assert m.read_watched() == {"lo": (1000, 1000)}
    full["lo"] = (10, 10)  # counting again from zero
    _set(root, "lo", 20, 20)
    caplog.set_level(logging.INFO, logger="exotray.agent.monitor")
    m._now = 100.0
    m.read(False)
    assert "went back" in caplog.text and m.watched == {"lo"}
    assert m.read_watched() == {"lo": (20, 20)}
