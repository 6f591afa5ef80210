"""The stream sharing protocol's bytes: display resolution, deltas that rebuild the
sender's snapshot exactly, and refusals of bad frames with the snapshot's own reasons."""

from __future__ import annotations

import copy

import pytest
from stream_frames import PEER_ID, delta, frame, full, snapshot

from exotray.agent.share import numbers as N
from exotray.agent.share import wire as W
from exotray.core.schema import SnapshotRejected, dump


@pytest.mark.parametrize(("field", "value", "expect"), [
    ("rx_bytes_per_s", 1234567.8, 1230000.0),
    ("tx_bytes_per_s", 0.0123456, 0.0),  # whole bytes below 100 B/s, as core/fmt shows them
    ("tx_bytes_per_s", 12.7, 13.0),
    ("rtt_ms", 0.12345, 0.12),
    ("jitter_ms", 12.3456, 12.3),  # 0.1 ms from 1 ms on, 1 ms from 100 ms
    ("rtt_ms", 123.4, 123.0),
    ("utilization", 0.312, 0.31),
    ("utilization", 0.3126, 0.315),
    ("loss", 0.01234, 0.012),
    ("peer_port", 52480, 52480),
    ("rtt_ms", None, None),
    ("state", "up", "up"),
])
def test_display_resolution(field, value, expect):
    assert N.quantize(field, value) == pytest.approx(expect) if expect is not None \
        else N.quantize(field, value) is None


def _mirror_of(snap: dict) -> tuple[W.Mirror, W.State]:
    m = W.Mirror("aaaaaaaaaaaa", None)
    state = W.split(snap)
    m.full(W.full_body(state, 0.0))
    return m, state


def test_deltas_rebuild_the_senders_snapshot():
    snap = snapshot(links=3)
    m, old = _mirror_of(snap)
    new_snap = copy.deepcopy(snap)
    new_snap["links"][0]["rtt_ms"] = 0.75  # moved: sent
    new_snap["links"][1]["rx_bytes_per_s"] = 1234.6  # below resolution: not sent
    del new_snap["links"][2]
    new_snap["links"].append({**snap["links"][0], "id": "b-a-9", "state": "saturated"})
    new_snap["interfaces"][0]["up"] = False
    new_snap["interval_s"] = 2.0
    new = W.split(new_snap)
    d = W.delta(old, new, 0.4)
    assert set(d["links"]["set"]) == {"b-a-1"} and d["links"]["set"]["b-a-1"] == {"rtt_ms": 0.75}
    assert d["links"]["del"] == ["b-a-3"] and [r["id"] for r in d["links"]["add"]] == ["b-a-9"]
    assert d["top"] == {"interval_s": 2.0}
    got = dump(m.delta(W.encode(d)))
    want = W.full_body(new, 0.4)
    assert got == dump(W.Mirror(None, None).full(want))
    assert got["data_age_s"] == 0.4
    # nothing moved: a heartbeat with the age only
    assert W.delta(new, new, 0.2) == {"age": 0.2}
    assert m.delta(W.encode({"age": 0.2})).data_age_s == 0.2


def _refusal(m: W.Mirror, body: bytes) -> str:
    with pytest.raises((W.FrameError, SnapshotRejected)) as e:
        m.delta(body)
    return e.value.reason


