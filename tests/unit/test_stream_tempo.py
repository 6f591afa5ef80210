"""The stream's tempo (issue 11: an idle stream costs next to nothing): a change a user
acts on goes out at the next interval; what only moved a little (a window's spread, a
rate's noise, an RTT's wobble) waits for the heartbeat, every HEARTBEAT intervals — and
nothing is lost on the way: after the heartbeat the receiver has every number as the
sender holds it."""

from __future__ import annotations

import asyncio
import copy
import json

import pytest
from stream_frames import snapshot

from exotray.agent.share import numbers as N
from exotray.agent.share import wire as W
from exotray.agent.share.serve import Producer, StreamEndpoint


@pytest.mark.parametrize(("field", "new", "last", "prompt"), [
    ("state", "saturated", "up", True),  # not a number: at once
    ("rtt_ms", None, 0.05, True),  # known -> unknown
    ("rtt_ms", 0.05, None, True),  # and back
    ("rtt_ms", 0.06, 0.05, False),  # one step: noise
    ("rtt_ms", 0.08, 0.05, False),  # three steps and 38 %, but a LAN's µs: under 0.1 ms
    ("rtt_ms", 0.3, 0.15, True),  # 0.15 ms and half
    ("rtt_ms", 5.2, 5.0, False),  # two steps of 0.1 ms, but 4 %
    ("rtt_ms", 7.0, 5.0, True),  # queueing behind traffic
    ("queue_delay_ms", 3.0, 0.1, True),
    ("rtt_max_ms", 9.0, 0.1, False),  # a window's spread: with the heartbeat
    ("rtt_p90_ms", 0.5, 0.1, False),
    ("jitter_ms", 2.0, 0.01, False),
    ("rtt_min_ms", 0.01, 0.05, False),
    ("rtt_baseline_ms", 0.3, 0.05, False),
    ("rx_bytes_per_s", 1_200.0, 900.0, False),  # idle traffic's noise
    ("rx_bytes_per_s", 100_000.0, 900.0, False),  # under 1 Mbit/s: still at rest
    ("rx_bytes_per_s", 1_000_000.0, 900.0, True),  # traffic started
    ("rx_bytes_per_s", 900.0, 1_000_000.0, True),  # and stopped
    ("rx_bytes_per_s", 1.05e9, 1.0e9, False),  # 5 % of a busy link's rate
    ("rx_bytes_per_s", 1.2e9, 1.0e9, True),
    ("utilization", 0.015, 0.005, True),  # a 1 % move of the capacity
    ("utilization", 0.9, 0.895, False),
    ("utilization", 0.004, 0.0, False),  # "< 1 %" came: noise
    ("capacity_bytes_per_s", 1.25e9, 1.25e8, True),  # a NIC renegotiated
    ("loss", 0.1, 0.0, True),  # a probe lost
    ("loss", 0.071, 0.062, True),
    ("loss", 0.062, 0.071, False),  # an old loss leaving the window
])
def test_which_moves_go_at_once(field, new, last, prompt):
    assert N.prompt(field, new, last) is prompt


@pytest.mark.parametrize(("field", "new", "last", "capacity", "prompt"), [
    ("rx_bytes_per_s", 400_000.0, 10_000.0, None, False),  # our own frames' burst
    ("rx_bytes_per_s", 900_000.0, 10_000.0, None, True),  # beyond it: traffic
    ("utilization", 0.03, 0.0, 12.5e6, False),  # 375 kB/s of 100 Mbit/s: ours
    ("utilization", 0.1, 0.0, 12.5e6, True),
    ("utilization", 0.02, 0.0, None, True),  # capacity unknown to the record: 1 %
])
def test_what_this_agent_sends_itself_is_not_news(field, new, last, capacity, prompt):
    """A hub sending a frame to 64 followers moves its own interface's rate by the
    frames' bytes in that interval: with `own` (its recent peak) that is not prompt."""
    assert N.prompt(field, new, last, own=500_000.0, capacity=capacity) is prompt


class _Node:
    """This node's snapshots, one per interval, as the test moves its numbers."""

    def __init__(self) -> None:
        self.snap = snapshot(links=3)

    def __call__(self) -> dict:
        return copy.deepcopy(self.snap)

    def link(self, i: int) -> dict:
        return self.snap["links"][i]


def _counters() -> dict[str, int]:
    return {k: 0 for k in ("stream_bytes_out", "stream_frames_built", "stream_subscribers",
                           "stream_subscribers_dropped", "stream_deltas_waiting")}


