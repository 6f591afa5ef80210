"""StreamSharing: one long-lived connection per peer, a full snapshot then deltas
(docs/design.md, "Stream sharing"; the bytes are in share/wire.py).

Serving (share/serve.py): `GET /v1/stream?nonce=HEX&v=3` answers with frames: a delta
built from this node's snapshot when something moved promptly, else a heartbeat every
few intervals (share/numbers.py: the tempo), encoded once for every subscriber (with a
cluster key only the signature differs). A subscriber that does not read fills
its bounded queue, is dropped and resyncs with a full snapshot when it reconnects; the
producer never waits.

Receiving: one task per peer follows its stream and writes the rebuilt, validated
snapshot into the peer table as PollSharing does. A peer without our /v1/stream (another
protocol or version) is polled instead (PollSharing, that peer only), its stream tried
again now and then. Any refused frame drops the connection, is counted and logged, and
the next connection starts again from a full snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import secrets
import time
from collections.abc import Callable

import httpx
from starlette.routing import BaseRoute, Route

from exotray.agent.base import limits as L
from exotray.agent.base.throttle import Throttled
from exotray.agent.peers.table import Peer, PeerTable
from exotray.agent.share import wire as W
from exotray.agent.share.clients import HttpClients
from exotray.agent.share.hold import StreamHold
from exotray.agent.share.poll import PollSharing
from exotray.agent.share.serve import STREAM_ID_HEADER, STREAM_PATH, Producer, StreamEndpoint
from exotray.agent.share.watch import Watch
from exotray.core.schema import Snapshot, SnapshotRejected

log = logging.getLogger(__name__)

#: a peer without /v1/stream is polled, and its stream tried again after this long
NO_STREAM_RETRY_S = 60.0
#: the longest wait before reconnecting after errors (it doubles from one interval)
MAX_BACKOFF_S = 5.0
#: the longest interval a peer's stream is waited for (the settings' bound)
MAX_INTERVAL_S = 60.0

class StreamSharing:
    def __init__(self, table: PeerTable, clients: HttpClients, *, node_id: str,
                 key: Callable[[], bytes | None], interval: Callable[[], float],
                 clock: Callable[[], float], throttled: Throttled,
                 snapshot: Callable[[], dict], own: Callable[[], float] = lambda: 0.0,
                 watch: Watch | None = None) -> None:
        self.table, self.clients, self.node_id = table, clients, node_id
        self._key, self._interval, self.clock, self._throttled = key, interval, clock, throttled
        #: peers without /v1/stream are polled by this one, sharing our counters
        self._poll = PollSharing(table, clients, node_id=node_id, key=key,
                                 interval=interval, clock=clock, throttled=throttled)
        self.counters = self._poll.counters
        self.counters.update({k: 0 for k in (
            "stream_bytes_in", "stream_frames_in", "stream_bytes_out", "stream_frames_built",
            "stream_deltas_waiting", "stream_builds_skipped", "stream_subscribers",
            "stream_subscribers_dropped", "stream_sockets_held",
            "stream_reconnects")})
        self.rejections = self._poll.rejections
        self.producer = Producer(snapshot, key, clock, self.counters, own, watch)
        self._following: dict[str, asyncio.Task] = {}
        #: peer key -> "stream" | "poll", what each peer speaks to us
        self.protocol: dict[str, str] = {}
        self._poll_until: dict[str, float] = {}
        self.sleep = asyncio.sleep  # (the wait between connections; a test's to replace)
        #: the clock of the frames' budget: real time, whatever the agent's clock does
        self.frame_clock: Callable[[], float] = time.monotonic
        #: Linux: the followed streams' frames wait in the kernel for our ticks
        self.hold = StreamHold()

    def routes(self) -> list[BaseRoute]:
        return [Route(STREAM_PATH, StreamEndpoint(self.producer), methods=["GET"])]

    def protocol_of(self, peer: Peer) -> str | None:
        return self.protocol.get(peer.key)

    def produce(self) -> None:
        """On the agent's full tick (ticking.py), right after its sample: no timer of its
        own."""
        if not self.producer.closed:
            self.producer.publish()

    def at_tick(self, tick_s: float) -> None:
        """At every tick: what the followed streams hold is read now (share/hold.py)."""
        self.hold.tick(tick_s)
        self.counters["stream_sockets_held"] = len(self.hold)

    def tick(self) -> None:
        if self.producer.closed:
            return  # stopped
        now = self.clock()
        live = self.table.reachable()
        for k, t in list(self._following.items()):
            if k not in live:
                t.cancel()  # kept until it has ended: stop() waits for it
            if t.done():
                del self._following[k]
        for k in [k for k in self.protocol if k not in live]:
            self.protocol.pop(k, None)
            self._poll_until.pop(k, None)
        polled = []
        for p in self.table.peers.values():
            if p.key not in live or p.key in self._following:
                continue
            if self._poll_until.get(p.key, 0.0) > now:
                polled.append(p)
            else:
                self._following[p.key] = asyncio.create_task(self._follow(p),
                                                             name=f"stream-{p.key}")
        self._poll.tick(polled)

    async def stop(self) -> None:
        self.producer.close()
        for t in self._following.values():
            t.cancel()
        await asyncio.gather(*self._following.values(), return_exceptions=True)
        self._following = {}
        self.hold.close()
        await self._poll.stop()

    # -- following one peer ------------------------------------------------------------
    async def _follow(self, peer: Peer) -> None:
        """Follow a peer's stream, reconnecting after errors, until it has none or we stop:
        half an interval after a connection that delivered, one interval after one the peer
        did not take or answer (not listening yet, restarting: as polling would), and
        doubling up to MAX_BACKOFF_S while it sends what we refuse."""
        failures = 0
        while True:
            ok = await self._connect(peer)
            if ok is None:
                return
            failures = 0 if ok else failures + 1 if peer.reachable else 1
            self.counters["stream_reconnects"] += 1
            await self.sleep(min(MAX_BACKOFF_S, self._interval() * 2 ** failures / 2))

    async def _connect(self, peer: Peer) -> bool | None:
        """One connection: True if it delivered a snapshot, False if not, None: no stream."""
        got = False
        try:
            got = await self._read(peer)
        except (W.FrameError, SnapshotRejected) as e:
            self._refused(peer, e)
        except _Unauthenticated:
            peer.authenticated = False
            peer.snapshot = None
            peer.reachable = True
            peer.last_error = "unauthenticated: no or wrong cluster key"
            self.counters["snapshots_unauthenticated"] += 1
            self._throttled(f"auth:{peer.key}", logging.WARNING, "peer %s: stream frame "
                            "without a valid cluster-key signature; not used", peer.key)
        except _NoStream:
            self.protocol[peer.key] = "poll"
            self._poll_until[peer.key] = self.clock() + NO_STREAM_RETRY_S
            log.info("peer %s has no %s of ours (an agent of the previous protocol, or an "
                     "earlier stream): polling its snapshot", peer.name or peer.key, STREAM_PATH)
            return None
        except (httpx.HTTPError, TimeoutError, OSError) as e:
            self.counters["fetch_errors"] += 1
            peer.reachable = False
            peer.last_error = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            self._throttled(f"fetch:{peer.key}", logging.INFO, "peer %s: stream failed: %s",
                            peer.key, peer.last_error)
        return got

    def _refused(self, peer: Peer, e: W.FrameError | SnapshotRejected) -> None:
        self.counters["snapshots_rejected"] += 1
        self.rejections[e.reason] = self.rejections.get(e.reason, 0) + 1
        peer.reachable = True
        peer.last_error = f"bad stream frame: {e}"
        self._throttled(f"reject:{peer.key}:{e.reason}", logging.WARNING,
                        "peer %s: stream frame dropped (%s); resynchronising", peer.key, e)

    async def _read(self, peer: Peer) -> bool:
        """One connection, opened in a fetch slot with httpx's timeouts only (nothing
        cancels it inside httpx's pool); the quiet timer bounds the body, once it flows."""
        async with self.clients.fetch_slots:
            if (target := self.table.best_target(peer, self.clock())) is None:
                return False
            nonce = secrets.token_hex(16)
            client = self.clients.for_link(self.table.links.get(target))
            timeout = httpx.Timeout(None, connect=1.0, write=2.0, pool=2.0)  # quiet: below
            resp = await client.send(client.build_request(
                "GET", f"http://{target[0]}:{target[1]}{STREAM_PATH}", timeout=timeout,
                params={"nonce": nonce, "v": W.VERSION}), stream=True)
        loop, got = asyncio.get_running_loop(), False
        async with contextlib.aclosing(resp):
            if resp.status_code in (404, 405, 501):
                raise _NoStream
            if resp.status_code != 200:
                raise httpx.HTTPStatusError(f"HTTP {resp.status_code}", request=resp.request,
                                            response=resp)
            stream_id = resp.headers.get(STREAM_ID_HEADER, "")
            if not re.fullmatch(r"[0-9a-f]{1,32}", stream_id):
                raise W.FrameError("bad_frame", "no stream id")
            mirror = W.Mirror(self.node_id, peer.id if "mdns" in peer.sources else None)
            reader = W.FrameReader()
            budget = FrameBudget(self.frame_clock)
            expect: list[int] = []  # the next sequence number, once a frame came
            stream = resp.extensions.get("network_stream")
            self.hold.add(peer.key, stream.get_extra_info("socket") if stream else None)
            try:
                # a heartbeat missed twice (the larger of our interval and the peer's,
                # once known) + 1 s without a frame: dead
                async with asyncio.timeout(_quiet(self._interval())) as quiet:
                    async for chunk in resp.aiter_raw():
                        self.hold.rearm(peer.key)  # (the next frame waits for a tick)
                        for kind, seq, sig, body, size in reader.feed(chunk):
                            budget.take()
                            snap = self._frame(kind, seq, sig, body, size, stream_id,
                                               nonce, mirror, expect)
                            self._accept(peer, snap)
                            got = True
                            every = min(MAX_INTERVAL_S, max(self._interval(),
                                                            snap.interval_s))
                            quiet.reschedule(loop.time() + _quiet(every))
                reader.end()
            finally:
                self.hold.remove(peer.key)
        return got

    def _frame(self, kind: bytes, seq: int, sig: str, body: bytes, size: int,
               stream_id: str, nonce: str, mirror: W.Mirror,
               expect: list[int]) -> Snapshot:
        """One received frame, checked (signature, sequence) and applied."""
        self.counters["stream_bytes_in"] += size
        self.counters["stream_frames_in"] += 1
        key = self._key()
        if key is not None and not W.signed(key, stream_id, nonce, kind, seq, body, sig):
            raise _Unauthenticated
        if expect and seq != expect[0]:
            raise W.FrameError("bad_sequence", f"frame {seq}, expected {expect[0]}")
        if kind == W.FULL:
            if expect:
                raise W.FrameError("bad_sequence", "a second full snapshot")
            snap = mirror.full(body)
        else:
            snap = mirror.delta(body)
        expect[:] = [seq + 1]
        return snap

    def _accept(self, peer: Peer, snap: Snapshot) -> None:
        peer.snapshot = snap
        peer.authenticated = self._key() is not None
        peer.snapshot_at = self.clock()
        peer.reachable, peer.last_error = True, None
        self.protocol[peer.key] = "stream"
        self._poll_until.pop(peer.key, None)
        self.table.identified(peer, snap.node.id, snap.node.name)


