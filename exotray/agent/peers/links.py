"""Per-link statistics: one link is one (peer address, port) we probe.

A link owns its RTT window, its saturation detector, its history ring and its on-link
path (onlink.Path). Everything here is plain computation on numbers it is given: no
sockets, no clock of its own, no events (the caller emits what `detect` returns).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Protocol

from exotray.agent.hw import onlink
from exotray.core.capacity import Capacity
from exotray.core.history import LINK_COLUMNS, Ring, ring_size
from exotray.core.linkchanges import SlowerWatch
from exotray.core.pathmtu import SPREAD_S, MtuWatch
from exotray.core.queueing import QueueParams, QueueReading, QueueTracker
from exotray.core.saturation import SaturationDetector, SaturationParams, Transition
from exotray.core.schema import r
from exotray.core.settings import Settings
from exotray.core.stats import Rate, RttWindow

Target = tuple[str, int]


class PeerRef(Protocol):
    """What a link knows of its peer (peers.Peer is one; peers/links.py does not import it)."""

    key: str
    id: str | None
    name: str | None


@dataclass
class Link:
    target: Target
    id: str
    peer: PeerRef
    rtt: RttWindow
    detector: SaturationDetector
    history: Ring
    first_probe: float | None = None
    last_reply: float | None = None
    #: probes that timed out (or could not be sent) since the last reply
    lost_since_reply: int = 0
    up: bool = False
    local_interface: str | None = None
    route_checked: float = -1e9
    #: on-link attribution and the interface probes leave through (hw/onlink.py)
    path: onlink.Path = field(default_factory=onlink.Path)
    #: baseline RTT and queueing delay (core/queueing.py)
    queue: QueueTracker = field(default_factory=QueueTracker)
    #: what the baseline was learned on: (local interface, peer id)
    learned_on: tuple | None = None
    was_up: bool | None = None
    #: probed and judged at the full rate until then (probe/pacing.py); the send time of the
    #: latest probe that was answered
    busy_until: float = -1e18
    answered_sent: float | None = None
    #: how long the peer holds our requests before answering (a peer that reads its
    #: socket at its ticks: up to a tick), the largest of its recent replies
    hold_s: float = 0.0
    #: (local interface, bridge cable) the link's current saturation was raised on
    saturated_on: tuple[str | None, str | None] | None = None
    #: its idle RTT against what it was (peers/linkevents.py)
    slower: SlowerWatch = field(default_factory=SlowerWatch)
    #: whether frames of its interface's MTU reach the peer (core/pathmtu.py)
    mtu: MtuWatch = field(default_factory=MtuWatch)

    @property
    def state(self) -> str:
        if not self.up:
            return "down"
        return "saturated" if self.detector.saturated else "up"


def saturation_params(s: Settings) -> SaturationParams:
    return SaturationParams(threshold=s.threshold, sustain_s=s.sustain, clear_s=s.clear,
                            cooldown_s=s.cooldown)


def link_id(node_id: str, target: Target) -> str:
    raw = f"{node_id}|{target[0]}|{target[1]}".encode()
    return hashlib.sha1(raw, usedforsecurity=False).hexdigest()[:16]


def rtt_window_s(interval: float) -> float:
    return max(10.0, 10 * interval)


def queue_params(interval: float) -> QueueParams:
    """The queueing delay is the median of the last 2 s, or of 2 intervals when they are
    longer (so that a slower probing still has its 8 probes in the window); of a link
    at rest (one probe an interval, agent/probe/pacing.py) its last 8 probes."""
    return QueueParams(recent_s=max(2.0, 2 * interval), recent_max_s=max(8.0, 8 * interval))


def new_link(node_id: str, peer: PeerRef, target: Target, interval: float,
             params: SaturationParams) -> Link:
    return Link(
        target=target,
        id=link_id(node_id, target),
        peer=peer,
        rtt=RttWindow(window_s=rtt_window_s(interval)),
        detector=SaturationDetector(params),
        history=Ring(LINK_COLUMNS, ring_size(interval)),
        queue=QueueTracker(queue_params(interval)),
        mtu=MtuWatch(spread_s=int(link_id(node_id, target)[:4], 16) % 1000 / 1000 * SPREAD_S),
    )


def retune(link: Link, interval: float | None, params: SaturationParams) -> None:
    """New settings: detector parameters always, window and ring size when the interval
    changed."""
    link.detector.params = params
    if interval is not None:
        link.history.resize(ring_size(interval))
        link.rtt.window_s = rtt_window_s(interval)
        link.queue.params = queue_params(interval)


def watch_path(link: Link, now: float, carrying: bool) -> None:
    """Learn the baseline again when the path changed: another local interface (a
    route change, an on-link search that settled elsewhere), a peer answering with
    another id, a link back from down (a restarted peer, a re-plugged cable), or an idle
    RTT that stayed higher (core/queueing.py)."""
    key = (link.local_interface, link.peer.id)
    old = link.learned_on or (None, None)
    # (a part seen for the first time, e.g. the peer's id once known, is no change)
    if any(o is not None and o != k for o, k in zip(old, key, strict=True)):
        link.queue.relearn("path changed")
    elif link.up and link.was_up is False:
        link.queue.relearn("link back up")
    link.learned_on = key
    if link.up or link.was_up is not None:  # None until it was first up
        link.was_up = link.up
    link.queue.observe(now, carrying)


def detect(link: Link, now: float, rate: Rate | None, util: float | None) -> Transition | None:
    """Feed the detector one reading; the change to report, if any (a change within the
    cooldown too: its event is recorded, with `notify` false, and the tray stays quiet)."""
    if rate is None:
        return None
    bytes_per_s = max(rate.rx_bytes_per_s, rate.tx_bytes_per_s)
    q = link.queue
    watch_path(link, now, bytes_per_s >= q.params.carrying_bytes_per_s)
    judged = q.judge(q.reading(now), bytes_per_s if link.up else None)
    change = link.detector.update(now, rate.dt, util if link.up else None,
                                  queue_high=judged.high, queue_low=judged.low)
    return change


def history_row(link: Link, now: float, t: float, rate: Rate | None,
                util: float | None, own: Rate | None = None) -> None:
    """`own`: the link's own TCP bytes, where read (hw/flows.py)."""
    s = link.rtt.summary(now)
    q = queue_reading(link, now)
    link.history.append(
        (
            t,
            r(s.median_ms),
            r(s.min_ms),
            r(s.max_ms),
            r(rate.rx_bytes_per_s, 1) if rate else None,
            r(rate.tx_bytes_per_s, 1) if rate else None,
            r(util),
            link.state,
            r(q.baseline_ms),
            r(q.queue_delay_ms),
            r(own.rx_bytes_per_s, 1) if own else None,
            r(own.tx_bytes_per_s, 1) if own else None,
            r(s.loss),
        )
    )