def _run(steps) -> tuple[list[bytes], Producer]:
    """Subscribe one reader, publish once per step (calling `step(node, i)` before each),
    and return the frames it got."""
    node = _Node()
    got: list[bytes] = []

    async def main() -> Producer:
        producer = Producer(node, lambda: None, lambda: 0.0, _counters())
        bye = asyncio.Event()

        async def receive() -> dict:
            await bye.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            if message["type"] == "http.response.body":
                got.append(message["body"])

        query = b"v=" + W.VERSION.encode() + b"&nonce=" + b"0" * 32
        task = asyncio.create_task(StreamEndpoint(producer)(
            {"type": "http", "method": "GET", "query_string": query}, receive, send))
        await asyncio.sleep(0)
        for i, step in enumerate(steps):
            step(node, i)
            producer.publish()
            await asyncio.sleep(0)
        bye.set()
        await asyncio.wait_for(task, 1.0)
        return producer

    producer = asyncio.run(main())
    return [f for f in W.FrameReader().feed(b"".join(got))], producer


def _still(node: _Node, i: int) -> None:
    pass


def test_an_idle_stream_sends_a_heartbeat_every_few_intervals():
    frames, producer = _run([_still] * (3 * N.HEARTBEAT))
    assert [k for k, *_ in frames] == [W.FULL] + [W.DELTA] * 3
    assert [s for _, s, *_ in frames] == [1, 2, 3, 4]  # each frame the next in sequence
    assert producer.counters["stream_deltas_waiting"] == 3 * (N.HEARTBEAT - 1)


def test_a_prompt_change_goes_out_at_the_next_interval():
    def saturate(node: _Node, i: int) -> None:
        if i == 1:
            node.link(2)["state"] = "saturated"

    frames, _ = _run([saturate] * (2 + N.HEARTBEAT))
    assert len(frames) == 3  # the full snapshot, the change on the second interval...
    mirror = W.Mirror(None, None)
    mirror.full(frames[0][3])
    assert mirror.delta(frames[1][3]).links[2].state == "saturated"
    assert json.loads(frames[2][3]) == {"age": 0.0}  # ... then a heartbeat: nothing moved


def test_small_moves_wait_for_the_heartbeat_and_arrive_whole():
    def wobble(node: _Node, i: int) -> None:
        lk = node.link(0)
        lk["rtt_max_ms"] = 0.1 + 0.05 * (i % 3)  # a window's spread moving
        lk["rtt_ms"] = 0.05 if i % 2 else 0.061  # one step either way
        node.snap["interfaces"][0]["rx_bytes_per_s"] = 1000.0 + 37 * i  # idle noise

    steps = [wobble] * N.HEARTBEAT
    frames, _ = _run(steps)
    assert len(frames) == 2  # the full snapshot, then the heartbeat: nothing between
    mirror = W.Mirror(None, None)
    mirror.full(frames[0][3])
    snap = mirror.delta(frames[1][3])
    node = _Node()
    for i, step in enumerate(steps):
        step(node, i)
    sent = node.snap  # what the sender's own snapshot said at the heartbeat
    lk = snap.links[0]
    assert lk.rtt_max_ms == pytest.approx(sent["links"][0]["rtt_max_ms"])
    assert lk.rtt_ms == pytest.approx(0.06)  # (its display step)
    assert snap.interfaces[0].rx_bytes_per_s == pytest.approx(
        N.quantize("rx_bytes_per_s", sent["interfaces"][0]["rx_bytes_per_s"]))


def test_a_link_parting_from_its_interface_by_a_byte_waits_for_the_heartbeat():
    """A link whose rates are its interface's (rates_of) moving 1 B/s away from them and
    back (exo's RDMA counters adding a few bytes, then none) is an idle rate's noise:
    what the follower shows does not even change (5001 B/s is shown as 5000), so it
    waits for the heartbeat like any other rate's noise."""
    def flip(node: _Node, i: int) -> None:
        node.snap["interfaces"][0]["rx_bytes_per_s"] = 5000.0
        node.snap["interfaces"][0]["tx_bytes_per_s"] = 5000.0
        node.link(0)["rx_bytes_per_s"] = 5000.0 + i % 2
        node.link(0)["tx_bytes_per_s"] = 5000.0

    frames, _ = _run([flip] * (2 * N.HEARTBEAT))
    assert len(frames) == 1 + 2  # the full snapshot and two heartbeats


def test_a_link_parting_from_its_interface_by_real_traffic_goes_at_once():
    """The same link carrying RDMA traffic its interface does not count (10 MB/s more
    than the interface's): what the follower shows moved, so it goes at the next
    interval, and the follower's copy has the link's own rates."""
    def rdma(node: _Node, i: int) -> None:
        node.snap["interfaces"][0]["rx_bytes_per_s"] = 5000.0
        node.snap["interfaces"][0]["tx_bytes_per_s"] = 5000.0
        node.link(0)["rx_bytes_per_s"] = 5000.0 + (10e6 if i >= 1 else 0.0)
        node.link(0)["tx_bytes_per_s"] = 5000.0

    frames, _ = _run([rdma] * 2)
    assert len(frames) == 2  # the full snapshot, and the change at the next interval
    mirror = W.Mirror(None, None)
    mirror.full(frames[0][3])
    assert mirror.delta(frames[1][3]).links[0].rx_bytes_per_s == pytest.approx(10.0e6, rel=1e-2)
