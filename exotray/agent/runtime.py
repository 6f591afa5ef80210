"""The agent: a small `Agent` that assembles parts with one job each (see docs/design.md:
peers, links, monitor, probing, sharing, views, api, loops) and runs their ticks.

Loops, by name, each on a fixed schedule: tick (interval / 4: counters, probes and
liveness, the judgement of busy links; once per interval every link, interfaces, routes,
history, sharing and pruning — ticking.py, probe/pacing.py), exo (3 s), resolve (10 s), and
api (uvicorn on a socket we bind ourselves).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn

from exotray import __version__
from exotray.agent.base import fds, trim
from exotray.agent.base.keys import SIGNATURE_HEADER, ClusterKeyError, load_key, sign
from exotray.agent.base.loops import Loops
from exotray.agent.base.statedir import StartError, StateDirError, load_node_id, lock_state_dir
from exotray.agent.base.throttle import Throttled
from exotray.agent.exo.watch import ExoWatch, poll_period
from exotray.agent.history.eventsink import EventSink
from exotray.agent.history.store import HistoryStore
from exotray.agent.http import control
from exotray.agent.http.api import create_app, lazy_registry
from exotray.agent.http.captest import CapacityTester
from exotray.agent.http.measuring import measure, pick_link
from exotray.agent.http.serve import bind_pair, make_server
from exotray.agent.hw import onlink, sampler
from exotray.agent.hw import read as hwread
from exotray.agent.hw.hardware import Hardware
from exotray.agent.hw.kinds import InterfaceClassifier
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.peers import links as linkstats
from exotray.agent.peers.linkevents import LinkEvents
from exotray.agent.peers.links import Link, Target
from exotray.agent.peers.resolver import resolve_manual_peers
from exotray.agent.peers.table import Peer, PeerTable
from exotray.agent.probe.prober import Prober
from exotray.agent.probe.udp import ProbeSocket
from exotray.agent.share import views
from exotray.agent.share.clients import HttpClients
from exotray.agent.share.poll import PollSharing, Sharing
from exotray.agent.share.stream import StreamSharing
from exotray.agent.share.watch import Watch
from exotray.agent.ticking import Ticker
from exotray.core import paths
from exotray.core.events import EventLog, iso
from exotray.core.settings import Settings, parse_peer

if TYPE_CHECKING:
    from exotray.agent.peers.discovery import Discovery

__all__ = ["SIGNATURE_HEADER", "Agent", "ClusterKeyError", "StartError", "StateDirError",
           "bind_pair", "load_key", "load_node_id", "lock_state_dir", "sign"]

log = logging.getLogger(__name__)


class Agent:
    def __init__(self, settings: Settings, *, clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time,
                 classifier: InterfaceClassifier | None = None,
                 hardware: hwread.HwReader | None = None) -> None:
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
        self.interval = settings.interval
        self.sat_params = linkstats.saturation_params(settings)
        self._mono0 = clock()
        self._wall0 = wall()
        self.platform = sys.platform
        self.paused = False
        self.port = settings.port
        self.config_file: Path | None = None
        self.control_token: str | None = None
        self.captest: CapacityTester | None = None
        self.discovery: Discovery | None = None
        self._discovery_task: asyncio.Task | None = None
        self._server: uvicorn.Server | None = None
        #: it said "listening on …": only then does stopping say "stopped" (a start that
        #: failed says why instead, and never started)
        self._listening = False
        self._stop = asyncio.Event()
        self._throttled = Throttled(clock)
        self._sink = EventSink(self._throttled)
        self.store = HistoryStore(self.state_dir, settings.history_days, self._throttled)
        self.events = EventLog(sinks=[self._sink, self.store.event])
        self.store.on_open = self.events.resume  # a database opened late: number on
        # -- the parts --
        self.monitor = InterfaceMonitor(
            settings, classifier or InterfaceClassifier(), settings.interval,
            Hardware(hardware or hwread.reader_for(), self._hw_event, self.state_dir),
            self.state_dir)
        self.table = PeerTable(
            clock, self._make_link, down_after_s=settings.down_after * self.interval,
            on_link_added=lambda link: self.prober.route(link, self.clock()),
            on_link_dropped=lambda target: self.prober.forget(target),
            on_peer_event=self._peer_event,
            on_link_change=lambda *a: self.link_events.changed(*a),
        )
        self.peers: dict[str, Peer] = self.table.peers
        self.links: dict[Target, Link] = self.table.links
        self._ifindex = onlink.IfIndex()
        self.prober = Prober(self.table, self.monitor, self._ifindex, clock,
                             on_mtu=lambda link, said: self.link_events.mtu(
                                 link, said, self.clock()))
        self.clients = HttpClients(self._ifindex, lambda: self.monitor.nics,
                                   lambda: self.platform)
        share = dict(node_id=self.node_id, key=lambda: self.key,
                     interval=lambda: self.interval, clock=clock, throttled=self._throttled)
        self.sharing: Sharing = (
            StreamSharing(self.table, self.clients, snapshot=self.snapshot,
                          own=lambda: self.ticker.own.peak, watch=self._stream_watch(),
                          **share)
            if settings.sharing == "stream" else PollSharing(self.table, self.clients, **share))
        self.exo = ExoWatch(settings.exo_url, monitor=self.monitor, clock=clock,
                            links=lambda: self.links.values(),
                            emit=lambda t, f: self.events.emit(t, self.wall(clock()), **f))
        # link_down/up, link_flapping, link_slower (peers/linkevents.py)
        self.link_events = LinkEvents(self.events.emit, self.wall, self.monitor.label,
                                      lambda: self.settings.name,
                                      self.monitor.carrier_flapping)
        self.ticker = Ticker(
            clock=clock, wall=self.wall, monitor=self.monitor, table=self.table,
            prober=self.prober, exo=self.exo, sharing=lambda: self.sharing, store=self.store,
            events=self.events, throttled=self._throttled, paused=lambda: self.paused,
            node_name=lambda: self.settings.name, update_ifaces=self._update_ifaces,
            link_events=self.link_events,
            testing=lambda after: self.captest.testing(after) if self.captest else frozenset())
        self.loops = Loops(clock)
        for spec in settings.peers:
            self.table.add_manual(*parse_peer(spec))

    @property
    def probe(self) -> ProbeSocket | None:
        return self.prober.socket

    def wall(self, mono: float) -> float:
        """Wall-clock time derived from the monotonic clock: steady across clock steps."""
        return self._wall0 + (mono - self._mono0)

    def now(self) -> float:
        return self.wall(self.clock())

    def _make_link(self, peer: Peer, target: Target) -> Link:
        return linkstats.new_link(self.node_id, peer, target, self.interval, self.sat_params)

    # -- the ticks (ticking.py) ---------------------------------------------------------
    @property
    def last_sample(self) -> float | None:
        return self.ticker.last_sample

    def _sample_tick(self) -> None:
        """One tick's sampling alone (the tests that drive the detector call this)."""
        self.ticker.sample(self.ticker.count % self.ticker.per_interval == 0)
        self.ticker.count += 1

    def _update_ifaces(self, nics: dict[str, sampler.NicInfo], now: float) -> bool:
        """Take a fresh interface list; return whether any address changed (then mDNS
        follows the new addresses)."""
        changed = self.monitor.update(nics, now)
        if changed and self.discovery is not None:
            self._restart_discovery()
        return changed

    def _hw_event(self, type_: str, **fields: Any) -> None:
        self.events.emit(type_, self.wall(self.clock()), node=self.settings.name, **fields)

    def _capacity_tested(self, host: str, started: float, ended: float, role: str) -> None:
        """A capacity test with `host` ended: its interval, on each link to that host (its
        traffic was not judged as their load)."""
        for link in [lk for lk in self.table.links.values() if lk.target[0] == host]:
            self.events.emit("capacity_test", ended, link_id=link.id, peer_id=link.peer.id,
                             peer_name=link.peer.name or link.peer.key, node=self.settings.name,
                             local_interface=link.local_interface, started_at=iso(started),
                             seconds=round(ended - started, 1), role=role)

    def _peer_event(self, peer: Peer, up: bool, why: str) -> None:
        self.events.emit("peer_up" if up else "peer_down", self.wall(self.clock()),
                         link_id=None, peer_id=peer.id, peer_name=peer.name or peer.key,
                         utilization=None, reason=why, first=up and not peer.said_up,
                         addresses=[f"{a}:{p}" for a, p in peer.addresses])

    # -- discovery ---------------------------------------------------------------------
    def mdns_addresses(self) -> list[str]:
        return self.monitor.mdns_addresses(self.settings.mdns_interfaces)

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

    def _stream_watch(self) -> Watch:
        """What the stream's producer asks before building this node's state."""
        return Watch(
            links=lambda: self.links.values(),
            ifaces=lambda: views.iface_dicts(self.monitor, self.links.values()),
            member=self.monitor.member, numbers=self.monitor.numbers,
            label=self.monitor.label,
            top=lambda: {"node": views.node_dict(self.node_id, self.settings.name),
                         "interval_s": self.interval},
            events=lambda: sum(self.events.counts.values()),
            exo_running=lambda: self.exo.state is not None or bool(self.exo.rdma_rates.rates),
            own=lambda: self.ticker.own.peak,
            now=lambda: self.ticker.last_sample or self.clock(),
            flows=lambda link_id: views.flow_fields(self.monitor, link_id))

    # -- reads (pure: see share/views.py) ------------------------------------------------------
    def link_dict(self, link: Link, now: float) -> dict[str, Any]:
        return views.link_dict(link, now, self.monitor, self.exo)

    def snapshot(self, local: bool = True) -> dict[str, Any]:
        """This node's snapshot (/v1/snapshot; for a client not on loopback without the
        exo node's details). A pure read: liveness moves on the probe tick only."""
        return views.snapshot(
            node_id=self.node_id, name=self.settings.name, interval=self.interval,
            now=self.clock(), last_sample=self.last_sample, monitor=self.monitor,
            links=self.links.values(), probe=self.probe, platform=self.platform,
            paused=self.paused, shared_counters=self.sharing.counters, exo=self.exo,
            local=local, history=self.store.status() if local else None)

    def cluster(self, local: bool = True) -> dict[str, Any]:
        """Every node's snapshot with its age, our peer table and mDNS (/v1/cluster)."""
        return views.cluster(node_id=self.node_id, own=self.snapshot(local),
                             authenticated=self.key is not None, peers=self.peers.values(),
                             now=self.clock(), local=local,
                             discovery=views.discovery(self.settings.mdns, self.discovery),
                             sharing=(self.settings.sharing, self.sharing.protocol_of))

    def interfaces(self) -> dict[str, Any]:
        return views.interfaces(self.monitor, self.links.values())

    def history(self, link_id: str | None, iface: str | None, seconds: float) -> dict | None:
        return views.history(links=self.links.values(), ifaces=self.monitor.ifaces,
                             link_id=link_id, iface=iface,
                             since=self.wall(self.clock()) - seconds, interval=self.interval)

    # -- control -----------------------------------------------------------------------
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
        self.sat_params = linkstats.saturation_params(new)
        changed_interval = new.interval if new.interval != old.interval else None
        for link in self.links.values():
            linkstats.retune(link, changed_interval, self.sat_params)
        self.table.down_after_s = new.down_after * new.interval
        if changed_interval is not None:
            self.interval = new.interval
            self.monitor.set_interval(new.interval)
            if self.probe is not None:
                self.probe.timeout_s = max(1.0, new.interval)
            if self.loops:
                self._start_loops()
        changed = {k: getattr(new, k) for k in ("interval", "threshold", "sustain", "clear",
                                               "capacity", "notify_peers", "key_file", "units")
                   if getattr(new, k) != getattr(old, k)}
        log.info("settings changed: %s", changed or "nothing")

    def set_paused(self, paused: bool) -> None:
        if paused != self.paused:
            self.paused = self.table.paused = paused
            log.info("monitoring %s", "paused" if paused else "resumed")
            if not paused:
                self.table.resume(self.clock(), self.interval)

    async def measure(self, peer: str, interface: str | None = None, seconds: float = 5.0,
                      streams: int = 4) -> dict[str, Any]:
        """Active capacity test over our link to `peer` (measuring.pick_link)."""
        assert self.captest is not None
        return await measure(pick_link(self.links.values(), peer, interface),
                             tester=self.captest, clients=self.clients, monitor=self.monitor,
                             who=self.settings.name, seconds=seconds, streams=streams)

    # -- lifecycle ---------------------------------------------------------------------
    def _start_loops(self) -> None:
        """The periodic loops, (re)started on the current interval."""
        tick_s = self.ticker.period(self.interval, self.settings.probes_per_interval)
        if self.probe is not None:  # read at the ticks where it can be (probe/udp.py)
            self.probe.read_at_ticks(tick_s)
        self.loops.timer("tick", tick_s, self.ticker.tick)
        self.loops.every("exo", poll_period(self.interval), self.exo.tick)  # exo/watch.py

    async def start(self) -> None:
        s = self.settings
        try:
            self._sink.open(s.events)
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
        self.events.resume(await self.store.open())
        probe = self.prober.open(s.bind, self.port, udp, timeout_s=max(1.0, self.interval),
                                 key=self.key)
        # Listens only during a consented test, on an ephemeral port (or capacity_port).
        self.captest = CapacityTester(s.bind, s.capacity_port or None, allow=s.allow_capacity_tests,
                                      known=self.table.answered, key=lambda: self.key)
        self.captest.on_done = self._capacity_tested
        self.fd_budget = fds.budget_at_start()
        fds.quiet_accepts(asyncio.get_running_loop(), Throttled(time.monotonic))
        self._server = make_server(create_app(self, lazy_registry(self),
                                              self.sharing.routes()), self.fd_budget)
        # Kinds first: mDNS skips VPN interfaces by their kind.
        self.monitor.update(sampler.read_nics(), self.clock())
        await resolve_manual_peers(self.table, self.clock)
        if s.mdns:
            missing = [a for a in s.mdns_interfaces
                       if not any(a in n.addresses for n in self.monitor.nics.values())]
            for a in missing:
                log.warning("--mdns-interface %s: no local interface has this address (yet)", a)
            from exotray.agent.peers.discovery import Discovery  # zeroconf: only with mDNS on

            self.discovery = Discovery(
                node_id=self.node_id, name=s.name, port=self.port,
                on_found=self.table.mdns_found, on_removed=self.table.mdns_removed,
                local_networks=self.monitor.local_networks,
            )
            await self.discovery.start(self.mdns_addresses())
        api = self.loops.run("api", self._server.serve(sockets=[tcp]))
        self._start_loops()
        self.loops.every("resolve", 10.0, lambda: resolve_manual_peers(self.table, self.clock))
        if (trimmer := trim.Trimmer()).available:  # glibc's free pages back (base/trim.py)
            self.loops.every("trim", trim.TRIM_EVERY_S, trimmer)
        while not self._server.started:
            if api.done():
                api.result()
            await asyncio.sleep(0.01)
        log.info(
            "exotray agent %s (%s, id %s) listening on %s:%d (TCP and UDP), %d peer(s), "
            "kernel timestamps %s",
            __version__, s.name, self.node_id, s.bind, self.port, len(self.peers),
            "on" if probe.kernel_timestamps else "off",
        )
        self._listening = True

    def request_stop(self) -> None:
        self._stop.set()

    async def wait(self) -> None:
        await self._stop.wait()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        api = self.loops.pop("api")
        self.prober.watch()  # (no tick reads the probe socket from here: see probe/udp.py)
        await self.loops.stop()
        # Sharing before the server: streams to peers are responses it would wait for.
        await self.sharing.stop()
        if api is not None:
            try:
                await asyncio.wait_for(api, 5.0)
            except (TimeoutError, asyncio.CancelledError):
                api.cancel()
            await asyncio.gather(api, return_exceptions=True)
        if self._discovery_task is not None:
            await asyncio.gather(self._discovery_task, return_exceptions=True)
        await self.monitor.stop()
        if self.discovery is not None:
            await self.discovery.stop()  # sends the goodbye
        self.prober.close()
        self.ticker.close()
        if self.captest is not None:
            await self.captest.stop()
        await self.clients.aclose()
        await self.exo.aclose()
        self._sink.close()
        await self.store.close()
        self._unlock()
        if self._listening:
            log.info("exotray agent stopped")

    def _unlock(self) -> None:
        """Let go of the state dir (another agent may take it from now on)."""
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
