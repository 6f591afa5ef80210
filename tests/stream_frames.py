"""Snapshots and frames of the stream sharing protocol, for the tests."""

from __future__ import annotations

import copy
import hashlib

from exotray.agent.share import wire as W

PEER_ID = "bbbbbbbbbbbb"

LINK = {
    "id": "b-a-1", "peer_id": "aaaaaaaaaaaa", "peer_name": "a", "local_interface": "lo",
    "local_label": "Loopback", "peer_address": "127.0.0.1", "peer_port": 5000, "state": "up",
    "rtt_ms": 0.05, "rtt_min_ms": 0.04, "rtt_max_ms": 0.1, "rtt_p90_ms": 0.08,
    "rtt_last_ms": 0.05, "jitter_ms": 0.01, "loss": 0.0, "rx_bytes_per_s": 1234.5,
    "tx_bytes_per_s": 2345.6, "capacity_bytes_per_s": None, "capacity_source": "unknown",
    "utilization": None,
}
IFACE = {
    "name": "lo", "kind": "loopback", "label": "Loopback", "up": True,
    "addresses": ["127.0.0.1"], "rx_bytes_per_s": 1.0, "tx_bytes_per_s": 1.0,
    "capacity_bytes_per_s": None, "capacity_source": "unknown", "capacity_measured_at": None,
}


def snapshot(node_id: str = PEER_ID, name: str = "evil", links: int = 1) -> dict:
    """A valid snapshot as views.snapshot builds it (shared fields only)."""
    return {
        "schema": 1, "node": {"id": node_id, "name": name, "version": "0"},
        "interval_s": 1.0, "data_age_s": 0.0, "interfaces": [copy.deepcopy(IFACE)],
        "links": [{**LINK, "id": f"b-a-{i + 1}"} for i in range(links)],
    }


def frame(kind: bytes, seq: int, body: bytes, *, key: bytes | None = None,
          stream_id: str = "", nonce: str = "") -> bytes:
    sig = None
    if key is not None:
        sig = W.mac(key, stream_id, nonce, kind, seq, hashlib.sha256(body).digest())
    return W.header(kind, seq, len(body), sig) + body


def full(snap: dict | None = None, seq: int = 1, **kw: object) -> bytes:
    return frame(W.FULL, seq, W.full_body(W.split(snap or snapshot()), 0.0), **kw)


def delta(obj: dict, seq: int = 2, **kw: object) -> bytes:
    return frame(W.DELTA, seq, W.encode(obj), **kw)
