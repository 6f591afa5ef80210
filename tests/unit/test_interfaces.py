"""Interface kind classification (exotray.agent.hw.kinds)."""

from __future__ import annotations

import logging
import os
import subprocess
from pathlib import Path

import pytest

from exotray.agent.hw import kinds as interfaces_module
from exotray.agent.hw.kinds import (
    KINDS,
    InterfaceClassifier,
    classify_linux,
    classify_macos,
    parse_networksetup,
)

FIXTURES = Path(__file__).parent / "fixtures" / "networksetup"

ETH = "ethernet"
TB = "thunderbolt"

EXPECTED_PORTS: dict[str, dict[str, tuple[str, str]]] = {
    "mac_studio_apple_silicon.txt": {
        "en0": (ETH, "Ethernet"),
        "en6": (ETH, "Ethernet Adapter (en6)"),
        "en7": (ETH, "Ethernet Adapter (en7)"),
        "en8": (ETH, "Ethernet Adapter (en8)"),
        "bridge0": (TB, "Thunderbolt Bridge"),
        "en1": ("wifi", "Wi-Fi"),
        "en2": (TB, "Thunderbolt 1"),
        "en3": (TB, "Thunderbolt 2"),
        "en4": (TB, "Thunderbolt 3"),
        "en5": (TB, "Thunderbolt 4"),
    },
    "macbook_pro_apple_silicon.txt": {
        "en4": (ETH, "Ethernet Adapter (en4)"),
        "en5": (ETH, "Ethernet Adapter (en5)"),
        "en6": (ETH, "Ethernet Adapter (en6)"),
        "en7": (ETH, "USB 10/100/1000 LAN"),
        "bridge0": (TB, "Thunderbolt Bridge"),
        "en0": ("wifi", "Wi-Fi"),
        "en1": (TB, "Thunderbolt 1"),
        "en2": (TB, "Thunderbolt 2"),
        "en3": (TB, "Thunderbolt 3"),
        "en8": ("other", "iPhone USB"),
    },
    "mac_mini_intel_2018.txt": {
        "en0": (ETH, "Ethernet"),
        "en1": ("wifi", "Wi-Fi"),
        "en6": ("other", "Bluetooth PAN"),
        "en2": (TB, "Thunderbolt 1"),
        "en3": (TB, "Thunderbolt 2"),
        "en4": (TB, "Thunderbolt 3"),
        "en5": (TB, "Thunderbolt 4"),
        "bridge0": (TB, "Thunderbolt Bridge"),
        "en7": (ETH, "Thunderbolt Ethernet Slot 1"),
        "vlan0": ("virtual", "VLAN (Storage VLAN)"),
    },
}


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_every_fixture_has_expectations() -> None:
    assert sorted(p.name for p in FIXTURES.glob("*.txt")) == sorted(EXPECTED_PORTS)


