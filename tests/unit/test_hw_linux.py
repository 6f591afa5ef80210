"""Linux link readers (exotray.agent.hw.linux) on recorded netlink messages and fake sysfs."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from exotray.agent.hw import linux as hw_linux
from exotray.agent.hw.linux import (
    FDB_ENTRY,
    bond_info,
    bridge_member_for_peer,
    bridge_members,
    bridge_ports,
    link_speed_mbit,
    member_for_mac,
    parse_brforward,
    parse_proc_arp,
    parse_tb_speed,
    read_wifi_tx_mbit,
    station_tx_mbit,
    thunderbolt_link,
    wifi_tx_mbit,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "linux"
SYNTHETIC = json.loads((FIXTURES / "nl80211" / "stations_synthetic.json").read_text())


def _recorded(name: str) -> list:
    """Messages of a recorded nl80211 dump, decoded by pyroute2's own marshal: the objects
    IW().get_stations() yields."""
    common = pytest.importorskip("pyroute2.common")
    nl80211 = pytest.importorskip("pyroute2.netlink.nl80211")
    data = common.load_dump((FIXTURES / "nl80211" / name).read_text())
    return list(nl80211.MarshalNl80211().parse(data))


# -- Wi-Fi --------------------------------------------------------------------------------


def test_recorded_station_dump_gives_its_tx_rate() -> None:
    """pyroute2's recording of an 802.11n station: MCS 15, BITRATE32 1300 → 130.0 Mbit/s."""
    msgs = _recorded("iw_station_rsp.dump")
    assert [m.get_attr("NL80211_ATTR_MAC") for m in msgs] == ["ee:1d:4f:83:1a:5b"]
    assert station_tx_mbit(msgs[0]) == 130.0
    assert wifi_tx_mbit(msgs) == 130.0


def test_recorded_station_dump_as_dict_form() -> None:
    """msg.dump() (plain lists and dicts, as kept in JSON) parses the same."""
    msgs = _recorded("iw_station_rsp.dump")
    assert wifi_tx_mbit([m.dump() for m in msgs]) == 130.0


def test_recorded_interface_reply_is_not_a_station() -> None:
    """An NL80211_CMD_NEW_INTERFACE reply (wlo1, managed) carries no station info."""
    msgs = _recorded("iw_info_rsp.dump")
    assert msgs[0].get_attr("NL80211_ATTR_IFNAME") == "wlo1"
    assert station_tx_mbit(msgs[0]) is None
    assert wifi_tx_mbit(msgs) is None


@pytest.mark.parametrize(
    ("case", "mbit"),
    [
        ("he_client_2x2_80mhz", 1201.0),
        ("eht_client_4x4_320mhz_over_u16", 11529.4),  # only BITRATE32: no u16 above 6553.5
        ("legacy_u16_only", 54.0),
        ("ap_two_stations_one_leaving", 576.5),  # the unassociated station is not counted
        ("associated_no_rate_yet", None),
        ("not_associated", None),
    ],
)
def test_synthetic_stations(case: str, mbit: float | None) -> None:
    assert wifi_tx_mbit(SYNTHETIC[case]) == mbit


def test_synthetic_names_are_pyroute2_names() -> None:
    """The synthetic rate attributes encode to nl80211 bytes and decode back through pyroute2:
    the names (hence the kernel's attribute numbers) in the fixture are real ones."""
    nl80211 = pytest.importorskip("pyroute2.netlink.nl80211")
    for case in ("he_client_2x2_80mhz", "eht_client_4x4_320mhz_over_u16", "legacy_u16_only"):
        station = SYNTHETIC[case][0]
        info = dict(station["attrs"])["NL80211_ATTR_STA_INFO"]
        rate = dict(info["attrs"])["NL80211_STA_INFO_TX_BITRATE"]
        msg = nl80211.nl80211cmd()
        msg["cmd"] = nl80211.NL80211_NAMES["NL80211_CMD_NEW_STATION"]
        msg["attrs"] = [("NL80211_ATTR_STA_INFO",
                         {"attrs": [("NL80211_STA_INFO_TX_BITRATE", rate)]})]
        msg.encode()
        decoded = nl80211.nl80211cmd(bytes(msg.data))
        decoded.decode()
        assert station_tx_mbit(decoded) == wifi_tx_mbit([station])


