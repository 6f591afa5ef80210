"""Sharing: how this node learns its peers' snapshots.

The rest of the agent sees only the `Sharing` interface: `tick()` once per interval,
`stop()`, the counters it keeps, and `routes()`: the HTTP endpoints it serves to peers
(none for polling: peers read /v1/snapshot, which the API serves for local clients too;
a push protocol adds its stream here). What it learns it writes into the peer table's
`Peer` (snapshot, snapshot_at, reachable, authenticated, last_error) and reports a
peer's own id and name through `PeerTable.identified`. So replacing polling with a push
protocol touches this module only (and the route it may add to the API).

`PollSharing` (today): every interval, GET each peer's /v1/snapshot, one task per peer
(a slow or hostile peer delays only itself), size-capped, HMAC-checked with a cluster
key, validated by core/schema.py; refusals are counted by reason.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

import httpx
from starlette.routing import BaseRoute

from exotray.agent.base.keys import SIGNATURE_HEADER, signed_by
from exotray.agent.base.throttle import Throttled
from exotray.agent.peers.table import Peer, PeerTable
from exotray.agent.share.clients import HttpClients
from exotray.core.schema import MAX_SNAPSHOT_BYTES, SnapshotRejected, parse_snapshot

log = logging.getLogger(__name__)


class Sharing(Protocol):
    #: snapshots_rejected, fetch_errors, snapshots_unauthenticated (in /v1/snapshot)
    counters: dict[str, int]
    #: refusals by SnapshotRejected reason (in /metrics)
    rejections: dict[str, int]

    def tick(self) -> None:
        """Once per interval while monitoring runs."""

    def produce(self) -> None:
        """Once per interval, paused or not, on the agent's full tick: what this node
        serves its subscribers (the stream's frame; polling serves on request)."""

    def at_tick(self, tick_s: float) -> None:
        """At every tick of the agent (`tick_s` apart): what arrived on the connections
        it follows and waits for a tick is read now (share/hold.py)."""

    async def stop(self) -> None:
        """End every connection and task it started."""

    def routes(self) -> list[BaseRoute]:
        """Endpoints this protocol serves to peers, mounted by the API."""

    def protocol_of(self, peer: Peer) -> str | None:
        """How this peer shares with us ("poll", "stream"), None before we know."""


class PollSharing:
    def __init__(self, table: PeerTable, clients: HttpClients, *, node_id: str,
                 key: Callable[[], bytes | None], interval: Callable[[], float],
                 clock: Callable[[], float], throttled: Throttled) -> None:
        self.table = table
        self.clients = clients
        self.node_id = node_id
        self._key = key
        self._interval = interval
        self.clock = clock
        self._throttled = throttled
        self.counters: dict[str, int] = {"snapshots_rejected": 0, "fetch_errors": 0,
                                         "snapshots_unauthenticated": 0}
        self.rejections: dict[str, int] = {}
        self._fetching: dict[str, asyncio.Task] = {}

    def produce(self) -> None:
        pass  # polled: each peer's GET /v1/snapshot builds its answer

    def at_tick(self, tick_s: float) -> None:
        pass  # (a poll is read as it arrives: our own requests, at our ticks)

    def tick(self, peers: Iterable[Peer] | None = None) -> None:
        """Start a fetch for every peer (or each of `peers`) whose previous one has
        finished: a slow or hostile peer (slowloris) delays only itself."""
        for key in [k for k, t in self._fetching.items() if t.done()]:
            del self._fetching[key]
        live = self.table.reachable()
        for p in self.table.peers.values() if peers is None else peers:
            # only from an address that answered a probe, or one the user named
            if p.key not in self._fetching and p.key in live:
                self._fetching[p.key] = asyncio.create_task(self._fetch(p),
                                                            name=f"fetch-{p.key}")

    def routes(self) -> list[BaseRoute]:
        return []

    def protocol_of(self, peer: Peer) -> str | None:
        return "poll"

    async def stop(self) -> None:
        for t in self._fetching.values():
            t.cancel()
        await asyncio.gather(*self._fetching.values(), return_exceptions=True)
        self._fetching = {}

    async def _get(self, peer: Peer) -> tuple[bytes, httpx.Headers] | None:
        """The peer's snapshot, or None when it has no address to fetch from (yet, or any
        more: a goodbye may empty it while this fetch waited for its turn).

        Bounded without cancelling anything inside httpx (a request cancelled from outside
        while the pool is contended can leak its connection slot for good): at most
        MAX_FETCHES at once (a semaphore taken before the client is touched), httpx's own
        connect/read/write/pool timeouts, and a total deadline checked between chunks (a
        peer sending a byte a second)."""
        budget = max(0.5, min(2.0, self._interval()))
        timeout = httpx.Timeout(budget, connect=min(1.0, budget))
        loop = asyncio.get_running_loop()
        async with self.clients.fetch_slots:
            target = self.table.best_target(peer, self.clock())
            if target is None:
                return None
            addr, port = target
            client = self.clients.for_link(self.table.links.get(target))
            deadline = loop.time() + 2 * budget
            async with client.stream("GET", f"http://{addr}:{port}/v1/snapshot",
                                     timeout=timeout) as resp:
                if resp.status_code != 200:
                    raise httpx.HTTPStatusError(
                        f"HTTP {resp.status_code}", request=resp.request, response=resp
                    )
                length = resp.headers.get("content-length")
                if length and length.isdigit() and int(length) > MAX_SNAPSHOT_BYTES:
                    raise SnapshotRejected("too_large", f"content-length {length}")
                body = bytearray()
                async for chunk in resp.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_SNAPSHOT_BYTES:
                        raise SnapshotRejected("too_large", f"over {MAX_SNAPSHOT_BYTES} bytes")
                    if loop.time() > deadline:
                        raise TimeoutError(f"snapshot not complete after {2 * budget:g} s")
        return bytes(body), resp.headers

    async def _fetch(self, peer: Peer) -> None:
        try:
            got = await self._get(peer)
            if got is None:
                return
            body, headers = got
            key = self._key()
            if key is not None and not signed_by(key, body, headers.get(SIGNATURE_HEADER, "")):
                peer.authenticated = False
                peer.snapshot = None
                peer.reachable = True
                peer.last_error = "unauthenticated: no or wrong cluster key"
                self.counters["snapshots_unauthenticated"] += 1
                self._throttled(f"auth:{peer.key}", logging.WARNING,
                                "peer %s: snapshot without a valid cluster-key signature; "
                                "not used", peer.key)
                return
            expected = peer.id if "mdns" in peer.sources else None
            snap = parse_snapshot(body, own_id=self.node_id, expected_id=expected)
        except SnapshotRejected as e:
            self.counters["snapshots_rejected"] += 1
            self.rejections[e.reason] = self.rejections.get(e.reason, 0) + 1
            peer.reachable = True
            peer.last_error = f"bad snapshot: {e}"
            self._throttled(
                f"reject:{peer.key}:{e.reason}", logging.WARNING,
                "peer %s: snapshot dropped (%s)", peer.key, e,
            )
            return
        except (httpx.HTTPError, TimeoutError, OSError) as e:
            self.counters["fetch_errors"] += 1
            peer.reachable = False
            peer.last_error = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            self._throttled(
                f"fetch:{peer.key}", logging.INFO, "peer %s: snapshot fetch failed: %s",
                peer.key, peer.last_error,
            )
            return
        peer.snapshot = snap
        peer.authenticated = self._key() is not None
        peer.snapshot_at = self.clock()
        peer.reachable = True
        peer.last_error = None
        self.table.identified(peer, snap.node.id, snap.node.name)