@pytest.mark.parametrize("line_ending", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("fixture", sorted(EXPECTED_PORTS))
def test_parse_networksetup_fixture(fixture: str, line_ending: str) -> None:
    text = _fixture(fixture).replace("\n", line_ending)
    assert parse_networksetup(text) == EXPECTED_PORTS[fixture]


@pytest.mark.parametrize(
    ("fixture", "device", "kind", "label"),
    [
        (fixture, device, kind, label)
        for fixture, ports in sorted(EXPECTED_PORTS.items())
        for device, (kind, label) in ports.items()
    ],
)
def test_classify_macos_uses_ports(fixture: str, device: str, kind: str, label: str) -> None:
    assert classify_macos(device, parse_networksetup(_fixture(fixture))) == (kind, label)


@pytest.mark.parametrize(
    ("port", "kind"),
    [
        ("Thunderbolt Bridge", TB),
        ("Thunderbolt 1", TB),
        ("Thunderbolt 12", TB),
        ("Thunderbolt Ethernet", ETH),
        ("Thunderbolt Ethernet Slot 1", ETH),
        ("Thunderbolt Ethernet Slot 1, Port 1", ETH),
        ("Display Ethernet", ETH),
        ("Apple USB Ethernet Adapter", ETH),
        ("USB 10/100/1000 LAN", ETH),
        ("USB 10/100/1G/2.5G LAN", ETH),
        ("Wi-Fi", "wifi"),
        ("AirPort", "wifi"),
        ("Bluetooth PAN", "other"),
        ("iPhone USB", "other"),
        ("Display FireWire", "other"),
        ("AX88179A", "other"),
    ],
)
def test_port_name_kinds(port: str, kind: str) -> None:
    text = f"Hardware Port: {port}\nDevice: en9\nEthernet Address: 02:00:00:00:00:09\n"
    assert parse_networksetup(text) == {"en9": (kind, port)}


def test_parse_networksetup_tolerates_messy_input() -> None:
    text = (
        "garbage before anything\r\n"
        "\r\n"
        "    Hardware Port: Wi-Fi\r\n"
        "    Device: en0\r\n"
        "    Ethernet Address: aa:bb:cc:dd:ee:ff\r\n"
        "\r\n"
        "Hardware Port: Bluetooth PAN\n"
        "Device: en6\n"
        "\n"
        "Device: en42\n"  # orphan device line: no port, ignored
        "Hardware Port: com.wireguard.macos\n"
        "Device: \n"  # a VPN port without a BSD device: skipped
        "Hardware Port: Ethernet\n"  # truncated block: no device line
        "\n"
        "\x00\ufffd random : junk ::\n"
        "VLAN Configurations\n"
        "===================\n"
        "Hardware Port: Thunderbolt 1\n"
        "Device: en2\n"
    )
    assert parse_networksetup(text) == {
        "en0": ("wifi", "Wi-Fi"),
        "en6": ("other", "Bluetooth PAN"),
        "en2": (TB, "Thunderbolt 1"),
    }


@pytest.mark.parametrize("text", ["", "\n\n", "VLAN Configurations\n===================\n"])
def test_parse_networksetup_empty(text: str) -> None:
    assert parse_networksetup(text) == {}


@pytest.mark.parametrize(
    ("name", "kind", "label"),
    [
        ("lo0", "loopback", "Loopback"),
        ("utun0", "vpn", "VPN (utun)"),
        ("utun7", "vpn", "VPN (utun)"),
        ("ipsec0", "vpn", "VPN (IPsec)"),
        ("ppp0", "vpn", "VPN (PPP)"),
        ("tun0", "vpn", "VPN (tun)"),
        ("tap1", "vpn", "VPN (tap)"),
        ("awdl0", "virtual", "AirDrop (AWDL)"),
        ("llw0", "virtual", "Low Latency WLAN"),
        ("anpi0", "virtual", "Apple internal network"),
        ("ap1", "virtual", "Wi-Fi Access Point"),
        ("gif0", "virtual", "Generic Tunnel"),
        ("stf0", "virtual", "6to4 Tunnel"),
        ("bridge100", "virtual", "Bridge"),
        ("bridge0", "virtual", "Bridge"),  # only when networksetup did not list it
        ("vmenet0", "virtual", "VM Network"),
        ("feth0", "virtual", "Fake Ethernet"),
        ("en0", "other", "en0"),
        ("en9", "other", "en9"),
        ("XHC20", "other", "XHC20"),
    ],
)
def test_classify_macos_name_fallbacks(name: str, kind: str, label: str) -> None:
    assert classify_macos(name, {}) == (kind, label)


def test_classify_macos_ports_win_over_name_rules() -> None:
    ports = {"bridge0": (TB, "Thunderbolt Bridge"), "en0": ("wifi", "Wi-Fi")}
    assert classify_macos("bridge0", ports) == (TB, "Thunderbolt Bridge")
    assert classify_macos("bridge100", ports) == ("virtual", "Bridge")
    assert classify_macos("en0", ports) == ("wifi", "Wi-Fi")


# --------------------------------------------------------------------------- Linux sysfs


def make_iface(
    root: Path,
    name: str,
    *,
    type_: int | None = 1,
    flags: int | None = 0x1003,
    devtype: str | None = None,
    device: str | None = None,
    driver: str | None = None,
    subsystem: str | None = None,
    dirs: tuple[str, ...] = (),
    files: dict[str, str] | None = None,
    links: dict[str, str] | None = None,
) -> Path:
    """Build a fake /sys/class/net/<name> the way the kernel lays it out.

    ``device`` is a path under ``root/../devices`` that the ``device`` symlink points to
    (absent = a software interface). ``driver``/``subsystem`` become symlinks inside that
    device directory, pointing at ``root/../bus/...``.
    """
    sysfs = root.parent
    iface = sysfs / "devices" / "virtual" / "net" / name if device is None else None
    if device is not None:
        dev_dir = sysfs / "devices" / device
        dev_dir.mkdir(parents=True, exist_ok=True)
        iface = dev_dir / "net" / name
        if driver is not None:
            target = sysfs / "bus" / driver
            target.mkdir(parents=True, exist_ok=True)
            (dev_dir / "driver").symlink_to(os.path.relpath(target, dev_dir))
        if subsystem is not None:
            target = sysfs / "bus" / subsystem
            target.mkdir(parents=True, exist_ok=True)
            (dev_dir / "subsystem").symlink_to(os.path.relpath(target, dev_dir))
    assert iface is not None
    iface.mkdir(parents=True)
    if device is not None:
        (iface / "device").symlink_to(os.path.relpath(iface.parent.parent, iface))
    if type_ is not None:
        (iface / "type").write_text(f"{type_}\n")
    if flags is not None:
        (iface / "flags").write_text(f"{flags:#x}\n")
    uevent = f"INTERFACE={name}\nIFINDEX=7\n"
    if devtype is not None:
        uevent = f"DEVTYPE={devtype}\n" + uevent
    (iface / "uevent").write_text(uevent)
    for d in dirs:
        (iface / d).mkdir(parents=True)
    for rel, content in (files or {}).items():
        (iface / rel).write_text(content)
    for rel, target in (links or {}).items():
        (iface / rel).symlink_to(target)
    root.mkdir(parents=True, exist_ok=True)
    (root / name).symlink_to(os.path.relpath(iface, root))
    return iface


PCI = "pci0000:00/0000:00:1f.6"
TB_SERVICE = "pci0000:00/0000:00:0d.2/domain0/0-0/0-1/0-1.0"

LINUX_CASES: list[tuple[str, dict[str, object], tuple[str, str]]] = [
    (
        "eth0",
        {"device": PCI, "driver": "pci/drivers/e1000e", "subsystem": "pci"},
        (ETH, "Ethernet"),
    ),
    (
        "enp3s0",
        {"device": "pci0000:00/0000:03:00.0", "driver": "pci/drivers/igc"},
        (ETH, "Ethernet"),
    ),
    (
        "enx00e04c680102",
        {
            "device": "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0",
            "driver": "usb/drivers/r8152",
            "subsystem": "usb",
        },
        (ETH, "Ethernet"),
    ),
    (
        "wlan0",
        {
            "device": "pci0000:00/0000:00:14.3",
            "driver": "pci/drivers/iwlwifi",
            "devtype": "wlan",
            "dirs": ("wireless",),
        },
        ("wifi", "Wi-Fi"),
    ),
    (
        "wlp2s0",
        {"device": "pci0000:00/0000:02:00.0", "links": {"phy80211": "../phy0"}},
        ("wifi", "Wi-Fi"),
    ),
    (
        "thunderbolt0",
        {
            "device": TB_SERVICE,
            "driver": "thunderbolt/drivers/thunderbolt-net",
            "subsystem": "thunderbolt",
        },
        (TB, "Thunderbolt"),
    ),
    ("usb4net0", {"device": TB_SERVICE + "x", "subsystem": "thunderbolt"}, (TB, "Thunderbolt")),
    ("lo", {"type_": 772, "flags": 0x9}, ("loopback", "Loopback")),
    ("lo-weird", {"type_": None, "flags": 0x49}, ("loopback", "Loopback")),
    ("veth1a2b3c", {}, ("virtual", "Virtual Ethernet")),
    ("br0", {"devtype": "bridge", "dirs": ("bridge",)}, ("virtual", "Bridge")),
    ("docker0", {"devtype": "bridge", "dirs": ("bridge",)}, ("virtual", "Bridge")),
    ("lanbridge", {"dirs": ("bridge",)}, ("virtual", "Bridge")),
    ("virbr0-nic", {}, ("virtual", "Bridge (libvirt)")),
    ("dummy0", {}, ("virtual", "Dummy")),
    ("bond0", {"dirs": ("bonding",)}, ("virtual", "Bond")),
    ("eth0.100", {"devtype": "vlan"}, ("virtual", "VLAN")),
    ("vxlan.calico", {"devtype": "vxlan"}, ("virtual", "VXLAN")),
    ("sit0", {"type_": 776}, ("virtual", "Tunnel")),
    ("wg0", {"type_": 65534, "devtype": "wireguard"}, ("vpn", "VPN (WireGuard)")),
    ("mullvad", {"type_": 65534, "devtype": "wireguard"}, ("vpn", "VPN (WireGuard)")),
    ("tun0", {"type_": 65534, "files": {"tun_flags": "0x1001\n"}}, ("vpn", "VPN (tun)")),
    ("tap0", {"files": {"tun_flags": "0x1002\n"}}, ("vpn", "VPN (tap)")),
    (
        "tailscale0",
        {"type_": 65534, "files": {"tun_flags": "0x1001\n"}},
        ("vpn", "VPN (Tailscale)"),
    ),
    ("ztabcdef12", {"files": {"tun_flags": "0x1002\n"}}, ("vpn", "VPN (ZeroTier)")),
    ("ppp0", {"type_": 512}, ("vpn", "VPN (PPP)")),
    ("wg-office", {"type_": 65534}, ("vpn", "VPN (WireGuard)")),
    ("ib0", {"type_": 32, "device": "pci0000:00/0000:05:00.0"}, ("other", "InfiniBand")),
    (
        "wwan0",
        {"type_": 65534, "devtype": "wwan", "device": "pci0000:00/0000:06:00.0"},
        ("other", "Mobile broadband"),
    ),
    ("can0", {"type_": 280, "device": "pci0000:00/0000:07:00.0"}, ("other", "CAN")),
    (
        "eth1",
        {"type_": None, "flags": None, "device": "pci0000:00/0000:08:00.0"},
        ("other", "eth1"),
    ),
]


@pytest.mark.parametrize(("name", "spec", "expected"), LINUX_CASES, ids=[c[0] for c in LINUX_CASES])
def test_classify_linux(
    tmp_path: Path, name: str, spec: dict[str, object], expected: tuple[str, str]
) -> None:
    root = tmp_path / "class" / "net"
    make_iface(root, name, **spec)  # type: ignore[arg-type]
    assert classify_linux(name, root) == expected
    assert classify_linux(name, str(root)) == expected
    assert expected[0] in KINDS


def test_classify_linux_vanished_interface(tmp_path: Path) -> None:
    root = tmp_path / "class" / "net"
    iface = make_iface(root, "eth7", device=PCI)
    # The class symlink still exists but its target is gone (interface removed mid-scan).
    for child in sorted(iface.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if child.is_symlink() or child.is_file():
            child.unlink()
        else:
            child.rmdir()
    iface.rmdir()
    assert classify_linux("eth7", root) == ("other", "eth7")
    assert classify_linux("never-existed", root) == ("other", "never-existed")
    assert classify_linux("eth0", tmp_path / "no-sysfs-here") == ("other", "eth0")


@pytest.mark.parametrize("name", ["", ".", "..", "../etc", "a/b"])
def test_classify_linux_rejects_odd_names(tmp_path: Path, name: str) -> None:
    assert classify_linux(name, tmp_path) == ("other", name)


def test_classify_linux_garbage_files(tmp_path: Path) -> None:
    root = tmp_path / "class" / "net"
    iface = make_iface(root, "eth3", device=PCI, type_=None, flags=None)
    (iface / "type").write_bytes(b"\xff\xfe not a number")
    (iface / "flags").write_text("zzz")
    (iface / "uevent").write_bytes(b"\x00\x01garbage without equals\n")
    assert classify_linux("eth3", root) == ("other", "eth3")


@pytest.mark.parametrize(
    "error", [PermissionError(13, "Permission denied"), FileNotFoundError(2, "gone")]
)
def test_classify_linux_unreadable_or_vanishing_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError
) -> None:
    """Works as root too: every sysfs read fails as if unreadable or removed mid-read."""
    root = tmp_path / "class" / "net"
    make_iface(root, "eth4", device=PCI)
    make_iface(root, "wg1", type_=65534, devtype="wireguard")

    def failing_open(*args: object, **kwargs: object) -> None:
        raise error

    monkeypatch.setattr(interfaces_module, "open", failing_open, raising=False)
    assert classify_linux("eth4", root) == ("other", "eth4")
    assert classify_linux("wg1", root) == ("vpn", "VPN (WireGuard)")  # name rule fallback


# --------------------------------------------------------------------------- classifier


def test_classifier_darwin_with_injected_runner() -> None:
    calls: list[int] = []

    def runner() -> str:
        calls.append(1)
        return _fixture("mac_studio_apple_silicon.txt")

    clf = InterfaceClassifier(platform="darwin", networksetup_runner=runner)
    assert clf.classify("bridge0") == (TB, "Thunderbolt Bridge")
    assert clf.classify("en2") == (TB, "Thunderbolt 1")
    assert clf.classify("en1") == ("wifi", "Wi-Fi")
    assert clf.classify("en0") == (ETH, "Ethernet")
    assert clf.classify("utun3") == ("vpn", "VPN (utun)")
    assert clf.classify("lo0") == ("loopback", "Loopback")
    assert clf.classify("en2") == (TB, "Thunderbolt 1")
    assert len(calls) == 1  # ports read once, results cached
    clf.refresh()
    assert clf.classify("en2") == (TB, "Thunderbolt 1")
    assert len(calls) == 2


@pytest.mark.parametrize(
    "exc",
    [
        FileNotFoundError(2, "No such file or directory: 'networksetup'"),
        subprocess.TimeoutExpired(["networksetup", "-listallhardwareports"], 5),
        subprocess.CalledProcessError(1, ["networksetup", "-listallhardwareports"]),
    ],
    ids=["missing", "timeout", "failed"],
)
def test_classifier_darwin_runner_failure_falls_back(
    caplog: pytest.LogCaptureFixture, exc: Exception
) -> None:
    def runner() -> str:
        raise exc

    clf = InterfaceClassifier(platform="darwin", networksetup_runner=runner)
    with caplog.at_level(logging.DEBUG, logger="exotray.agent.hw.kinds"):
        assert clf.classify("en0") == ("other", "en0")
        assert clf.classify("lo0") == ("loopback", "Loopback")
        assert clf.classify("utun2") == ("vpn", "VPN (utun)")
        assert clf.classify("bridge0") == ("virtual", "Bridge")
        clf.refresh()  # a second failure must not warn again
        assert clf.classify("awdl0") == ("virtual", "AirDrop (AWDL)")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].name == "exotray.agent.hw.kinds"
    assert "networksetup" in warnings[0].getMessage()


