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
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from zeroconf import IPVersion, ServiceStateChange, Zeroconf
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from exotray import PROTO, __version__
from exotray.core.schema import unsafe_char

log = logging.getLogger(__name__)

SERVICE_TYPE = "_exotray._tcp.local."
MAX_TXT_BYTES = 512
_ID_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


@dataclass(frozen=True)
class PeerRecord:
    service: str
    id: str
    name: str
    version: str
    proto: int
    port: int
    addresses: tuple[str, ...]


class RecordRejected(ValueError):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def _text(props: dict, key: bytes) -> str | None:
    value = props.get(key)
    if value is None:
        return None
    try:
        return value.decode("utf-8")
    except (UnicodeDecodeError, AttributeError):
        raise RecordRejected("bad_txt", f"{key.decode()} is not UTF-8 text") from None


def parse_record(
    service: str,
    port: int | None,
    properties: dict[bytes, bytes | None] | None,
    addresses: Iterable[str],
    *,
    own_id: str,
    own_service: str | None,
    local_networks: Iterable[ipaddress.IPv4Network],
) -> PeerRecord:
    """Validate what a resolved DNS-SD record says; raise RecordRejected(reason).

    Reasons: own (our own record), bad_port, no_txt, txt_too_large, bad_txt, bad_id,
    spoofed_id (another service claiming our id), version_mismatch, no_address (none of
    its IPv4 addresses is on one of our subnets).
    """
    if own_service is not None and service == own_service:
        raise RecordRejected("own")
    if port is None or not 1 <= port <= 65535:
        raise RecordRejected("bad_port", repr(port))
    properties = {k: v for k, v in (properties or {}).items() if k}
    if not properties:  # none, or DNS-SD's empty TXT (a single empty string)
        raise RecordRejected("no_txt")
    size = sum(len(k) + len(v or b"") + 2 for k, v in properties.items())
    if size > MAX_TXT_BYTES:
        raise RecordRejected("txt_too_large", f"{size} bytes")
    peer_id = _text(properties, b"id")
    name = _text(properties, b"name")
    version = _text(properties, b"version") or "?"
    proto_text = _text(properties, b"proto")
    if peer_id is None or not _ID_RE.match(peer_id):
        raise RecordRejected("bad_id", repr(peer_id)[:70])
    if peer_id == own_id:
        raise RecordRejected("spoofed_id", f"{service} claims our id {own_id}")
    if name is None or not 1 <= len(name) <= 64:
        raise RecordRejected("bad_txt", f"name {name!r}"[:80])
    why = unsafe_char(name)  # the same rule as a snapshot's names: shown as plain text
    if why is not None:
        raise RecordRejected("bad_txt", f"name {name!r} contains {why}"[:120])
    try:
        proto = int(proto_text or "")
    except ValueError:
        raise RecordRejected("bad_txt", f"proto {proto_text!r}"[:80]) from None
    if proto != PROTO:
        raise RecordRejected(
            "version_mismatch",
            f"{name} speaks protocol {proto} (exotray {version}); we speak {PROTO}",
        )
    nets = list(local_networks)
    good: list[str] = []
    for a in addresses:
        try:
            ip = ipaddress.IPv4Address(a)
        except ValueError:
            continue
        if any(ip in n for n in nets) and not ip.is_loopback and not ip.is_unspecified:
            good.append(a)
    if not good:
        raise RecordRejected("no_address", f"{list(addresses)} not on any local subnet")
    return PeerRecord(service, peer_id, name, version, proto, port, tuple(sorted(set(good))))


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
        self._resolving: dict[str, asyncio.Task] = {}
        self._known: dict[str, str] = {}  # service name -> peer id
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
        self._resolving[name] = asyncio.create_task(self._resolve(name), name=f"mdns-{name}")

    async def _resolve(self, name: str) -> None:
        azc = self._azc
        if azc is None:
            return
        info = AsyncServiceInfo(SERVICE_TYPE, name)
        try:
            ok = await info.async_request(azc.zeroconf, 3000)
        except Exception as e:
            self._ignore(name, "unresolvable", str(e))
            return
        finally:
            self._resolving.pop(name, None)
        if not ok:
            self._ignore(name, "unresolvable", "no answer to the SRV/TXT/A query")
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
        self.on_found(record)

    def _ignore(self, service: str, reason: str, detail: str) -> None:
        for ig in self.ignored:
            if ig.service == service and ig.reason == reason:
                ig.detail = detail
                return
        self.ignored.append(Ignored(service, reason, detail))
        log.warning("mDNS: ignoring %s: %s%s", service, reason, f" ({detail})" if detail else "")


def _dns_label(name: str) -> str:
    label = re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-")[:40]
    return label or "exotray"
