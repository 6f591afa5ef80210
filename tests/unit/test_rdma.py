"""RDMA counters (agent/hw/rdma.py): recorded /sys/class/infiniband trees (Prometheus
procfs' and node_exporter's, tests/fixtures/linux/README.md), a synthetic tree for the net
device mapping (layout: the kernel's Documentation/ABI/stable/sysfs-class-infiniband),
and the macOS commands through their seam."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from ttar import untar

from exotray.agent.hw import rdma

FIX = Path(__file__).resolve().parents[1] / "fixtures"
IB = FIX / "linux" / "infiniband"
PROCFS = FIX / "linux" / "infiniband_procfs.ttar"
NODE_EXPORTER = FIX / "linux" / "infiniband_node_exporter.ttar"


@pytest.fixture
def procfs_tree(tmp_path):
    return untar(PROCFS, tmp_path / "procfs")


def test_recorded_procfs_tree_counts_words_of_four_bytes(procfs_tree):
    ports = {(p.device, p.port): p for p in rdma.read_ports(procfs_tree)}
    assert set(ports) == {("hfi1_0", "1"), ("mlx4_0", "1"), ("mlx4_0", "2"), ("mlx5_0", "1")}
    # the recorded values, times 4 ("divided by 4 (lanes)")
    assert (ports["hfi1_0", "1"].rx_bytes, ports["hfi1_0", "1"].tx_bytes) == (
        345091702026 * 4, 273558326543 * 4)
    assert (ports["mlx4_0", "2"].rx_bytes, ports["mlx4_0", "2"].tx_bytes) == (
        2460436784 * 4, 26540356890 * 4)
    assert (ports["mlx5_0", "1"].rx_bytes, ports["mlx5_0", "1"].tx_bytes) == (
        18126345378 * 4, 2880761508848 * 4)
    assert {p.source for p in ports.values()} == {"counters"}
    # these recordings keep no net device (procfs does not read gid_attrs or device/net):
    # nothing can be said of which interface carries them, so nothing is added anywhere
    assert {p.net for p in ports.values()} == {None}
    assert rdma.read_linux_counters(procfs_tree) == {}


def test_recorded_tree_with_its_ipoib_net_devices(procfs_tree):
    """The one thing added to the recording: the PCI devices' IPoIB interfaces (a
    two-port HCA has two, told apart by `dev_port`, 0-based)."""
    for dev, nets in {"mlx4_0": {"ib0": "0", "ib1": "1"}, "hfi1_0": {"ib2": "0"}}.items():
        for net, dev_port in nets.items():
            d = procfs_tree / dev / "device" / "net" / net
            d.mkdir(parents=True)
            (d / "dev_port").write_text(dev_port + "\n")
    assert rdma.read_linux_counters(procfs_tree) == {
        "ib0": (2221223609 * 4, 26509113295 * 4),
        "ib1": (2460436784 * 4, 26540356890 * 4),
        "ib2": (345091702026 * 4, 273558326543 * 4),
    }  # mlx5_0 has no net device: left out
    # two net devices that do not say their port: neither is guessed
    (procfs_tree / "mlx4_0" / "device" / "net" / "ib1" / "dev_port").unlink()
    (procfs_tree / "mlx4_0" / "device" / "net" / "ib0" / "dev_port").unlink()
    assert set(rdma.read_linux_counters(procfs_tree)) == {"ib2"}


def test_recorded_counters_move_reset_saturate_and_go_missing(procfs_tree):
    counters = procfs_tree / "hfi1_0" / "ports" / "1" / "counters"
    (procfs_tree / "hfi1_0" / "device" / "net" / "ib0").mkdir(parents=True)
    rates = rdma.RdmaRates()
    rates.update(100.0, rdma.read_linux_counters(procfs_tree))
    assert rates.rates == {}
    # 2 s later: 500 M words (2 GB) more sent, 25 M words (100 MB) more received
    (counters / "port_xmit_data").write_text(f"{273558326543 + 500_000_000}\n")
    (counters / "port_rcv_data").write_text(f"{345091702026 + 25_000_000}\n")
    rates.update(102.0, rdma.read_linux_counters(procfs_tree))
    assert rates.rates == {"ib0": (50e6, 1e9)}
    # a reset (driver reloaded, `perfquery -R`): no rate for that reading, then rates again
    (counters / "port_xmit_data").write_text("1000\n")
    rates.update(104.0, rdma.read_linux_counters(procfs_tree))
    assert rates.rates == {}
    (counters / "port_xmit_data").write_text("251000\n")
    rates.update(106.0, rdma.read_linux_counters(procfs_tree))
    assert rates.rates == {"ib0": (0.0, 500_000.0)}
    # a 32-bit counter stuck at all ones (the spec's saturation) says nothing any more
    (counters / "port_xmit_data").write_text(f"{2**32 - 1}\n")
    assert rdma.read_ports(procfs_tree)[0].source == "saturated 32-bit counter"
    assert rdma.read_linux_counters(procfs_tree) == {}
    rates.update(108.0, rdma.read_linux_counters(procfs_tree))
    assert rates.rates == {} and rates.last == {}
    # a missing counter file: unknown, never zero
    (counters / "port_xmit_data").unlink()
    assert rdma.read_ports(procfs_tree)[0].source == "missing"
    assert rdma.read_linux_counters(procfs_tree) == {}


def test_recorded_node_exporter_tree_no_pma_and_legacy_64_bit_counters(tmp_path):
    tree = untar(NODE_EXPORTER, tmp_path / "ne")
    ports = {(p.device, p.port): p for p in rdma.read_ports(tree)}
    # an Intel X722 iWARP device: the kernel answers "N/A (no PMA)", which is unknown
    iw = ports["i40iw0", "1"]
    assert (iw.rx_bytes, iw.tx_bytes, iw.source) == (None, None, "N/A (no PMA)")
    # kernels before 4.5: mlx4's 64-bit counters in counters_ext win over the 32-bit ones
    # (port 2's 32-bit counters read 0 in this recording, its 64-bit ones do not)
    p2 = ports["mlx4_0", "2"]
    assert (p2.rx_bytes, p2.tx_bytes, p2.source) == (4631917 * 4, 3733440 * 4, "counters_ext")
    (tree / "i40iw0" / "device" / "net" / "eno1").mkdir(parents=True)
    assert rdma.read_linux_counters(tree) == {}  # eno1's RDMA traffic is unknown


def test_net_devices_of_the_synthetic_tree():
    got = rdma.read_linux_counters(IB)
    assert got == {
        "enp1s0f0": (4_000_000, 1_000_000),  # gid_attrs/ndevs/0
        "enp1s0f1": (160, 32),  # no gid_attrs: device/net/
    }  # broken0 (not a number), rxe0 (soft-RoCE: no counters/, its traffic is IP
    # traffic of xtebr0 already) and qedr0 (no ports/) are left out


def test_no_infiniband_class_is_no_rdma(tmp_path):
    assert rdma.read_linux_counters(tmp_path / "nothing") == {}


def test_rates_from_two_readings(tmp_path):
    tree = tmp_path / "ib"
    shutil.copytree(IB, tree)
    rates = rdma.RdmaRates()
    rates.update(10.0, rdma.read_linux_counters(tree))
    assert rates.rates == {}
    c = tree / "mlx5_0" / "ports" / "1" / "counters"
    (c / "port_rcv_data").write_text(str(1_000_000 + 250_000 * 2) + "\n")  # +2 MB in 2 s
    (c / "port_xmit_data").write_text("250000\n")
    rates.update(12.0, rdma.read_linux_counters(tree))
    assert rates.rates["enp1s0f0"] == (1_000_000.0, 0.0)
    assert rates.rates["enp1s0f1"] == (0.0, 0.0)
    # a reset (device re-created) gives no rate for that reading, then rates again
    (c / "port_rcv_data").write_text("5\n")
    rates.update(14.0, rdma.read_linux_counters(tree))
    assert "enp1s0f0" not in rates.rates
    shutil.rmtree(tree / "mlx5_1")
    rates.update(16.0, rdma.read_linux_counters(tree))
    assert "enp1s0f1" not in rates.rates and "enp1s0f1" not in rates.last


def test_macos_status_through_the_seam():
    ctl = (FIX / "macos" / "rdma_ctl_status_enabled_SYNTHETIC.txt").read_text()
    info = (FIX / "macos" / "ibv_devinfo_tb5_SYNTHETIC.txt").read_text()
    calls = []

    def run(cmd):
        calls.append(cmd)
        return {"rdma_ctl": ctl, "ibv_devinfo": info}[cmd[0]]

    assert rdma.macos_status(run) == {
        "enabled": True, "ports": {"rdma_en2": "PORT_ACTIVE", "rdma_en3": "PORT_DOWN"}}
    assert calls == [["rdma_ctl", "status"], ["ibv_devinfo"]]


def test_macos_without_rdma_ctl_or_devices():
    assert rdma.macos_status(lambda cmd: None) is None  # an older macOS: no rdma_ctl
    assert rdma.macos_status(
        lambda cmd: "RDMA is disabled\n" if cmd[0] == "rdma_ctl" else None) == {
        "enabled": False, "ports": {}}
    assert rdma.parse_rdma_ctl("something else") is None
    assert rdma.parse_ibv_devinfo("No IB devices found\n") == {}
    two_ports = "hca_id: x\n port: 1\n  state: PORT_ACTIVE (4)\n port: 2\n  state: PORT_INIT (2)\n"
    assert rdma.parse_ibv_devinfo(two_ports) == {"x": "PORT_ACTIVE", "x/2": "PORT_INIT"}


def test_recorded_macos_ibv_devinfo():
    """Two real `ibv_devinfo` outputs of Macs (tests/fixtures/macos/README.md)."""
    mbp = (FIX / "macos" / "ibv_devinfo_macbookpro_m5max_macos27.txt").read_text()
    assert rdma.parse_ibv_devinfo(mbp) == {
        "rdma_en1": "PORT_DOWN", "rdma_en6": "PORT_DOWN", "rdma_en2": "PORT_DOWN"}
    mini = (FIX / "macos" / "ibv_devinfo_macmini_m4pro_tn3205.txt").read_text()
    assert rdma.parse_ibv_devinfo(mini) == {
        "rdma_en2": "PORT_ACTIVE", "rdma_en3": "PORT_ACTIVE", "rdma_en4": "PORT_ACTIVE"}
    # through the seam, with rdma_ctl's bare word (no recording: see the README)
    outputs = {"rdma_ctl": "enabled\n", "ibv_devinfo": mbp}
    assert rdma.macos_status(lambda cmd: outputs[cmd[0]]) == {
        "enabled": True, "ports": {"rdma_en1": "PORT_DOWN", "rdma_en6": "PORT_DOWN",
                                   "rdma_en2": "PORT_DOWN"}}
    assert rdma.parse_rdma_ctl("disabled\n") is False
