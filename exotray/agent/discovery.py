"""Peer discovery with mDNS / DNS-SD (python-zeroconf, asyncio API only).

We register `_exotray._tcp.local.` with TXT `id`, `name`, `version`, `proto` on the
chosen IPv4 interfaces and browse for the same type. Each resolved record becomes a
`PeerRecord`; records that are malformed or hostile are ignored with a log line and
remembered (for `exotray status`). Liveness is *not* taken from mDNS — python-zeroconf
keeps a crashed peer's records for about 19 minutes — but from the agent's probes;
a goodbye, though, removes the peer at once.

When the set of local addresses we announce changes (a cable plugged in, Wi-Fi joined)
zeroconf is moved to the new interfaces and the record updated in place, so peers see
new addresses without a goodbye in between (older python-zeroconf without
`async_update_interfaces`: the instance is rebuilt).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import re
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from zeroconf import IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from exotray import PROTO, __version__
from exotray.agent import limits as L
from exotray.agent.discovery_records import (
    MAX_TXT_BYTES,
    PeerRecord,
    RecordRejected,
    parse_record,
)

__all__ = ["MAX_TXT_BYTES", "PROTO", "SERVICE_TYPE", "Discovery", "PeerRecord",
           "RecordRejected", "parse_record"]

log = logging.getLogger(__name__)

SERVICE_TYPE = "_exotray._tcp.local."


@dataclass
class Ignored:
    service: str
    reason: str
    detail: str


class Discovery:
    """Registers this agent and reports peers through callbacks (all on the loop)."""

    def __init__(
        self,
        *,
        node_id: str,
        name: str,
        port: int,
        on_found: Callable[[PeerRecord], None],
        on_removed: Callable[[str], None],
        local_networks: Callable[[], list[ipaddress.IPv4Network]],
    ) -> None:
        self.node_id = node_id
        self.name = name
        self.port = port
        self.on_found = on_found
        self.on_removed = on_removed
        self.local_networks = local_networks
        self.addresses: tuple[str, ...] = ()
        self.ignored: deque[Ignored] = deque(maxlen=50)
        self.service = f"{_dns_label(name)}-{node_id}.{SERVICE_TYPE}"
        self.server = f"{_dns_label(name)}-{node_id}.local."
        self._azc: AsyncZeroconf | None = None
        self._browser: AsyncServiceBrowser | None = None
        self._info: AsyncServiceInfo | None = None
        #: services resolving now (at most MAX_RESOLVING), and waiting to (a bounded queue:
        #: a flood of announcements costs a bounded number of tasks and queries)
        self._resolving: dict[str, asyncio.Task] = {}
        self._waiting: OrderedDict[str, None] = OrderedDict()
        self._retries: dict[str, int] = {}  # unresolved services: tries so far
        self._known: dict[str, str] = {}  # service name -> peer id (MAX_KNOWN_SERVICES)
        #: records ignored, by reason (the first of each service and reason is logged,
        #: then the 10th, 100th... of a reason)
        self.ignored_counts: dict[str, int] = {}
        self._lock = asyncio.Lock()
        self.problem: str | None = None

    @property
    def running(self) -> bool:
        return self._azc is not None

    async def start(self, addresses: Iterable[str]) -> None:
        async with self._lock:
            await self._start(tuple(sorted(set(addresses))))

    async def _start(self, addresses: tuple[str, ...]) -> None:
        self.addresses = addresses
        if not addresses:
            self.problem = "no multicast-capable IPv4 interface to announce on"
            log.warning("mDNS: %s; discovery waits for one", self.problem)
            return
        self.problem = None
        self._azc, usable, refused = await self._open(addresses)
        if refused:
            self.problem = "mDNS cannot use " + "; ".join(
                f"{a} ({why})" for a, why in sorted(refused.items()))
            log.warning("%s; %s", self.problem,
                        f"announcing on {', '.join(usable)}" if usable else "discovery is off")
        if self._azc is None:
            return
        # self.addresses stays what was asked for, so the same set is not retried on
        # every interface check; a change of the local addresses retries all of them.
        addresses = tuple(usable)
        self._info = self._service_info(addresses, name=self.service)
        self._browser = AsyncServiceBrowser(
            self._azc.zeroconf, SERVICE_TYPE, handlers=[self._on_change]
        )
        # Registration probes the name for ~1.5 s; it must not hold up the agent.
        self._register_task = asyncio.create_task(self._register(), name="mdns-register")
        log.info("mDNS: announcing %s on %s", self.service, ", ".join(addresses))

    @staticmethod
    async def _open(
        addresses: tuple[str, ...],
    ) -> tuple[AsyncZeroconf | None, list[str], dict[str, str]]:
        """AsyncZeroconf on these addresses, or on those of them that work: one interface
        that refuses its multicast socket (a VPN's utun, an address just gone,
        EADDRINUSE) must not stop the agent from starting or the others from being
        used. Returns (zeroconf or None, usable addresses, {refused address: why})."""
        def why(e: OSError) -> str:
            return e.strerror or str(e)

        try:
            return (AsyncZeroconf(interfaces=list(addresses), ip_version=IPVersion.V4Only),
                    list(addresses), {})
        except OSError as e:
            if len(addresses) == 1:
                return None, [], {addresses[0]: why(e)}
        usable: list[str] = []
        refused: dict[str, str] = {}
        for a in addresses:  # which one refuses?
            try:
                trial = AsyncZeroconf(interfaces=[a], ip_version=IPVersion.V4Only)
            except OSError as e:
                refused[a] = why(e)
                continue
            with contextlib.suppress(Exception):
                await asyncio.wait_for(trial.async_close(), 3.0)
            usable.append(a)
        if not usable:
            return None, [], refused
        try:
            return (AsyncZeroconf(interfaces=usable, ip_version=IPVersion.V4Only),
                    usable, refused)
        except OSError as e:
            return None, [], {**refused, **dict.fromkeys(usable, why(e))}

    def _service_info(self, addresses: Iterable[str], name: str) -> AsyncServiceInfo:
        return AsyncServiceInfo(
            SERVICE_TYPE,
            name,
            port=self.port,
            properties={"id": self.node_id, "name": self.name, "version": __version__,
                        "proto": str(PROTO)},
            server=self.server,
            parsed_addresses=list(addresses),
        )

    async def _register(self) -> None:
        assert self._azc is not None and self._info is not None
        try:
            await self._azc.async_register_service(self._info, allow_name_change=True)
        except Exception as e:  # name conflict, interface gone: say so, keep measuring
            self.problem = f"mDNS registration failed: {e}"
            log.warning("%s", self.problem)

    async def restart(self, addresses: Iterable[str]) -> None:
        new = tuple(sorted(set(addresses)))
        async with self._lock:
            if new == self.addresses and (self._azc is not None or not new):
                return
            log.info("mDNS: local addresses changed (%s -> %s); re-announcing",
                     ", ".join(self.addresses) or "none", ", ".join(new) or "none")
            azc, info = self._azc, self._info
            if azc is not None and info is not None and new and hasattr(
                azc, "async_update_interfaces"
            ):
                try:
                    await azc.async_update_interfaces(list(new))
                    self._info = self._service_info(new, name=info.name)
                    await azc.async_update_service(self._info)
                    self.addresses = new
                    return
                except Exception as e:
                    log.warning("mDNS: moving to the new interfaces failed (%s); restarting", e)
            await self._stop()
            await self._start(new)

    async def stop(self) -> None:
        async with self._lock:
            await self._stop()

    async def _stop(self) -> None:
        self._waiting.clear()
        for t in list(self._resolving.values()):
            t.cancel()
        if self._resolving:
            await asyncio.gather(*self._resolving.values(), return_exceptions=True)
        self._resolving.clear()
        task = getattr(self, "_register_task", None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            self._register_task = None
        if self._browser is not None:
            with contextlib.suppress(Exception):
                await self._browser.async_cancel()
            self._browser = None
        if self._azc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._azc.async_close(), 3.0)
            self._azc = None

    # -- browsing ----------------------------------------------------------------------
    def _on_change(
        self, zeroconf: Zeroconf, service_type: str, name: str, state_change: ServiceStateChange
    ) -> None:
        if state_change is ServiceStateChange.Removed:
            self._waiting.pop(name, None)
            task = self._resolving.pop(name, None)
            if task is not None:
                task.cancel()
            peer_id = self._known.pop(name, None)
            if peer_id is not None:
                log.info("mDNS: %s said goodbye", name)
                self.on_removed(peer_id)
            return
        if name == self.service:
            return
        old = self._resolving.get(name)
        if old is not None and not old.done():
            return
        self._waiting[name] = None
        self._waiting.move_to_end(name)
        if len(self._waiting) > L.MAX_RESOLVE_QUEUE:
            dropped, _ = self._waiting.popitem(last=False)
            self._count("resolve_queue_full", f"{dropped} dropped unresolved: over "
                        f"{L.MAX_RESOLVE_QUEUE} services waiting")
        self._pump()

    def _retry_later(self, name: str) -> None:
        """Queue an unresolved service again, after 2, 4, 8 s (its answer may have been
        lost among a flood's packets; zeroconf will not tell us of it again)."""
        tries = self._retries[name] = self._retries.get(name, 0) + 1
        if len(self._retries) > L.MAX_RESOLVE_QUEUE:
            del self._retries[next(iter(self._retries))]
        if tries <= 3:
            asyncio.get_running_loop().call_later(2.0 ** tries, self._requeue, name)

    def _requeue(self, name: str) -> None:
        if self._azc is not None and name not in self._resolving:
            self._waiting[name] = None
            self._pump()

    def _pump(self) -> None:
        while self._waiting and len(self._resolving) < L.MAX_RESOLVING and self._azc:
            name, _ = self._waiting.popitem(last=False)
            self._resolving[name] = asyncio.create_task(self._resolve(name),
                                                        name=f"mdns-{name}")

    async def _resolve(self, name: str) -> None:
        azc = self._azc
        if azc is None:
            return
        info = AsyncServiceInfo(SERVICE_TYPE, name)
        try:
            # 3 s for a peer's answer; a fraction of that while a queue waits (a flood of
            # records with no SRV/TXT/A would otherwise hold real peers up for minutes)
            ok = await info.async_request(azc.zeroconf, 3000 if not self._waiting else 1000)
        except Exception as e:
            self._ignore(name, "unresolvable", str(e))
            return
        finally:
            self._resolving.pop(name, None)
            self._pump()
        if not ok:
            self._ignore(name, "unresolvable", "no answer to the SRV/TXT/A query")
            self._retry_later(name)
            return
        try:
            record = parse_record(
                name,
                info.port,
                info.properties,
                info.parsed_addresses(IPVersion.V4Only),
                own_id=self.node_id,
                own_service=self.service,
                local_networks=self.local_networks(),
            )
        except RecordRejected as e:
            if e.reason != "own":
                self._ignore(name, e.reason, e.detail)
            return
        holder = next((s for s, i in self._known.items() if i == record.id and s != name), None)
        if holder is not None:
            # First come, first served: a second service claiming a known peer's id is
            # either an impostor or a stale re-registration; neither may move its links.
            self._ignore(name, "duplicate_id", f"id {record.id} is already {holder}")
            return
        self._known[name] = record.id
        if len(self._known) > L.MAX_KNOWN_SERVICES:
            del self._known[next(iter(self._known))]
        self.on_found(record)

    def _count(self, reason: str, detail: str) -> bool:
        """Count one; True when this one is worth a log line (1st, 10th, 100th...)."""
        n = self.ignored_counts[reason] = self.ignored_counts.get(reason, 0) + 1
        if n == 1 or str(n).strip("0") == "1":
            log.warning("mDNS: %s (%d so far)", detail, n)
            return True
        return False

    def _ignore(self, service: str, reason: str, detail: str) -> None:
        for ig in self.ignored:
            if ig.service == service and ig.reason == reason:
                ig.detail = detail
                return
        self.ignored.append(Ignored(service, reason, detail))
        self._count(reason, f"ignoring {service}: {reason}" + (f" ({detail})" if detail else ""))


def _dns_label(name: str) -> str:
    label = re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-")[:40]
    return label or "exotray"
