"""The --events file is bounded (issue 18 finding 9): past its size it is renamed to
FILE.1 and a new one begun; nothing is lost between them and every line stays whole."""

from __future__ import annotations

import json

from exotray.agent.base.limits import EVENTS_FILE_MAX_BYTES
from exotray.agent.base.throttle import Throttled
from exotray.agent.history.eventsink import EventSink


def _event(i: int) -> dict:
    return {"seq": i, "type": "peer_up", "peer_name": f"p{i}", "peer_id": "x"}


def test_the_events_file_rotates_past_its_size(tmp_path):
    path = tmp_path / "events.jsonl"
    sink = EventSink(Throttled(lambda: 0.0), max_bytes=2000)
    sink.open(str(path))
    for i in range(200):
        sink(_event(i))
    sink.close()
    old, new = (tmp_path / "events.jsonl.1").read_text(), path.read_text()
    assert len(old) <= 2000 + 200 and len(new) <= 2000 + 200
    lines = [json.loads(line) for line in (old + new).splitlines()]
    seqs = [e["seq"] for e in lines]
    assert seqs == sorted(seqs) and seqs[-1] == 199  # the newest, in order, none cut
    assert seqs == list(range(seqs[0], 200))  # nothing lost since the older file began


def test_the_default_bound_is_the_documented_one():
    assert EventSink(Throttled(lambda: 0.0)).max_bytes == EVENTS_FILE_MAX_BYTES == 16 << 20