@pytest.mark.parametrize(("body", "reason"), [
    (b'{"age":0,"links":{"set":{"nope":{"rtt_ms":1}}}}', "unknown_link"),
    (b'{"age":0,"links":{"del":["nope"]}}', "unknown_link"),
    (b'{"age":0,"interfaces":{"set":{"eth9":{"up":false}}}}', "unknown_link"),
    (b'{"age":0,"links":{"set":{"b-a-1":{"rtt_ms":-1}}}}', "invalid"),
    (b'{"age":0,"links":{"set":{"b-a-1":{"rtt_ms":NaN}}}}', "not_json"),
    (b'{"age":0,"links":{"add":[{"id":"x"}]}}', "invalid"),
    (b'{"age":0,"links":{"set":{"b-a-1":{"peer_name":"a\\u202egnp.exe"}}}}', "unsafe_text"),
    (b'{"age":0,"links":{"set":{"b-a-1":{"id":"other"}}}}', "bad_frame"),
    (b'{"age":0,"links":[1]}', "bad_frame"),
    (b'{"age":0,"top":{"node":{"id":"cccccccccccc","name":"x","version":"0"}}}',
     "bad_frame"),
    (b'{"age":-1}', "invalid"),
    (b'{"links":{}}', "invalid"),
    (b"not json", "not_json"),
    (b"[1]", "not_object"),
])
def test_bad_deltas_are_refused_and_change_nothing(body, reason):
    m, _ = _mirror_of(snapshot())
    before = dump(m.snap)
    assert _refusal(m, body) == reason
    assert dump(m.snap) == before
    assert dump(m.delta(b'{"age":0.0}')) == before  # the mirror still works


def test_a_delta_before_any_full_snapshot_is_refused():
    assert _refusal(W.Mirror(None, None), b'{"age":0}') == "delta_before_full"


def test_a_full_snapshot_is_checked_as_a_polled_one():
    with pytest.raises(SnapshotRejected) as e:
        W.Mirror(PEER_ID, None).full(W.full_body(W.split(snapshot()), 0))
    assert e.value.reason == "own_id"
    with pytest.raises(SnapshotRejected) as e:
        W.Mirror(None, "cccccccccccc").full(W.full_body(W.split(snapshot()), 0))
    assert e.value.reason == "id_mismatch"


def test_reader_splits_frames_across_chunks():
    data = full() + delta({"age": 0.1}) + delta({"age": 0.2}, seq=3)
    r = W.FrameReader()
    got = []
    for i in range(0, len(data), 7):
        got += r.feed(data[i:i + 7])
    r.end()
    assert [(k, s) for k, s, *_ in got] == [(W.FULL, 1), (W.DELTA, 2), (W.DELTA, 3)]
    assert sum(size for *_, size in got) == len(data)


@pytest.mark.parametrize(("data", "reason"), [
    (W.header(W.FULL, 1, W.MAX_FRAME + 1, None), "too_large"),
    (b"X 1 2 -\n{}", "bad_frame"),
    (b"F one 2 -\n{}", "bad_frame"),
    (b"F" * (W.MAX_HEADER + 1), "bad_frame"),
])
def test_reader_refuses_bad_headers_before_reading_the_body(data, reason):
    with pytest.raises(W.FrameError) as e:
        W.FrameReader().feed(data)
    assert e.value.reason == reason


def test_a_stream_that_ends_inside_a_frame_is_truncated():
    r = W.FrameReader()
    assert r.feed(full()[:-5]) == []
    with pytest.raises(W.FrameError) as e:
        r.end()
    assert e.value.reason == "truncated"


def test_signature_covers_stream_nonce_sequence_and_body():
    key = b"k" * 32
    body = b'{"age":0}'
    f = frame(W.DELTA, 5, body, key=key, stream_id="ab", nonce="cd")
    kind, seq, _length, sig = W.parse_header(f.split(b"\n", 1)[0])
    assert W.signed(key, "ab", "cd", kind, seq, body, sig)
    assert not W.signed(key, "ab", "cd", kind, 6, body, sig)  # another place in the stream
    assert not W.signed(key, "ab", "ce", kind, seq, body, sig)  # another subscriber
    assert not W.signed(key, "xx", "cd", kind, seq, body, sig)  # another stream
    assert not W.signed(key, "ab", "cd", kind, seq, b'{"age":1}', sig)
    assert not W.signed(b"j" * 32, "ab", "cd", kind, seq, body, sig)
    assert not W.signed(key, "ab", "cd", kind, seq, body, "-")
