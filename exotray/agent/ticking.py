"""One timer for what shares a schedule (issue 11's CPU): the agent's "tick" loop.

Sampling, probing and sharing used to wake the event loop on timers of their own (4 + 4
+ 1 times an interval, at unrelated phases, plus the stream's producer). One tick every
interval / SUBSAMPLES now does what is due, in this order:

every tick   the byte counters of the links' carriers (all interfaces' where those
             cannot be read alone: hw/carriers.py; rates over a sliding interval, so
             saturation is seen within a quarter interval); the judgement (detector,
             queueing) of the links that may be busy (probe/pacing.py); probes to links that
             need the full rate; replies read, overdue probes declared lost, liveness
             moved; the frames the followed streams hold read (share/hold.py)
full tick    (every SUBSAMPLES-th) also the interface list, routes, each link's own
             bytes on a shared carrier (hw/flows.py), every link judged and probed,
             history rows, this node's stream frame, sharing's tick and
             pruning

So a link at rest costs one probe, one reflection and one judgement an interval; the
loop wakes SUBSAMPLES times an interval for all of it (from its timer: Loops.timer).
The exo poll (3 s, exo/watch.py) and the resolver (10 s) keep timers of their own: they
wait on the network.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable

from exotray.agent.base.throttle import Throttled
from exotray.agent.exo.watch import ExoWatch, LinkNumbers
from exotray.agent.history.store import HistoryStore
from exotray.agent.hw import sampler
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.peers import links as linkstats
from exotray.agent.peers.linkevents import LinkEvents
from exotray.agent.peers.links import Link
from exotray.agent.peers.table import PeerTable
from exotray.agent.probe import pacing
from exotray.agent.probe.prober import Prober
from exotray.agent.share.poll import Sharing
from exotray.core import shares
from exotray.core.events import EventLog

log = logging.getLogger("exotray.agent.runtime")

#: route lookups (which local interface reaches a peer address) are refreshed this often
ROUTE_REFRESH_S = 5.0
#: the interface list is read again at least this often, whatever rtnetlink says (a
#: NIC's negotiated speed changes without a notice)
NICS_REFRESH_S = 5.0
#: ticks per interval: counter readings (rates are sliding averages over one interval)
#: and the full-rate probes (settings.probes_per_interval, 4, by default)
SUBSAMPLES = 4


class Ticker:
    def __init__(self, *, clock: Callable[[], float], wall: Callable[[float], float],
                 monitor: InterfaceMonitor, table: PeerTable, prober: Prober,
                 exo: ExoWatch, sharing: Callable[[], Sharing], store: HistoryStore,
                 events: EventLog, throttled: Throttled, paused: Callable[[], bool],
                 node_name: Callable[[], str],
                 update_ifaces: Callable[[dict[str, sampler.NicInfo], float], bool],
                 testing: Callable[[float], frozenset[str]] = lambda _after: frozenset(),
                 link_events: LinkEvents | None = None,
                 ) -> None:
        self.clock, self.wall = clock, wall
        self.monitor, self.table, self.prober, self.exo = monitor, table, prober, exo
        self.sharing, self.store, self.events = sharing, store, events
        self._throttled, self.paused, self.node_name = throttled, paused, node_name
        self.update_ifaces = update_ifaces
        self.link_events = link_events
        #: peer hosts with a capacity test's traffic in the rates (http/captest.py)
        self.testing = testing
        self._tested: tuple[int, frozenset[str]] = (-1, frozenset())
        self.last_sample: float | None = None
        self.own = pacing.OwnTraffic()
        #: shared carriers saturated: the link that told it and the links saturated there
        self._carriers_full: dict[str, tuple[Link, set[str]]] = {}
        #: rtnetlink's change notices (sampler.NicChanges), opened by the first full tick
        #: that runs in the agent's loop; when the interface list was last read, and the
        #: interfaces the counters listed then
        self.nic_changes: sampler.NicChanges | None = None
        self._nics_at = -1e18
        self._names: set[str] = set()
        self.count = 0
        #: ticks per interval, and full-rate probes per interval (spread over the ticks)
        self.per_interval = SUBSAMPLES
        self.probes = SUBSAMPLES
        self.tick_s = 1.0 / SUBSAMPLES  # (period() sets it)

    def period(self, interval: float, probes_per_interval: int) -> float:
        """Set the schedule; the seconds between ticks. The next tick is a full one."""
        self.per_interval = max(SUBSAMPLES, probes_per_interval)
        self.probes = probes_per_interval
        self.count = 0
        self.tick_s = interval / self.per_interval
        return self.tick_s

    def tick(self) -> None:
        """One tick of the agent: see the module's docstring."""
        k = self.count % self.per_interval
        full = k == 0
        self.count += 1
        probe_due = full or k * self.probes // self.per_interval != (
            (k - 1) * self.probes // self.per_interval)
        steps = [("sample", self.sample),
                 ("probe", self.probe if probe_due else self._replies_only),
                 ("streams", lambda _: self.sharing().at_tick(self.tick_s))]
        if full:
            steps.append(("share", self.share))
        emitted = sum(self.events.counts.values())
        for name, step in steps:
            self._run(name, step, full)
        if not full and sum(self.events.counts.values()) != emitted:
            # a link saturated, cleared, went down or came up between full ticks: the
            # followers get it with a frame now, not at the next full tick
            self._run("share", lambda _: self.sharing().produce(), full)

    @staticmethod
    def _run(name: str, step: Callable[[bool], None], full: bool) -> None:
        try:
            step(full)
        except Exception:  # a bug in one part must not stop the others
            log.exception("error in the %s step", name)

    def probe(self, full: bool) -> None:
        self.prober.tick(self.paused(), full)

    def _replies_only(self, full: bool) -> None:
        """A tick without probes due (fewer than 4 an interval): replies, losses,
        liveness."""
        self.prober.tick(self.paused(), full, send=False)

    def share(self, full: bool = True) -> None:
        sharing = self.sharing()
        sharing.produce()  # what we serve, paused or not (a pause is not an outage)
        if self.prober.socket is not None:  # our own traffic, this frame's burst included
            self.own.update(self.clock(), self.prober.socket.counters, sharing.counters)
        if not self.paused():
            sharing.tick()
        self.table.prune(self.clock())

    def sample(self, full: bool = True) -> None:
        """Counters at every tick; interfaces, routes, every link's judgement and
        history on a `full` one; between them only links that may be busy are judged."""
        now = self.clock()
        t = self.wall(now)
        try:
            fresh = full and self._nics_due(now)
            # (between full ticks, the links' carriers alone where they can be read so)
            quick = None if full else self.monitor.read_watched()
            counters, nics = ((quick, self.monitor.nics) if quick is not None
                              else self.monitor.read(fresh))
            if full and not fresh and counters.keys() != self._names:
                fresh = True  # an interface came or went: read the list now
                counters, nics = self.monitor.read(True)
        except OSError as e:
            self._throttled("sample", logging.WARNING, "cannot read interface counters: %s", e)
            return
        if fresh:
            self._nics_at, self._names = now, set(counters)
        addresses_changed = self.update_ifaces(nics, now) if full else False
        self.monitor.update_rates(now, counters, nics, partial=quick is not None)
        links = self.table.links.values()
        if full:  # each link's own bytes where a shared carrier carries traffic
            self.monitor.read_flows(now, ((lk.id, lk.local_interface, lk.target[0])
                                          for lk in links), self.own.peak)
        # between full ticks, only the links that are busy or whose interface may be
        judging = (lambda _: True) if full else self._to_judge(now)
        judged: dict[str, LinkNumbers] = {}  # (a full tick's history rows take them)
        for link in links:
            if full and (addresses_changed or now - link.route_checked >= ROUTE_REFRESH_S):
                self.prober.route(link, now, recheck=addresses_changed)
            if judging is not None and judging(link):
                judged[link.id] = self.judge(link, t, full, now)
        if full:
            self.monitor.record_history(t)
            for link in links:  # RDMA included, as detected (exowatch)
                n = judged.get(link.id) or self.exo.numbers(link)
                linkstats.history_row(link, now, t, n.rate, n.utilization,
                                      self.monitor.flows.rate(link.id))
                if self.link_events is not None and not self.paused():
                    rate = (None if n.rate is None
                            else max(n.rate.rx_bytes_per_s, n.rate.tx_bytes_per_s))
                    self.link_events.tick(link, now, rate, n.utilization)
            if self.link_events is not None:
                self.link_events.prune(now, links)
            self.store.collect(t, links, self.monitor.ifaces)
            self.monitor.watch(self._carriers(links))
        self.last_sample = now

    def _carriers(self, links: Iterable[Link]) -> set[str | None]:
        """What a tick between full ones reads the counters of: each link's interface,
        the bridge cable that reaches its peer, where it saturated, and the interfaces
        an on-link search may pin it to."""
        out: set[str | None] = set()
        carrier = self.monitor.carrier
        for link in links:
            out.add(link.local_interface)
            out.add(carrier(link.local_interface, link.target[0]))
            if link.saturated_on is not None:
                out.update(link.saturated_on)
            if link.path.searching:  # (a reply may pin any of them before the next one)
                out.update(link.path.candidates)
        return out

    def _nics_due(self, now: float) -> bool:
        """Read the interface list on this full tick? When rtnetlink says something
        changed (always, where it cannot say), else every NICS_REFRESH_S."""
        if self.nic_changes is None and _in_loop():
            self.nic_changes = sampler.NicChanges()
        changed = self.nic_changes.changed() if self.nic_changes is not None else True
        return changed or now - self._nics_at >= NICS_REFRESH_S

    def close(self) -> None:
        if self.nic_changes is not None:
            self.nic_changes.close()

    def _to_judge(self, now: float) -> Callable[[Link], bool] | None:
        """Between full ticks, which links to judge (None: none): those busy and those
        whose interface's numbers say they may be, decided once per interface, not by
        each link's numbers (on a hub one link in question made all 64 fetch theirs
        every tick); with exo's RDMA counters in the rates, all."""
        if self.exo.state is not None or self.exo.rdma_rates.rates:
            return lambda _: True
        links = self.table.links.values()
        threshold = min((lk.detector.params.threshold for lk in links), default=1.0)
        hot = {name for name, st in self.monitor.ifaces.items() if st.vanished_at is None
               and pacing.iface_may_be_busy(st.rate, st.capacity.bytes_per_s, self.own.peak,
                                            threshold)}
        if not hot and not any(lk.busy_until > now for lk in links):
            return None
        carrier = self.monitor.carrier
        return lambda lk: lk.busy_until > now or carrier(lk.local_interface,
                                                          lk.target[0]) in hot

    def _under_test(self) -> frozenset[str]:
        """The local interfaces carrying a capacity test's traffic, once per tick."""
        if self._tested[0] != self.count:
            hosts = self.testing(2 * self.tick_s * self.per_interval)
            # (no test: no pass over the links, on a tick of a hub with 64 of them)
            self._tested = (self.count, frozenset(
                lk.local_interface for lk in self.table.links.values()
                if lk.target[0] in hosts and lk.local_interface) if hosts else frozenset())
        return self._tested[1]

    def judge(self, link: Link, t: float, full: bool = True, now: float | None = None,
              ) -> LinkNumbers:
        """Feed the link's detector (on a tick that is not `full`, only when it may be
        busy) and emit what changed; the link's numbers it judged."""
        numbers = self.exo.numbers(link, track=True)
        rate, capacity, util, rdma, _ = numbers
        if self.paused():  # (nothing is judged or reported while paused)
            return numbers
        now = self.clock() if now is None else now
        if link.saturated_on is not None:  # (only a saturated link looks up its path)
            here = self._path(link)
            if _same_path(link.saturated_on, here):
                link.saturated_on = here  # (a bridge's cable learnt: the same path)
            else:
                self._moved(link, t, now, here)
        if rate is None:
            return numbers
        own = self.own.peak  # a frame's burst to the followers is not traffic to judge
        if not full and link.busy_until <= now and not pacing.may_be_busy(link, rate, util, own):
            return numbers
        if link.local_interface in self._under_test():
            # a capacity test fills this interface: its bytes are not the links' load
            # (the test is an event of its own, capacity_test)
            link.detector.skip()
            return numbers
        change = linkstats.detect(link, now, rate, util)
        if not link.detector.saturated:
            link.saturated_on = None
        elif link.saturated_on is None:
            link.saturated_on = self._path(link)
        pacing.mark(link, now, pacing.busy(link, rate, util, link.queue.reading(now), own))
        if change is not None:
            told = self._carrier_told(link, change.saturated)
            if told is None:
                return numbers  # the carrier's saturation: another link told it
            type_, at, fields = linkstats.saturation_event(
                told, change, t, now, rate, capacity, util, node=self.node_name(),
                label=self.monitor.label(link.local_interface), member=self._path(link)[1])
            if rdma:  # "counted": RDMA bytes are in the rates; "not_counted": they are not
                fields["rdma"] = rdma
            if (shared := self._shares(link)) is not None:
                fields["shares"] = shared
            self.events.emit(type_, at, **fields)
        return numbers

    def _shares(self, link: Link) -> list[dict] | None:
        """The links on `link`'s carrier with their own bytes, largest first (None: the
        carrier is not shared, or their own bytes are not read)."""
        flows, carrier = self.monitor.flows, self.monitor.carrier
        mine = carrier(link.local_interface, link.target[0])
        out = []
        for lk in self.table.links.values():
            if carrier(lk.local_interface, lk.target[0]) == mine and (
                    own := flows.rate(lk.id)) is not None:
                out.append((lk.id, lk.peer.name or lk.peer.key,
                            max(own.rx_bytes_per_s, own.tx_bytes_per_s)))
        return shares.ordered(out) if len(out) >= 2 and mine else None

    def _carrier_told(self, link: Link, saturated: bool) -> Link | None:
        """A shared carrier whose links' own bytes are read saturates once, not once per
        link: the first link to saturate tells it (its event names every link and its
        share), the others join silently; the clear is told, in the first one's name, when
        the last one clears. The link whose event this is; None: nothing to tell."""
        key = self.monitor.carrier(link.local_interface, link.target[0])
        if key is None:
            return link  # (no carrier known: its own event and clear)
        first, ids = self._carriers_full.get(key, (None, set()))
        if saturated:
            if first is None and self.monitor.flows.rate(link.id) is None:
                return link  # (not known shared: its own event)
            ids.add(link.id)
            if first is not None:
                return None
            self._carriers_full[key] = (link, ids)
            return link
        if first is None or link.id not in ids:
            return link  # (raised on its own: its own clear)
        ids.discard(link.id)
        if ids & {lk.id for lk in self.table.links.values()}:
            return None
        del self._carriers_full[key]
        return first

    def _path(self, link: Link) -> tuple[str | None, str | None]:
        """(local interface, bridge cable to the peer, when known)."""
        return link.local_interface, self.monitor.member(link.local_interface, link.target[0])

    def _moved(self, link: Link, t: float, now: float,
               here: tuple[str | None, str | None]) -> None:
        """The link's traffic now takes another interface (a route change, a cable
        moved to another port of a bridge) than the one its saturation was raised on:
        that saturation ends now, its clear naming the interface it was on and its
        numbers there; the new path is judged from its own samples."""
        iface, member = link.saturated_on or (None, None)
        link.saturated_on = None
        # the old path's numbers as the link had them there (its bridge cable's, RDMA
        # included where counted)
        rate, capacity, util, rdma, _ = self.exo.numbers_at(iface, link.target[0])
        change = link.detector.end(now, util)
        if change is None:
            return
        _, at, fields = linkstats.saturation_event(
            link, change, t, now, rate, capacity, util, node=self.node_name(),
            label=self.monitor.label(iface), member=member, interface=iface)
        if rdma:
            fields["rdma"] = rdma
        fields.update(reason="path_changed", now_interface=here[0], now_member=here[1],
                      now_label=self.monitor.label(here[0]))
        self.events.emit("link_cleared", at, **fields)


def _same_path(was: tuple[str | None, str | None], now: tuple[str | None, str | None],
               ) -> bool:
    """The same interface, and not two different known bridge cables (a cable becoming
    known, or no longer known, is not a move)."""
    return was[0] == now[0] and (was[1] is None or now[1] is None or was[1] == now[1])


def _in_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True
