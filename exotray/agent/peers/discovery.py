"""Peer discovery with mDNS / DNS-SD (python-zeroconf, asyncio API only).

We register `_exotray._tcp.local.` with TXT `id`, `name`, `version`, `proto` on the
chosen IPv4 interfaces and browse for the same type. Each resolved record becomes a
`PeerRecord`; records that are malformed or hostile are ignored with a log line and
remembered (for `exotray status`). Liveness is *not* taken from mDNS — python-zeroconf
keeps a crashed peer's records for about 19 minutes — but from the agent's probes;
a goodbye, though, removes the peer at once.

One zeroconf instance per interface, its sockets tied to that interface (peers/mdns_sockets.py):
a record is then known to have come in on it, and only its addresses on that interface's
subnets are taken (a host on LAN A cannot aim us at LAN B). A peer heard on several
interfaces is one peer with the addresses of each. Every instance announces the same
record (all our addresses), without probing: the name holds our node id, so the only
"conflicts" are our own instances on one LAN (Wi-Fi and Ethernet) or a host squatting on
it, and renaming would serve neither.

When the set of local addresses changes (a cable plugged in, Wi-Fi joined) instances
open and close with their interfaces and the others update the record in place, so peers
see new addresses without a goodbye in between.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

from zeroconf import IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from exotray import PROTO, __version__
from exotray.agent.base import limits as L
from exotray.agent.peers import mdns_sockets
from exotray.agent.peers.records import (
    MAX_TXT_BYTES,
    Ignored,
    PeerRecord,
    RecordRejected,
    dns_label,
    merged,
    parse_record,
)

__all__ = ["MAX_TXT_BYTES", "PROTO", "SERVICE_TYPE", "Discovery", "PeerRecord",
           "RecordRejected", "parse_record"]

log = logging.getLogger(__name__)

SERVICE_TYPE = "_exotray._tcp.local."


@dataclass
class OnIface:
    """mDNS on one interface: its own zeroconf (sockets, cache), browser, registration."""

    key: str  # the interface's name (or the address, when no interface has it)
    addresses: tuple[str, ...]
    azc: AsyncZeroconf
    #: None: its sockets hear only this interface; else why they may hear others
    untied: str | None = None
    browser: AsyncServiceBrowser | None = None
    info: AsyncServiceInfo | None = None
    register: asyncio.Task | None = None


class Discovery:
    """Registers this agent and reports peers through callbacks (all on the loop).
    `local_networks(addresses)`: the subnets of the interfaces holding those addresses."""

    def __init__(
        self,
        *,
        node_id: str,
        name: str,
        port: int,
        on_found: Callable[[PeerRecord], None],
        on_removed: Callable[[str], None],
        local_networks: Callable[[list[str]], list[ipaddress.IPv4Network]],
        interface_of: Callable[[str], str | None] = mdns_sockets.interface_of,
    ) -> None:
        self.node_id = node_id
        self.name = name
        self.port = port
        self.on_found = on_found
        self.on_removed = on_removed
        self.local_networks = local_networks
        self.interface_of = interface_of
        self.addresses: tuple[str, ...] = ()
        self.ignored: deque[Ignored] = deque(maxlen=50)
        self.service = f"{dns_label(name)}-{node_id}.{SERVICE_TYPE}"
        self.server = f"{dns_label(name)}-{node_id}.local."
        self.on: dict[str, OnIface] = {}
        #: (interface, service) resolving now (at most MAX_RESOLVING), and services waiting
        #: to, per interface (bounded queues, taken in turn: a flood costs a bounded number
        #: of tasks and queries, and one LAN's flood does not hold up another's peers)
        self._resolving: dict[tuple[str, str], asyncio.Task] = {}
        self._waiting: dict[str, OrderedDict[str, None]] = {}
        self._turn = 0
        self._retries: dict[tuple[str, str], int] = {}  # unresolved: tries so far
        #: accepted services (MAX_KNOWN_SERVICES): name -> {interface: its record there}
        self._found: dict[str, dict[str, PeerRecord]] = {}
        #: records ignored, by reason (the first of each service and reason is logged,
        #: then the 10th, 100th... of a reason)
        self.ignored_counts: dict[str, int] = {}
        self._lock = asyncio.Lock()
        self.problem: str | None = None
        self._refused: dict[str, str] = {}
        #: what the system said when it refused an mDNS send (mdns_sockets.SendRefused)
        self.sends_refused: str | None = None
        self._hears = mdns_sockets.SendRefused(self._send_refused)
        #: the agent's loop: zeroconf may log from a thread of its own
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def running(self) -> bool:
        return bool(self.on)

    async def start(self, addresses: Iterable[str]) -> None:
        self._loop = asyncio.get_running_loop()
        logging.getLogger("zeroconf").addHandler(self._hears)
        async with self._lock:
            await self._apply(tuple(sorted(set(addresses))))
        if self.on:
            log.info("mDNS: announcing %s on %s", self.service, ", ".join(self._usable()))

    def _usable(self) -> list[str]:
        return sorted(a for on in self.on.values() for a in on.addresses)

    def _open(self, key: str, addrs: tuple[str, ...]) -> None:
        """A zeroconf on this interface's addresses (or on the first of them that works:
        one that refuses its multicast socket (an address just gone, EADDRINUSE) must not
        stop the agent or the other interfaces)."""
        for trial in (addrs, *((a,) for a in addrs if len(addrs) > 1)):
            try:
                azc = AsyncZeroconf(interfaces=list(trial), ip_version=IPVersion.V4Only)
            except OSError as e:
                for a in trial:
                    self._refused[a] = e.strerror or str(e)
                continue
            for a in trial:
                self._refused.pop(a, None)
            untied = mdns_sockets.tie(azc.zeroconf, mdns_sockets.ifname(key, addrs))
            on = self.on[key] = OnIface(key, trial, azc, untied)
            on.browser = AsyncServiceBrowser(azc.zeroconf, SERVICE_TYPE,
                                             handlers=[partial(self._on_change, key)])
            return

    def _say_problems(self) -> None:
        problems = []
        if not self.addresses:
            problems.append("no multicast-capable IPv4 interface to announce on")
        if self._refused:
            problems.append("mDNS cannot use " + "; ".join(
                f"{a} ({why})" for a, why in sorted(self._refused.items())))
        untied = {k: on.untied for k, on in self.on.items() if on.untied}
        if untied:
            problems.append(
                "mDNS cannot tell which interface a record came in on for " + "; ".join(
                    f"{k} ({why})" for k, why in sorted(untied.items()))
                + ": addresses on any of their subnets are taken")
        if self.sends_refused is not None:
            problems.append(f"the system refuses mDNS sends ({self.sends_refused}): "
                            + mdns_sockets.LOCAL_NETWORK_HINT)
        self.problem = "; ".join(problems) or None
        if self.problem:
            log.warning("%s; %s", self.problem,
                        "discovery is off" if not self.on else
                        f"announcing on {', '.join(self._usable())}")

    async def _register(self, on: OnIface) -> None:
        try:
            await on.azc.async_register_service(on.info, cooperating_responders=True)
        except Exception as e:  # interface gone: say so, keep measuring
            self.problem = f"mDNS registration on {on.key} failed: {e}"
            log.warning("%s", self.problem)

    async def restart(self, addresses: Iterable[str]) -> None:
        new = tuple(sorted(set(addresses)))
        async with self._lock:
            if new == self.addresses and (self.on or not new):
                return
            log.info("mDNS: local addresses changed (%s -> %s); re-announcing",
                     ", ".join(self.addresses) or "none", ", ".join(new) or "none")
            await self._apply(new)

    async def _apply(self, new: tuple[str, ...]) -> None:
        """mDNS on the interfaces of these addresses: instances open and close with their
        interfaces; the others keep running and update the record in place."""
        # self.addresses stays what was asked for, so the same set is not retried on
        # every interface check; a change of the local addresses retries all of them.
        self.addresses = new
        self._refused = {}
        groups = mdns_sockets.group_by_interface(new, self.interface_of)
        for key in [k for k in self.on if k not in groups]:
            await self._close(self.on.pop(key))
        for key, addrs in groups.items():
            on = self.on.get(key)
            if on is None:
                self._open(key, addrs)
            elif on.addresses != addrs:
                try:
                    await on.azc.async_update_interfaces(list(addrs))
                    on.addresses = addrs
                    on.untied = mdns_sockets.tie(on.azc.zeroconf, mdns_sockets.ifname(key, addrs))
                except Exception as e:
                    log.warning("mDNS: moving %s to %s failed (%s); reopening", key,
                                ", ".join(addrs), e)
                    await self._close(self.on.pop(key))
                    self._open(key, addrs)
        self._say_problems()
        usable = self._usable()
        for on in self.on.values():
            if on.info is None:  # new: announce (it takes a moment; the agent goes on)
                on.info = self._info(usable)
                on.register = asyncio.create_task(self._register(on),
                                                  name=f"mdns-register-{on.key}")
            elif list(on.info.parsed_addresses()) != usable:
                await self._update(on, usable)

    def _info(self, addresses: list[str]) -> AsyncServiceInfo:
        return AsyncServiceInfo(
            SERVICE_TYPE, self.service, port=self.port,
            properties={"id": self.node_id, "name": self.name, "version": __version__,
                        "proto": str(PROTO)},
            server=self.server, parsed_addresses=addresses)

    async def _update(self, on: OnIface, addresses: list[str]) -> None:
        if on.register is not None and not on.register.done():
            await asyncio.wait([on.register], timeout=3.0)
        on.info = self._info(addresses)
        try:
            await on.azc.async_update_service(on.info)
        except Exception as e:
            log.warning("mDNS: updating the record on %s failed: %s", on.key, e)

    async def stop(self) -> None:
        logging.getLogger("zeroconf").removeHandler(self._hears)
        async with self._lock:
            await self._stop()

    def _send_refused(self, why: str) -> None:
        """(Called by the logging handler, in whichever thread logged: the problem is
        made on the loop's, where the state it reads changes.)"""
        loop = self._loop
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if loop is not None and here is not loop:
            with contextlib.suppress(RuntimeError):  # (a loop closed meanwhile: too late)
                loop.call_soon_threadsafe(self._send_refused, why)
            return
        if self.sends_refused is None:
            self.sends_refused = why
            self._say_problems()

    async def _stop(self) -> None:
        self._waiting.clear()
        for t in list(self._resolving.values()):
            t.cancel()
        if self._resolving:
            await asyncio.gather(*self._resolving.values(), return_exceptions=True)
        self._resolving.clear()
        while self.on:
            await self._close(self.on.popitem()[1], forget=False)

    async def _close(self, on: OnIface, forget: bool = True) -> None:
        self._waiting.pop(on.key, None)
        for job, t in list(self._resolving.items()):
            if job[0] == on.key:
                t.cancel()
        if on.register is not None:
            on.register.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await on.register
        if on.browser is not None:
            with contextlib.suppress(Exception):
                await on.browser.async_cancel()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(on.azc.async_close(), 3.0)  # sends the goodbye
        for name in [n for n, recs in self._found.items() if forget and on.key in recs]:
            self._forget(on.key, name)  # the interface went: its addresses go

    # -- browsing ----------------------------------------------------------------------
    def _on_change(self, key: str, zeroconf: Zeroconf, service_type: str, name: str,
                   state_change: ServiceStateChange) -> None:
        job = (key, name)
        if state_change is ServiceStateChange.Removed:
            self._waiting.get(key, {}).pop(name, None)
            task = self._resolving.pop(job, None)
            if task is not None:
                task.cancel()
            self._forget(key, name)
            return
        if name == self.service:
            return
        old = self._resolving.get(job)
        if old is not None and not old.done():
            return
        queue = self._waiting.setdefault(key, OrderedDict())
        queue[name] = None
        queue.move_to_end(name)
        if len(queue) > L.MAX_RESOLVE_QUEUE:
            dropped, _ = queue.popitem(last=False)
            self._count("resolve_queue_full", f"{dropped} dropped unresolved: over "
                        f"{L.MAX_RESOLVE_QUEUE} services waiting")
        self._pump()

    def _forget(self, key: str, name: str) -> None:
        """The service is gone from interface `key`: the peer keeps its addresses heard
        on other interfaces; heard nowhere else, it is gone."""
        recs = self._found.get(name)
        if recs is None or key not in recs:
            return
        gone = recs.pop(key)
        if recs:
            self.on_found(merged(recs))
            return
        del self._found[name]
        log.info("mDNS: %s said goodbye", name)
        self.on_removed(gone.id)

    def _retry_later(self, job: tuple[str, str]) -> None:
        """Queue an unresolved service again, after 2, 4, 8 s (its answer may have been
        lost among a flood's packets; zeroconf will not tell us of it again)."""
        tries = self._retries[job] = self._retries.get(job, 0) + 1
        if len(self._retries) > L.MAX_RESOLVE_QUEUE:
            del self._retries[next(iter(self._retries))]
        if tries <= 3:
            asyncio.get_running_loop().call_later(2.0 ** tries, self._requeue, job)

    def _requeue(self, job: tuple[str, str]) -> None:
        if job[0] in self.on and job not in self._resolving:
            self._waiting.setdefault(job[0], OrderedDict())[job[1]] = None
            self._pump()

    def _pump(self) -> None:
        while len(self._resolving) < L.MAX_RESOLVING and self.on:
            keys = [k for k, queue in self._waiting.items() if queue]
            if not keys:
                break
            self._turn += 1
            key = keys[self._turn % len(keys)]  # interfaces in turn
            job = (key, self._waiting[key].popitem(last=False)[0])
            self._resolving[job] = asyncio.create_task(self._resolve(job),
                                                       name=f"mdns-{job[1]}")

    async def _resolve(self, job: tuple[str, str]) -> None:
        key, name = job
        on = self.on.get(key)
        if on is None:
            self._resolving.pop(job, None)
            return
        info = AsyncServiceInfo(SERVICE_TYPE, name)
        try:
            # 3 s for a peer's answer; a fraction of that while a queue waits (a flood of
            # records with no SRV/TXT/A would otherwise hold real peers up for minutes)
            ok = await info.async_request(on.azc.zeroconf,
                                          3000 if not self._waiting.get(key) else 1000)
        except Exception as e:
            self._ignore(name, "unresolvable", str(e))
            return
        finally:
            self._resolving.pop(job, None)
            self._pump()
        if not ok:
            self._ignore(name, "unresolvable", "no answer to the SRV/TXT/A query")
            self._retry_later(job)
            return
        # Only this interface's subnets: the record came in on it (unless its sockets
        # could not be tied to it: then any mDNS interface's, and `problem` says so).
        heard_on = list(on.addresses) if on.untied is None else self._usable()
        try:
            record = parse_record(
                name, info.port, info.properties, info.parsed_addresses(IPVersion.V4Only),
                own_id=self.node_id, own_service=self.service,
                local_networks=self.local_networks(heard_on))
        except RecordRejected as e:
            if e.reason != "own":
                self._ignore(name, e.reason, f"{e.detail} (heard on {key})")
            return
        self._accept(key, record)

    def _accept(self, key: str, record: PeerRecord) -> None:
        name = record.service
        holder = next((s for s, recs in self._found.items() if s != name
                       and any(r.id == record.id for r in recs.values())), None)
        if holder is not None:
            # First come, first served: a second service claiming a known peer's id is
            # either an impostor or a stale re-registration; neither may move its links.
            self._ignore(name, "duplicate_id", f"id {record.id} is already {holder}")
            return
        recs = self._found.setdefault(name, {})
        if any(r.id != record.id for k, r in recs.items() if k != key):
            self._ignore(name, "duplicate_id", f"says id {record.id} on {key}, "
                         "another id elsewhere")
            return
        recs[key] = record
        if len(self._found) > L.MAX_KNOWN_SERVICES:
            del self._found[next(iter(self._found))]
        self.on_found(merged(recs))

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