class FakeIW:
    def __init__(self, stations: list, fail: bool = False) -> None:
        self.stations, self.fail, self.closed, self.asked = stations, fail, False, None

    def get_stations(self, ifindex: int):
        self.asked = ifindex
        if self.fail:
            raise OSError(19, "No such device")
        return iter(self.stations)

    def close(self) -> None:
        self.closed = True


def test_read_wifi_tx_mbit_asks_nl80211_by_ifindex_and_closes() -> None:
    iw = FakeIW(SYNTHETIC["he_client_2x2_80mhz"])
    assert read_wifi_tx_mbit("lo", iw_factory=lambda: iw) == 1201.0
    assert iw.asked == 1 and iw.closed


def test_read_wifi_tx_mbit_is_none_on_errors() -> None:
    iw = FakeIW([], fail=True)
    assert read_wifi_tx_mbit("lo", iw_factory=lambda: iw) is None and iw.closed
    assert read_wifi_tx_mbit("xt-no-such-if", iw_factory=lambda: iw) is None

    def no_nl80211():
        raise OSError("nl80211 family not found")

    assert read_wifi_tx_mbit("lo", iw_factory=no_nl80211) is None


def test_module_imports_without_pyroute2(monkeypatch) -> None:
    """pyroute2 is a Linux-only dependency: without it the rate is unknown, not an error."""
    import builtins
    import importlib

    real_import = builtins.__import__

    def no_pyroute2(name, *args, **kwargs):
        if name == "pyroute2" or name.startswith("pyroute2."):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pyroute2)
    mod = importlib.reload(hw_linux)
    try:
        assert mod.read_wifi_tx_mbit("lo") is None
        assert mod.neighbour_mac("10.213.0.1", "lo", proc_arp="/nonexistent") is None
    finally:
        monkeypatch.undo()
        importlib.reload(hw_linux)


# -- fake sysfs ---------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _thunderbolt_tree(root: Path, rx="20.0 Gb/s\n", tx="20.0 Gb/s\n", rx_lanes="2\n",
                      tx_lanes="2\n", driver="thunderbolt-net") -> Path:
    """A thunderbolt-net interface as the kernel lays it out (SYNTHETIC, from the ABI doc
    and drivers/thunderbolt/xdomain.c): the net device under the XDomain service 0-1.0,
    the speed and lane files on the XDomain 0-1."""
    domain = root / "devices/pci0000:00/0000:00:0d.2/domain0/0-0"
    xd = domain / "0-1"
    svc = xd / "0-1.0"
    for name, text in (("rx_speed", rx), ("tx_speed", tx), ("rx_lanes", rx_lanes),
                       ("tx_lanes", tx_lanes), ("device_name", "Mac Studio\n"),
                       ("vendor_name", "Apple Inc.\n")):
        if text is not None:
            _write(xd / name, text)
    _write(svc / "key", "network\n")
    drv = root / "bus/thunderbolt/drivers" / driver
    drv.mkdir(parents=True)
    (svc / "driver").symlink_to(drv)
    netdir = svc / "net/thunderbolt0"
    _write(netdir / "speed", "")
    (netdir / "device").symlink_to(os.path.relpath(svc, netdir))
    net = root / "class/net"
    net.mkdir(parents=True)
    (net / "thunderbolt0").symlink_to(os.path.relpath(netdir, net))
    return net


@pytest.mark.parametrize(
    ("text", "mbit"),
    [("20.0 Gb/s\n", 20000), ("40.0 Gb/s", 40000), ("10.0 Gb/s", 10000), ("2.5 Gb/s", 2500),
     ("", None), ("fast", None), (None, None)],
)
def test_parse_tb_speed(text, mbit) -> None:
    assert parse_tb_speed(text) == mbit


def test_thunderbolt_link_tb3_two_lanes(tmp_path: Path) -> None:
    net = _thunderbolt_tree(tmp_path)
    link = thunderbolt_link("thunderbolt0", net)
    assert link is not None
    assert (link.xdomain, link.rx_mbit, link.tx_mbit, link.speed_mbit) == ("0-1", 40000, 40000,
                                                                           40000)


def test_thunderbolt_link_single_lane_is_half(tmp_path: Path) -> None:
    net = _thunderbolt_tree(tmp_path, rx_lanes="1\n", tx_lanes="1\n")
    assert thunderbolt_link("thunderbolt0", net).speed_mbit == 20000


