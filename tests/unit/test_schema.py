"""Validation of peers' snapshots (exotray.core.schema.parse_snapshot)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from exotray.core.schema import (
    MAX_SNAPSHOT_BYTES,
    REJECT_REASONS,
    Snapshot,
    SnapshotRejected,
    dump,
    parse_snapshot,
)

PEER_ID = "a1b2c3d4e5f6"
OWN_ID = "0f1e2d3c4b5a"


def realistic() -> dict[str, Any]:
    """A snapshot as studio-2 would serve it: two interfaces, two links to one peer."""
    return {
        "schema": 1,
        "node": {"id": PEER_ID, "name": "studio-2", "version": "0.1.0"},
        "interval_s": 1.0,
        "data_age_s": 0.12,
        "interfaces": [
            {
                "name": "bridge0",
                "kind": "thunderbolt",
                "label": "Thunderbolt Bridge",
                "up": True,
                "addresses": ["169.254.10.2", "fe80::1c2a:3bff:fe4d:5e6f%bridge0"],
                "rx_bytes_per_s": 1.2e9,
                "tx_bytes_per_s": 3.4e7,
                "capacity_bytes_per_s": 5e9,
                "capacity_source": "kind",
            },
            {
                "name": "en0",
                "kind": "ethernet",
                "label": "Ethernet",
                "up": True,
                "addresses": ["192.168.1.20"],
                "rx_bytes_per_s": 1024,
                "tx_bytes_per_s": 0,
                "capacity_bytes_per_s": None,
                "capacity_source": "unknown",
            },
        ],
        "links": [
            {
                "id": "3f9a0c1d2b4e5f60",
                "peer_id": OWN_ID,
                "peer_name": "mbp",
                "local_interface": "bridge0",
                "local_label": "Thunderbolt Bridge",
                "peer_address": "169.254.10.1",
                "peer_port": 52480,
                "state": "saturated",
                "rtt_ms": 0.41,
                "rtt_min_ms": 0.3,
                "rtt_max_ms": 0.9,
                "rtt_p90_ms": 0.7,
                "rtt_last_ms": 0.4,
                "jitter_ms": 0.05,
                "loss": 0.0,
                "rx_bytes_per_s": 1.2e9,
                "tx_bytes_per_s": 3.4e7,
                "capacity_bytes_per_s": 5e9,
                "capacity_source": "kind",
                "utilization": 0.24,
            },
            {
                "id": "77aa01bc23de45f6",
                "peer_id": None,
                "peer_name": None,
                "local_interface": None,
                "peer_address": "192.168.1.10",
                "peer_port": 52480,
                "state": "down",
                "rtt_ms": None,
                "rtt_min_ms": None,
                "rtt_max_ms": None,
                "jitter_ms": None,
                "loss": 1.0,
                "rx_bytes_per_s": None,
                "tx_bytes_per_s": None,
                "capacity_bytes_per_s": None,
                "utilization": None,
            },
        ],
    }


def encode(obj: Any) -> bytes:
    return json.dumps(obj).encode()


def test_realistic_snapshot_parses() -> None:
    snap = parse_snapshot(encode(realistic()), own_id=OWN_ID, expected_id=PEER_ID)
    assert isinstance(snap, Snapshot)
    assert snap.node.name == "studio-2"
    assert [i.name for i in snap.interfaces] == ["bridge0", "en0"]
    assert [lk.state for lk in snap.links] == ["saturated", "down"]
    assert snap.links[1].capacity_source == "unknown"  # default
    assert snap.interfaces[1].rx_bytes_per_s == 1024.0  # JSON int accepted for a float


def test_dump_round_trips() -> None:
    snap = parse_snapshot(encode(realistic()))
    again = parse_snapshot(encode(dump(snap)))
    assert again == snap
    assert dump(snap)["schema"] == 1


def test_unknown_fields_ignored() -> None:
    d = realistic()
    d["future_top"] = {"anything": [1, 2, 3]}
    d["node"]["os"] = "macOS 15"
    d["interfaces"][0]["mtu"] = 9000
    d["links"][0]["bufferbloat_ms"] = 3.5
    snap = parse_snapshot(encode(d))
    assert snap.links[0].rtt_ms == 0.41
    assert not hasattr(snap, "future_top")


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """Mutator setting a dotted path (list indexes as numbers) to value."""

    def mutate(d: dict) -> None:
        *parents, last = path.split(".")
        obj: Any = d
        for p in parents:
            obj = obj[int(p)] if isinstance(obj, list) else obj[p]
        if isinstance(obj, list):
            obj[int(last)] = value
        else:
            obj[last] = value

    return mutate


def _del(path: str) -> Callable[[dict], None]:
    def mutate(d: dict) -> None:
        *parents, last = path.split(".")
        obj: Any = d
        for p in parents:
            obj = obj[int(p)] if isinstance(obj, list) else obj[p]
        del obj[last]

    return mutate


def _many_links(n: int) -> Callable[[dict], None]:
    def mutate(d: dict) -> None:
        base = d["links"][1]
        d["links"] = [dict(copy.deepcopy(base), id=f"l{i}") for i in range(n)]

    return mutate


INVALID = [
    ("negative-rate", _set("interfaces.0.rx_bytes_per_s", -1.0)),
    ("negative-link-rate", _set("links.0.tx_bytes_per_s", -0.5)),
    ("rate-above-80-tbit", _set("links.0.rx_bytes_per_s", 2e13)),
    ("rate-overflowing-to-inf", None),  # raw JSON below
    ("rate-as-string", _set("interfaces.0.rx_bytes_per_s", "1200")),
    ("bool-for-number", _set("links.0.rtt_ms", True)),
    ("bool-for-port", _set("links.0.peer_port", True)),
    ("string-for-bool", _set("interfaces.0.up", "true")),
    ("float-for-port", _set("links.0.peer_port", 52480.5)),
    ("unknown-link-state", _set("links.0.state", "flapping")),
    ("unknown-kind", _set("interfaces.0.kind", "infiniband")),
    ("unknown-capacity-source", _set("interfaces.0.capacity_source", "guess")),
    ("port-0", _set("links.0.peer_port", 0)),
    ("port-70000", _set("links.0.peer_port", 70000)),
    ("loss-1.5", _set("links.0.loss", 1.5)),
    ("loss-negative", _set("links.0.loss", -0.1)),
    ("rtt-negative", _set("links.0.rtt_min_ms", -0.1)),
    ("rtt-over-an-hour", _set("links.0.rtt_max_ms", 3_600_001)),
    ("utilization-negative", _set("links.0.utilization", -0.01)),
    ("interval-zero", _set("interval_s", 0)),
    ("data-age-negative", _set("data_age_s", -1)),
    ("65-char-name", _set("node.name", "x" * 65)),
    ("empty-name", _set("node.name", "")),
    ("bad-chars-in-id", _set("node.id", "studio 2")),
    ("at-sign-in-link-id", _set("links.0.id", "a@b")),
    ("65-char-id", _set("node.id", "a" * 65)),
    ("version-too-long", _set("node.version", "1" * 33)),
    ("bad-address", _set("links.0.peer_address", "169.254.10.1; rm -rf /")),
    ("too-many-addresses", _set("interfaces.0.addresses", ["10.0.0.1"] * 65)),
    ("too-many-links", _many_links(1025)),
    ("links-not-a-list", _set("links", {"a": 1})),
    ("missing-node", _del("node")),
    ("missing-link-rtt", _del("links.0.rtt_ms")),
    ("missing-interface-capacity-source", _del("interfaces.0.capacity_source")),
    ("null-node", _set("node", None)),
    ("null-link", _set("links.0", None)),
    ("null-peer-port", _set("links.0.peer_port", None)),
    # a link's own bytes (issue 30): finite, non-negative, bounded as rates; a known source
    ("negative-flow-rate", _set("links.0.flow_rx_bytes_per_s", -1.0)),
    ("flow-rate-above-80-tbit", _set("links.0.flow_tx_bytes_per_s", 2e13)),
    ("flow-rate-as-string", _set("links.0.flow_tx_bytes_per_s", "5e6")),
    ("unknown-flow-source", _set("links.0.flow_source", "pcap")),
]


#: text a peer controls and the UI shows, with characters that are not plain text:
#: terminal escapes and controls (Cc), bidi overrides and other format characters (Cf,
#: "exe.gnp" shown as "png.exe"), line and paragraph separators (Zl, Zp)
UNSAFE = [
    ("control-char-in-node-name", _set("node.name", "studio\x1b[2J")),
    ("newline-in-interface-name", _set("interfaces.0.name", "en0\n")),
    ("nul-in-label", _set("interfaces.0.label", "Thunder\x00bolt")),
    ("del-in-peer-name", _set("links.0.peer_name", "mbp\x7f")),
    ("c1-control-in-node-name", _set("node.name", "studio\x9b2J")),
    ("rlo-in-node-name", _set("node.name", "studio-\u202eexe.gnp")),
    ("rlm-in-peer-name", _set("links.0.peer_name", "mbp\u200f")),
    ("isolate-in-label", _set("interfaces.0.label", "\u2066Ethernet\u2069")),
    ("bom-in-local-label", _set("links.0.local_label", "\ufeffThunderbolt")),
    ("line-separator-in-local-interface", _set("links.0.local_interface", "en0\u2028en1")),
    ("paragraph-separator-in-name", _set("node.name", "a\u2029b")),
    ("rlo-in-version", _set("node.version", "0.1.0\u202e")),
    ("control-in-capacity-stamp", _set("interfaces.0.capacity_measured_at", "2024\x1b")),
]


def _invalid_raw(case: str, mutate: Callable[[dict], None] | None) -> bytes:
    if mutate is None:  # 1e400 is valid JSON syntax but not a finite float
        return encode(realistic()).replace(b'"rx_bytes_per_s": 1024', b'"rx_bytes_per_s": 1e400')
    d = realistic()
    mutate(d)
    return encode(d)


REJECTIONS = [
    pytest.param(b"{" + b" " * MAX_SNAPSHOT_BYTES + b"}", {}, "too_large", id="too_large-over-cap"),
    pytest.param(encode(realistic()), {"max_bytes": 100}, "too_large", id="too_large-custom-cap"),
    pytest.param(b"", {}, "not_json", id="not_json-empty"),
    pytest.param(b"<html>502 Bad Gateway</html>", {}, "not_json", id="not_json-html"),
    pytest.param(b'{"schema": 1,', {}, "not_json", id="not_json-truncated"),
    pytest.param(b'{"schema": NaN}', {}, "not_json", id="not_json-NaN"),
    pytest.param(b'{"schema": Infinity}', {}, "not_json", id="not_json-Infinity"),
    pytest.param(b'{"schema": -Infinity}', {}, "not_json", id="not_json-minus-Infinity"),
    pytest.param(
        encode(realistic()).replace(b'"rtt_ms": 0.41', b'"rtt_ms": NaN'),
        {},
        "not_json",
        id="not_json-NaN-deep-in-link",
    ),
    pytest.param(b"[" * 10_000 + b"]" * 10_000, {}, "not_json", id="not_json-10000-deep-arrays"),
    pytest.param(
        b'{"a":' * 10_000 + b"1" + b"}" * 10_000, {}, "not_json", id="not_json-10000-deep-objects"
    ),
    pytest.param(b"\xff\xfe{}", {}, "not_json", id="not_json-invalid-utf8"),
    pytest.param(b"[]", {}, "not_object", id="not_object-list"),
    pytest.param(b"1", {}, "not_object", id="not_object-number"),
    pytest.param(b'"snapshot"', {}, "not_object", id="not_object-string"),
    pytest.param(b"null", {}, "not_object", id="not_object-null"),
    pytest.param(
        encode({k: v for k, v in realistic().items() if k != "schema"}),
        {},
        "schema_version",
        id="schema_version-missing",
    ),
    pytest.param(encode(dict(realistic(), schema=2)), {}, "schema_version", id="schema_version-2"),
    pytest.param(encode(dict(realistic(), schema=0)), {}, "schema_version", id="schema_version-0"),
    pytest.param(
        encode(dict(realistic(), schema="1")), {}, "schema_version", id="schema_version-string-1"
    ),
    pytest.param(
        encode(dict(realistic(), schema=True)), {}, "schema_version", id="schema_version-true"
    ),
    pytest.param(
        encode(dict(realistic(), schema=None)), {}, "schema_version", id="schema_version-null"
    ),
    *[
        pytest.param(_invalid_raw(name, m), {}, "invalid", id=f"invalid-{name}")
        for name, m in INVALID
    ],
    *[
        pytest.param(_invalid_raw(name, m), {}, "unsafe_text", id=f"unsafe_text-{name}")
        for name, m in UNSAFE
    ],
    pytest.param(encode(realistic()), {"own_id": PEER_ID}, "own_id", id="own_id"),
    pytest.param(
        encode(realistic()),
        {"own_id": OWN_ID, "expected_id": "other.node"},
        "id_mismatch",
        id="id_mismatch",
    ),
]


@pytest.mark.parametrize(("raw", "kwargs", "reason"), REJECTIONS)
def test_rejected(raw: bytes, kwargs: dict, reason: str) -> None:
    with pytest.raises(SnapshotRejected) as info:
        parse_snapshot(raw, **kwargs)
    assert info.value.reason == reason, info.value.detail
    assert isinstance(info.value, ValueError)


def test_every_reject_reason_is_covered() -> None:
    covered = {p.values[2] for p in REJECTIONS}
    assert covered == set(REJECT_REASONS)


@pytest.mark.parametrize(
    ("mutate", "check"),
    [
        pytest.param(
            _set("links.0.utilization", 1.4),
            lambda s: s.links[0].utilization == 1.4,
            id="utilization-above-1-allowed",
        ),
        pytest.param(  # 17414 %: loopback traffic far above a 40 Mbit/s override (the demo)
            _set("links.0.utilization", 174.14),
            lambda s: s.links[0].utilization == 174.14,
            id="utilization-far-over-a-small-override-allowed",
        ),
        pytest.param(_set("links", []), lambda s: len(s.links) == 0, id="no-links"),
        pytest.param(_set("interfaces", []), lambda s: len(s.interfaces) == 0, id="no-interfaces"),
        pytest.param(
            _set("node.name", "x" * 64), lambda s: len(s.node.name) == 64, id="64-char-name"
        ),
        pytest.param(
            _set("node.name", "Küche · studio"),
            lambda s: s.node.name == "Küche · studio",
            id="unicode-name",
        ),
        pytest.param(_many_links(1024), lambda s: len(s.links) == 1024, id="1024-links"),
        pytest.param(
            _set("links.0.peer_port", 65535),
            lambda s: s.links[0].peer_port == 65535,
            id="port-65535",
        ),
        pytest.param(
            _set("links.0.peer_port", 1), lambda s: s.links[0].peer_port == 1, id="port-1"
        ),
        pytest.param(_set("links.0.loss", 0), lambda s: s.links[0].loss == 0.0, id="loss-int-0"),
        pytest.param(
            lambda d: d["links"][0].update(flow_rx_bytes_per_s=5.0e6, flow_tx_bytes_per_s=0,
                                           flow_source="sockets"),
            lambda s: (s.links[0].flow_rx_bytes_per_s, s.links[0].flow_source)
            == (5.0e6, "sockets"), id="flow-rates"),
        pytest.param(
            lambda d: None,  # (realistic() is an older agent's: no flow fields)
            lambda s: s.links[0].flow_source is None and s.links[0].flow_rx_bytes_per_s is None,
            id="no-flow-fields-from-an-older-agent"),
    ],
)
def test_accepted_edge_values(mutate: Callable[[dict], None], check: Callable) -> None:
    d = realistic()
    mutate(d)
    assert check(parse_snapshot(encode(d)))


def test_own_and_expected_id_pass_when_matching() -> None:
    snap = parse_snapshot(encode(realistic()), own_id="someone.else", expected_id=PEER_ID)
    assert snap.node.id == PEER_ID


def test_size_cap_is_inclusive() -> None:
    raw = encode(realistic())
    assert parse_snapshot(raw, max_bytes=len(raw)).node.id == PEER_ID


def test_unsafe_text_says_where_and_which_character() -> None:
    d = realistic()
    d["links"][0]["peer_name"] = "update\u202egpj.exe"
    with pytest.raises(SnapshotRejected) as info:
        parse_snapshot(encode(d))
    assert info.value.reason == "unsafe_text"
    assert info.value.detail == "links.0.peer_name: contains U+202E, a format character"


@pytest.mark.parametrize("name", [
    "studio-2", "Mac Studio de Zoë", "工作站", "Küche · studio", "Ελένη’s MacBook",
    "<b>x</b> & y", "studio 2 (rack)",
    "کامپیوتر\u200cمن",  # Persian: the zero-width non-joiner belongs inside words
    "👩\u200d💻 lab",  # an emoji sequence joined with U+200D
])
def test_ordinary_unicode_names_stay_valid(name: str) -> None:
    d = realistic()
    d["node"]["name"] = name
    d["links"][0]["peer_name"] = name
    d["interfaces"][0]["label"] = name
    snap = parse_snapshot(encode(d))
    assert snap.node.name == snap.links[0].peer_name == snap.interfaces[0].label == name
