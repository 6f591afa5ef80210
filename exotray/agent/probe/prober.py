"""Probing and paths: one UDP probe per link per tick, replies into RTT windows and
liveness, and which local interface carries each link.

A link is attributed to the interface that has its peer on-link (found by probing when
several have), else to the one the route table sends from (hw/onlink.py); its probes leave
through that interface. The reflector answers an on-link requester through the
interface its request arrived on. Owns the ProbeSocket (probe/udp.py); reads interfaces from
the monitor, links from the peer table, and tells the table of replies.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable

from exotray.agent.base import limits as L
from exotray.agent.hw import onlink, sampler
from exotray.agent.hw.monitor import InterfaceMonitor
from exotray.agent.peers.links import Link, Target
from exotray.agent.peers.table import PeerTable
from exotray.agent.probe import pacing
from exotray.agent.probe.udp import ProbeSocket

log = logging.getLogger(__name__)


class Prober:
    def __init__(self, table: PeerTable, monitor: InterfaceMonitor, ifindex: onlink.IfIndex,
                 clock: Callable[[], float],
                 on_mtu: Callable[[Link, str], None] = lambda _link, _said: None) -> None:
        #: a link's MTU stopped passing, or passes again (pathmtu.MISMATCH / CLEARED)
        self.on_mtu = on_mtu
        self.table = table
        self.monitor = monitor
        self.ifindex = ifindex
        self.clock = clock
        self.socket: ProbeSocket | None = None
        self._reply_via_cache: dict[tuple[str, int], int | None] = {}
        self._reply_via_for: object = None
        #: probes to addresses that have never answered: a token bucket (see tick)
        self._tokens = float(L.UNANSWERED_PROBES_PER_S)
        self._tokens_at: float | None = None
        self._last_sent: dict[Target, float] = {}

    def open(self, bind: str, port: int, udp: socket.socket, *, timeout_s: float,
             key: bytes | None) -> ProbeSocket:
        self.socket = ProbeSocket(self.on_reply, self.on_lost, timeout_s=timeout_s,
                                  clock=self.clock, key=key, reply_via=self.reply_via)
        self.socket.mtu.on_result = self.mtu_result
        self.socket.open(bind, port, sock=udp)
        return self.socket

    def close(self) -> None:
        if self.socket is not None:
            self.socket.close()

    def watch(self) -> None:
        """Read the socket as datagrams arrive from now on (the agent stopping: no tick
        drains it any more, and peers' probes are still answered until it closes)."""
        if self.socket is not None:
            self.socket.read_at_ticks(float("inf"))

    def forget(self, target: Target) -> None:
        """A link was dropped: its outstanding probes are not losses."""
        if self.socket is not None:
            self.socket.forget(target)

    # -- the tick ----------------------------------------------------------------------
    def tick(self, paused: bool, full: bool = True, send: bool = True) -> None:
        """Expire old probes, send one per link (on a `full` tick; else only to links
        that need the full rate, probe/pacing.py), then move liveness (the only place, with
        replies and goodbyes, where it moves)."""
        probe = self.socket
        assert probe is not None
        # Replies already here are replies, even when this tick runs late (a starved
        # loop): read them before anything still outstanding is declared lost.
        probe.drain()
        probe.expire()
        if paused:
            return
        now = self.clock()
        for link in self._to_probe(now, full) if send else ():
            if link.first_probe is None:
                link.first_probe = now
            self._last_sent[link.target] = now
            if full and link.up:  # (first: the probe after it tells whether the link was up)
                self.send_mtu(link, now)
            self.send(link)
        self.table.update_liveness(now)

    def send_mtu(self, link: Link, now: float) -> None:
        """A path-MTU probe to the link, when one is due (core/pathmtu.py)."""
        probe = self.socket
        iface = link.local_interface
        nic = self.monitor.nics.get(iface) if iface is not None else None
        size = link.mtu.due(now, iface, nic.mtu if nic is not None else None)
        if size is None or probe is None:
            return
        _, index = self._via(link)
        if not probe.mtu.send(link.target, size, index) and link.mtu.waiting == size:
            link.mtu.lost()

    def mtu_result(self, target: Target, size: int, answered: bool, sent_at: float) -> None:
        """An MTU probe's answer, or its absence: an absence counts only when a small
        probe sent no earlier was answered (else the link lost everything a while: that
        says nothing of its MTU)."""
        link = self.table.links.get(target)
        if link is None:
            return
        if not answered and (link.answered_sent is None or link.answered_sent < sent_at):
            link.mtu.lost()
            return
        said = link.mtu.result(self.clock(), size, answered)
        if said is not None:
            self.on_mtu(link, said)

    def _to_probe(self, now: float, full: bool = True) -> list[Link]:
        """Every link that has answered (on a tick that is not `full`, those that need
        the full rate: pacing.full_rate); of those that never did, as many as
        UNANSWERED_PROBES_PER_S allows, the longest unprobed first. A probe to an address
        nobody has (a flood's announcements) waits in the kernel for ARP for seconds,
        charged to our one probe socket's send buffer: unbounded, they filled it and no
        probe or reply to a real peer could leave (issue 18)."""
        if self._tokens_at is not None:
            self._tokens = min(float(L.UNANSWERED_PROBES_PER_S),
                               self._tokens + (now - self._tokens_at) * L.UNANSWERED_PROBES_PER_S)
        self._tokens_at = now
        links = list(self.table.links.values())
        if len(self._last_sent) > 2 * len(links) + 64:
            self._last_sent = {t: v for t, v in self._last_sent.items() if t in self.table.links}
        sent = self._last_sent
        out = [lk for lk in links if lk.last_reply is not None and (
            full or pacing.full_rate(lk, now, sent.get(lk.target)))]
        never = sorted((lk for lk in links if lk.last_reply is None),
                       key=lambda lk: self._last_sent.get(lk.target, -1e18))
        n = min(len(never), int(self._tokens))
        self._tokens -= n
        return out + never[:n]

    def _via(self, link: Link) -> tuple[str | None, int | None]:
        """The link's on-link interface, if it has one, and that interface's index now."""
        iface = link.path.via()
        return iface, self.ifindex.index(iface, self.monitor.nics) if iface is not None else None

    def send(self, link: Link) -> None:
        """One probe, through the link's on-link interface when it has one."""
        probe = self.socket
        assert probe is not None
        iface, index = self._via(link)
        if iface is not None and index is None:
            link.route_checked = -1e9  # gone: the next full sample looks again
        sent_at = probe.send(link.target, index)
        if sent_at is not None:
            link.path.sent(sent_at, iface if index is not None else None)
        elif iface is not None and index is not None:
            # e.g. the interface was re-created (a new index): look both up again
            self.ifindex.forget(iface)
            link.route_checked = -1e9

    def on_reply(self, target: Target, sent_at: float, rtt_ms: float,
                 received_at: float | None = None, held_s: float = 0.0) -> None:
        """A reply: its RTT, when it arrived (liveness counts from then, not from when a
        tick read it) and how long the peer held our request (pacing.full_rate)."""
        link = self.table.links.get(target)
        if link is None:
            return
        link.hold_s = max(held_s, pacing.HOLD_DECAY * link.hold_s)
        before = link.answered_sent
        if link.answered_sent is None or sent_at > link.answered_sent:
            link.answered_sent = sent_at
        if not link.up and (before is None or sent_at > before):
            # coming up: what was lost since the last answer is the link's outage (or its
            # peer not yet listening), which its state says, not loss on a live link
            link.rtt.outage(before, sent_at)
        link.rtt.reply(sent_at, rtt_ms)
        link.queue.reply(sent_at, rtt_ms)
        pinned = link.path.replied(sent_at)
        if pinned is not None:
            link.local_interface = pinned
            log.info("link to %s: answers through %s (on-link on %s)", target[0], pinned,
                     ", ".join(link.path.candidates))
        self.table.replied(link, self.clock(), received_at)  # (None: now)

    def on_lost(self, target: Target, sent_at: float) -> None:
        link = self.table.links.get(target)
        if link is not None:
            link.rtt.lost(sent_at)  # (not counted if sent in its outage: see on_reply)
            link.queue.lost(sent_at)
            # Only a probe sent after the latest answered one counts towards "down": an
            # older one the peer never answered (sent before it listened) says nothing
            # of it since. Such probes expire after the reply that came after them, and
            # when the loop ran late (a stalled agent), at the same tick as that reply,
            # long after it: counted, they took a live link down.
            if link.answered_sent is None or sent_at > link.answered_sent:
                link.lost_since_reply += 1
            pacing.mark(link, self.clock(), True)  # loss: measured at the full rate

    # -- paths -------------------------------------------------------------------------
    def route(self, link: Link, now: float, recheck: bool = False) -> None:
        """Attribute the link to a local interface: the one that has the peer on-link
        (found by probing when several have), else the one the route table sends from.
        `recheck`: interfaces or addresses changed, so search an ambiguous link again."""
        nics = self.monitor.nics
        link.route_checked = now
        src = sampler.source_address(link.target[0])
        routed = sampler.interface_of(src, nics)
        path = link.path
        changed = path.update(onlink.candidates(link.target[0], nics), routed)
        if not changed and recheck:
            path.recheck()
        link.local_interface = path.interface
        if changed and path.onlink and (len(path.candidates) > 1 or path.interface != routed):
            log.info("link to %s: on-link on %s (routes say %s): %s", link.target[0],
                     ", ".join(path.candidates), routed or "none",
                     "searching" if path.searching else f"through {path.interface}")

    def reply_via(self, src: str, index: int) -> int | None:
        """The reflector's choice: answer an on-link requester through the interface its
        request arrived on (onlink.reply_through), else as the routes say."""
        nics = self.monitor.nics
        if self._reply_via_for is not nics:
            self._reply_via_for = nics
            self._reply_via_cache = {}
        key = (src, index)
        if key not in self._reply_via_cache:
            if len(self._reply_via_cache) > 1024:
                self._reply_via_cache.clear()
            name = self.ifindex.name(index, nics)
            self._reply_via_cache[key] = (
                index if onlink.reply_through(src, name, nics) else None)
        return self._reply_via_cache[key]
