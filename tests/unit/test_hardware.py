"""The hardware readers wired into the agent (issue 12): hw/read.py joins the platform
readers, hw/hardware.py caches them off the loop and turns speed drops into events, the
interface monitor feeds them to the capacity rule and takes a bridged link's numbers from
the member that reaches the peer, hw/capstore.py keeps a measured capacity across restarts.

macOS goes through the runner seam with the recorded outputs of tests/fixtures/macos/
(their sources are in its README.md); Linux through a fake sysfs tree and the seams of
hw_linux. The worker threads are real (asyncio.to_thread on a real loop)."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from exotray.agent.hw import macos as hw_macos
from exotray.agent.hw import macos_wifi as hw_macos_wifi
from exotray.agent.hw.capstore import CapacityStore
from exotray.agent.hw.hardware import Hardware
from exotray.agent.hw.kinds import InterfaceClassifier
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.hw.read import HwLink, LinuxReader, MacReader
from exotray.agent.hw.sampler import NicInfo
from exotray.core.capacity import MBIT
from exotray.core.settings import Settings

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "macos"


def fx(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


class FakeRunner:
    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def __call__(self, argv, timeout):
        self.calls.append(tuple(argv))
        return self.answers.get(tuple(argv))


BRIDGE0 = ("bridge0: flags=8863<UP> mtu 1500\n"
           "\tmember: en1 flags=3<LEARNING,DISCOVER>\n"
           "\tmember: en6 flags=3<LEARNING,DISCOVER>\n"
           "\tmember: en2 flags=3<LEARNING,DISCOVER>\n")


def mac_runner() -> FakeRunner:
    return FakeRunner({
        hw_macos.THUNDERBOLT_CMD: fx("sp_thunderbolt_macbookpro_m5max_tb3device_40g.json"),
        hw_macos.NETWORKSETUP_CMD: fx("networksetup_macbookpro_m5max.txt"),
        ("ifconfig", "bridge0"): BRIDGE0,
        hw_macos_wifi.AIRPORT_CMD: fx("sp_airport_macos15.5_connected.json"),
        ("ifconfig", "-m", "en10"): fx("ifconfig_m_en10_10G_at_1G_SYNTHETIC.txt"),
    })


# -- hwread: one call per platform -----------------------------------------------------------


def test_mac_reader_joins_thunderbolt_wifi_and_ethernet():
    run = mac_runner()
    kinds = {"en1": "thunderbolt", "en6": "thunderbolt", "en2": "thunderbolt",
             "bridge0": "thunderbolt", "en0": "wifi", "en10": "ethernet", "lo0": "loopback"}
    got = MacReader(run, wifi_loader=lambda: None).links(kinds)
    assert set(got) == {"en1", "en6", "en2", "bridge0", "en0", "en10"}
    assert (got["en1"].speed_mbit, got["en1"].max_mbit) == (None, 120000)  # not cabled
    assert (got["en6"].speed_mbit, got["en6"].max_mbit) == (80000, 120000)
    assert got["en6"].full_mbit == 80000  # 120 is TB5's asymmetric rate: 80 is full speed
    # en2 is cabled to a TB3 drive (no IP service): not a network link, so no link speed
    assert (got["en2"].speed_mbit, got["en2"].full_mbit) == (None, 80000)
    br = got["bridge0"]
    assert (br.members, br.bridge, br.speed_mbit) == (("en1", "en6", "en2"), True, 80000)
    assert (got["en0"].speed_mbit, got["en0"].phy_rate) == (144.0, True)
    assert (got["en10"].speed_mbit, got["en10"].max_mbit) == (1000, 10000)


def test_mac_reader_runs_only_what_the_kinds_ask():
    run = mac_runner()
    MacReader(run, wifi_loader=lambda: None).links({"en10": "ethernet", "lo0": "loopback"})
    assert run.calls == [("ifconfig", "-m", "en10")]  # no system_profiler: it takes seconds


def test_mac_reader_failing_commands_are_unknown_not_errors():
    got = MacReader(FakeRunner({}), wifi_loader=lambda: None).links(
        {"en2": "thunderbolt", "en0": "wifi", "en10": "ethernet"})
    assert got == {}


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_linux_reader_bridge_bond_and_plain(tmp_path: Path):
    """A fake /sys/class/net (layout of Documentation/ABI/testing/sysfs-class-net and the
    bridge/bonding drivers, SYNTHETIC): br0 over two ports, bond0 active-backup, eth0."""
    net = tmp_path
    _write(net / "br0/bridge/forward_delay", "1500\n")
    for name, port, speed in (("veth1", 1, "10000"), ("eth1", 2, "1000")):
        _write(net / "br0/brif" / name / "port_no", f"{port:#x}\n")
        _write(net / name / "speed", speed + "\n")
        _write(net / name / "operstate", "up\n")
    _write(net / "bond0/bonding/mode", "active-backup 1\n")
    _write(net / "bond0/bonding/slaves", "eth2 eth3\n")
    _write(net / "bond0/bonding/active_slave", "eth3\n")
    _write(net / "eth3/speed", "2500\n")
    _write(net / "eth0/speed", "1000\n")
    _write(net / "dummy0/speed", "-1\n")
    got = LinuxReader(sys_net=net).links(
        {"br0": "virtual", "bond0": "virtual", "eth0": "ethernet", "dummy0": "virtual"})
    assert got["br0"] == HwLink("br0", 10000.0, members=("eth1", "veth1"), bridge=True,
                                source="bridge members")
    assert (got["bond0"].speed_mbit, got["bond0"].members, got["bond0"].bridge) == (
        2500.0, ("eth2", "eth3"), False)
    assert got["eth0"].speed_mbit == 1000.0
    assert "dummy0" not in got  # speed -1: unknown, never a guess


def test_linux_reader_wifi_is_a_phy_rate(tmp_path: Path, monkeypatch):
    from exotray.agent.hw import linux as hw_linux
    monkeypatch.setattr(hw_linux, "read_wifi_tx_mbit", lambda name, iw=None: 433.3)
    got = LinuxReader(sys_net=tmp_path).links({"wlan0": "wifi"})
    assert got["wlan0"] == HwLink("wlan0", 433.3, phy_rate=True, source="nl80211")


# -- hw/hardware.py: the cache, off the loop --------------------------------------------------


@dataclass
class Script:
    """A reader whose answers the test sets, recording on which thread it was called."""

    answers: dict[str, HwLink] = field(default_factory=dict)
    members: dict[tuple[str, str], str | None] = field(default_factory=dict)
    fail: Exception | None = None
    on_loop: list[bool] = field(default_factory=list)

    def links(self, kinds):
        try:
            asyncio.get_running_loop()
            self.on_loop.append(True)
        except RuntimeError:
            self.on_loop.append(False)
        if self.fail:
            raise self.fail
        return {n: h for n, h in self.answers.items() if n in kinds}

    def member_for_peer(self, bridge, ip):
        return self.members.get((bridge, ip))


async def settle(hw: Hardware, now: float, kinds, up=None) -> None:
    """One tick that starts the reads, wait for the worker threads, one that takes them."""
    labels = {n: n.upper() for n in kinds}
    up = up or {n: True for n in kinds}
    hw.changed()
    hw.tick(now, kinds, labels, up)
    for task in (hw._task, hw._member_task):
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
    hw.tick(now, kinds, labels, up)
    for task in (hw._task, hw._member_task):  # what the second tick started
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)
    hw.tick(now, kinds, labels, up)


def test_reads_off_the_loop_and_speed_events():
    events = []
    reader = Script({"en3": HwLink("en3", 80000, 120000)})
    hw = Hardware(reader, lambda t, **f: events.append((t, f)))
    kinds = {"en3": "thunderbolt"}

    async def go():
        await settle(hw, 0.0, kinds)
        assert events == []  # TB5 at 80 of "up to 120": full speed
        reader.answers["en3"] = HwLink("en3", 40000, 120000)
        await settle(hw, 20.0, kinds)
        await settle(hw, 40.0, kinds)  # still 40: no second event
        reader.answers["en3"] = HwLink("en3", 80000, 120000)
        await settle(hw, 60.0, kinds)

    asyncio.run(go())
    assert reader.on_loop and not any(reader.on_loop)
    assert events == [
        ("link_degraded", dict(interface="en3", local_label="EN3", from_mbit=80000,
                               to_mbit=40000, max_mbit=80000)),
        ("link_restored", dict(interface="en3", local_label="EN3", from_mbit=40000,
                               to_mbit=80000, max_mbit=80000)),
    ]


def test_a_speed_drop_without_a_known_maximum_and_what_is_not_an_event():
    events = []
    reader = Script({"eth0": HwLink("eth0", 10000), "wlan0": HwLink("wlan0", 866, phy_rate=True),
                     "eth1": HwLink("eth1", 1000)})
    hw = Hardware(reader, lambda t, **f: events.append((t, f["interface"], f["to_mbit"])))
    kinds = {"eth0": "ethernet", "wlan0": "wifi", "eth1": "ethernet"}

    async def go():
        await settle(hw, 0.0, kinds)
        reader.answers["eth0"] = HwLink("eth0", 1000)  # renegotiated down: a bad cable
        reader.answers["wlan0"] = HwLink("wlan0", 144, phy_rate=True)  # Wi-Fi moves
        reader.answers["eth1"] = HwLink("eth1", 100)
        await settle(hw, 20.0, kinds, up={"eth0": True, "wlan0": True, "eth1": False})

    asyncio.run(go())
    assert events == [("link_degraded", "eth0", 1000)]  # eth1 is down: not a speed


def test_a_reader_that_fails_keeps_the_last_answer_and_says_it_once(caplog):
    reader = Script({"en3": HwLink("en3", 80000)})
    hw = Hardware(reader)

    async def go():
        await settle(hw, 0.0, {"en3": "thunderbolt"})
        reader.fail = RuntimeError("boom")
        with caplog.at_level(logging.WARNING):
            for t in (200.0, 400.0, 600.0):
                await settle(hw, t, {"en3": "thunderbolt"})

    asyncio.run(go())
    assert hw.get("en3").speed_mbit == 80000
    assert [r.message for r in caplog.records].count(
        "reading link speeds failed, keeping the last answer: RuntimeError: boom") == 1


def test_bridge_member_is_resolved_off_the_loop_and_kept():
    reader = Script({"br0": HwLink("br0", 10000, members=("v1", "v2"), bridge=True)},
                    members={("br0", "10.213.0.2"): "v1", ("br0", "10.213.0.3"): None})
    hw = Hardware(reader)
    kinds = {"br0": "virtual", "v1": "virtual", "v2": "virtual"}

    async def go():
        await settle(hw, 0.0, kinds)
        assert hw.member("br0", "10.213.0.2", 0.0) is None  # asked: resolved off the loop
        assert hw.member("br0", "10.213.0.3", 0.0) is None
        await settle(hw, 6.0, kinds)  # members are resolved on their own schedule
        assert hw.member("br0", "10.213.0.2", 6.0) == "v1"
        assert hw.member("br0", "10.213.0.3", 6.0) is None  # not found: bridge totals
        reader.members[("br0", "10.213.0.2")] = None  # aged out of the FDB for a moment
        await settle(hw, 40.0, kinds)
        assert hw.member("br0", "10.213.0.2", 40.0) == "v1"
        assert hw.member("v1", "10.213.0.2", 40.0) is None  # not a bridge
        assert hw.member("br0", "10.213.0.9") is None  # a view's read: nothing to resolve
        assert ("br0", "10.213.0.9") not in hw._asked

    asyncio.run(go())


# -- the monitor: capacity rule fed, bridged links, persisted measurements ---------------------


def nic(name, speed=None, up=True):
    return NicInfo(name, up, speed, ("10.213.0.1",), (("10.213.0.1", 24),))


def monitor(tmp_path: Path, answers: dict[str, HwLink], settings: Settings | None = None,
            ) -> InterfaceMonitor:
    classifier = InterfaceClassifier(platform="linux", sysfs_root="/nonexistent")
    hw = Hardware(Script(answers))
    hw.links = dict(answers)  # as if read
    return InterfaceMonitor(settings or Settings(), classifier, 1.0, hw, tmp_path)


def kinded(m: InterfaceMonitor, kinds: dict[str, str]) -> None:
    m.classifier.classify = lambda name: (kinds[name], kinds[name].title())


def test_capacity_from_thunderbolt_wifi_and_macos_media(tmp_path: Path):
    m = monitor(tmp_path, {"en2": HwLink("en2", 40000, 120000),
                           "en0": HwLink("en0", 866.0, phy_rate=True),
                           "en10": HwLink("en10", 2500, 10000)})
    kinded(m, {"en2": "thunderbolt", "en0": "wifi", "en10": "ethernet", "en5": "thunderbolt"})
    m.update({n: nic(n) for n in ("en2", "en0", "en10", "en5")}, 0.0)
    caps = {n: (st.capacity.bytes_per_s, st.capacity.source) for n, st in m.ifaces.items()}
    assert caps == {"en2": (40000 * MBIT, "kind"), "en0": (866 * MBIT, "kind"),
                    "en10": (2500 * MBIT, "nic"), "en5": (None, "unknown")}
    assert m.speed_of("en10") == (2500, 10000)
    assert m.speed_of("en5") == (None, None)


def test_a_bridged_link_takes_its_members_numbers(tmp_path: Path):
    m = monitor(tmp_path, {"br0": HwLink("br0", 10000, members=("v1", "v2"), bridge=True),
                           "v1": HwLink("v1", 1000), "v2": HwLink("v2", 10000)})
    kinded(m, {"br0": "virtual", "v1": "ethernet", "v2": "ethernet"})
    nics = {"br0": nic("br0"), "v1": nic("v1", 1000), "v2": nic("v2", 10000)}
    m.update(nics, 0.0)
    m.hardware._members[("br0", "10.213.0.2")] = "v1"
    m.update_rates(0.0, {"br0": (0, 0), "v1": (0, 0), "v2": (0, 0)}, nics)
    m.update_rates(1.0, {"br0": (125_000_000, 0), "v1": (100_000_000, 0), "v2": (0, 0)}, nics)
    rate, capacity, util = m.numbers("br0", "10.213.0.2")
    assert m.member("br0", "10.213.0.2") == "v1"
    assert (rate.rx_bytes_per_s, capacity.bytes_per_s) == (100_000_000, 1000 * MBIT)
    assert util == pytest.approx(0.8)
    # a peer whose member is not known: the bridge's totals, and no member named
    rate, _capacity, _util = m.numbers("br0", "10.213.0.3")
    assert m.member("br0", "10.213.0.3") is None and rate.rx_bytes_per_s == 125_000_000
    assert (_capacity.bytes_per_s, _util) == (None, None)  # never "saturates" them all


def test_measured_capacity_outlives_a_restart_until_the_speed_changes(tmp_path: Path):
    answers = {"en2": HwLink("en2", 40000, 120000)}
    m = monitor(tmp_path, answers)
    kinded(m, {"en2": "thunderbolt"})
    m.update({"en2": nic("en2")}, 0.0)
    m.measured("en2", 23000.0, 1_764_720_000.0)
    stored = json.loads((tmp_path / "capacity.json").read_text())
    assert stored == {"en2": {"mbit": 23000.0, "at": 1_764_720_000.0, "speed_mbit": 40000,
                              "seen": 1_764_720_000.0}}

    again = monitor(tmp_path, answers)  # a restarted agent
    kinded(again, {"en2": "thunderbolt"})
    again.update({"en2": nic("en2")}, 0.0)
    assert again.ifaces["en2"].capacity.source == "measured"
    assert again.measurement("en2").at == 1_764_720_000.0

    again.hardware.links["en2"] = HwLink("en2", 80000, 120000)  # a new cable
    again.update({"en2": nic("en2")}, 1.0)
    assert (again.ifaces["en2"].capacity.source, again.measurement("en2")) == ("kind", None)
    assert json.loads((tmp_path / "capacity.json").read_text()) == {}


def test_a_wifi_measurement_survives_rate_changes(tmp_path: Path):
    m = monitor(tmp_path, {"en0": HwLink("en0", 866.0, phy_rate=True)})
    kinded(m, {"en0": "wifi"})
    m.update({"en0": nic("en0")}, 0.0)
    m.measured("en0", 310.0, 1_764_720_000.0)
    m.hardware.links["en0"] = HwLink("en0", 144.0, phy_rate=True)
    m.update({"en0": nic("en0")}, 1.0)
    assert m.ifaces["en0"].capacity.source == "measured"


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"en2": "x", "en3": {"mbit": -1,'
                                     ' "at": 5}, "en4": {"mbit": 1e999, "at": 1}}'])
def test_a_broken_capacity_file_is_ignored_with_one_line(tmp_path: Path, content, caplog):
    (tmp_path / "capacity.json").write_text(content)
    with caplog.at_level(logging.WARNING):
        store = CapacityStore(tmp_path)
    assert store.items == {}
    assert len(caplog.records) == 1


def test_an_unwritable_state_dir_keeps_the_measurement_in_memory(tmp_path: Path, caplog):
    (tmp_path / "capacity.json").mkdir()  # a directory where the file should be
    store = CapacityStore(tmp_path)
    with caplog.at_level(logging.WARNING):
        store.put("en2", 1000.0, 1.0, None)
    assert store.valid("en2", None).mbit == 1000.0
    assert "cannot keep the measured capacity" in caplog.text


def test_mac_reader_finds_the_thunderbolt_bridge_member_of_a_peer():
    """hw_macos_bridge through MacReader: arp -an, then the bridge's address cache
    (fixtures built from Apple's print formats: tests/fixtures/macos/README.md)."""
    run = FakeRunner({
        ("arp", "-an"): fx("arp_an_bridge0_SYNTHETIC.txt"),
        ("ifconfig", "bridge0", "addr"): fx("bridge_addr_bridge0_SYNTHETIC.txt"),
    })
    reader = MacReader(run, wifi_loader=lambda: None)
    assert reader.member_for_peer("bridge0", "169.254.77.31") == "en3"
    assert reader.member_for_peer("bridge0", "169.254.201.9") is None  # incomplete ARP


@dataclass
class FakeEthtool:
    """pyroute2.ethtool.Ethtool's get_link_mode, answering supported modes by name (mode
    names as the kernel's ethtool_link_mode_bit_indices, include/uapi/linux/ethtool.h)."""

    modes: dict[str, list[str]]

    def __call__(self):
        return self

    def get_link_mode(self, name):
        if name not in self.modes:
            raise OSError(19, "No such device")

        @dataclass
        class Mode:
            supported_modes: list[str]
        return Mode(self.modes[name])

    def close(self):
        pass


def test_linux_ethernet_maximum_from_its_supported_modes(tmp_path: Path):
    _write(tmp_path / "enp1s0/speed", "1000\n")
    _write(tmp_path / "enp2s0/speed", "10000\n")
    tool = FakeEthtool({"enp1s0": ["10baseT/Half", "1000baseT/Full", "10000baseT/Full",
                                   "2500baseT/Full", "Autoneg"],
                        "enp2s0": []})
    got = LinuxReader(sys_net=tmp_path, ethtool_factory=tool).links(
        {"enp1s0": "ethernet", "enp2s0": "ethernet", "veth0": "ethernet"})
    assert (got["enp1s0"].speed_mbit, got["enp1s0"].max_mbit) == (1000.0, 10000.0)
    assert (got["enp2s0"].speed_mbit, got["enp2s0"].max_mbit) == (10000.0, None)
    assert "veth0" not in got  # no speed, no modes: unknown


def test_a_command_that_keeps_failing_is_said_once(caplog):
    """The macOS readers run every 2 minutes: the same failure is one line an hour."""
    with caplog.at_level(logging.WARNING, logger="exotray.agent.hw.macos"):
        for _ in range(3):
            assert hw_macos.run_command(("/nonexistent/system_profiler", "x"), 1.0) is None
        hw_macos.run_command(("/nonexistent/ifconfig", "-m", "en9"), 1.0)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2 and "system_profiler" in lines[0] and "ifconfig" in lines[1]


def test_slow_from_the_start_and_unplugged():
    """A port first seen below its maximum says so with no invented 'from'; a port that
    goes down is no longer degraded (and that is no speed event)."""
    events = []
    reader = Script({"en4": HwLink("en4", 40000, 120000)})
    hw = Hardware(reader, lambda t, **f: events.append((t, f["from_mbit"], f["to_mbit"])))
    kinds = {"en4": "thunderbolt"}

    async def go():
        await settle(hw, 0.0, kinds)
        assert hw.degraded == {"en4": 40000}
        await settle(hw, 20.0, kinds, up={"en4": False})
        assert hw.degraded == {}

    asyncio.run(go())
    assert events == [("link_degraded", None, 40000)]


def test_a_failing_reader_waits_its_turn_and_settled_kinds_read_again():
    reader = Script({"en3": HwLink("en3", 80000)}, fail=RuntimeError("bad output"))
    hw = Hardware(reader)

    async def tick(now, kinds):
        hw.tick(now, kinds, {}, {})
        for task in (hw._task, hw._member_task):
            if task is not None:
                await asyncio.gather(task, return_exceptions=True)

    async def go():
        for t in range(20):  # 20 ticks of a second: one read, not twenty
            await tick(float(t), {"en3": "other"})
        assert len(reader.on_loop) == 1
        reader.fail = None
        await tick(20.0, {"en3": "thunderbolt"})  # networksetup answered: kinds settled
        await tick(21.0, {"en3": "thunderbolt"})
        assert len(reader.on_loop) == 2 and hw.get("en3").speed_mbit == 80000
        for t in range(22, 40):  # an AirDrop interface comes and goes: not worth a read
            await tick(float(t), {"en3": "thunderbolt", "awdl0": "other"} if t % 2
                       else {"en3": "thunderbolt"})
            hw.changed({"awdl0"})
        assert len(reader.on_loop) == 2

    asyncio.run(go())


def test_a_measurement_through_a_bridge_of_unknown_member_is_not_kept(tmp_path: Path):
    m = monitor(tmp_path, {"br0": HwLink("br0", 10000, members=("v1", "v2"), bridge=True)})
    kinded(m, {"br0": "virtual"})
    m.update({"br0": nic("br0")}, 0.0)
    m.measured("br0", 900.0, 1_764_720_000.0)
    assert m.measurement("br0") is None


def test_a_slow_cable_is_told_once_not_at_every_start(tmp_path):
    """Issue 35 point 6: a TB5 Mac cabled to a TB4 Mac (80 of 120 Gb/s, for good) raised
    link_degraded at every start of the agent. It is told once per cable: not again
    after a restart while it stays so; again once it came back to full speed, or the
    cable was unplugged, and is slow again."""
    kinds = {"en2": "thunderbolt"}

    def start(speed: float, up: bool = True) -> list:
        events: list = []
        reader = Script({"en2": HwLink("en2", speed, 120000)})
        hw = Hardware(reader, lambda t, **f: events.append((t, f["to_mbit"])), tmp_path)
        asyncio.run(settle(hw, 0.0, kinds, up={"en2": up}))
        return events

    assert start(40000) == [("link_degraded", 40000)]
    assert start(40000) == []  # restarted, the same cable: not told again
    assert start(40000) == []
    assert start(20000) == [("link_degraded", 20000)]  # another speed: told
    assert start(80000) == [("link_restored", 80000)]  # TB5's 80 of 120 is its full speed
    assert start(40000) == [("link_degraded", 40000)]  # slow again: told
    assert start(40000, up=False) == []  # unplugged
    assert start(40000) == [("link_degraded", 40000)]  # plugged again: told
