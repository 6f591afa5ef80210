"""RDMA counters (agent/rdma.py): a /sys/class/infiniband tree under tests/fixtures
(layout: the kernel's Documentation/ABI/stable/sysfs-class-infiniband) and the macOS
commands through their seam."""

from __future__ import annotations

import shutil
from pathlib import Path

from exotray.agent import rdma

FIX = Path(__file__).resolve().parents[1] / "fixtures"
IB = FIX / "linux" / "infiniband"


def test_counters_are_words_of_four_bytes_per_net_device():
    got = rdma.read_linux_counters(IB)
    assert got == {
        "enp1s0f0": (4_000_000, 1_000_000),  # gid_attrs/ndevs/0
        "enp1s0f1": (160, 32),  # no gid_attrs: device/net/
        "xtebr0": (1200, 2800),  # soft-RoCE
    }  # broken0 (not a number) and qedr0 (no ports/) are skipped


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
    assert rates.rates["xtebr0"] == (0.0, 0.0)
    # a reset (device re-created) gives no rate for that reading, then rates again
    (c / "port_rcv_data").write_text("5\n")
    rates.update(14.0, rdma.read_linux_counters(tree))
    assert "enp1s0f0" not in rates.rates
    shutil.rmtree(tree / "rxe0")
    rates.update(16.0, rdma.read_linux_counters(tree))
    assert "xtebr0" not in rates.rates and "xtebr0" not in rates.last


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
