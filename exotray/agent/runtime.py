"""The agent: one asyncio program that samples, probes, detects, shares and serves.

Loops, each on its own fixed schedule (no drift, no overlap):
  * sample  (every interval): interface counters -> rates -> link utilization ->
    saturation detector -> events; history rows.
  * probe   (interval / probes_per_interval): one UDP probe per link, timeouts, up/down.
  * fetch   (every interval): each peer's /v1/snapshot through one shared httpx client.
  * resolve (every 10 s until resolved): host names of manual peers.
The HTTP API runs in the same loop (uvicorn on a socket we bind ourselves, so the TCP
and UDP ports are known to be ours before anything starts).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO

import httpx
import uvicorn

from exotray import __version__
from exotray.agent import control, onlink, sampler, views
from exotray.agent import links as linkstats
from exotray.agent.bound_http import bind_options, bound_transport
from exotray.agent.captest import CapacityTester
from exotray.agent.discovery import Discovery
from exotray.agent.interfaces import InterfaceClassifier, mdns_by_default
from exotray.agent.links import Link, Target, r
from exotray.agent.monitor import IfaceState, InterfaceMonitor
from exotray.agent.peers import Peer, PeerTable
from exotray.agent.probe import ProbeSocket
from exotray.core import health, paths
from exotray.core.events import EventLog
from exotray.core.saturation import SaturationParams
from exotray.core.schema import (
    MAX_SNAPSHOT_BYTES,
    SnapshotRejected,
    parse_snapshot,
)
from exotray.core.settings import Settings, parse_peer

log = logging.getLogger(__name__)

#: route lookups (which local interface reaches a peer address) are refreshed this often
ROUTE_REFRESH_S = 5.0
#: counter readings per interval (rates are sliding averages over one interval)
SUBSAMPLES = 4


class _Server(uvicorn.Server):
    """uvicorn inside our loop: the agent owns signals, not uvicorn."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _Throttled:
    """Log a recurring problem once, then at most once a minute with a count."""

    def __init__(self, clock: Callable[[], float], every_s: float = 60.0) -> None:
        self.clock = clock
        self.every_s = every_s
        self._seen: dict[str, tuple[float, int]] = {}

    def __call__(self, key: str, level: int, msg: str, *args: Any) -> None:
        now = self.clock()
        last = self._seen.get(key)
        if last is None or now - last[0] >= self.every_s:
            suffix = f" (and {last[1]} more since last report)" if last and last[1] else ""
            log.log(level, msg + suffix, *args)
            self._seen[key] = (now, 0)
        else:
            self._seen[key] = (last[0], last[1] + 1)


def bind_pair(bind: str, port: int, attempts: int = 20) -> tuple[socket.socket, socket.socket]:
    """A listening TCP socket and a UDP socket on the same port number."""
    for _ in range(attempts):
        tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            tcp.bind((bind, port))
            real = tcp.getsockname()[1]
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                udp.bind((bind, real))
            except OSError:
                udp.close()
                raise
        except OSError:
            tcp.close()
            if port != 0:
                raise
            continue
        tcp.listen(128)
        tcp.setblocking(False)
        return tcp, udp
    raise OSError(f"no port free for both TCP and UDP on {bind}")


SIGNATURE_HEADER = "x-exotray-signature"


class ClusterKeyError(ValueError):
    """The cluster key file cannot be read or is too short."""


def load_key(path: Path) -> bytes:
    """The cluster key (its bytes, surrounding whitespace removed); never logged."""
    try:
        key = path.read_bytes().strip()
        mode = path.stat().st_mode
    except OSError as e:
        raise ClusterKeyError(f"cannot read the cluster key file {path}: {e.strerror}") from None
    if len(key) < 16:
        raise ClusterKeyError(f"the cluster key in {path} is too short: use at least 16 bytes "
                        "(e.g. `head -c 32 /dev/urandom | base64 > key`)")
    if mode & 0o077:
        log.warning("the cluster key file %s is readable by other users", path)
    return key