def test_thunderbolt_link_asymmetric_usb4v2(tmp_path: Path) -> None:
    """USB4 v2 asymmetric: 3 lanes at 40 Gb/s one way, 1 back."""
    net = _thunderbolt_tree(tmp_path, rx="40.0 Gb/s", tx="40.0 Gb/s", rx_lanes="1",
                            tx_lanes="3")
    link = thunderbolt_link("thunderbolt0", net)
    assert (link.rx_mbit, link.tx_mbit, link.speed_mbit) == (40000, 120000, 120000)


def test_thunderbolt_link_absent_before_5_11(tmp_path: Path) -> None:
    net = _thunderbolt_tree(tmp_path, rx=None, tx=None, rx_lanes=None, tx_lanes=None)
    assert thunderbolt_link("thunderbolt0", net) is None


def test_thunderbolt_link_other_driver_and_missing(tmp_path: Path) -> None:
    net = _thunderbolt_tree(tmp_path, driver="atlantic")
    assert thunderbolt_link("thunderbolt0", net) is None
    assert thunderbolt_link("eth0", net) is None


def _bridge(net: Path, name: str, members: dict[str, int]) -> None:
    _write(net / name / "bridge" / "forward_delay", "1500\n")
    for member, port in members.items():
        _write(net / name / "brif" / member / "port_no", f"{port:#x}\n")


def _iface(net: Path, name: str, speed: str | None = "1000", oper: str = "up") -> None:
    if speed is not None:
        _write(net / name / "speed", speed + "\n")
    _write(net / name / "operstate", oper + "\n")


def test_bridge_members_and_ports(tmp_path: Path) -> None:
    _bridge(tmp_path, "br0", {"enp1s0": 1, "thunderbolt0": 2, "tap17": 0x10a})
    _iface(tmp_path, "enp1s0")
    assert bridge_members("br0", tmp_path) == ["enp1s0", "tap17", "thunderbolt0"]
    assert bridge_ports("br0", tmp_path) == {1: "enp1s0", 2: "thunderbolt0", 0x10a: "tap17"}
    assert bridge_members("enp1s0", tmp_path) is None
    assert bridge_members("gone", tmp_path) is None


def test_link_speed(tmp_path: Path) -> None:
    _iface(tmp_path, "eth0", "10000")
    _iface(tmp_path, "eth1", "-1", oper="down")
    _iface(tmp_path, "wlan0", None)
    assert link_speed_mbit("eth0", tmp_path) == 10000
    assert link_speed_mbit("eth1", tmp_path) is None
    assert link_speed_mbit("wlan0", tmp_path) is None


def _bond(net: Path, name: str, mode: str, slaves: list[str], active: str = "") -> None:
    b = net / name / "bonding"
    _write(b / "mode", mode + "\n")
    _write(b / "slaves", " ".join(slaves) + "\n")
    _write(b / "active_slave", active + ("\n" if active else ""))


def test_bond_active_backup_capacity_is_the_active_slave(tmp_path: Path) -> None:
    _bond(tmp_path, "bond0", "active-backup 1", ["eth0", "eth1"], active="eth1")
    _iface(tmp_path, "eth0", "10000")
    _iface(tmp_path, "eth1", "1000")
    info = bond_info("bond0", tmp_path)
    assert info.mode == "active-backup" and info.slaves == ("eth0", "eth1")
    assert info.active == ("eth1",) and info.speed_mbit == 1000


def test_bond_lacp_sums_the_up_slaves_of_the_active_aggregator(tmp_path: Path) -> None:
    _bond(tmp_path, "bond0", "802.3ad 4", ["eth0", "eth1", "eth2", "eth3"])
    _write(tmp_path / "bond0" / "bonding" / "ad_aggregator", "1\n")
    for name, agg, mii in (("eth0", 1, "up"), ("eth1", 1, "up"), ("eth2", 2, "up"),
                           ("eth3", 1, "down")):
        _iface(tmp_path, name, "25000", oper=mii)
        _write(tmp_path / name / "bonding_slave" / "ad_aggregator_id", f"{agg}\n")
        _write(tmp_path / name / "bonding_slave" / "mii_status", mii + "\n")
    info = bond_info("bond0", tmp_path)
    assert info.active == ("eth0", "eth1") and info.speed_mbit == 50000


