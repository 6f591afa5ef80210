"""Between full ticks the agent reads only its links' carriers' byte counters, from sysfs
through files kept open (sampler.SysfsCounters, carriers.CarrierReader, InterfaceMonitor
.watch / read_watched):
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

from exotray.agent.hw import carriers as C
from exotray.agent.hw import sampler
from exotray.agent.hw.hardware import Hardware
from exotray.agent.hw.kinds import InterfaceClassifier
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.hw.read import NoReader
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
        for _ in range(2):  # (each read of a kept file is a fresh number)
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


def test_a_file_in_sysfs_net_is_not_an_interface(tmp_path):
    root = _mirror(tmp_path / "net", {"lo": (5, 6)})
    (root / "bonding_masters").write_text("\n")  # (the bonding driver's)
    reader = sampler.SysfsCounters(str(root))
    assert reader.open(frozenset({"lo"}))
    assert reader.read() == {"lo": (5, 6)}
    reader.close()


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
    m.carriers = C.CarrierReader(sampler.SysfsCounters(str(root)))
    return m


def test_the_monitor_reads_the_watched_alone_and_keeps_the_rest(tmp_path, monkeypatch):
    root = _mirror(tmp_path / "net", {"lo": (1000, 1000)})
    full = {name: (0, 0) for _, name in socket.if_nameindex()} | {"lo": (500, 500)}
    monkeypatch.setattr(sampler, "read_counters", lambda: dict(full))
    m = _monitor(tmp_path, root)
    assert m.read_watched() is None  # nothing watched yet: every tick reads all
    counters, _ = m.read(False)
    assert counters == full
    m.watch(["lo", None])
    assert m.carriers.watched == {"lo"}
    assert m.read_watched() == {"lo": (1000, 1000)}
    assert m.raw_counters == full | {"lo": (1000, 1000)}  # (/metrics: the latest of each)
    m.watch([])  # no links: between full ticks nothing is read
    assert m.carriers.watched == frozenset() and m.read_watched() == {}


def test_a_watched_interface_that_cannot_be_read_is_opened_again(tmp_path, monkeypatch):
    root = _mirror(tmp_path / "net", {"lo": (1000, 1000)})
    monkeypatch.setattr(sampler, "read_counters", lambda: {"lo": (900, 900)})
    m = _monitor(tmp_path, root)
    m.watch(["lo"])
    with open(root / "lo" / "statistics" / "rx_bytes", "r+b") as fh:
        fh.truncate(0)
        fh.write(b"gone\n")
    assert m.read_watched() is None  # (this tick reads psutil)
    assert m.carriers.watched is None
    _set(root, "lo", 1100, 1100)
    m.watch(["lo"])  # the next full tick
    assert m.read_watched() == {"lo": (1100, 1100)}


def test_counters_running_behind_psutil_end_the_sysfs_reading(tmp_path, monkeypatch, caplog):
    root = _mirror(tmp_path / "net", {"lo": (1000, 1000)})
    full = {"lo": (5000, 5000)}  # psutil's: sysfs is someone else's, behind ours
    monkeypatch.setattr(sampler, "read_counters", lambda: dict(full))
    m = _monitor(tmp_path, root)
    m.watch(["lo"])
    caplog.set_level(logging.INFO, logger="exotray.agent.hw.monitor")
    for i in range(C.DISAGREE_MAX):  # each sysfs reading behind the psutil one before
        m._now = float(i)
        m.read(False)
        assert m.read_watched() is None  # (not used: that tick reads psutil's)
    assert m.carriers.watched is None and m.carriers.sysfs is None
    assert "went back" in caplog.text and "disagree again" in caplog.text
    m.watch(["lo"])  # for good: psutil's at every tick
    assert m.carriers.watched is None and m.read_watched() is None


def test_a_32_bit_wrap_is_not_a_disagreement(tmp_path, monkeypatch):
    root = _mirror(tmp_path / "net", {"lo": (100, 100)})
    monkeypatch.setattr(sampler, "read_counters", lambda: {"lo": (2**32 - 100, 2**32 - 50)})
    m = _monitor(tmp_path, root)
    m.watch(["lo"])
    m.read(False)
    assert m.read_watched() == {"lo": (100, 100)}
    assert m.carriers.watched == {"lo"}


def test_one_interface_recreated_opens_the_files_again(tmp_path, monkeypatch, caplog):
    root = _mirror(tmp_path / "net", {"lo": (10**10, 10**10)})
    full = {"lo": (9 * 10**9, 9 * 10**9)}
    monkeypatch.setattr(sampler, "read_counters", lambda: dict(full))
    m = _monitor(tmp_path, root)
    m.watch(["lo"])
    m.read(False)
    assert m.read_watched() == {"lo": (10**10, 10**10)}
    full["lo"] = (10, 10)  # counting again from zero, in new files
    for f, v in (("rx_bytes", 20), ("tx_bytes", 20)):
        new = root / "lo" / "statistics" / f"{f}.new"
        new.write_text(f"{v}\n")
        new.replace(root / "lo" / "statistics" / f)  # (the kept files still say 10**10)
    caplog.set_level(logging.INFO, logger="exotray.agent.hw.monitor")
    m._now = 100.0
    m.read(False)
    assert "went back" in caplog.text and m.carriers.watched == {"lo"}
    assert m.read_watched() == {"lo": (20, 20)}  # from the files opened again
