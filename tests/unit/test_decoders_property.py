"""Property tests (hypothesis) of the two decoders that take input from the network:
every input is accepted as valid or rejected with a reason; nothing raises past them."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exotray.agent.probe import udp as P
from exotray.core.schema import REJECT_REASONS, Snapshot, SnapshotRejected, parse_snapshot

OWN = "aaaaaaaaaaaa"
SETTINGS = settings(max_examples=400, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

VALID = {
    "schema": 1, "node": {"id": "bbbbbbbbbbbb", "name": "studio-2", "version": "0.1.0"},
    "interval_s": 1.0, "data_age_s": 0.2,
    "interfaces": [{"name": "en0", "kind": "ethernet", "label": "Ethernet", "up": True,
                    "addresses": ["10.0.0.2"], "rx_bytes_per_s": 10.0, "tx_bytes_per_s": 5.0,
                    "capacity_bytes_per_s": 1.25e8, "capacity_source": "nic"}],
    "links": [{"id": "l1", "peer_id": "aaaaaaaaaaaa", "peer_name": "studio-1",
               "local_interface": "en0", "peer_address": "10.0.0.1", "peer_port": 52480,
               "state": "up", "rtt_ms": 0.4, "rtt_min_ms": 0.3, "rtt_max_ms": 0.9,
               "jitter_ms": 0.02, "loss": 0.0, "rx_bytes_per_s": 10.0, "tx_bytes_per_s": 5.0,
               "capacity_bytes_per_s": 1.25e8, "utilization": 0.01}],
}

json_scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=80))
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner,
                                                                max_size=5),
    max_leaves=30,
)


def _check(raw: bytes) -> None:
    try:
        snap = parse_snapshot(raw, own_id=OWN)
    except SnapshotRejected as e:
        assert e.reason in REJECT_REASONS
        return
    assert isinstance(snap, Snapshot)
    assert snap.node.id != OWN
    for link in snap.links:  # whatever was accepted is finite and non-negative
        for v in (link.rtt_ms, link.loss, link.utilization, link.rx_bytes_per_s):
            assert v is None or (math.isfinite(v) and v >= 0)


@SETTINGS
@given(st.binary(max_size=2048))
def test_arbitrary_bytes(raw):
    _check(raw)


@SETTINGS
@given(json_values)
def test_arbitrary_json(value):
    _check(json.dumps(value, allow_nan=True).encode())


def _mutations():
    paths = [("schema",), ("node", "id"), ("node", "name"), ("interval_s",), ("data_age_s",),
             ("interfaces", 0, "rx_bytes_per_s"), ("interfaces", 0, "kind"),
             ("links", 0, "rtt_ms"), ("links", 0, "loss"), ("links", 0, "peer_port"),
             ("links", 0, "state"), ("links", 0, "utilization"), ("links",), ("node",)]
    return st.tuples(st.sampled_from(paths), json_values)


@SETTINGS
@given(_mutations())
def test_one_field_replaced_by_anything(mutation):
    path, value = mutation
    doc = json.loads(json.dumps(VALID))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    _check(json.dumps(doc, allow_nan=True).encode())


@SETTINGS
@given(st.integers(0, len(json.dumps(VALID))))
def test_truncated(n):
    _check(json.dumps(VALID).encode()[:n])


def test_oversized_and_deep():
    _check(b"[" * 100_000 + b"]" * 100_000)
    _check(b'{"schema":1,"pad":"' + b"x" * (2 << 20) + b'"}')
    _check(json.dumps({**VALID, "node": {**VALID["node"], "id": OWN}}).encode())


@SETTINGS
@given(st.binary(max_size=200))
def test_probe_decoder_accepts_or_rejects(raw):
    try:
        p = P.decode(raw)
    except P.ProbeError as e:
        assert str(e) in ("size", "magic", "type")
        return
    assert len(raw) == P.PROBE_LEN and p.type in (P.REQUEST, P.REPLY)
    assert P.decode(P.encode(p)) == p  # fields survive a round trip


@SETTINGS
@given(st.integers(0, 2**64 - 1), st.integers(-(2**63), 2**63 - 1))
def test_probe_round_trip(seq, t):
    p = P.Probe(P.REQUEST, seq, t, 0, 0)
    assert P.decode(P.encode(p)) == p