def test_bond_balance_rr_and_unknown_speeds(tmp_path: Path) -> None:
    _bond(tmp_path, "bond1", "balance-rr 0", ["eth0", "eth1", "eth2"])
    _iface(tmp_path, "eth0", "2500")
    _iface(tmp_path, "eth1", "-1")
    _iface(tmp_path, "eth2", "2500", oper="down")
    info = bond_info("bond1", tmp_path)
    assert info.active == ("eth0", "eth1") and info.speed_mbit == 2500
    _bond(tmp_path, "bond2", "active-backup 1", ["eth9"])
    assert bond_info("bond2", tmp_path).speed_mbit is None
    assert bond_info("eth0", tmp_path) is None


# -- the bridge member that reaches a peer -------------------------------------------------


def _fdb(mac: str, port: int, is_local: bool = False, ageing: int = 300) -> bytes:
    return FDB_ENTRY.pack(bytes.fromhex(mac.replace(":", "")), port & 0xFF, int(is_local),
                          ageing, port >> 8, 0, 0)


def test_fdb_entry_is_the_kernels_16_bytes() -> None:
    assert FDB_ENTRY.size == 16
    raw = _fdb("02:00:5e:00:00:01", 0x102, ageing=0x01020304)
    assert raw[:6] == bytes.fromhex("02005e000001") and raw[6] == 0x02 and raw[12] == 0x01
    assert struct.unpack_from("=I", raw, 8)[0] == 0x01020304


def test_parse_brforward() -> None:
    data = (_fdb("02:00:5e:00:00:01", 1) + _fdb("AA:BB:CC:00:00:02", 0x102, ageing=0)
            + _fdb("02:00:5e:00:00:ff", 2, is_local=True) + b"\x01\x02\x03")
    entries = parse_brforward(data)
    assert [(e.mac, e.port, e.is_local) for e in entries] == [
        ("02:00:5e:00:00:01", 1, False), ("aa:bb:cc:00:00:02", 0x102, False),
        ("02:00:5e:00:00:ff", 2, True)]
    assert entries[0].ageing_cs == 300
    assert parse_brforward(b"") == []


def test_member_for_mac_and_peer(tmp_path: Path) -> None:
    _bridge(tmp_path, "br0", {"enp1s0": 1, "thunderbolt0": 2, "thunderbolt1": 3})
    (tmp_path / "br0" / "brforward").write_bytes(
        _fdb("02:00:5e:00:00:aa", 2) + _fdb("02:00:5e:00:00:bb", 3)
        + _fdb("02:00:5e:00:00:01", 1, is_local=True))
    assert member_for_mac("br0", "02:00:5E:00:00:BB", tmp_path) == "thunderbolt1"
    assert member_for_mac("br0", "02:00:5e:00:00:01", tmp_path) is None  # the bridge's own
    assert member_for_mac("br0", "02:00:5e:00:00:cc", tmp_path) is None  # aged out
    assert bridge_member_for_peer("br0", "10.213.0.2", tmp_path,
                                  mac="02:00:5e:00:00:aa") == "thunderbolt0"
    assert bridge_member_for_peer("enp1s0", "10.213.0.2", tmp_path, mac="x") is None


PROC_ARP = """\
IP address       HW type     Flags       HW address            Mask     Device
10.213.0.2       0x1         0x2         02:00:5e:00:00:aa     *        br0
10.213.0.3       0x1         0x0         00:00:00:00:00:00     *        br0
10.213.0.4       0x1         0x6         02:00:5E:00:00:BB     *        br0
10.213.0.2       0x1         0x2         02:00:5e:00:00:dd     *        eth9
"""


def test_parse_proc_arp() -> None:
    assert parse_proc_arp(PROC_ARP) == {
        ("10.213.0.2", "br0"): "02:00:5e:00:00:aa",
        ("10.213.0.4", "br0"): "02:00:5e:00:00:bb",
        ("10.213.0.2", "eth9"): "02:00:5e:00:00:dd",
    }


def test_neighbour_falls_back_to_proc_arp(tmp_path: Path, monkeypatch) -> None:
    """No such interface for netlink here: the proc file answers."""
    arp = tmp_path / "arp"
    arp.write_text(PROC_ARP)
    assert hw_linux.neighbour_mac("10.213.0.4", "br0", proc_arp=str(arp)) == "02:00:5e:00:00:bb"
    assert hw_linux.neighbour_mac("10.213.0.3", "br0", proc_arp=str(arp)) is None