def test_classifier_linux_caches_until_refresh(tmp_path: Path) -> None:
    root = tmp_path / "class" / "net"
    make_iface(root, "eth0", device=PCI)
    clf = InterfaceClassifier(platform="linux", sysfs_root=root)
    assert clf.classify("eth0") == (ETH, "Ethernet")
    assert clf.classify("wg0") == ("other", "wg0")  # not there yet
    make_iface(root, "wg0", type_=65534, devtype="wireguard")
    assert clf.classify("wg0") == ("other", "wg0")  # cached
    clf.refresh()
    assert clf.classify("wg0") == ("vpn", "VPN (WireGuard)")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("Loopback Pseudo-Interface 1", ("loopback", "Loopback")),
        ("Wi-Fi", ("wifi", "Wi-Fi")),
        ("Ethernet 2", (ETH, "Ethernet 2")),
        ("vEthernet (Default Switch)", ("virtual", "vEthernet (Default Switch)")),
        ("Local Area Connection* 1", ("other", "Local Area Connection* 1")),
    ],
)
def test_classifier_other_platforms_by_name(name: str, expected: tuple[str, str]) -> None:
    assert InterfaceClassifier(platform="win32").classify(name) == expected


def test_classifier_on_this_machine_never_raises() -> None:
    clf = InterfaceClassifier(platform="linux")
    net = Path("/sys/class/net")
    names = sorted(os.listdir(net)) if net.is_dir() else []
    for name in [*names, "definitely-not-an-interface"]:
        kind, label = clf.classify(name)
        assert kind in KINDS
        assert label


def test_refresh_never_waits_for_a_running_networksetup_and_drops_its_stale_result() -> None:
    """The agent calls refresh() on its event loop while a worker thread may be inside a
    slow networksetup (holding the classifier's lock)."""
    import threading

    entered, release = threading.Event(), threading.Event()

    def slow() -> str:
        entered.set()
        release.wait(10)
        return "Hardware Port: Thunderbolt 1\nDevice: en2\n"

    c = InterfaceClassifier(platform="darwin", networksetup_runner=slow)
    worker = threading.Thread(target=c.classify, args=("en2",))
    worker.start()
    assert entered.wait(5)
    c.refresh()
    assert worker.is_alive()  # refresh returned while networksetup was still running
    release.set()
    worker.join(5)
    assert c.peek("en2") is None  # found before the refresh: not kept
    assert c.classify("en2") == ("thunderbolt", "Thunderbolt 1")
