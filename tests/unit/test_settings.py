"""Agent settings: peers, capacities, config mappings and files (exotray.core.settings)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from exotray.core.settings import (
    DEFAULT_PORT,
    Settings,
    SettingsError,
    from_mapping,
    load_file,
    parse_capacity,
    parse_peer,
)


def test_default_port() -> None:
    assert DEFAULT_PORT == 52480


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("studio-2.local:52481", ("studio-2.local", 52481), id="host-port"),
        pytest.param("192.168.1.10:8080", ("192.168.1.10", 8080), id="ipv4-port"),
        pytest.param("studio-2.local", ("studio-2.local", DEFAULT_PORT), id="host-only-default"),
        pytest.param("10.0.0.2", ("10.0.0.2", DEFAULT_PORT), id="ipv4-only-default"),
        pytest.param("[fe80::1%en0]:9000", ("fe80::1%en0", 9000), id="v6-bracket-port"),
        pytest.param("[::1]", ("::1", DEFAULT_PORT), id="v6-bracket-no-port"),
        pytest.param("::1", ("::1", DEFAULT_PORT), id="bare-v6-default-port"),
        pytest.param("fd00::2:80", ("fd00::2:80", DEFAULT_PORT), id="bare-v6-is-all-host"),
        pytest.param("  host:1  ", ("host", 1), id="surrounding-space-stripped"),
        pytest.param("host:65535", ("host", 65535), id="max-port"),
    ],
)
def test_parse_peer(text: str, expected: tuple[str, int]) -> None:
    assert parse_peer(text) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("   ", "empty", id="blank"),
        pytest.param("host:0", "not in 1..65535", id="port-0"),
        pytest.param("host:65536", "not in 1..65535", id="port-65536"),
        pytest.param("host:-1", "not a number", id="port-negative"),
        pytest.param("host:http", "not a number", id="port-non-numeric"),
        pytest.param("host:", "not a number", id="port-empty"),
        pytest.param("host:80.5", "not a number", id="port-float"),
        pytest.param(":80", "missing host", id="missing-host"),
        pytest.param("[::1", "missing '\\]'", id="v6-unclosed"),
        pytest.param("[::1]80", "expected ':PORT'", id="v6-no-colon"),
        pytest.param("[::1]:", "not a number", id="v6-empty-port"),
        pytest.param("[::1]:0", "not in 1..65535", id="v6-port-0"),
        pytest.param("[]:80", "missing host", id="v6-empty-host"),
    ],
)
def test_parse_peer_rejects(text: str, match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        parse_peer(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("en0=1000", ("en0", 1000.0), id="int"),
        pytest.param("bridge0=40000", ("bridge0", 40000.0), id="thunderbolt"),
        pytest.param("wlan0=866.7", ("wlan0", 866.7), id="float"),
        pytest.param(" eth0 =100", ("eth0", 100.0), id="iface-stripped"),
        pytest.param("eth0= 100 ", ("eth0", 100.0), id="value-spaces"),
        pytest.param("eth0=1e4", ("eth0", 10000.0), id="exponent"),
        pytest.param("vlan.10=100", ("vlan.10", 100.0), id="dotted-iface"),
    ],
)
def test_parse_capacity(text: str, expected: tuple[str, float]) -> None:
    assert parse_capacity(text) == expected


@pytest.mark.parametrize(
    ("text", "match"),
    [
        pytest.param("en0", "expected IFACE=MBIT", id="no-equals"),
        pytest.param("=1000", "expected IFACE=MBIT", id="no-iface"),
        pytest.param(" =1000", "expected IFACE=MBIT", id="blank-iface"),
        pytest.param("en0=", "not a number", id="empty-value"),
        pytest.param("en0=fast", "not a number", id="non-numeric"),
        pytest.param("en0=1G", "not a number", id="unit-suffix"),
        pytest.param("en0=0", "positive", id="zero"),
        pytest.param("en0=-100", "positive", id="negative"),
        pytest.param("en0=nan", "positive", id="nan"),
        pytest.param("en0=inf", "positive", id="inf"),
    ],
)
def test_parse_capacity_rejects(text: str, match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        parse_capacity(text)


BASE = Settings(name="studio-1")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param({}, {}, id="empty-keeps-base"),
        pytest.param(
            {"port": 9000, "interval": 0.5}, {"port": 9000, "interval": 0.5}, id="numbers"
        ),
        pytest.param({"interval": 2}, {"interval": 2}, id="int-interval"),
        pytest.param(
            {"peers": ["a:1", "[::1]:2", "b"]},
            {"peers": ("a:1", "[::1]:2", "b")},
            id="peers-list-to-tuple",
        ),
        pytest.param(
            {"mdns_interfaces": ["192.168.1.2"]},
            {"mdns_interfaces": ("192.168.1.2",)},
            id="mdns-interfaces-tuple",
        ),
        pytest.param(
            {"capacity": {"en0": 1000, "bridge0": 40000.0}},
            {"capacity": {"en0": 1000, "bridge0": 40000.0}},
            id="capacity-table",
        ),
        pytest.param(
            {"mdns": False, "name": "rack-3", "events": "-"},
            {"mdns": False, "name": "rack-3", "events": "-"},
            id="bool-and-strings",
        ),
        pytest.param(
            {"threshold": 0.8, "sustain": 0, "clear": 10, "cooldown": 0},
            {"threshold": 0.8, "sustain": 0, "clear": 10, "cooldown": 0},
            id="saturation-params",
        ),
    ],
)
def test_from_mapping(data: dict[str, Any], expected: dict[str, Any]) -> None:
    got = from_mapping(data, base=BASE)
    assert got == replace(BASE, **expected)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        pytest.param({"colour": "blue"}, "unknown setting", id="unknown-key"),
        pytest.param({"port": 1, "intervall": 1}, "intervall", id="typo-named"),
        pytest.param({"peers": "a:1"}, "list of strings", id="peers-string"),
        pytest.param({"peers": ["a:1", 2]}, "list of strings", id="peers-non-string-item"),
        pytest.param({"mdns_interfaces": "eth0"}, "list of strings", id="mdns-ifaces-string"),
        pytest.param({"peers": ["host:0"]}, "not in 1..65535", id="peers-validated"),
        pytest.param({"capacity": [1000]}, "table", id="capacity-not-table"),
        pytest.param({"capacity": {"en0": 0}}, "positive", id="capacity-zero"),
        pytest.param(
            {"capacity": {"en0": "fast"}}, "capacity must be a table", id="capacity-string"
        ),
        pytest.param(
            {"interval": "1"}, "interval must be a number", id="interval-string"
        ),
        pytest.param({"port": "80"}, None, id="port-string"),
        pytest.param({"threshold": "0.9"}, None, id="threshold-string"),
        pytest.param(
            {"mdns": "false"},
            "mdns",
            id="mdns-string",
        ),
        pytest.param(
            {"interval": True},
            "interval",
            id="interval-bool",
        ),
        pytest.param(
            {"capacity": {"en0": True}},
            "capacity",
            id="capacity-bool",
        ),
        pytest.param({"threshold": 2}, "threshold", id="threshold-2"),
        pytest.param({"name": ""}, "name", id="empty-name"),
    ],
)
def test_from_mapping_rejects(data: dict[str, Any], match: str | None) -> None:
    with pytest.raises(SettingsError, match=match):
        from_mapping(data, base=BASE)


def test_from_mapping_does_not_mutate_input() -> None:
    data = {"peers": ["a:1"], "capacity": {"en0": 1}}
    from_mapping(data, base=BASE)
    assert data == {"peers": ["a:1"], "capacity": {"en0": 1}}


def test_defaults_validate() -> None:
    s = BASE.validate()
    assert (s.port, s.interval, s.threshold, s.sustain, s.clear, s.cooldown) == (
        52480,
        1.0,
        0.90,
        3.0,
        5.0,
        60.0,
    )


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        pytest.param({"interval": 0}, "interval", id="interval-0"),
        pytest.param({"interval": 0.01}, "interval", id="interval-too-short"),
        pytest.param({"interval": 61}, "interval", id="interval-too-long"),
        pytest.param({"interval": -1}, "interval", id="interval-negative"),
        pytest.param({"interval": math.nan}, "interval", id="interval-nan"),
        pytest.param({"interval": math.inf}, "interval", id="interval-inf"),
        pytest.param({"threshold": 2}, "threshold", id="threshold-2"),
        pytest.param({"threshold": 1.01}, "threshold", id="threshold-just-over-1"),
        pytest.param({"threshold": 0.05}, "threshold", id="threshold-too-low"),
        pytest.param({"threshold": math.nan}, "threshold", id="threshold-nan"),
        pytest.param({"sustain": -1}, "sustain", id="sustain-negative"),
        pytest.param({"clear": math.nan}, "clear", id="clear-nan"),
        pytest.param({"cooldown": -0.1}, "cooldown", id="cooldown-negative"),
        pytest.param({"down_after": math.inf}, "down_after", id="down-after-inf"),
        pytest.param({"port": -1}, "port", id="port-negative"),
        pytest.param({"port": 65536}, "port", id="port-65536"),
        pytest.param({"probes_per_interval": 0}, "probes_per_interval", id="probes-0"),
        pytest.param({"probes_per_interval": 21}, "probes_per_interval", id="probes-21"),
        pytest.param({"peers": ("ok:1", "bad:99999")}, "99999", id="bad-peer"),
        pytest.param({"capacity": {"en0": -5}}, "en0", id="capacity-negative"),
        pytest.param({"capacity": {"en0": math.inf}}, "en0", id="capacity-inf"),
        pytest.param({"name": ""}, "name", id="name-empty"),
        pytest.param({"name": "x" * 65}, "name", id="name-65"),
    ],
)
def test_validate_rejects(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(SettingsError, match=match):
        replace(BASE, **changes).validate()


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({"interval": 0.05}, id="interval-min"),
        pytest.param({"interval": 60}, id="interval-max"),
        pytest.param({"threshold": 0.1}, id="threshold-min"),
        pytest.param({"threshold": 1.0}, id="threshold-max"),
        pytest.param({"port": 0}, id="port-0-ephemeral"),
        pytest.param({"sustain": 0, "clear": 0, "cooldown": 0}, id="zero-times"),
        pytest.param({"probes_per_interval": 1}, id="probes-1"),
        pytest.param({"probes_per_interval": 20}, id="probes-20"),
        pytest.param({"name": "x" * 64}, id="name-64"),
    ],
)
def test_validate_accepts_bounds(changes: dict[str, Any]) -> None:
    s = replace(BASE, **changes)
    assert s.validate() is s


def test_load_file_valid(tmp_path: Path) -> None:
    path = tmp_path / "exotray.toml"
    path.write_text(
        'name = "rack-3"\ninterval = 0.5\npeers = ["10.0.0.2:52480"]\n\n[capacity]\nen0 = 1000\n'
    )
    data = load_file(path)
    assert data == {
        "name": "rack-3",
        "interval": 0.5,
        "peers": ["10.0.0.2:52480"],
        "capacity": {"en0": 1000},
    }
    s = from_mapping(data, base=BASE)
    assert (s.name, s.peers, s.capacity) == ("rack-3", ("10.0.0.2:52480",), {"en0": 1000})


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        pytest.param("missing.toml", None, "cannot read config", id="missing"),
        pytest.param("dir.toml", "DIR", "cannot read config", id="directory"),
        pytest.param("bad.toml", b"name = \n", "not valid TOML", id="syntax-error"),
        pytest.param("dup.toml", b"port = 1\nport = 2\n", "not valid TOML", id="duplicate-key"),
        pytest.param("quote.toml", b'name = "unterminated\n', "not valid TOML", id="open-string"),
        pytest.param(
            "latin1.toml",
            b'name = "K\xfcche"\n',
            "not UTF-8 text",
            id="invalid-utf8",
        ),
    ],
)
def test_load_file_errors(
    tmp_path: Path, name: str, content: bytes | str | None, match: str
) -> None:
    path = tmp_path / name
    if content == "DIR":
        path.mkdir()
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(SettingsError, match=match):
        load_file(path)


@pytest.mark.parametrize("port", [-1, 65536, 99999])
def test_capacity_port_out_of_range_is_a_settings_error(port):
    with pytest.raises(SettingsError, match="capacity_port"):
        Settings(capacity_port=port).validate()
