"""The interface monitor: what each local interface is and carries.

Owns the interface list (sampler.NicInfo per name), byte counters and the rates made
from them, each interface's kind and label (hw/kinds.py), its capacity (user
override > measured > NIC speed > kind rule) and its history ring. What the hardware says
beyond psutil (Thunderbolt and Wi-Fi rates, macOS media, bridge and bond members, the
bridge member that reaches a peer) comes from hw/hardware.py's cache. Blocking OS calls
stay off the event loop: macOS's `networksetup` classification and the hardware readers
run in worker threads, and until it answers a new interface is classified by its name.
It calls the OS only through hw/sampler.py, the classifier and hw/hardware.py; of links it
knows only (interface, peer address) pairs.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from exotray.agent.hw import sampler
from exotray.agent.hw.capstore import CapacityStore, Measured
from exotray.agent.hw.carriers import CarrierReader
from exotray.agent.hw.flows import CARRYING_BYTES_PER_S, FlowLink, Flows
from exotray.agent.hw.hardware import Hardware
from exotray.agent.hw.kinds import InterfaceClassifier, mdns_by_default
from exotray.agent.hw.read import HwLink, NoReader
from exotray.core import capacity as cap
from exotray.core.history import IFACE_COLUMNS, Ring, ring_size
from exotray.core.linkchanges import FlapWatch
from exotray.core.schema import r
from exotray.core.settings import Settings
from exotray.core.stats import Rate, RateMeter

log = logging.getLogger(__name__)

#: a vanished interface is forgotten after this long
VANISHED_FORGET_S = 3600.0


@dataclass
class IfaceState:
    name: str
    kind: str
    label: str
    up: bool
    addresses: tuple[str, ...]
    rate: Rate | None
    capacity: cap.Capacity
    history: Ring
    vanished_at: float | None = None
    #: its carrier's downs and ups (link_flapping of the interface; `exotray interfaces`)
    flaps: FlapWatch = field(default_factory=FlapWatch)


class InterfaceMonitor:
    def __init__(self, settings: Settings, classifier: InterfaceClassifier,
                 interval: float, hardware: Hardware | None = None,
                 state_dir: Path | None = None) -> None:
        #: the agent replaces this when settings change (capacity overrides)
        self.settings = settings
        self.classifier = classifier
        self.interval = interval
        self.nics: dict[str, sampler.NicInfo] = {}
        self.ifaces: dict[str, IfaceState] = {}
        self.rates = RateMeter(window_s=interval)
        #: the latest raw byte counters per interface (for /metrics)
        self.raw_counters: dict[str, tuple[int, int]] = {}
        #: Linux: the links' carriers, read alone between full ticks (hw/carriers.py)
        self.carriers = CarrierReader()
        self.hardware = hardware or Hardware(NoReader())
        #: each link's own TCP bytes on a shared carrier (hw/flows.py)
        self.flows = Flows()
        #: measured capacities, kept in the state dir (hw/capstore.py)
        self.store = CapacityStore(state_dir)
        self._now = 0.0
        #: capacity names not seen as an interface yet -> since when; those warned about
        self._capacity_pending: dict[str, float] = {}
        self._capacity_warned: set[str] = set()
        self._classify_task: asyncio.Task | None = None

    # -- reading -----------------------------------------------------------------------
    def read(self, full: bool) -> tuple[dict[str, tuple[int, int]], dict[str, sampler.NicInfo]]:
        """Every interface's counters, and (when `full`) a fresh interface list; OSError
        when unreadable."""
        counters = sampler.read_counters()
        nics = sampler.read_nics() if full else self.nics
        self.carriers.agree(self.raw_counters, counters, self._now)
        self.raw_counters = counters
        return counters, nics

    def read_watched(self) -> dict[str, tuple[int, int]] | None:
        """The watched interfaces' counters alone (a partial reading for update_rates),
        or None where they cannot be read alone now: then `read`."""
        counters = self.carriers.read(self.raw_counters, self._now)
        if counters is not None:
            self.raw_counters.update(counters)  # (the last full read's: not a copy a tick)
        return counters

    def watch(self, names: Iterable[str | None]) -> None:
        """The interfaces a tick between full ones reads: the links' carriers."""
        self.carriers.watch(names)

    def update(self, nics: dict[str, sampler.NicInfo], now: float) -> bool:
        """Take a fresh interface list; return whether any address, network or up/down
        state changed (what mDNS and the on-link choice of a link's interface rest on)."""
        if set(nics) != set(self.nics):
            self.classifier.refresh()
        old_up = {n: i.up for n, i in self.nics.items()}
        flipped = {n for n, i in nics.items() if old_up.get(n) != i.up} | (
            set(old_up) - set(nics))
        if flipped:
            self.hardware.changed(flipped)
        self._now = now
        addresses_changed = {n: (i.up, i.addresses, i.networks) for n, i in nics.items()} != {
            n: (i.up, i.addresses, i.networks) for n, i in self.nics.items()
        }
        self.nics = nics
        self._check_capacity_names(now)
        self.store.seen(set(nics), time.time(), force=set(nics) != set(old_up))
        unclassified = []
        for name, nic in nics.items():
            st = self.ifaces.get(name)
            if self.classifier.blocking:
                # macOS: networksetup may take seconds; never on the loop. Until the
                # worker thread has classified a new interface, its name decides.
                found = self.classifier.peek(name)
                if found is None:
                    unclassified.append(name)
                    found = (st.kind, st.label) if st else self.classifier.provisional(name)
                kind, label = found
            else:
                kind, label = self.classifier.classify(name)
            capacity = self.capacity_of(name, kind, nic)
            if st is None:
                st = self.ifaces[name] = IfaceState(
                    name, kind, label, nic.up, nic.addresses, None, capacity,
                    Ring(IFACE_COLUMNS, ring_size(self.interval)),
                )
            if st.up != nic.up:
                self._carrier_changed(st, nic.up, label, now)
            st.kind, st.label, st.up, st.addresses, st.capacity = (
                kind, label, nic.up, nic.addresses, capacity
            )
            st.vanished_at = None
            if st.flaps.quiet(now):
                self.hardware.emit("link_flapping_cleared", **_flap_fields(st, label),
                                   state="up" if nic.up else "down",
                                   quiet_s=st.flaps.params.flap_quiet_s)
        if unclassified:
            self._classify_in_background(unclassified)
        self._hardware_tick(now)
        for name, st in list(self.ifaces.items()):
            if name not in nics:
                if st.vanished_at is None:
                    st.vanished_at = now
                    st.rate = None
                    if st.up:  # (a Thunderbolt or USB adapter unplugged: its carrier gone)
                        self._carrier_changed(st, False, st.label, now)
                        st.up = False
                elif now - st.vanished_at > VANISHED_FORGET_S:
                    del self.ifaces[name]
        return addresses_changed

    def carrier_changes(self, st: IfaceState, span_s: float = 3600.0) -> int:
        """The interface's downs and ups within the last `span_s` (as of the last list)."""
        return st.flaps.count(self._now, span_s)

    def carrier_flapping(self, name: str | None, peer: str | None = None) -> bool:
        """Whether the carrier of a link to `peer` via `name` is flapping (its own
        link_flapping told): `name`'s, or that of its bridge member that reaches `peer`
        (a Thunderbolt port under bridge0, whose cable flaps while the bridge stays up)."""
        return any((st := self.ifaces.get(n)) is not None and st.flaps.flapping
                   for n in {name, self.carrier(name, peer)} if n is not None)

    def _carrier_changed(self, st: IfaceState, up: bool, label: str, now: float) -> None:
        """An interface lost or got back its carrier (or was set down or up): a third
        return within the window is link_flapping of the interface itself."""
        if st.flaps.change(now, up):
            self.hardware.emit("link_flapping", **_flap_fields(st, label),
                               changes=st.flaps.cycles(now),
                               window_s=st.flaps.params.flap_window_s)

    def update_rates(self, now: float, counters: dict[str, tuple[int, int]],
                     nics: dict[str, sampler.NicInfo], partial: bool = False) -> None:
        """New rates from a reading: of every interface, or (`partial`) of some alone."""
        # Impossible rates are judged against what the hardware can carry (the NIC's
        # negotiated speed), never against a capacity the user gave: traffic above an
        # override is real and is exactly what "over capacity" must show. Nor against a
        # speed that is no port's limit: Linux reports a bridge's fastest port while the
        # bridge counts the host's traffic over all of them, a tun says 10 Mbit/s and a
        # veth 10 Gbit/s whatever they carry.
        limits = {name: nic.speed_mbit * cap.MBIT for name in counters
                  if (nic := nics.get(name)) is not None and nic.speed_mbit
                  and self._port_speed(name)}
        rates = self.rates.update(now, counters, limits, partial=partial)
        for name in counters if partial else self.ifaces:
            st = self.ifaces.get(name)
            if st is not None and st.vanished_at is None:
                st.rate = rates.get(name, st.rate if name in counters else None)

    def read_flows(self, now: float, links: Iterable[tuple[str, str | None, str]],
                   own_bytes_per_s: float = 0.0) -> None:
        """At the full tick, after the rates: each link's own bytes where its carrier is
        shared and carries traffic beyond our own (`links`: (id, local interface, peer
        address))."""
        def carrying(name: str) -> bool:
            st = self.ifaces.get(name)
            rate = st.rate if st is not None and st.vanished_at is None else None
            return rate is not None and max(rate.rx_bytes_per_s, rate.tx_bytes_per_s) - (
                own_bytes_per_s) >= CARRYING_BYTES_PER_S

        nics = self.nics
        self.flows.tick(now, (FlowLink(lid, self.carrier(iface, peer), nic.addresses, peer)
                              for lid, iface, peer in links
                              if iface and (nic := nics.get(iface)) is not None), carrying)

    def record_history(self, t: float) -> None:
        for st in self.ifaces.values():
            if st.rate is not None and st.vanished_at is None:
                st.history.append((t, r(st.rate.rx_bytes_per_s, 1),
                                   r(st.rate.tx_bytes_per_s, 1), "up" if st.up else "down"))

    def _hardware_tick(self, now: float) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return  # called outside the agent (a test of update() alone): no readers
        live = {n: st for n, st in self.ifaces.items() if st.vanished_at is None}
        self.hardware.tick(now, {n: st.kind for n, st in live.items()},
                           {n: st.label for n, st in live.items()},
                           {n: st.up for n, st in live.items()})

    # -- what links ask ----------------------------------------------------------------
    def member(self, name: str | None, peer: str | None, *, track: bool = False,
               ) -> str | None:
        """The bridge member of `name` that reaches `peer`, when `name` is a bridge and
        the member is known (else None: the link's numbers are the bridge's totals).
        `track` (the sampling path only) keeps the pair on the list to resolve: views
        read without changing anything."""
        if not name or not peer:
            return None
        m = self.hardware.member(name, peer, self._now if track else None)
        return m if m in self.ifaces else None

    def carrier(self, name: str | None, peer: str | None = None, *,
                track: bool = False) -> str | None:
        """The interface whose counters and capacity a link to `peer` via `name` uses."""
        return self.member(name, peer, track=track) or name

    def numbers(self, name: str | None, peer: str | None = None, *, track: bool = False,
                ) -> tuple[Rate | None, cap.Capacity, float | None]:
        """Rate, capacity and utilization of the interface `name` (a link's carrier), or
        of its member that reaches `peer` when `name` is a bridge."""
        carrier = self.carrier(name, peer, track=track)
        st = self.ifaces.get(carrier) if carrier else None
        if st is None or st.vanished_at is not None:
            return None, cap.Capacity(None, "unknown"), None
        rate = st.rate
        if carrier == name and peer and self._bridged(name):
            # the bridge's total traffic, while the cable that reaches this peer is not
            # known: shown, but against no capacity, so it never "saturates" every link
            # through the bridge together
            return rate, cap.Capacity(None, "unknown"), None
        util = cap.utilization(
            rate.rx_bytes_per_s if rate else None,
            rate.tx_bytes_per_s if rate else None,
            st.capacity.bytes_per_s,
        )
        return rate, st.capacity, util

    def label(self, name: str | None) -> str | None:
        st = self.ifaces.get(name) if name else None
        return st.label if st else None

    # -- what mDNS asks --------------------------------------------------------------------
    def mdns_addresses(self, wanted: tuple[str, ...] | list[str]) -> list[str]:
        """IPv4 addresses to announce and browse on: the `wanted` ones (--mdns-interface),
        or every up, multicast-capable, non-loopback interface's."""
        out: list[str] = []
        for name, nic in self.nics.items():
            if not nic.up or nic.loopback:
                continue
            st = self.ifaces.get(name)
            if not wanted and st is not None and not mdns_by_default(name, st.kind):
                continue  # VPNs and macOS-internal interfaces: see mdns_by_default
            for addr, _prefix in nic.networks:
                if (wanted and addr in wanted) or (not wanted and nic.multicast):
                    out.append(addr)
        return sorted(out)

    def local_networks(self, only: list[str] | None = None) -> list[ipaddress.IPv4Network]:
        """Our subnets; with `only`, those of the interfaces that have one of these
        addresses (mDNS: a record is taken only for the subnets it may come from)."""
        return [
            ipaddress.IPv4Network(f"{a}/{p}", strict=False)
            for nic in self.nics.values()
            if nic.up and (only is None or any(a in only for a, _ in nic.networks))
            for a, p in nic.networks
        ]

    # -- capacity ----------------------------------------------------------------------
    def _port_speed(self, name: str) -> bool:
        """Whether `name`'s reported speed is a physical port's (a bound on its traffic)."""
        st, hw = self.ifaces.get(name), self.hardware.get(name)
        if st is not None and st.kind in ("virtual", "vpn", "loopback"):
            return False
        return not (hw is not None and hw.bridge)

    def _bridged(self, name: str | None) -> bool:
        hw = self.hardware.get(name)
        return hw is not None and hw.bridge and bool(hw.members)

    def speed_of(self, name: str) -> tuple[float | None, float | None]:
        """(negotiated, maximum) Mbit/s of `name`: psutil's speed, else the hardware
        readers' (Thunderbolt, Wi-Fi PHY rate, macOS media); None where unknown."""
        hw = self.hardware.get(name)
        nic = self.nics.get(name)
        st = self.ifaces.get(name)
        if st is not None and st.kind == "vpn":  # a tun's 10 Mbit/s is the driver's constant
            return None, None
        speed = (nic.speed_mbit if nic else None) or (hw.speed_mbit if hw else None)
        return speed, (hw.full_mbit if hw else None)

    def capacity_of(self, name: str, kind: str, nic: sampler.NicInfo | None) -> cap.Capacity:
        hw: HwLink | None = self.hardware.get(name)
        hw_speed = hw.speed_mbit if hw else None
        if kind == "vpn":  # a tun's "10 Mbit/s" is a constant of the driver, no speed
            hw, hw_speed, nic = None, None, None
        # a NIC speed is a wired port's negotiated media; Thunderbolt and Wi-Fi rates go
        # through the kind rule (capacity_source "kind": a Wi-Fi rate is a PHY rate)
        wired = hw_speed if hw is not None and kind not in ("thunderbolt", "wifi") else None
        nic_speed = (nic.speed_mbit if nic else None) or wired
        # a Wi-Fi rate moves all the time: only a wired or Thunderbolt speed change makes
        # a measurement describe another link
        measured = self.store.valid(name, None if kind == "wifi" else nic_speed or hw_speed,
                                    nic.mac if nic else None)
        return cap.resolve(
            override_mbit=self.settings.capacity.get(name),
            measured_mbit=measured.mbit if measured else None,
            nic_speed_mbit=nic_speed,
            kind_mbit=cap.kind_rule_mbit(
                kind, thunderbolt_mbit=hw_speed if kind == "thunderbolt" else None,
                wifi_rate_mbit=hw_speed if kind == "wifi" else None),
        )

    def measured(self, name: str, mbit: float, at: float) -> bool:
        """A capacity test measured `mbit` through interface `name` (used from the next
        full sample on, kept in the state dir until the interface's speed changes). Not
        kept for a bridge whose member is unknown: it measured one cable, not them all.
        Whether it was kept."""
        if self._bridged(name):
            log.info("capacity measured through %s not kept: which of its cables it crossed "
                     "is not known yet", name)
            return False
        st = self.ifaces.get(name)
        wifi = st is not None and st.kind == "wifi"
        nic = self.nics.get(name)
        self.store.put(name, mbit, at, None if wifi else self.speed_of(name)[0],
                       nic.mac if nic else None)
        return True

    def measurement(self, name: str) -> Measured | None:
        return self.store.items.get(name)

    def set_interval(self, interval: float) -> None:
        self.interval = interval
        self.rates.window_s = interval
        size = ring_size(interval)
        for st in self.ifaces.values():
            st.history.resize(size)

    def _check_capacity_names(self, now: float) -> None:
        """Warn once about a capacity given for an interface that has not appeared within
        capacity_warn_after seconds (from start, or from when the setting was made): most
        likely a typo, and its capacity is silently unused."""
        for name, mbit in self.settings.capacity.items():
            if name in self.nics or name in self._capacity_warned:
                continue
            since = self._capacity_pending.setdefault(name, now)
            if now - since >= self.settings.capacity_warn_after:
                self._capacity_warned.add(name)
                log.warning("capacity %s=%g Mbit/s: no interface named %r has appeared in "
                            "%.0f s, so this capacity is not used (interfaces here: %s)",
                            name, mbit, name, now - since, ", ".join(sorted(self.nics)))

    # -- the worker thread ---------------------------------------------------------------
    def _classify_in_background(self, names: list[str]) -> None:
        """One worker-thread classification at a time; the next tick reads its cache."""
        task = self._classify_task
        if task is not None and not task.done():
            return
        self._classify_task = asyncio.get_running_loop().create_task(
            asyncio.to_thread(self.classifier.classify_all, names), name="classify")

    async def stop(self) -> None:
        self.carriers.close()
        self.flows.stop()
        await self.hardware.stop()
        await asyncio.to_thread(self.store.flush)
        if self._classify_task is not None:
            # networksetup has its own timeout; its thread ends by itself
            await asyncio.gather(self._classify_task, return_exceptions=True)


def _flap_fields(st: IfaceState, label: str) -> dict:
    """An interface's link_flapping: its own, not one link's (link_id and peer null)."""
    return dict(interface=st.name, local_interface=st.name, local_label=label, link_id=None,
                peer_id=None, peer_name=None, utilization=None)
