"""The agent's outgoing HTTP clients: one shared client, and for a link pinned to an
on-link interface that the route table would not pick for certain, one whose
connections leave through that interface (base/bound_http.py). Used by sharing and by
capacity tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import httpx

from exotray import __version__
from exotray.agent.base import limits as L
from exotray.agent.base.bound_http import bind_options, bound_transport
from exotray.agent.hw import onlink
from exotray.agent.hw.sampler import NicInfo
from exotray.agent.peers.links import Link


class HttpClients:
    def __init__(self, ifindex: onlink.IfIndex, nics: Callable[[], Mapping[str, NicInfo]],
                 platform: Callable[[], str]) -> None:
        self._ifindex = ifindex
        self._nics = nics
        self._platform = platform
        self._shared: httpx.AsyncClient | None = None
        #: clients whose connections leave through one interface: (name, index) -> client
        self._via: dict[tuple[str, int | None], httpx.AsyncClient] = {}
        self._closing: set[asyncio.Task] = set()  # clients of re-created interfaces
        #: taken around every snapshot fetch and stream opening (limits.MAX_FETCHES)
        self.fetch_slots = asyncio.Semaphore(L.MAX_FETCHES)

    @property
    def shared(self) -> httpx.AsyncClient:
        """Made on first use (an agent that never starts opens nothing)."""
        if self._shared is None:
            self._shared = httpx.AsyncClient(
                timeout=httpx.Timeout(2.0, connect=1.0),
                limits=httpx.Limits(max_connections=L.MAX_CLIENT_CONNECTIONS,
                                    max_keepalive_connections=L.MAX_CLIENT_KEEPALIVE),
                headers={"user-agent": f"exotray/{__version__}"},
                trust_env=False,
            )
        return self._shared

    def binding(self, link: Link | None) -> tuple[str, int | None, list] | None:
        """(interface, its index, the socket options that send through it) for a link
        pinned to an on-link interface the routes would not pick, else None. The options
        are empty when the interface cannot be bound (no index, an OS without a way)."""
        iface = link.path.pinned if link is not None and link.path.overrides_route else None
        if iface is None:
            return None
        index = self._ifindex.index(iface, self._nics())
        options = bind_options(iface, index, self._platform()) if index is not None else []
        return iface, index, options

    def for_link(self, link: Link | None) -> httpx.AsyncClient:
        """The shared client, or the one bound to the interface `link` is pinned to."""
        bound = self.binding(link)
        if bound is None or not bound[2]:
            return self.shared
        iface, index, options = bound
        client = self._via.get((iface, index))
        if client is None:
            for key in [k for k in self._via if k[0] == iface]:
                old = self._via.pop(key)  # the interface was re-created
                task = asyncio.get_running_loop().create_task(old.aclose())
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)
            client = self._via[(iface, index)] = httpx.AsyncClient(
                transport=bound_transport(options, httpx.Limits(max_connections=64,
                                                                max_keepalive_connections=32)),
                timeout=self.shared.timeout, headers=self.shared.headers, trust_env=False,
            )
        return client

    async def aclose(self) -> None:
        if self._shared is not None:
            await self._shared.aclose()
            self._shared = None
        for client in self._via.values():
            await client.aclose()
        self._via = {}
