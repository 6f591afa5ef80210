"""What the msgspec models refuse beyond the table of test_schema.py: the edges where
msgspec and pydantic differ by default (a trailing newline through `$`, numbers too large
for a double, list caps after a delta), where a refusal points, and one probe's RTT kept
off the stream."""

from __future__ import annotations

import copy
import json

import pytest
from stream_frames import snapshot

from exotray.agent.share import wire as W
from exotray.core import schema
from exotray.core.schema import SnapshotRejected, parse_snapshot


def _reason(doc: dict | bytes) -> tuple[str, str]:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    with pytest.raises(SnapshotRejected) as e:
        parse_snapshot(raw)
    return e.value.reason, e.value.detail


@pytest.mark.parametrize(("path", "value"), [
    (("node", "id"), "bbbbbbbbbbbb\n"),  # Python's `$` matches before a final newline
    (("links", 0, "peer_address"), "127.0.0.1\n"),
    (("links", 0, "peer_port"), 2**70),  # an integer no int64 holds
    (("links", 0, "peer_port"), 5000.0),  # a float, even a whole one, is not a port
    (("interfaces", 0, "up"), 1),  # an int is not a bool
])
def test_edges_are_invalid(path, value):
    doc = snapshot()
    target = doc
    for p in path[:-1]:
        target = target[p]
    target[path[-1]] = value
    assert _reason(doc)[0] == "invalid"


def test_a_refusal_names_its_place():
    doc = snapshot()
    doc["links"][0]["exo_instances"] = [{"id": "i1", "model": "llama\u202e", "backend": "ring"}]
    assert _reason(doc) == ("unsafe_text", "links.0.exo_instances.0.model: contains U+202E, "
                                           "a format character")
    doc = snapshot()
    doc["interfaces"][0]["members"] = ["en1", "en2\x1b"]
    assert _reason(doc)[0] == "unsafe_text"
    doc = snapshot()
    doc["links"][0]["rtt_ms"] = -1
    reason, detail = _reason(doc)
    assert reason == "invalid" and detail.startswith("links.0.rtt_ms: ")


def test_a_number_beyond_a_double_in_a_delta_is_invalid():
    m = W.Mirror(None, None)
    m.full(W.full_body(W.split(snapshot()), 0.0))
    with pytest.raises(SnapshotRejected) as e:
        m.delta(b'{"age":0,"links":{"set":{"b-a-1":{"rtt_ms":1e400}}}}')
    assert e.value.reason == "invalid"


def test_deltas_cannot_grow_a_snapshot_past_the_link_cap():
    snap = snapshot(links=schema.MAX_LINKS)
    m = W.Mirror(None, None)
    m.full(W.full_body(W.split(snap), 0.0))
    more = copy.deepcopy(snap)
    more["links"].append({**snap["links"][0], "id": "one-too-many"})
    d = W.delta(W.split(snap), W.split(more), 0.0)
    with pytest.raises(SnapshotRejected) as e:
        m.delta(W.encode(d))
    assert e.value.reason == "invalid" and "snapshot.links" in e.value.detail
    assert len(m.snap.links) == schema.MAX_LINKS


def test_one_probes_rtt_is_not_streamed_but_an_older_agents_is_taken():
    snap = snapshot()
    assert snap["links"][0]["rtt_last_ms"] == 0.05
    state = W.split(snap)
    assert "rtt_last_ms" not in state[1]["b-a-1"]
    mirrored = W.Mirror(None, None).full(W.full_body(state, 0.0))
    assert mirrored.links[0].rtt_last_ms is None  # unknown on the receiver, not 0
    moved = copy.deepcopy(snap)
    moved["links"][0]["rtt_last_ms"] = 0.5
    assert W.delta(state, W.split(moved), 0.0) == {"age": 0.0}  # nothing to send
    # an agent of the previous version sends it, in its full snapshot and its deltas
    old = W.Mirror(None, None)
    old.full(W.encode(snap))
    assert old.snap.links[0].rtt_last_ms == 0.05
    got = old.delta(b'{"age":0,"links":{"set":{"b-a-1":{"rtt_last_ms":0.07}}}}')
    assert got.links[0].rtt_last_ms == 0.07


def test_dump_is_the_json_the_sender_built():
    snap = snapshot()
    parsed = parse_snapshot(json.dumps(snap).encode())
    assert list(schema.dump(parsed)) == list(snap)  # the same keys in the same order
    link = schema.dump(parsed)["links"][0]
    assert list(link) == list(schema.Link.__struct_encode_fields__)  # the models' order
    snap["interfaces"][0]["rx_bytes_per_s"] = 1024
    value = schema.dump(parse_snapshot(json.dumps(snap).encode()))["interfaces"][0]
    assert repr(value["rx_bytes_per_s"]) == "1024.0"  # a float field dumps a float


def test_a_refusal_quotes_hostile_text_escaped():
    """A refusal's detail goes to the log and to the peer's last error (shown by `exotray
    status`): msgspec quotes a bad enum value as Python's repr does, escaped."""
    doc = snapshot()
    doc["links"][0]["state"] = "up\u202e\x1b[2J" + "x" * 300
    reason, detail = _reason(doc)
    assert reason == "invalid" and "\\u202e\\x1b" in detail
    assert schema.unsafe_char(detail) is None and len(detail) <= 200
