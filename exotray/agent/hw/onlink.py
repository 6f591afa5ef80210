"""Which local interface reaches a peer that is on-link (issue 16.3).

The route table answers one interface per destination. For a peer inside the IPv4
network of a local interface that answer can be wrong: a Mac's Thunderbolt Bridge
(bridge0) self-assigns 169.254/16 while macOS keeps one route for all of 169.254/16,
usually via Wi-Fi; two Linux interfaces configured in the same subnet have the same
problem. So, for a peer address:

* no up local interface has it on-link -> a routed peer: the route lookup decides;
* exactly one has                      -> that interface, whatever the routes say;
* several have                         -> probe through each in turn (a few probes
  each) and pin the link to the first that gets a reply; search again when the
  interfaces or addresses change, or the link goes down.

A link with any on-link interface is probed through it explicitly (IP_PKTINFO with the
interface index, see probe/udp.py), never through whatever the route table picks.
This module holds no sockets: the agent feeds it interface lists and probe outcomes.
"""

from __future__ import annotations

import ipaddress
import socket
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field

from exotray.agent.hw.sampler import NicInfo

#: probes sent through one candidate interface before trying the next
PROBES_EACH = 3
#: probes in flight remembered per link (which interface each one left through)
_INFLIGHT = 64


def candidates(peer: str, nics: Mapping[str, NicInfo]) -> list[str]:
    """Up, non-loopback local interfaces whose IPv4 networks contain `peer`, by name.

    Empty for a peer that is one of our own addresses (the kernel loops it back) and
    for anything that is not an IPv4 address."""
    try:
        ip = ipaddress.IPv4Address(peer)
    except ValueError:
        return []
    if any(peer in nic.addresses for nic in nics.values()):
        return []
    out = []
    for name, nic in nics.items():
        if not nic.up or nic.loopback:
            continue
        for addr, prefix in nic.networks:
            if prefix >= 32:
                continue  # a host address (point-to-point): nothing else is on-link
            if ip in ipaddress.IPv4Network(f"{addr}/{prefix}", strict=False):
                out.append(name)
                break
    return sorted(out)


def ordered(cands: list[str], *first: str | None) -> tuple[str, ...]:
    """Candidates with the given ones (those that are candidates) in front, in order."""
    front = [f for f in dict.fromkeys(first) if f in cands]
    return tuple(front + [c for c in cands if c not in front])


@dataclass
class Path:
    """How one link's probes leave and which interface it is attributed to."""

    #: on-link interfaces for the peer, in the order they are tried
    candidates: tuple[str, ...] = ()
    #: the interface known to reach the peer (the only candidate, or the one that replied)
    pinned: str | None = None
    #: the route lookup's answer (the attribution of a routed peer)
    routed: str | None = None
    searching: bool = False
    _at: int = 0
    _sent_here: int = 0
    _inflight: OrderedDict[float, str] = field(default_factory=OrderedDict)

    @property
    def interface(self) -> str | None:
        """The attribution: the pinned interface, a routed peer's route, else unknown.
        While a search runs, a link that was pinned before keeps its old interface."""
        if not self.candidates:
            return self.routed
        return self.pinned

    @property
    def onlink(self) -> bool:
        return bool(self.candidates)

    @property
    def overrides_route(self) -> bool:
        """Whether the route table cannot be trusted for this peer: several interfaces
        have it on-link, or the one that has it is not the route's. (Probes of an
        on-link peer always leave through its interface; other traffic, such as the
        snapshot fetch, needs binding only then.)"""
        return self.onlink and (len(self.candidates) > 1 or self.pinned != self.routed)

    def update(self, cands: list[str], routed: str | None) -> bool:
        """Take a fresh candidate list; return whether the attribution may have changed
        (a search started, or the answer is now certain)."""
        self.routed = routed
        if set(cands) == set(self.candidates):
            return False
        self.candidates = ordered(cands, self.pinned, routed)
        if not cands:
            self.pinned = None
            self.searching = False
        elif len(cands) == 1:
            self.pinned = cands[0]
            self.searching = False
        else:
            if self.pinned not in cands:
                self.pinned = None
            self._start()
        return True

    def recheck(self) -> None:
        """Search again (interfaces changed, or the link went down), trying the pinned
        interface first so that a link still reached there keeps it at once."""
        if len(self.candidates) > 1:
            self.candidates = ordered(list(self.candidates), self.pinned, self.routed)
            self._start()

    def _start(self) -> None:
        self.searching = True
        self._at = 0
        self._sent_here = 0

    def via(self) -> str | None:
        """The interface the next probe leaves through (None: the route table's choice)."""
        if not self.candidates:
            return None
        if not self.searching:
            return self.pinned
        if self._sent_here >= PROBES_EACH:
            self._at = (self._at + 1) % len(self.candidates)
            self._sent_here = 0
        self._sent_here += 1
        return self.candidates[self._at]

    def sent(self, at: float, iface: str | None) -> None:
        """Remember which interface the probe sent at `at` left through."""
        if iface is None or not self.searching:
            return
        self._inflight[at] = iface
        while len(self._inflight) > _INFLIGHT:
            self._inflight.popitem(last=False)

    def replied(self, at: float) -> str | None:
        """A reply came to the probe sent at `at`; return the interface newly pinned."""
        iface = self._inflight.pop(at, None)
        if not self.searching or iface is None or iface not in self.candidates:
            return None
        self.searching = False
        self._inflight.clear()
        changed = iface != self.pinned
        self.pinned = iface
        return iface if changed else None


class IfIndex:
    """Interface names <-> indexes, read again whenever the interface list is new
    (an interface deleted and created again keeps its name, not its index)."""

    def __init__(self) -> None:
        self._for: object = None
        self._by_name: dict[str, int] = {}
        self._by_index: dict[int, str] = {}

    def _fresh(self, nics: object) -> None:
        if nics is not self._for:
            self._for = nics
            self._by_name.clear()
            self._by_index.clear()

    def index(self, name: str, nics: object) -> int | None:
        self._fresh(nics)
        if name not in self._by_name:
            try:
                self._by_name[name] = socket.if_nametoindex(name)
            except OSError:
                return None
        return self._by_name[name]

    def forget(self, name: str) -> None:
        """A send through `name` failed: look its index up again next time."""
        self._by_name.pop(name, None)

    def name(self, index: int, nics: object) -> str | None:
        self._fresh(nics)
        if index not in self._by_index:
            try:
                self._by_index[index] = socket.if_indextoname(index)
            except OSError:
                return None
        return self._by_index[index]


def reply_through(src: str, arrived: str | None, nics: Mapping[str, NicInfo]) -> bool:
    """Whether a reflector should answer `src` through the interface its request
    arrived on: yes when src is on-link there (the route table may pick another
    interface for that network, as macOS does for 169.254/16)."""
    return arrived is not None and arrived in candidates(src, nics)