def test_recorded_brforward_from_a_lab_bridge(tmp_path: Path) -> None:
    """brforward bytes read from a real bridge (this repository's lab, see docs/testing.md):
    each peer's MAC maps to the member it was learnt on; the local entries are skipped."""
    rec = FIXTURES / "brforward"
    meta = json.loads((rec / "brforward.json").read_text())
    data = (rec / "brforward.bin").read_bytes()
    entries = parse_brforward(data)
    assert len(entries) * FDB_ENTRY.size == len(data)
    assert sum(e.is_local for e in entries) == len(meta["ports"])  # one own MAC per port
    _bridge(tmp_path, "xtbr0", {name: int(port) for port, name in meta["ports"].items()})
    (tmp_path / "xtbr0" / "brforward").write_bytes(data)
    for ip, member in meta["peers"].items():
        assert bridge_member_for_peer("xtbr0", ip, tmp_path, mac=meta["macs"][ip]) == member


def test_netlink_readers_refuse_the_event_loop_thread() -> None:
    """pyroute2's sync sockets cannot run on a thread with a running loop: a clear error, not
    a silent "unknown" rate; through asyncio.to_thread they answer."""
    import asyncio

    async def main():
        with pytest.raises(RuntimeError, match="off the event loop"):
            read_wifi_tx_mbit("lo", iw_factory=lambda: FakeIW([]))
        with pytest.raises(RuntimeError, match="off the event loop"):
            hw_linux.neighbour_mac("10.213.0.9", "lo")
        return await asyncio.to_thread(read_wifi_tx_mbit, "lo",
                                       lambda: FakeIW(SYNTHETIC["legacy_u16_only"]))

    assert asyncio.run(main()) == 54.0


class FakeNeigh(dict):
    def __init__(self, lladdr: str | None, state: int) -> None:
        super().__init__(state=state)
        self.lladdr = lladdr

    def get_attr(self, name: str):
        return self.lladdr if name == "NDA_LLADDR" else None


class FakeIPRoute:
    def __init__(self, neighbours: list[FakeNeigh]) -> None:
        self.neighbours, self.asked = neighbours, None

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def get_neighbours(self, **kw):
        self.asked = kw
        return self.neighbours


@pytest.mark.parametrize(
    ("neighbours", "mac"),
    [
        ([FakeNeigh("02:00:5E:00:00:AA", 0x02)], "02:00:5e:00:00:aa"),  # REACHABLE
        ([FakeNeigh("02:00:5e:00:00:aa", 0x04)], "02:00:5e:00:00:aa"),  # STALE: still its MAC
        ([FakeNeigh(None, 0x01)], None),  # INCOMPLETE
        ([FakeNeigh("02:00:5e:00:00:aa", 0x20)], None),  # FAILED
        ([FakeNeigh("00:00:00:00:00:00", 0x40)], None),  # NOARP (as lo's 0.0.0.0 entry)
        ([], None),
    ],
)
def test_neighbour_mac_over_netlink(neighbours, mac) -> None:
    ipr = FakeIPRoute(neighbours)
    assert hw_linux.neighbour_mac("10.213.0.2", "lo", proc_arp="/nonexistent",
                                  ipr_factory=lambda: ipr) == mac
    assert ipr.asked == {"dst": "10.213.0.2", "ifindex": 1}


def test_recorded_xdomain_files_give_the_link_rate(tmp_path: Path) -> None:
    """A real Linux host's XDomain files (tests/fixtures/linux/thunderbolt_sysfs_mapleridge.txt:
    `cat rx_lanes` … `cat tx_speed` of a Maple Ridge card cabled to another host), laid out
    as the same recording's `tree` shows (XDomain 0-1, service 0-1.0 bound to
    thunderbolt-net): 2 lanes of 20.0 Gb/s, a 40 Gb/s link."""
    import re

    text = (FIXTURES / "thunderbolt_sysfs_mapleridge.txt").read_text()
    files = dict(re.findall(r"# cat (\w+)\n([^\n]+)\n", text))
    assert {k: files[k] for k in ("rx_lanes", "tx_lanes", "rx_speed", "tx_speed")} == {
        "rx_lanes": "2", "tx_lanes": "2", "rx_speed": "20.0 Gb/s", "tx_speed": "20.0 Gb/s"}
    net = _thunderbolt_tree(tmp_path, rx=files["rx_speed"], tx=files["tx_speed"],
                            rx_lanes=files["rx_lanes"], tx_lanes=files["tx_lanes"])
    link = thunderbolt_link("thunderbolt0", net)
    assert (link.rx_mbit, link.tx_mbit, link.speed_mbit) == (40000, 40000, 40000)