def saturation_event(link: Link, change: Transition, t: float, now: float,
                     rate: Rate | None, capacity: Capacity, util: float | None, *, node: str,
                     label: str | None, member: str | None = None,
                     interface: str | None = None) -> tuple[str, float, dict]:
    """(type, at, fields) of the event that reports `change` on `link` (`member`: the
    bridge cable whose numbers these are, as the snapshot's member_interface;
    `interface`: the local interface they are of, when not the link's now)."""
    q = queue_reading(link, now)
    return ("link_saturated" if change.saturated else "link_cleared", t, dict(
        link_id=link.id,
        peer_id=link.peer.id,
        peer_name=link.peer.name or link.peer.key,
        node=node,
        local_interface=interface or link.local_interface,
        local_label=label,
        member_interface=member,
        utilization=r(util),
        rx_bytes_per_s=r(rate.rx_bytes_per_s, 1) if rate else None,
        tx_bytes_per_s=r(rate.tx_bytes_per_s, 1) if rate else None,
        capacity_bytes_per_s=capacity.bytes_per_s,
        cause=change.cause,
        queue_delay_ms=r(q.queue_delay_ms, 2),
        rtt_baseline_ms=r(q.baseline_ms),
        # False within the cooldown of the last notified raise (and for the clear that
        # ends such a raise): the event is recorded, the tray does not notify it
        notify=change.notify,
    ))


def queue_reading(link: Link, now: float) -> QueueReading:
    """The link's baseline and queueing delay now; both unknown while it is down."""
    rd = link.queue.reading(now)
    if not link.up:
        return QueueReading(rd.baseline_ms, None, None, rd.replies, rd.lost, "down")
    return rd
