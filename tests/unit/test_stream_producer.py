"""The stream's producer: a delta for every subscriber when something moved promptly, a
heartbeat every W.HEARTBEAT intervals otherwise, and a subscriber that never reads is
dropped after a bounded queue, without the producer waiting for it."""

from __future__ import annotations

import asyncio
import copy
import time

from stream_frames import snapshot

from exotray.agent.share import wire as W
from exotray.agent.share.serve import MAX_QUEUE, Producer, StreamEndpoint


class _Node:
    def __init__(self) -> None:
        self.snap = snapshot(links=50)
        self.n = 0

    def __call__(self) -> dict:
        self.n += 1
        snap = copy.deepcopy(self.snap)
        for i, lk in enumerate(snap["links"]):
            lk["rtt_ms"] = 1.0 if (self.n + i) % 2 else 5.0  # every link moves, promptly
        return snap


def _counters() -> dict[str, int]:
    return {k: 0 for k in ("stream_bytes_out", "stream_frames_built", "stream_subscribers",
                           "stream_subscribers_dropped", "stream_deltas_waiting")}


async def _subscribe(endpoint: StreamEndpoint, send, disconnect: asyncio.Event) -> asyncio.Task:
    async def receive() -> dict:
        await disconnect.wait()
        return {"type": "http.disconnect"}

    query = b"v=" + W.VERSION.encode() + b"&nonce=" + b"0" * 32
    scope = {"type": "http", "method": "GET", "query_string": query}
    return asyncio.create_task(endpoint(scope, receive, send))


def test_a_subscriber_that_never_reads_is_dropped_and_the_producer_stays_on_time():
    async def main() -> None:
        counters = _counters()
        producer = Producer(_Node(), lambda: None, time.monotonic, counters)
        endpoint = StreamEndpoint(producer)
        stuck = asyncio.Event()  # never set: a peer that never reads
        reader_got: list[bytes] = []

        async def stuck_send(message: dict) -> None:
            if message["type"] == "http.response.body":
                await stuck.wait()

        async def reading_send(message: dict) -> None:
            if message["type"] == "http.response.body":
                reader_got.append(message["body"])

        bye = asyncio.Event()
        slow = await _subscribe(endpoint, stuck_send, asyncio.Event())
        good = await _subscribe(endpoint, reading_send, bye)
        await asyncio.sleep(0)
        assert counters["stream_subscribers"] == 2
        for _ in range(200):  # 200 intervals
            producer.publish()  # a plain function: it never waits for a subscriber
            queued = [len(s.frames) for s in producer.subs]
            assert all(n <= MAX_QUEUE for n in queued), queued
            await asyncio.sleep(0)
        assert counters["stream_subscribers_dropped"] == 1
        assert counters["stream_subscribers"] == 1
        await asyncio.wait_for(slow, 1.0)  # its request ended, though its send never did
        # the reading subscriber got the full snapshot and every delta, in order
        frames = W.FrameReader().feed(b"".join(reader_got))
        assert [k for k, *_ in frames] == [W.FULL] + [W.DELTA] * 200
        assert [s for _, s, *_ in frames] == list(range(1, 202))
        mirror = W.Mirror(None, None)
        mirror.full(frames[0][3])
        for f in frames[1:]:
            last = mirror.delta(f[3])
        assert last.links[0].rtt_ms == (1.0 if 201 % 2 else 5.0)  # the last build's
        bye.set()
        await asyncio.wait_for(good, 1.0)
        assert counters["stream_subscribers"] == 0

    asyncio.run(main())


def test_close_ends_every_subscriber():
    async def main() -> None:
        producer = Producer(_Node(), lambda: b"k" * 32, time.monotonic, _counters())
        endpoint = StreamEndpoint(producer)
        sent: list[dict] = []

        async def send(message: dict) -> None:
            sent.append(message)

        task = await _subscribe(endpoint, send, asyncio.Event())
        await asyncio.sleep(0.01)
        producer.close()
        await asyncio.wait_for(task, 1.0)
        assert sent[-1] == {"type": "http.response.body", "body": b""}  # a clean end
        refused: list[dict] = []

        async def send2(message: dict) -> None:
            refused.append(message)

        await asyncio.wait_for(await _subscribe(endpoint, send2, asyncio.Event()), 1.0)
        assert refused[0]["status"] == 503

    asyncio.run(main())


def test_a_follower_of_another_stream_version_is_sent_to_polling():
    """A follower that does not ask for this version (an agent built before deltas
    named interfaces instead of rates) gets 404, as an agent of the previous protocol
    would, so it polls /v1/snapshot: a full view, never links with stale rates."""
    async def main() -> None:
        endpoint = StreamEndpoint(Producer(_Node(), lambda: None, time.monotonic, _counters()))
        for query in (b"nonce=" + b"0" * 32, b"v=1&nonce=" + b"0" * 32):
            sent: list[dict] = []

            async def send(message: dict, sent: list[dict] = sent) -> None:
                sent.append(message)

            async def receive() -> dict:
                return {"type": "http.disconnect"}

            await asyncio.wait_for(endpoint({"type": "http", "method": "GET",
                                             "query_string": query}, receive, send), 1.0)
            assert sent[0]["status"] == 404, query
        assert not endpoint.producer.subs

    asyncio.run(main())
