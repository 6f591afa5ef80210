"""macOS capacity readers (exotray/agent/hw/macos.py, hw/macos_wifi.py) on the recorded
outputs in tests/fixtures/macos/ (sources in its README.md). Expected values were read off
the fixture files by hand. No Mac runs here: runners go through the injected seam."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from exotray.agent.hw import macos as hw_macos
from exotray.agent.hw import macos_wifi as hw_macos_wifi
from exotray.agent.hw.macos import (
    parse_bridge_members,
    parse_gbs,
    parse_ifconfig,
    parse_networksetup,
    parse_sp_thunderbolt,
    thunderbolt_speeds,
)
from exotray.agent.hw.macos_wifi import parse_channel, parse_sp_airport

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "macos"


def fx(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


STUDIO = "sp_thunderbolt_macstudio_m3ultra_tb5.json"
MBP = "sp_thunderbolt_macbookpro_m5max_tb5.json"
MBP_40 = "sp_thunderbolt_macbookpro_m5max_tb3device_40g.json"
PORTS = "networksetup_macbookpro_m5max.txt"
IFCONFIG_INTEL = "ifconfig_intel_tb3_bridge0_4members.txt"

# every fixture of each kind is listed, so a new one without expectations fails here
THUNDERBOLT_FIXTURES = sorted(p.name for p in FIX.glob("sp_thunderbolt_*.json"))
AIRPORT_FIXTURES = sorted(p.name for p in FIX.glob("sp_airport_*.json"))
IFCONFIG_FIXTURES = sorted(p.name for p in FIX.glob("ifconfig_*.txt"))

GARBAGE = [None, "", "not json", "[]", "{}", "null", "42", b"\xff\xfe", 3.5, {"a": 1},
           '{"SPThunderboltDataType": "x"}', '{"SPAirPortDataType": [1, "x", null]}',
           '{"SPThunderboltDataType": [1, null, {"receptacle_1_tag": "x"}]}']


# --------------------------------------------------------------------------- speeds


@pytest.mark.parametrize("text,expected", [
    ("80 Gb/s", (80000, False)),
    ("40 Gb/s", (40000, False)),
    ("Up to 120 Gb/s", (120000, True)),
    ("Up to 40 Gb/s", (40000, True)),
    ("Up to 40 Gb/s x1", (40000, True)),
    ("20 Gb/s", (20000, False)),
    ("10.0 Gb/s", (10000, False)),
    ("480 Mb/s", (480, False)),
    ("", (None, False)),
    ("fast", (None, False)),
    ("0 Gb/s", (None, False)),
    (None, (None, False)),
    (80, (None, False)),
])
def test_parse_gbs(text, expected):
    assert parse_gbs(text) == expected


@pytest.mark.parametrize("subtype,mbit", [
    ("10baseT/UTP", 10), ("100baseTX", 100), ("1000baseT", 1000), ("2500Base-T", 2500),
    ("2500base-T", 2500), ("5000Base-T", 5000), ("10Gbase-T", 10000), ("10GbaseT", 10000),
    ("2.5GBase-T", 2500), ("25GBase-SR", 25000), ("40GbaseSR4", 40000),
    ("autoselect", None), ("<unknown type>", None), ("none", None), ("", None), (None, None),
])
def test_media_subtype_mbit(subtype, mbit):
    assert hw_macos.media_subtype_mbit(subtype) == mbit


# --------------------------------------------------------------------------- Thunderbolt


def _recs(name):
    return {r.receptacle: r for r in parse_sp_thunderbolt(fx(name))}


EXPECTED_RECEPTACLES = {
    # receptacle: (cabled, negotiated Mbit, "Up to" Mbit, peer)
    STUDIO: {
        1: (False, None, 120000, None), 2: (True, 80000, None, "MacBook Pro"),
        3: (False, None, 120000, None), 4: (True, 80000, None, "Envoy Ultra"),
        5: (False, None, 120000, None), 6: (False, None, 120000, None),
    },
    MBP: {
        1: (True, 80000, None, "Mac Studio"), 2: (False, None, 120000, None),
        3: (False, None, 120000, None),
    },
    MBP_40: {
        1: (False, None, 120000, None), 2: (True, 80000, None, "MacBook Pro"),
        3: (True, 40000, None, "TBU405Pro"),
    },
    "sp_thunderbolt_macmini_m4pro_macos27_peer40g.json": {
        1: (False, None, 120000, None), 2: (True, 40000, None, "MacBook Pro"),
        3: (True, 20000, None, "Studio Display"),
    },
}


def test_only_a_mac_at_the_other_end_is_a_network_link():
    """Real capture (macOS 27): receptacle 2 reaches a MacBook Pro with an IP service,
    3 a Studio Display without one."""
    got = _recs("sp_thunderbolt_macmini_m4pro_macos27_peer40g.json")
    assert (got[2].ip_service, got[3].ip_service, got[1].ip_service) == (True, False, False)
    studio = _recs(STUDIO)
    assert (studio[2].ip_service, studio[4].ip_service) == (True, False)  # Envoy: a drive


def test_every_thunderbolt_fixture_has_expectations():
    assert sorted(EXPECTED_RECEPTACLES) == THUNDERBOLT_FIXTURES


@pytest.mark.parametrize("name", sorted(EXPECTED_RECEPTACLES))
def test_thunderbolt_receptacles(name):
    got = {k: (r.cabled, r.speed_mbit, r.max_mbit, r.peer) for k, r in _recs(name).items()}
    assert got == EXPECTED_RECEPTACLES[name]


def test_devices_behind_a_port_are_not_ports():
    # the Envoy Ultra drive has its own receptacle_upstream_ambiguous_tag at 80 Gb/s
    recs = parse_sp_thunderbolt(fx(STUDIO))
    assert [r.receptacle for r in recs] == [1, 2, 3, 4, 5, 6]
    assert _recs(STUDIO)[4].bus == "thunderboltusb4_bus_3"
    assert _recs(STUDIO)[4].speed_text == "80 Gb/s"


def test_networksetup_fixture_maps_thunderbolt_ports():
    ports = parse_networksetup(fx(PORTS))
    assert {d: label for d, (_k, label) in ports.items() if label.startswith("Thunderbolt")} \
        == {"bridge0": "Thunderbolt Bridge", "en1": "Thunderbolt 1", "en6": "Thunderbolt 2",
            "en2": "Thunderbolt 3"}


def test_thunderbolt_speeds_join_ports_and_bridge():
    ports = parse_networksetup(fx(PORTS))
    links = thunderbolt_speeds(parse_sp_thunderbolt(fx(MBP_40)), ports,
                               {"bridge0": ["en1", "en6", "en2"]})
    assert set(links) == {"en1", "en6", "en2", "bridge0"}
    en1, en6, en2, br = links["en1"], links["en6"], links["en2"], links["bridge0"]
    assert (en1.label, en1.cabled, en1.speed_mbit, en1.max_mbit, en1.max_inferred) \
        == ("Thunderbolt 1", False, None, 120000, False)
    assert (en6.label, en6.speed_mbit, en6.max_mbit, en6.max_inferred, en6.peer) \
        == ("Thunderbolt 2", 80000, 120000, True, "MacBook Pro")
    # a TB3 device on a TB5 port: 40 of 120, what a link_degraded event will be made of
    assert (en2.label, en2.speed_mbit, en2.max_mbit, en2.peer) \
        == ("Thunderbolt 3", 40000, 120000, "TBU405Pro")
    assert en2.detail["current_speed"] == "40 Gb/s"
    assert (br.label, br.members, br.speed_mbit, br.max_mbit, br.cabled) \
        == ("Thunderbolt Bridge", ("en1", "en6", "en2"), 80000, 120000, True)
    assert br.detail["cabled_members"] == ["en6", "en2"]


def test_thunderbolt_speeds_studio_with_made_up_port_names():
    # No networksetup recording of a Mac Studio: ports named as on the MacBook (en2...).
    ports = {f"en{n + 1}": ("thunderbolt", f"Thunderbolt {n}") for n in range(1, 7)}
    ports["bridge0"] = ("thunderbolt", "Thunderbolt Bridge")
    links = thunderbolt_speeds(parse_sp_thunderbolt(fx(STUDIO)), ports,
                               {"bridge0": ["en2", "en3", "en4", "en5", "en6", "en7"]})
    assert links["en3"].speed_mbit == 80000 and links["en3"].peer == "MacBook Pro"
    assert links["en2"].speed_mbit is None and links["en2"].max_mbit == 120000
    assert links["bridge0"].speed_mbit == 80000
    assert links["bridge0"].detail["cabled_members"] == ["en3", "en5"]


def test_thunderbolt_speeds_tolerates_missing_ports_and_members():
    recs = parse_sp_thunderbolt(fx(MBP))
    assert thunderbolt_speeds(recs, {}) == {}
    links = thunderbolt_speeds(recs, {"en1": ("thunderbolt", "Thunderbolt 1")},
                               {"bridge0": ["en1", "en9"], "bridge1": []})
    assert links["en1"].speed_mbit == 80000 and links["en1"].max_mbit == 120000
    assert links["bridge0"].members == ("en1", "en9")
    assert links["bridge1"].speed_mbit is None and links["bridge1"].max_mbit is None
    assert links["bridge1"].cabled is False


def test_thunderbolt_only_cabled_ports_no_maximum():
    only = {"SPThunderboltDataType": [{"_name": "b0", "receptacle_1_tag": {
        "receptacle_id_key": "1", "current_speed_key": "40 Gb/s",
        "receptacle_status_key": "receptacle_connected"}}]}
    links = thunderbolt_speeds(parse_sp_thunderbolt(json.dumps(only)),
                               {"en1": ("thunderbolt", "Thunderbolt 1")})
    assert (links["en1"].speed_mbit, links["en1"].max_mbit, links["en1"].max_inferred) \
        == (40000, None, False)


@pytest.mark.parametrize("tag", [
    {}, {"receptacle_id_key": "x"}, {"receptacle_id_key": None},
    {"receptacle_id_key": "1", "current_speed_key": 7},
    {"receptacle_id_key": "1", "current_speed_key": "Up to 40 Gb/s",
     "receptacle_status_key": "receptacle_connected"},
])
def test_thunderbolt_odd_receptacles(tag):
    recs = parse_sp_thunderbolt(json.dumps({"SPThunderboltDataType": [
        {"_name": "b", "receptacle_1_tag": tag, "_items": "x"}]}))
    for r in recs:  # never a negotiated speed out of a maximum or a non-string
        assert r.speed_mbit is None


@pytest.mark.parametrize("garbage", GARBAGE)
def test_thunderbolt_garbage(garbage):
    assert parse_sp_thunderbolt(garbage) == []


# --------------------------------------------------------------------------- ifconfig

EXPECTED_IFCONFIG = {
    # name: {interface: (status, subtype, speed, max, members)} for the interesting ones
    IFCONFIG_INTEL: {
        "bridge0": ("inactive", None, None, None, ("en1", "en2", "en3", "en4")),
        "bridge100": ("active", None, None, None, ("en10",)),
        "en1": ("inactive", None, None, None, ()),
        "en8": ("active", "100baseTX", 100, None, ()),
        "en0": ("inactive", None, None, None, ()),
        "lo0": (None, None, None, None, ()),
    },
    "ifconfig_en10_1000baseT_macbookair_macos13.5.txt": {
        "en10": ("active", "1000baseT", 1000, None, ()),
    },
    "ifconfig_en10_2500baseT_SYNTHETIC.txt": {
        "en10": ("active", "2500Base-T", 2500, None, ()),
    },
    "ifconfig_m_en10_10G_at_1G_SYNTHETIC.txt": {
        "en10": ("active", "1000baseT", 1000, 10000, ()),
    },
    "ifconfig_bridge0_addrcache_m1macmini_macos11.txt": {
        "bridge0": ("active", None, None, None, ("en2", "en3")),
    },
    # `ifconfig bridge0` with its "Address cache:" lines (tests/unit/test_hw_macos_bridge.py)
    "ifconfig_bridge0_addrcache_SYNTHETIC.txt": {
        "bridge0": ("active", None, None, None, ("en1", "en2", "en3", "en4", "en5")),
    },
}


def test_every_ifconfig_fixture_has_expectations():
    assert sorted(EXPECTED_IFCONFIG) == IFCONFIG_FIXTURES


@pytest.mark.parametrize("name", sorted(EXPECTED_IFCONFIG))
def test_ifconfig_fixtures(name):
    got = parse_ifconfig(fx(name))
    for iface, expected in EXPECTED_IFCONFIG[name].items():
        info = got[iface]
        assert (info.status, info.subtype, info.speed_mbit, info.max_mbit, info.members) \
            == expected, iface


def test_ifconfig_intel_all_blocks_and_media_lines():
    got = parse_ifconfig(fx(IFCONFIG_INTEL))
    assert list(got) == ["lo0", "gif0", "stf0", "en0", "en1", "en3", "en2", "en4", "bridge0",
                         "p2p0", "awdl0", "utun0", "en10", "bridge100", "utun1", "en5", "en8"]
    assert got["en1"].media == "autoselect <full-duplex>"  # a Thunderbolt port: no speed
    assert got["en0"].media == "autoselect (<unknown type>)"
    assert got["bridge0"].media == "<unknown type>"


def test_ifconfig_supported_media_list():
    info = parse_ifconfig(fx("ifconfig_m_en10_10G_at_1G_SYNTHETIC.txt"))["en10"]
    assert info.supported == ("10baseT/UTP", "100baseTX", "1000baseT", "2500Base-T",
                              "5000Base-T", "10Gbase-T")
    assert info.media == "autoselect (1000baseT <full-duplex,flow-control>)"


def test_bridge_members():
    assert parse_bridge_members(fx(IFCONFIG_INTEL)) == ["en1", "en2", "en3", "en4"]
    assert parse_bridge_members(fx(IFCONFIG_INTEL), "bridge100") == ["en10"]
    assert parse_bridge_members(fx(IFCONFIG_INTEL), "bridge7") == []
    # `ifconfig bridge0` alone: the bridge0 block cut out of the recording
    text = fx(IFCONFIG_INTEL)
    block = text[text.index("bridge0:"):text.index("p2p0:")]
    assert parse_bridge_members(block) == ["en1", "en2", "en3", "en4"]


@pytest.mark.parametrize("text,speed", [
    ("en9: flags=8863<UP> mtu 1500\n\tmedia: 100baseTX <full-duplex>\n\tstatus: active\n", 100),
    ("en9: flags=8863<UP> mtu 1500\n\tmedia: autoselect (none)\n\tstatus: inactive\n", None),
    ("en9: flags=8863<UP> mtu 1500\n\tmedia: autoselect (10Gbase-T <full-duplex>)\n", 10000),
    ("en9: flags=8863<UP> mtu 1500\n\tmedia: autoselect (2500Base-T <full-duplex>)\n"
     "\tstatus: inactive\n", None),  # a stale subtype on a down link is no speed
    ("en9: flags=8863<UP> mtu 1500\r\n\tmedia: autoselect (5000Base-T <full-duplex>)\r\n", 5000),
])
def test_ifconfig_media_forms(text, speed):
    assert parse_ifconfig(text)["en9"].speed_mbit == speed


@pytest.mark.parametrize("garbage", [*GARBAGE, "\tmember: en2 flags=3\n", "media: 1000baseT"])
def test_ifconfig_garbage(garbage):
    assert parse_ifconfig(garbage) == {}
    assert parse_bridge_members(garbage) == []


# --------------------------------------------------------------------------- Wi-Fi

EXPECTED_AIRPORT = {
    "sp_airport_macos15.5_connected.json": {"en0": (144.0, "802.11n", 6, 2.4, 20)},
    "sp_airport_macos15.5_wifi_off.json": {},
    "sp_airport_macos12.7.2_macbookair.json": {"en0": (324.0, "802.11ax", 149, None, None)},
}


def test_every_airport_fixture_has_expectations():
    assert sorted(EXPECTED_AIRPORT) == AIRPORT_FIXTURES


@pytest.mark.parametrize("name", sorted(EXPECTED_AIRPORT))
def test_airport_fixtures(name):
    got = {k: (w.rate_mbit, w.phy_mode, w.channel, w.band_ghz, w.width_mhz)
           for k, w in parse_sp_airport(fx(name)).items()}
    assert got == EXPECTED_AIRPORT[name]
    assert all(w.source == "system_profiler" for w in parse_sp_airport(fx(name)).values())


@pytest.mark.parametrize("value,expected", [
    ("36 (5GHz, 80MHz)", (36, 5.0, 80)), ("6 (2GHz, 20MHz)", (6, 2.4, 20)),
    ("37 (6GHz, 160MHz)", (37, 6.0, 160)), (149, (149, None, None)), ("11", (11, None, None)),
    ("", (None, None, None)), (None, (None, None, None)), (True, (None, None, None)),
    (0, (None, None, None)), ("x (5GHz)", (None, None, None)),
])
def test_parse_channel(value, expected):
    assert parse_channel(value) == expected


@pytest.mark.parametrize("rate", [0, -1, None, "x", True, [], {}])
def test_airport_no_rate_is_no_entry(rate):
    doc = {"SPAirPortDataType": [{"spairport_airport_interfaces": [
        {"_name": "en0", "spairport_current_network_information": {
            "spairport_network_rate": rate, "spairport_network_channel": [1]}}]}]}
    assert parse_sp_airport(json.dumps(doc)) == {}


@pytest.mark.parametrize("garbage", GARBAGE)
def test_airport_garbage(garbage):
    assert parse_sp_airport(garbage) == {}


class _Chan:
    def __init__(self, n):
        self.n = n

    def channelNumber(self):
        return self.n


class _Iface:
    def __init__(self, rate, name="en0", chan=36):
        self.rate, self.name, self.chan = rate, name, chan

    def transmitRate(self):
        if isinstance(self.rate, Exception):
            raise self.rate
        return self.rate

    def interfaceName(self):
        return self.name

    def wlanChannel(self):
        return _Chan(self.chan) if self.chan is not None else None


def _client(iface):
    class Client:
        @staticmethod
        def sharedWiFiClient():
            return Client

        @staticmethod
        def interface():
            return iface
    return lambda: Client


def test_corewlan_rate_through_the_seam():
    w = hw_macos_wifi.corewlan_rate(_client(_Iface(866.0)))
    assert (w.interface, w.rate_mbit, w.channel, w.source) == ("en0", 866.0, 36, "corewlan")
    assert hw_macos_wifi.corewlan_rate(_client(_Iface(1200, chan=None))).channel is None


@pytest.mark.parametrize("iface", [
    None, _Iface(0.0), _Iface(None), _Iface(RuntimeError("objc")), _Iface(300.0, name=None),
    _Iface(300.0, name=""),
])
def test_corewlan_rate_none(iface):
    assert hw_macos_wifi.corewlan_rate(_client(iface)) is None


def test_corewlan_absent_or_broken():
    assert hw_macos_wifi.corewlan_rate(lambda: None) is None

    class Broken:
        @staticmethod
        def sharedWiFiClient():
            raise AttributeError("no")
    assert hw_macos_wifi.corewlan_rate(lambda: Broken) is None


@pytest.mark.skipif(sys.platform == "darwin", reason="checks the off-macOS import path")
def test_corewlan_loader_off_macos():
    assert hw_macos_wifi._load_corewlan() is None


# --------------------------------------------------------------------------- runners


class FakeRunner:
    def __init__(self, answers):
        self.answers, self.calls = answers, []

    def __call__(self, argv, timeout):
        self.calls.append((tuple(argv), timeout))
        return self.answers.get(tuple(argv))


def test_thunderbolt_links_runner():
    run = FakeRunner({
        hw_macos.THUNDERBOLT_CMD: fx(MBP_40),
        hw_macos.NETWORKSETUP_CMD: fx(PORTS),
        ("ifconfig", "bridge0"): "bridge0: flags=8863<UP> mtu 1500\n"
                                 "\tmember: en1 flags=3<LEARNING,DISCOVER>\n"
                                 "\tmember: en6 flags=3<LEARNING,DISCOVER>\n"
                                 "\tmember: en2 flags=3<LEARNING,DISCOVER>\n",
    })
    links = hw_macos.thunderbolt_links(run)
    assert links["en2"].speed_mbit == 40000
    assert links["bridge0"].members == ("en1", "en6", "en2")
    assert [c[0] for c in run.calls] == [hw_macos.THUNDERBOLT_CMD, hw_macos.NETWORKSETUP_CMD,
                                         ("ifconfig", "bridge0")]
    assert all(t > 0 for _c, t in run.calls)


def test_thunderbolt_links_bridge_unreadable_still_gives_ports():
    run = FakeRunner({hw_macos.THUNDERBOLT_CMD: fx(MBP_40), hw_macos.NETWORKSETUP_CMD: fx(PORTS)})
    links = hw_macos.thunderbolt_links(run)
    assert links["en6"].speed_mbit == 80000 and links["bridge0"].members == ()


@pytest.mark.parametrize("missing", [hw_macos.THUNDERBOLT_CMD, hw_macos.NETWORKSETUP_CMD])
def test_thunderbolt_links_none_when_a_command_fails(missing):
    answers = {hw_macos.THUNDERBOLT_CMD: fx(MBP), hw_macos.NETWORKSETUP_CMD: fx(PORTS)}
    del answers[missing]
    assert hw_macos.thunderbolt_links(FakeRunner(answers)) is None


def test_thunderbolt_links_garbage_is_empty_not_error():
    run = FakeRunner({hw_macos.THUNDERBOLT_CMD: "garbage", hw_macos.NETWORKSETUP_CMD: ""})
    assert hw_macos.thunderbolt_links(run) == {}


def test_ethernet_media_runner():
    run = FakeRunner({("ifconfig", "-m", "en10"): fx("ifconfig_m_en10_10G_at_1G_SYNTHETIC.txt")})
    link = hw_macos.ethernet_media("en10", run)
    assert (link.speed_mbit, link.max_mbit, link.cabled) == (1000, 10000, True)
    assert link.detail["subtype"] == "1000baseT"
    assert hw_macos.ethernet_media("en11", run) is None  # ifconfig failed: None
    assert hw_macos.ethernet_media("en10", FakeRunner({
        ("ifconfig", "-m", "en10"): fx("ifconfig_en10_2500baseT_SYNTHETIC.txt")})).speed_mbit \
        == 2500


@pytest.mark.parametrize("bad", ["", "-a", "en0; rm", "x" * 40, None])
def test_ethernet_media_refuses_odd_names(bad):
    run = FakeRunner({})
    assert hw_macos.ethernet_media(bad, run) is None
    assert run.calls == []


def test_wifi_rates_prefers_corewlan_then_system_profiler():
    run = FakeRunner({hw_macos_wifi.AIRPORT_CMD: fx("sp_airport_macos15.5_connected.json")})
    fast = hw_macos_wifi.wifi_rates(run, _client(_Iface(573.5)))
    assert fast["en0"].rate_mbit == 573.5 and run.calls == []
    slow = hw_macos_wifi.wifi_rates(run, lambda: None)
    assert slow["en0"].rate_mbit == 144.0 and len(run.calls) == 1
    assert hw_macos_wifi.wifi_rates(FakeRunner({}), lambda: None) is None
    off = FakeRunner({hw_macos_wifi.AIRPORT_CMD: fx("sp_airport_macos15.5_wifi_off.json")})
    assert hw_macos_wifi.wifi_rates(off, lambda: None) == {}


# --------------------------------------------------------------------------- run_command


def test_run_command_ok():
    assert hw_macos.run_command([sys.executable, "-c", "print('hi')"], 10) == "hi\n"


def test_run_command_failures_log_one_line(caplog):
    cases = [
        ([sys.executable, "-c", "import sys; sys.stderr.write('boom\\nmore'); sys.exit(3)"], 10,
         "exited 3: boom"),
        (["/nonexistent/exotray-no-such-binary"], 5, "exotray-no-such-binary failed"),
        ([sys.executable, "-c", "import time; time.sleep(5)"], 0.2, "timed out"),
    ]
    for argv, timeout, says in cases:
        caplog.clear()
        with caplog.at_level("WARNING", logger="exotray.agent.hw.macos"):
            assert hw_macos.run_command(argv, timeout) is None
        assert len(caplog.records) == 1, caplog.text
        assert "\n" not in caplog.records[0].getMessage()
        assert says in caplog.records[0].getMessage()


def test_run_command_does_not_raise_on_timeout_type(monkeypatch):
    def boom(*a, **k):
        raise subprocess.TimeoutExpired("x", 1)
    monkeypatch.setattr(hw_macos.subprocess, "run", boom)
    assert hw_macos.run_command(["x"], 1) is None


def test_corewlan_is_installed_on_macos_and_taken_before_system_profiler():
    """Issue 35 point 1: `CoreWLAN` is pyobjc-framework-CoreWLAN, not part of
    pyobjc-framework-Cocoa; without it as a dependency every Wi-Fi read ran
    system_profiler (seconds). Where it loads, system_profiler is not run at all."""
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    reqs = [Requirement(r) for r in
            tomllib.loads(pyproject.read_text())["project"]["dependencies"]]
    (wlan,) = [r for r in reqs if r.name.lower() == "pyobjc-framework-corewlan"]
    assert wlan.marker is not None
    assert wlan.marker.evaluate({"sys_platform": "darwin"})
    assert not wlan.marker.evaluate({"sys_platform": "linux"})

    ran: list[tuple] = []
    rates = hw_macos_wifi.wifi_rates(lambda argv, timeout: ran.append(argv),
                                     _client(_Iface(866.0)))
    assert rates["en0"].source == "corewlan" and ran == []
