"""The serving side of stream sharing (docs/design.md, "Stream sharing"): this node's
stream (`Producer`: the state subscribers mirror, a delta when something moved promptly
or a heartbeat is due, encoded once for all of them, bounded queues) and
`GET /v1/stream` (`StreamEndpoint`). The following side is share/stream.py; the bytes
are share/wire.py.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import secrets
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from exotray.agent.share import wire as W

if TYPE_CHECKING:
    from exotray.agent.share.watch import Watch

STREAM_PATH = "/v1/stream"
STREAM_ID_HEADER = "x-exotray-stream"
#: frames a subscriber may have waiting; one more and it is dropped (then it resyncs)
MAX_QUEUE = 8
_NONCE = re.compile(r"^[0-9a-f]{16,64}$")


class _Sub:
    """One subscriber: its frames waiting to be sent, and whether it is over."""

    def __init__(self, nonce: str) -> None:
        self.nonce = nonce
        self.frames: deque[bytes] = deque()
        self.wake = asyncio.Event()
        self.dead = self.kicked = self.sending = False
        self.task: asyncio.Task | None = None


class Producer:
    """This node's stream: the state subscribers mirror, its sequence, its subscribers."""

    def __init__(self, snapshot: Callable[[], dict], key: Callable[[], bytes | None],
                 clock: Callable[[], float], counters: dict[str, int],
                 own: Callable[[], float] = lambda: 0.0, watch: Watch | None = None,
                 ) -> None:
        self._snapshot = snapshot
        #: whether a prompt change may be in the state (share/watch.py); None: always
        #: build to find out
        self._watch = watch
        self._own = own  # this agent's own traffic lately, bytes/s (pacing.OwnTraffic.peak)
        self._key = key
        self.clock = clock
        self.counters = counters
        self.stream_id = secrets.token_hex(8)
        self.seq = 0
        self.state: W.State | None = None
        self.age = 0.0
        self.built_at = 0.0
        #: intervals since the last frame went out (a heartbeat is due at W.HEARTBEAT)
        self.quiet = 0
        self.subs: set[_Sub] = set()
        self.closed = False

    def _build(self) -> tuple[W.State, float, float]:
        snap = self._snapshot()  # numbers held against what subscribers last got
        if self._watch is not None:
            self._watch.built()
        return W.split(snap, self.state), float(snap["data_age_s"]), self.clock()

    def _frame(self, sub: _Sub, kind: bytes, body: bytes, digest: bytes | None) -> bytes:
        key = self._key()
        sig = None
        if key is not None:
            digest = digest or hashlib.sha256(body).digest()
            sig = W.mac(key, self.stream_id, sub.nonce, kind, self.seq, digest)
        return W.header(kind, self.seq, len(body), sig) + body

    def subscribe(self, nonce: str) -> _Sub:
        """A new subscriber, its first frame (the full snapshot) already queued."""
        if self.state is None:
            self.state, self.age, self.built_at = self._build()
            self.seq += 1
            self.quiet = 0
        sub = _Sub(nonce)
        body = W.full_body(self.state, self.age + self.clock() - self.built_at)
        sub.frames.append(self._frame(sub, W.FULL, body, None))
        self.subs.add(sub)
        self.counters["stream_subscribers"] = len(self.subs)
        return sub

    def unsubscribe(self, sub: _Sub) -> None:
        self.subs.discard(sub)
        self.counters["stream_subscribers"] = len(self.subs)

    def publish(self) -> None:
        """Once per interval: what moved since the last frame, as one delta encoded once
        and queued for every subscriber — now if it holds a prompt change, else once
        W.HEARTBEAT intervals have passed since the last frame (a heartbeat, with every
        number that moved a display step meanwhile). Until then nothing is sent and what
        moved waits: it is held against what subscribers have. Between heartbeats the
        state is built only when the watch says a prompt change may be in it."""
        if not self.subs:
            self.state = None  # the next subscriber gets a fresh full snapshot
            return
        if (self.state is not None and self._watch is not None
                and self.quiet + 1 < W.HEARTBEAT and not self._watch.moved(self.state)):
            self.quiet += 1
            self.counters["stream_deltas_waiting"] += 1
            self.counters["stream_builds_skipped"] += 1
            return
        new, age, at = self._build()
        old = self.state or new
        d = W.delta(old, new, age)
        self.quiet += 1
        if self.quiet < W.HEARTBEAT and not W.prompt(old, d, self._own(), new):
            self.counters["stream_deltas_waiting"] += 1
            return
        body = W.encode(d)
        self.state, self.age, self.built_at, self.quiet = new, age, at, 0
        self.seq += 1
        shared = None if self._key() is not None else W.header(W.DELTA, self.seq, len(body),
                                                              None) + body
        digest = hashlib.sha256(body).digest() if shared is None else None
        for sub in list(self.subs):
            if len(sub.frames) >= MAX_QUEUE:
                self.counters["stream_subscribers_dropped"] += 1
                self.kick(sub)
                continue
            frame = shared or self._frame(sub, W.DELTA, body, digest)
            sub.frames.append(frame)
            sub.wake.set()
            self.counters["stream_bytes_out"] += len(frame)
        self.counters["stream_frames_built"] += 1

    def kick(self, sub: _Sub) -> None:
        """End a subscriber now (it fell behind, or we stop)."""
        self.unsubscribe(sub)
        sub.dead = sub.kicked = True
        sub.frames.clear()
        sub.wake.set()
        if sub.sending and sub.task is not None:
            sub.task.cancel()  # blocked on a peer that does not read

    def close(self) -> None:
        self.closed = True
        for sub in list(self.subs):
            self.kick(sub)


class StreamEndpoint:
    """GET /v1/stream as a plain ASGI app: frames go out as the producer queues them."""

    def __init__(self, producer: Producer) -> None:
        self.producer = producer

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        nonce = query.get("nonce", [""])[0]
        status = 503 if self.producer.closed else 400 if not _NONCE.match(nonce) else 200
        if status == 200 and query.get("v") != [W.VERSION]:
            status = 404  # a follower of an earlier stream: it polls us instead
        if scope.get("method") != "GET":
            status = 405
        if status != 200:
            await send({"type": "http.response.start", "status": status,
                        "headers": [(b"content-length", b"0")]})
            await send({"type": "http.response.body", "body": b""})
            return
        sub = self.producer.subscribe(nonce)
        sub.task = asyncio.current_task()
        watcher = asyncio.create_task(self._watch(receive, sub), name="stream-watch")
        try:
            await self._send(sub, send, {
                "type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/x-exotray-stream"),
                            (b"cache-control", b"no-store"),
                            (STREAM_ID_HEADER.encode(), self.producer.stream_id.encode())]})
            while not sub.dead:
                if not sub.frames:
                    sub.wake.clear()
                    await sub.wake.wait()
                    continue
                await self._send(sub, send, {"type": "http.response.body",
                                             "body": sub.frames.popleft(), "more_body": True})
            if not sub.kicked or self.producer.closed:
                await self._send(sub, send, {"type": "http.response.body", "body": b""})
        except asyncio.CancelledError:
            if not sub.kicked:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
        finally:
            self.producer.unsubscribe(sub)
            watcher.cancel()
            await asyncio.gather(watcher, return_exceptions=True)

    @staticmethod
    async def _send(sub: _Sub, send: Any, message: dict) -> None:
        sub.sending = True
        try:
            await send(message)
        finally:
            sub.sending = False

    @staticmethod
    async def _watch(receive: Any, sub: _Sub) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        sub.dead = True
        sub.wake.set()