def sign(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


class StartError(RuntimeError):
    """The agent cannot start; the message says why, in the user's terms."""


class StateDirError(StartError):
    """The state dir cannot be used (not a directory, not writable, or held by another
    agent)."""


def lock_state_dir(state_dir: Path) -> int:
    """Hold the state dir for this agent's life: an exclusive flock on its `lock` file
    (released by the kernel when the process ends, however it ends). Two agents with one
    state dir would share one node id and drop each other's snapshots as their own, so a
    second one is refused. Returns the lock's file descriptor."""
    if state_dir.exists() and not state_dir.is_dir():  # mkdir would say "File exists"
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(state_dir))
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / paths.LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        who = f" (pid {holder})" if holder.isdigit() else ""
        raise StateDirError(
            f"cannot use state dir {state_dir}: another exotray agent{who} is using it, and "
            "two agents with one state dir would share one node id. Give this one its own: "
            "--state-dir DIR."
        ) from None
    except OSError:
        os.close(fd)
        raise
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def load_node_id(state_dir: Path) -> str:
    """This node's stable id, created once in the state dir.

    Peers know a node by its id, so a node_id file that holds no id is refused, never
    replaced behind the user's back (moving it aside gives a new identity). A new id is
    written to node_id.tmp, flushed and fsynced, renamed into place and the directory
    fsynced; on failure (a full disk, a read-only dir) no node_id.tmp is left behind.
    Failures are OSErrors whose text names the file and what to do (the caller adds
    "cannot use state dir …" and releases the state dir's lock)."""
    path = state_dir / "node_id"
    aside = f"move it aside (mv {path} {path}.bad) and start again"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raw = None
    except IsADirectoryError:
        raise OSError(errno.EISDIR, f"{path} is a directory, not this node's id file: "
                      f"{aside}; this node then gets a new id") from None
    except OSError as e:
        raise OSError(e.errno, f"cannot read this node's id from {path}: {e.strerror}") from None
    if raw is not None:
        text = raw.decode("utf-8", errors="replace").strip()
        if re.fullmatch(r"[0-9a-z]{1,64}", text):
            return text
        if text:
            raise OSError(errno.EINVAL, (
                f"{path} does not hold a node id (it holds {text[:24]!r}): it was edited or "
                f"damaged. Peers know this node by that id; to give it a new one, {aside}."))
        log.warning("%s is empty (written by a crash while it was created); making a new "
                    "node id", path)
    node_id = secrets.token_hex(6)
    tmp = path.with_suffix(".tmp")
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644)
        try:
            os.write(fd, f"{node_id}\n".encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OSError(e.errno, f"cannot write a new node id to {path}: {e.strerror}") from None
    # The rename itself on disk. Best effort: some file systems cannot fsync a directory,
    # and the id is in place either way.
    with contextlib.suppress(OSError):
        dir_fd = os.open(state_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return node_id


class Agent:
    def __init__(
        self,
        settings: Settings,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        classifier: InterfaceClassifier | None = None,
    ) -> None:
        self.settings = settings.validate()
        self.clock = clock
        self.key = load_key(Path(settings.key_file)) if settings.key_file else None
        self.state_dir = Path(settings.state_dir) if settings.state_dir else paths.state_dir()
        self._lock_fd: int | None = None
        try:
            self._lock_fd = lock_state_dir(self.state_dir)
            self.node_id = load_node_id(self.state_dir)
        except OSError as e:
            self._unlock()
            raise StateDirError(
                f"cannot use state dir {self.state_dir}: {e.strerror or e}") from None
        self.monitor = InterfaceMonitor(settings, classifier or InterfaceClassifier(),
                                        settings.interval)
        self.sat_params = SaturationParams(
            threshold=settings.threshold,
            sustain_s=settings.sustain,
            clear_s=settings.clear,
            cooldown_s=settings.cooldown,
        )
        self.interval = settings.interval
        self._mono0 = clock()
        self._wall0 = wall()
        self.table = PeerTable(
            clock, self._make_link, down_after_s=settings.down_after * self.interval,
            on_link_added=lambda link: self._route(link, self.clock()),
            on_link_dropped=self._forget_target, on_peer_event=self._peer_event,
        )
        self.peers: dict[str, Peer] = self.table.peers
        self.links: dict[Target, Link] = self.table.links
        self.captest: CapacityTester | None = None
        self.platform = sys.platform
        self._subtick = 0
        self._events_file: TextIO | None = None
        self.events = EventLog(sinks=[self._log_event])
        self.counters: dict[str, int] = {"snapshots_rejected": 0, "fetch_errors": 0,
                                         "snapshots_unauthenticated": 0}
        self.rejections: dict[str, int] = {}
        self._throttled = _Throttled(clock)
        self.last_sample: float | None = None
        self.port = settings.port
        self.probe: ProbeSocket | None = None
        self.http: httpx.AsyncClient | None = None
        #: clients whose connections leave through one interface: (name, index) -> client
        self._http_via: dict[tuple[str, int], httpx.AsyncClient] = {}
        self._ifindex = onlink.IfIndex()
        self._reply_via_cache: dict[tuple[str, int], int | None] = {}
        self._reply_via_for: object = None
        self._server: _Server | None = None
        self.discovery: Discovery | None = None
        self._fetching: dict[str, asyncio.Task] = {}
        self._discovery_task: asyncio.Task | None = None
        self._tasks: list[asyncio.Task] = []
        self._stop = asyncio.Event()
        self.paused = False
        self.config_file: Path | None = None
        self.control_token: str | None = None
        for spec in settings.peers:
            host, port = parse_peer(spec)
            self.table.add_manual(host, port)

    @property
    def nics(self) -> dict[str, sampler.NicInfo]:
        return self.monitor.nics

    @property
    def ifaces(self) -> dict[str, IfaceState]:
        return self.monitor.ifaces

    # -- peers and links ---------------------------------------------------------------
    def _make_link(self, peer: Peer, target: Target) -> Link:
        return linkstats.new_link(self.node_id, peer, target, self.interval, self.sat_params)

    def _forget_target(self, target: Target) -> None:
        if self.probe is not None:
            self.probe.forget(target)

    def _route(self, link: Link, now: float, recheck: bool = False) -> None:
        """Attribute the link to a local interface: the one that has the peer on-link
        (found by probing when several have), else the one the route table sends from.
        `recheck`: interfaces or addresses changed, so search an ambiguous link again."""
        link.route_checked = now
        src = sampler.source_address(link.target[0])
        routed = sampler.interface_of(src, self.nics)
        path = link.path
        changed = path.update(onlink.candidates(link.target[0], self.nics), routed)
        if not changed and recheck:
            path.recheck()
        link.local_interface = path.interface
        if changed and path.onlink and (len(path.candidates) > 1 or path.interface != routed):
            log.info("link to %s: on-link on %s (routes say %s): %s", link.target[0],
                     ", ".join(path.candidates), routed or "none",
                     "searching" if path.searching else f"through {path.interface}")

    def _send_probe(self, link: Link) -> None:
        """One probe, through the link's on-link interface when it has one."""
        probe = self.probe
        assert probe is not None
        iface = link.path.via()
        index = self._ifindex.index(iface, self.nics) if iface is not None else None
        if iface is not None and index is None:
            link.route_checked = -1e9  # gone: the next full sample looks again
        sent_at = probe.send(link.target, index)
        if sent_at is not None:
            link.path.sent(sent_at, iface if index is not None else None)
        elif iface is not None and index is not None:
            # e.g. the interface was re-created (a new index): look both up again
            self._ifindex.forget(iface)
            link.route_checked = -1e9

    def _reply_via(self, src: str, index: int) -> int | None:
        """The reflector's choice: answer an on-link requester through the interface its
        request arrived on (onlink.reply_through), else as the routes say."""
        if self._reply_via_for is not self.nics:
            self._reply_via_for = self.nics
            self._reply_via_cache = {}
        key = (src, index)
        if key not in self._reply_via_cache:
            if len(self._reply_via_cache) > 1024:
                self._reply_via_cache.clear()
            name = self._ifindex.name(index, self.nics)
            self._reply_via_cache[key] = (
                index if onlink.reply_through(src, name, self.nics) else None)
        return self._reply_via_cache[key]

    def _client_for(self, link: Link | None) -> httpx.AsyncClient:
        """The shared client, or for a link pinned to an on-link interface that the
        route table would not pick for certain, one whose connections leave through
        that interface (bound_http.py)."""
        assert self.http is not None
        iface = link.path.pinned if link is not None and link.path.overrides_route else None
        if iface is None:
            return self.http
        index = self._ifindex.index(iface, self.nics)
        options = bind_options(iface, index or 0, self.platform)
        if index is None or not options:
            return self.http
        client = self._http_via.get((iface, index))
        if client is None:
            for key in [k for k in self._http_via if k[0] == iface]:
                old = self._http_via.pop(key)  # the interface was re-created
                asyncio.get_running_loop().create_task(old.aclose())
            client = self._http_via[(iface, index)] = httpx.AsyncClient(
                transport=bound_transport(options, httpx.Limits(max_connections=64,
                                                                max_keepalive_connections=32)),
                timeout=self.http.timeout, headers=self.http.headers, trust_env=False,
            )
        return client

    async def _resolve_peers(self) -> None:
        loop = asyncio.get_running_loop()
        now = self.clock()
        for peer in list(self.peers.values()):
            if peer.host is None or peer.manual_targets or now < peer.resolve_after:
                continue
            try:
                ipaddress.IPv4Address(peer.host)
                addrs = [peer.host]
            except ValueError:
                try:
                    infos = await loop.getaddrinfo(
                        peer.host, peer.port, family=socket.AF_INET, type=socket.SOCK_DGRAM
                    )
                    addrs = sorted({i[4][0] for i in infos})
                except OSError as e:
                    peer.resolve_after = now + 10.0
                    peer.last_error = f"cannot resolve {peer.host}: {e}"
                    log.warning("peer %s: cannot resolve host name (%s); retrying in 10 s",
                                peer.key, e)
                    continue
            peer.manual_targets = [(a, peer.port) for a in addrs]
            self.table.set_targets(peer)

    # -- the loops ---------------------------------------------------------------------
    async def _every(self, period: float, fn: Callable[[], Any]) -> None:
        """Call fn (sync or async) on a fixed schedule; a slow call skips ticks, not drifts."""
        next_at = self.clock()
        while True:
            try:
                r = fn()
                if asyncio.iscoroutine(r):
                    await r
            except asyncio.CancelledError:
                raise
            except Exception:  # a bug in one tick must not stop the agent
                log.exception("error in %s", getattr(fn, "__name__", fn))
            next_at += period
            now = self.clock()
            if next_at < now:
                next_at = now + period - ((now - next_at) % period)
            await asyncio.sleep(next_at - now)

    def _probe_tick(self) -> None:
        probe = self.probe
        assert probe is not None
        probe.expire()
        if self.paused:
            return
        now = self.clock()
        for link in self.links.values():
            if link.first_probe is None:
                link.first_probe = now
            self._send_probe(link)
        self.table.update_liveness(now)

    def _peer_event(self, peer: Peer, up: bool, why: str) -> None:
        self.events.emit(
            "peer_up" if up else "peer_down",
            self.wall(self.clock()),
            link_id=None,
            peer_id=peer.id,
            peer_name=peer.name or peer.key,
            utilization=None,
            reason=why,
            addresses=[f"{a}:{p}" for a, p in peer.addresses],
        )

    def _on_reply(self, target: Target, sent_at: float, rtt_ms: float) -> None:
        link = self.links.get(target)
        if link is None:
            return
        link.rtt.reply(sent_at, rtt_ms)
        pinned = link.path.replied(sent_at)
        if pinned is not None:
            link.local_interface = pinned
            log.info("link to %s: answers through %s (on-link on %s)", target[0], pinned,
                     ", ".join(link.path.candidates))
        self.table.replied(link, self.clock())

    def _on_lost(self, target: Target, sent_at: float) -> None:
        link = self.links.get(target)
        if link is not None:
            link.rtt.lost(sent_at)

    def _sample_tick(self) -> None:
        """Counters four times per interval (rates over a sliding interval, so saturation
        is seen within a quarter interval of being due); interfaces, routes and history
        once per interval."""
        now = self.clock()
        t = self.wall(now)
        full = self._subtick % SUBSAMPLES == 0
        self._subtick += 1
        try:
            counters, nics = self.monitor.read(full)
        except OSError as e:
            self._throttled("sample", logging.WARNING, "cannot read interface counters: %s", e)
            return
        addresses_changed = self._update_ifaces(nics, now) if full else False
        self.monitor.update_rates(now, counters, nics)
        for link in self.links.values():
            if full and (addresses_changed or now - link.route_checked >= ROUTE_REFRESH_S):
                self._route(link, now, recheck=addresses_changed)
            self._detect(link, t)
        if full:
            self.monitor.record_history(t)
            for link in self.links.values():
                rate, _capacity, util = self.monitor.numbers(link.local_interface)
                linkstats.history_row(link, now, t, rate, util)
        self.last_sample = now

    def _update_ifaces(self, nics: dict[str, sampler.NicInfo], now: float) -> bool:
        """Take a fresh interface list; return whether any address changed (then mDNS
        follows the new addresses)."""
        changed = self.monitor.update(nics, now)
        if changed and self.discovery is not None:
            self._restart_discovery()
        return changed

    def _detect(self, link: Link, t: float) -> None:
        rate, capacity, util = self.monitor.numbers(link.local_interface)
        if rate is not None and not self.paused:
            change = linkstats.detect(link, self.clock(), rate, util)
            if change is not None:
                self.events.emit(
                    "link_saturated" if change.saturated else "link_cleared",
                    t,
                    link_id=link.id,
                    peer_id=link.peer.id,
                    peer_name=link.peer.name or link.peer.key,
                    node=self.settings.name,
                    local_interface=link.local_interface,
                    local_label=self.monitor.label(link.local_interface),
                    utilization=r(util),
                    rx_bytes_per_s=r(rate.rx_bytes_per_s, 1),
                    tx_bytes_per_s=r(rate.tx_bytes_per_s, 1),
                    capacity_bytes_per_s=capacity.bytes_per_s,
                )

    async def _fetch_tick(self) -> None:
        """Start a fetch for every peer whose previous one has finished: a slow or
        hostile peer (slowloris) delays only itself, never the others' fetches."""
        if not self.paused:
            for p in self.peers.values():
                running = self._fetching.get(p.key)
                if p.addresses and (running is None or running.done()):
                    self._fetching[p.key] = asyncio.create_task(self._fetch(p),
                                                                name=f"fetch-{p.key}")
        for key in [k for k, t in self._fetching.items() if t.done()]:
            del self._fetching[key]
        self.table.prune(self.clock())

    async def _fetch(self, peer: Peer) -> None:
        assert self.http is not None
        addr, port = self.table.best_target(peer, self.clock())
        url = f"http://{addr}:{port}/v1/snapshot"
        try:
            client = self._client_for(self.links.get((addr, port)))
            async with asyncio.timeout(max(0.5, min(2.0, self.interval))):
                async with client.stream("GET", url) as resp:
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
            if self.key is not None:
                got = resp.headers.get(SIGNATURE_HEADER, "")
                if not hmac.compare_digest(got, sign(self.key, bytes(body))):
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
            snap = parse_snapshot(bytes(body), own_id=self.node_id, expected_id=expected)
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
        peer.authenticated = self.key is not None
        peer.snapshot_at = self.clock()
        peer.reachable = True
        peer.last_error = None
        self.table.identified(peer, snap.node.id, snap.node.name)

    # -- discovery ---------------------------------------------------------------------
    def mdns_addresses(self) -> list[str]:
        """IPv4 addresses to announce and browse on: --mdns-interface ones, or every
        up, multicast-capable, non-loopback interface's."""
        nics = self.nics
        wanted = self.settings.mdns_interfaces
        out: list[str] = []
        for name, nic in nics.items():
            if not nic.up or nic.loopback:
                continue
            st = self.ifaces.get(name)
            if not wanted and st is not None and not mdns_by_default(name, st.kind):
                continue  # VPNs and macOS-internal interfaces: see mdns_by_default
            for addr, _prefix in nic.networks:
                if (wanted and addr in wanted) or (not wanted and nic.multicast):
                    out.append(addr)
        return sorted(out)

    def local_networks(self) -> list[ipaddress.IPv4Network]:
        return [
            ipaddress.IPv4Network(f"{a}/{p}", strict=False)
            for nic in self.nics.values()
            if nic.up
            for a, p in nic.networks
        ]

    def _restart_discovery(self) -> None:
        d = self.discovery
        if d is None:
            return
        new = self.mdns_addresses()
        if tuple(new) == d.addresses and d.running:
            return
        if self._discovery_task is not None and not self._discovery_task.done():
            return  # the next sample tick tries again
        self._discovery_task = asyncio.create_task(d.restart(new), name="mdns-restart")

    # -- views -------------------------------------------------------------------------
    def wall(self, mono: float) -> float:
        """Wall-clock time derived from the monotonic clock: steady across clock steps."""
        return self._wall0 + (mono - self._mono0)

    def link_dict(self, link: Link, now: float) -> dict[str, Any]:
        return views.link_dict(link, now, self.monitor)

    def snapshot(self) -> dict[str, Any]:
        """This node's snapshot (/v1/snapshot). A pure read: liveness moves on the probe
        tick only."""
        counters = dict(self.counters)
        if self.probe is not None:
            counters.update(self.probe.counters)
        for k, v in self.monitor.rates.rejected.items():
            counters[f"rates_rejected_{k}"] = v
        try:
            counters["asyncio_tasks"] = len(asyncio.all_tasks())
        except RuntimeError:  # no running loop (a test calling snapshot() directly)
            counters["asyncio_tasks"] = 0
        return views.snapshot(
            node_id=self.node_id, name=self.settings.name, interval=self.interval,
            now=self.clock(), last_sample=self.last_sample, monitor=self.monitor,
            links=self.links.values(),
            kernel_timestamps=bool(self.probe and self.probe.kernel_timestamps),
            paused=self.paused, warnings=self._warnings(), counters=counters,
        )

    def _warnings(self) -> list[str]:
        out = []
        if self.probe is not None and health.local_network_denied(
                self.platform, self.probe.hostunreach_streak, len(self.links)):
            out.append(health.LOCAL_NETWORK_DENIED)
        return out

    def cluster(self) -> dict[str, Any]:
        """Every node's snapshot with its age, our peer table and mDNS (/v1/cluster)."""
        d = self.discovery
        discovery = {
            "mdns": self.settings.mdns,
            "addresses": list(d.addresses) if d else [],
            "problem": d.problem if d else None,
            "ignored": [vars(i).copy() for i in d.ignored] if d else [],
        }
        return views.cluster(node_id=self.node_id, own=self.snapshot(),
                             authenticated=self.key is not None, peers=self.peers.values(),
                             now=self.clock(), discovery=discovery)

    def history(self, link_id: str | None, iface: str | None, seconds: float) -> dict | None:
        return views.history(links=self.links.values(), ifaces=self.monitor.ifaces,
                             link_id=link_id, iface=iface,
                             since=self.wall(self.clock()) - seconds, interval=self.interval)

    # -- events ------------------------------------------------------------------------
    def _log_event(self, event: dict[str, Any]) -> None:
        who = event.get("peer_name") or event.get("peer_id")
        if event["type"] in ("link_saturated", "link_cleared"):
            util = event.get("utilization")
            log.warning(
                "%s: link to %s via %s, utilization %s",
                event["type"], who, event.get("local_interface"),
                "unknown" if util is None else f"{util:.0%}",
            )
        else:
            log.info("%s: %s", event["type"], who)
        if self._events_file is not None:
            try:
                self._events_file.write(json.dumps(event, separators=(",", ":")) + "\n")
                self._events_file.flush()
            except (OSError, ValueError) as e:
                self._throttled("events", logging.ERROR, "cannot write events: %s", e)

    # -- control ---------------------------------------------------------------------
    def reconfigure(self, new: Settings) -> None:
        """Apply changed settings without a restart (Preferences). A new cluster key file
        is read first: a bad one raises ClusterKeyError and changes nothing."""
        new.validate()
        if new.key_file != self.settings.key_file:
            self.key = load_key(Path(new.key_file)) if new.key_file else None
            if self.probe is not None:
                self.probe.key = self.key
            for p in self.peers.values():
                p.authenticated = False
        old, self.settings = self.settings, new
        self.monitor.settings = new
        self.sat_params = SaturationParams(
            threshold=new.threshold, sustain_s=new.sustain, clear_s=new.clear,
            cooldown_s=new.cooldown,
        )
        changed_interval = new.interval if new.interval != old.interval else None
        for link in self.links.values():
            linkstats.retune(link, changed_interval, self.sat_params)
        self.table.down_after_s = new.down_after * new.interval
        if new.interval != old.interval:
            self.interval = new.interval
            self.monitor.set_interval(new.interval)
            if self.probe is not None:
                self.probe.timeout_s = max(1.0, new.interval)
            if self._tasks:
                self._restart_loops()
        changed = {k: getattr(new, k) for k in ("interval", "threshold", "sustain", "clear",
                                               "capacity", "notify_peers", "key_file")
                   if getattr(new, k) != getattr(old, k)}
        log.info("settings changed: %s", changed or "nothing")

    def set_paused(self, paused: bool) -> None:
        if paused != self.paused:
            self.paused = self.table.paused = paused
            log.info("monitoring %s", "paused" if paused else "resumed")
            if not paused:
                self.table.resume(self.clock(), self.interval)

    def _loops(self) -> list[asyncio.Task]:
        return [
            asyncio.create_task(
                self._every(self.interval / SUBSAMPLES, self._sample_tick), name="sample"
            ),
            asyncio.create_task(
                self._every(self.interval / self.settings.probes_per_interval, self._probe_tick),
                name="probe",
            ),
            asyncio.create_task(self._every(self.interval, self._fetch_tick), name="fetch"),
        ]

    async def measure(self, peer: str, interface: str | None = None, seconds: float = 5.0,
                      streams: int = 4) -> dict[str, Any]:
        """Active capacity test over our link to `peer` (name, id or address)."""
        assert self.captest is not None and self.http is not None
        links = [lk for lk in self.links.values()
                 if peer in (lk.peer.name, lk.peer.id, lk.target[0])
                 and (interface is None or lk.local_interface == interface)]
        up = [lk for lk in links if lk.up]
        if not links:
            raise LookupError(f"no link to {peer!r}" + (f" via {interface}" if interface else ""))
        if not up:
            raise LookupError(f"the link to {peer!r} is down")
        link = up[0]
        src = sampler.source_address(link.target[0])
        options: list = []
        iface = link.path.pinned if link.path.overrides_route else None
        if iface is not None:
            # Measured through the interface the link is pinned to, as its probes are:
            # the routes would send it elsewhere (e.g. a Mac's 169.254/16 via Wi-Fi).
            index = self._ifindex.index(iface, self.nics)
            options = bind_options(iface, index or 0, self.platform) if index else []
            src = next((a for a, _ in self.nics[iface].networks), src) \
                if iface in self.nics else src
        result = await self.captest.run(self._client_for(link), link.target[0],
                                        link.target[1], seconds=seconds, streams=streams,
                                        bind_ip=src, who=self.settings.name,
                                        sock_options=options)
        rates = [r for r in (result["up_mbit_s"], result["down_mbit_s"]) if r]
        if link.local_interface and rates:
            self.monitor.measured(link.local_interface, max(rates), result["measured_at"])
        log.info("capacity of the link to %s via %s: %s Mbit/s up, %s Mbit/s down",
                 link.peer.name or link.target[0], link.local_interface,
                 result["up_mbit_s"], result["down_mbit_s"])
        return {**result, "link_id": link.id, "interface": link.local_interface,
                "peer_name": link.peer.name}

    def _restart_loops(self) -> None:
        for t in self._tasks[1:4]:
            t.cancel()
        self._tasks[1:4] = self._loops()

    # -- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        from exotray.agent.api import create_app

        s = self.settings
        if s.events == "-":
            self._events_file = sys.stdout
        elif s.events:
            try:
                self._events_file = open(s.events, "a", encoding="utf-8")  # noqa: SIM115
            except OSError as e:
                raise StartError(f"cannot write events to {s.events}: {e.strerror or e}") from None
        try:
            self.control_token = control.load_or_create_token(self.state_dir)
        except OSError as e:
            raise StateDirError(
                f"cannot use state dir {self.state_dir}: {e.strerror or e}") from None
        try:
            tcp, udp = bind_pair(s.bind, s.port)
        except OSError as e:
            raise StartError(f"cannot listen on {s.bind}:{s.port}: {e.strerror or e}") from None
        self.port = tcp.getsockname()[1]
        self.probe = ProbeSocket(
            self._on_reply, self._on_lost, timeout_s=max(1.0, self.interval), clock=self.clock,
            key=self.key, reply_via=self._reply_via,
        )
        self.probe.open(s.bind, self.port, sock=udp)
        # Listens only during a consented test, on an ephemeral port (or capacity_port).
        self.captest = CapacityTester(s.bind, s.capacity_port or None,
                                      allow=s.allow_capacity_tests)
        self.http = httpx.AsyncClient(
            timeout=httpx.Timeout(2.0, connect=1.0),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=128),
            headers={"user-agent": f"exotray/{__version__}"},
            trust_env=False,
        )
        config = uvicorn.Config(
            create_app(self),
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            server_header=False,
            timeout_keep_alive=30,
            limit_concurrency=128,
            h11_max_incomplete_event_size=16 * 1024,
        )
        self._server = _Server(config)
        # Kinds first: mDNS skips VPN interfaces by their kind.
        self.monitor.update(sampler.read_nics(), self.clock())
        await self._resolve_peers()
        if s.mdns:
            missing = [a for a in s.mdns_interfaces
                       if not any(a in n.addresses for n in self.nics.values())]
            for a in missing:
                log.warning("--mdns-interface %s: no local interface has this address (yet)", a)
            self.discovery = Discovery(
                node_id=self.node_id, name=s.name, port=self.port,
                on_found=self.table.mdns_found, on_removed=self.table.mdns_removed,
                local_networks=self.local_networks,
            )
            await self.discovery.start(self.mdns_addresses())
        self._tasks = [
            asyncio.create_task(self._server.serve(sockets=[tcp]), name="exotray-api"),
            *self._loops(),
            asyncio.create_task(self._every(10.0, self._resolve_peers), name="resolve"),
        ]
        while not self._server.started:
            if self._tasks[0].done():
                self._tasks[0].result()
            await asyncio.sleep(0.01)
        log.info(
            "exotray agent %s (%s, id %s) listening on %s:%d (TCP and UDP), %d peer(s), "
            "kernel timestamps %s",
            __version__, s.name, self.node_id, s.bind, self.port, len(self.peers),
            "on" if self.probe.kernel_timestamps else "off",
        )

    def request_stop(self) -> None:
        self._stop.set()

    async def wait(self) -> None:
        await self._stop.wait()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        api = self._tasks[0] if self._tasks else None
        for t in self._tasks[1:]:
            t.cancel()
        if api is not None:
            try:
                await asyncio.wait_for(api, 5.0)
            except (TimeoutError, asyncio.CancelledError):
                api.cancel()
        for t in self._fetching.values():
            t.cancel()
        await asyncio.gather(*self._tasks, *self._fetching.values(), return_exceptions=True)
        self._tasks = []
        self._fetching = {}
        if self._discovery_task is not None:
            await asyncio.gather(self._discovery_task, return_exceptions=True)
        await self.monitor.stop()
        if self.discovery is not None:
            await self.discovery.stop()  # sends the goodbye
        if self.probe is not None:
            self.probe.close()
        if self.captest is not None:
            await self.captest.stop()
        if self.http is not None:
            await self.http.aclose()
        for client in self._http_via.values():
            await client.aclose()
        self._http_via = {}
        if self._events_file is not None and self._events_file is not sys.stdout:
            self._events_file.close()
        self._events_file = None
        self._unlock()
        log.info("exotray agent stopped")

    def _unlock(self) -> None:
        """Let go of the state dir (another agent may take it from now on)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None


async def run(settings: Settings, config_file: Path | None = None) -> int:
    """Run an agent until SIGINT or SIGTERM."""
    import signal

    agent = Agent(settings)
    agent.config_file = config_file
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, agent.request_stop)
    try:
        await agent.start()
        await agent.wait()
    finally:
        await agent.stop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.remove_signal_handler(sig)
    return 0