def _quiet(interval: float) -> float:
    """How long a stream may be silent before its connection counts as dead: a frame
    comes at least every W.HEARTBEAT intervals; two of them missed, and a second."""
    return (W.HEARTBEAT + 2) * interval + 1.0


class FrameBudget:
    """A followed stream's frames a second (issue 33 point 8): a token bucket of
    STREAM_FRAMES_BURST refilled at MAX_STREAM_FRAMES_PER_S. A peer sending 10,000
    one-field deltas a second took its victim to half a core; `take` raises `too_fast`
    for the frame over the budget, and the connection is cut as for any refused frame."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.tokens = float(L.STREAM_FRAMES_BURST)
        self.at = clock()

    def take(self) -> None:
        now = self.clock()
        self.tokens = min(float(L.STREAM_FRAMES_BURST),
                          self.tokens + (now - self.at) * L.MAX_STREAM_FRAMES_PER_S)
        self.at = now
        if self.tokens < 1.0:
            raise W.FrameError("too_fast", f"over {L.MAX_STREAM_FRAMES_PER_S} frames a "
                                           "second")
        self.tokens -= 1.0


class _NoStream(Exception):
    """The peer answers, but has no /v1/stream of our version: it is polled."""


class _Unauthenticated(Exception):
    """A frame without a valid signature, with a cluster key set."""
