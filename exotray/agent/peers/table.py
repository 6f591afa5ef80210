"""The peer table: our peers, their addresses (one link each), whether they answer.

Manual peers (--peer HOST:PORT) and mDNS ones merge into one when their ids match.
Liveness changes only when `update_liveness` runs (the probe tick, a probe reply, a
goodbye); reading the table changes nothing. No I/O and no clock of its own: the clock
is passed in, links are made by the `make_link` it is given, and what the rest of the
agent must do about a change (route a new link, forget a dropped one's probes, report a
peer going up or down) it is told through callbacks.
"""

from __future__ import annotations

import logging
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from exotray.agent.base import limits as L
from exotray.agent.base.throttle import Throttled
from exotray.agent.peers.flaps import Flaps
from exotray.agent.peers.linkevents import by_peer

if TYPE_CHECKING:
    from exotray.agent.peers.discovery import PeerRecord
    from exotray.agent.peers.links import Link, Target
    from exotray.core.schema import Snapshot

log = logging.getLogger(__name__)

#: a peer whose latest snapshot is older than this leaves the cluster view
PEER_FORGET_S = 600.0
#: an mDNS address that never answered for this long, while another does, is dropped
STALE_ADDRESS_S = 15.0
#: a link is down only once this many of its probes have gone unanswered since its last
#: reply, however long that was: a loop that ran late sent fewer probes, and a probe not
#: sent is not a lost one (issue 18 finding 10: a starved machine cried wolf)
MIN_LOST_FOR_DOWN = 2
#: a peer that comes up before its name is known (a manual peer before its first
#: snapshot) is said to be up when the name comes, or after this long, by its address
NAME_WAIT_S = 3.0


@dataclass
class Peer:
    key: str
    host: str | None
    port: int
    sources: set[str] = field(default_factory=set)
    #: every address we probe, in order: manual ones first, then mDNS ones
    addresses: list[Target] = field(default_factory=list)
    manual_targets: list[Target] = field(default_factory=list)
    mdns_targets: list[Target] = field(default_factory=list)
    id: str | None = None
    name: str | None = None
    #: what sharing last received from this peer (share/poll.py writes these)
    snapshot: Snapshot | None = None
    snapshot_at: float | None = None
    reachable: bool = False
    last_error: str | None = None
    was_up: bool = False
    authenticated: bool = False
    down_since: float | None = None
    resolve_after: float = 0.0
    #: when it entered the table, and whether any of its links ever answered a probe
    seen_at: float = 0.0
    ever_up: bool = False
    #: up, but not said yet: its name is not known (a manual peer before its first
    #: snapshot); since when. Said when the name comes, or after NAME_WAIT_S.
    up_unsaid_since: float | None = None
    #: whether a peer_up was ever said of it (the first one says "found", not "again")
    said_up: bool = False
    #: whether the last of its up/down said was an up (not its state while held)
    told_up: bool = False
    #: its recent changes of state, and whether its events are held (peers/flaps.py)
    flaps: Flaps = field(default_factory=Flaps)


def _ignore(*_: object) -> None:
    return None


class PeerTable:
    def __init__(
        self,
        clock: Callable[[], float],
        make_link: Callable[[Peer, Target], Link],
        *,
        down_after_s: float,
        on_link_added: Callable[[Link], None] = _ignore,
        on_link_dropped: Callable[[Target], None] = _ignore,
        on_peer_event: Callable[[Peer, bool, str], None] = _ignore,
        # a hold begins (peers/flaps.py); a link's own flapping is linkevents.py's
        on_peer_flapping: Callable[[Peer], None] = _ignore,
        # a link went up or down: (link, now, its peer up, the peer's links; None: gone
        # with its peer)
        on_link_change: Callable[[Link, float, bool, list[Link] | None], None] = _ignore,
    ) -> None:
        self.clock = clock
        self.make_link = make_link
        #: a link with no reply for this long is down
        self.down_after_s = down_after_s
        self.on_link_added = on_link_added
        self.on_link_dropped = on_link_dropped
        self.on_peer_event = on_peer_event
        self.on_peer_flapping = on_peer_flapping
        self.on_link_change = on_link_change
        self.peers: dict[str, Peer] = {}
        self.links: dict[Target, Link] = {}
        self.paused = False
        #: mDNS peers and addresses refused by the limits (base/limits.py), by reason
        self.refused: dict[str, int] = {}
        #: mDNS records refused for want of room, tried again as peers that never answer
        #: are let go (zeroconf tells of a record once: a real peer that announced itself
        #: during a flood must still get in)
        self.waiting: OrderedDict[str, PeerRecord] = OrderedDict()
        self._throttled = Throttled(clock, logger=log)

    # -- membership ------------------------------------------------------------------
    def add_manual(self, host: str, port: int) -> Peer:
        """A manual peer (--peer HOST:PORT)."""
        key = f"{host}:{port}"
        peer = self.peers.get(key)
        if peer is None:
            peer = self.peers[key] = Peer(
                key=key, host=host, port=port, sources={"manual"}, down_since=self.clock(),
                seen_at=self.clock())
        return peer

    def by_id(self, peer_id: str) -> Peer | None:
        return next((p for p in self.peers.values() if p.id == peer_id), None)

    def set_targets(self, peer: Peer) -> None:
        """Recompute a peer's address list and create/remove its links to match."""
        wanted = list(dict.fromkeys(peer.manual_targets + peer.mdns_targets))
        if len(wanted) > L.MAX_LINKS_PER_PEER:
            self._refuse("links_per_peer", "peer %s: %d addresses; probing the first %d",
                         peer.name or peer.key, len(wanted), L.MAX_LINKS_PER_PEER)
            wanted = wanted[:L.MAX_LINKS_PER_PEER]
        for t in peer.addresses:
            if t not in wanted:
                self._drop_link(t)
        peer.addresses = wanted
        for t in wanted:
            link = self.links.get(t)
            if link is None:
                link = self.links[t] = self.make_link(peer, t)
                self.on_link_added(link)
            link.peer = peer

    def _drop_link(self, target: Target, leaving: bool = False) -> None:
        """Drop a link: its interface went (a pulled cable takes its subnet), told as a
        change; or its peer leaves (`leaving`: its peer_down alone tells it)."""
        link = self.links.pop(target, None)
        if link is None:
            return
        self.on_link_dropped(target)
        if link.up or leaving:
            others = (None if leaving else
                      [lk for lk in self.links.values() if lk.peer is link.peer])
            link.up = False
            self.on_link_change(link, self.clock(), any(lk.up for lk in others or ()), others)

    def remove(self, peer: Peer, why: str) -> None:
        for t in peer.addresses:
            self._drop_link(t, leaving=True)
        peer.addresses = []
        self.peers.pop(peer.key, None)
        if peer.up_unsaid_since is not None:  # an up not said: its down is not either
            peer.up_unsaid_since = None
        elif peer.told_up:  # said up (it may be down, held: the down was not said)
            self._tell(peer, False, why)

    def _refuse(self, reason: str, msg: str, *args: object) -> None:
        """Count a refusal; log the 1st, 10th, 100th... of each reason (a flood is a
        handful of lines)."""
        n = self.refused[reason] = self.refused.get(reason, 0) + 1
        if n == 1 or str(n).strip("0") == "1":
            log.warning(msg + " (refusal %d of this kind)", *args, n)

    def _free_addresses(self, targets: list[Target], peer: Peer | None) -> list[Target]:
        """The targets whose address is not already announced by
        MAX_MDNS_PEERS_PER_ADDRESS other mDNS peers (100 services naming one bystander
        would make every agent that hears them probe it)."""
        used = Counter(a for p in self.peers.values() if p is not peer
                       for a in {t[0] for t in p.mdns_targets})
        return [t for t in targets if used[t[0]] < L.MAX_MDNS_PEERS_PER_ADDRESS]

    def _evict_one(self, now: float) -> bool:
        """Make room: forget the oldest mDNS peer that has never answered a probe, though
        each of its links was probed NEVER_UP_EVICT_S ago or more (so a real peer always
        has its chance, however many wait). False when every peer is worth keeping."""
        probed: dict[int, bool] = {}
        for lk in self.links.values():
            ok = lk.first_probe is not None and now - lk.first_probe >= L.NEVER_UP_EVICT_S
            probed[id(lk.peer)] = probed.get(id(lk.peer), True) and ok
        idle = [p for p in self.peers.values() if p.sources == {"mdns"} and not p.ever_up
                and now - p.seen_at >= L.NEVER_UP_EVICT_S and probed.get(id(p), True)]
        if not idle:
            return False
        self.remove(min(idle, key=lambda p: p.seen_at), "replaced: never answered")
        return True

    def mdns_found(self, rec: PeerRecord) -> None:
        peer = self.by_id(rec.id)
        now = self.clock()
        targets = [(a, rec.port) for a in rec.addresses][:L.MAX_ADDRESSES_PER_RECORD]
        free = self._free_addresses(targets, peer)
        if len(free) < len(targets):
            self._refuse("address_shared", "mDNS: %s (%s) announces %s, already announced "
                         "by %d other peers; not probing it", rec.name, rec.id,
                         ", ".join(a for a, _ in targets if (a, _) not in free),
                         L.MAX_MDNS_PEERS_PER_ADDRESS)
        if peer is None:
            if not free:
                return
            if len(self.peers) >= L.MAX_PEERS and not self._evict_one(now):
                self._refuse("peers", "mDNS: %s (%s) not added yet: %d peers already (the "
                             "limit)", rec.name, rec.id, L.MAX_PEERS)
                self.waiting[rec.id] = rec
                self.waiting.move_to_end(rec.id)
                if len(self.waiting) > L.MAX_WAITING_PEERS:
                    self.waiting.popitem(last=False)
                return
            peer = Peer(key=f"mdns:{rec.id}", host=None, port=rec.port, id=rec.id,
                        name=rec.name, down_since=now, seen_at=now)
            self.peers[peer.key] = peer
            # past a few dozen peers (a flood?) the log would say little else
            (log.info if len(self.peers) <= 32 else log.debug)(
                "mDNS: found %s (%s) at %s", rec.name, rec.id, ", ".join(a for a, _ in free))
        peer.sources.add("mdns")
        peer.name = peer.name or rec.name
        peer.mdns_targets = free
        self.set_targets(peer)

    def _admit_waiting(self, now: float) -> None:
        """Let in refused records, newest first, while there is room or a peer that
        never answered can make room. Newest first: a flood arrives in a burst, so a real
        peer that announces itself during or after one is among the last refused, and
        gets in at the first chance instead of behind the whole burst."""
        while self.waiting and (len(self.peers) < L.MAX_PEERS or self._evict_one(now)):
            _, rec = self.waiting.popitem(last=True)
            if self.by_id(rec.id) is None:
                self.mdns_found(rec)

    def mdns_removed(self, peer_id: str) -> None:
        self.waiting.pop(peer_id, None)
        peer = self.by_id(peer_id)
        if peer is None:
            return
        peer.sources.discard("mdns")
        peer.mdns_targets = []
        if not peer.sources:
            self.remove(peer, "goodbye")
        else:
            self.set_targets(peer)
            self.update_liveness(self.clock())

    def identified(self, peer: Peer, node_id: str, name: str) -> None:
        """The peer's snapshot named it: record that, and merge duplicates. A rename is
        logged, throttled per peer: one renaming itself at every frame is a line a minute."""
        if peer.id != node_id or peer.name != name:
            if peer.name is not None and peer.name != name and peer.id == node_id:
                self._throttled(f"rename:{node_id}", logging.INFO,
                                "peer %s (%s) renamed itself %s", peer.name, node_id, name)
            peer.id, peer.name = node_id, name
            self.merge_known_id(peer)

    def merge_known_id(self, peer: Peer) -> None:
        """A manual peer turned out to be a peer mDNS also found: keep one."""
        assert peer.id is not None
        for other in list(self.peers.values()):
            if other is not peer and other.id == peer.id:
                peer.sources |= other.sources
                peer.mdns_targets = list(dict.fromkeys(peer.mdns_targets + other.mdns_targets))
                peer.was_up = peer.was_up or other.was_up
                peer.told_up = peer.told_up or other.told_up
                for t in other.addresses:
                    if t in self.links:
                        self.links[t].peer = peer
                other.addresses = []
                del self.peers[other.key]
                self.set_targets(peer)

    # -- liveness --------------------------------------------------------------------
    def replied(self, link: Link, now: float, at: float | None = None) -> None:
        """A probe reply came back on `link`, at `at` (when it arrived: else `now`)."""
        at = now if at is None else at
        if link.last_reply is None or at > link.last_reply:
            link.last_reply = at
        link.lost_since_reply = 0
        if not link.up:
            self.update_liveness(now)

    def _say(self, peer: Peer, up: bool, why: str, now: float) -> None:
        """Report a peer's change: an up waits for the peer's name (NAME_WAIT_S at
        most), so that it is not named by its address; a down of an up not yet said is
        not said either."""
        if up and peer.name is None:
            peer.up_unsaid_since = now
            return
        if not up and peer.up_unsaid_since is not None:
            peer.up_unsaid_since = None
            return
        self._tell(peer, up, why)

    def _tell(self, peer: Peer, up: bool, why: str) -> None:
        peer.up_unsaid_since = None
        peer.flaps.saying(up)
        self.on_peer_event(peer, up, why)
        peer.said_up = peer.said_up or up
        peer.told_up = up

    def _changed(self, peer: Peer, up: bool, now: float) -> None:
        """The peer went up or down: say so, unless it flaps and this was said in its
        hold (peers/flaps.py; at a hold's end, `update_liveness` says the state)."""
        if peer.flaps.changed(now, peer.told_up, peer.name or peer.key):
            self.on_peer_flapping(peer)
        if peer.flaps.may_say(up):
            self._say(peer, up, "probes" if up else "no probe replies", now)
        elif not up:  # an up waiting for its name is no longer true
            peer.up_unsaid_since = None

    def update_liveness(self, now: float) -> None:
        if self.paused:
            return
        limit = self.down_after_s
        up_peers: set[int] = set()
        moved: list[Link] = []
        for link in self.links.values():
            was_up = link.up
            link.up = link.last_reply is not None and (
                now - link.last_reply < limit or link.lost_since_reply < MIN_LOST_FOR_DOWN)
            if link.up:
                up_peers.add(id(link.peer))
            elif was_up:
                link.path.recheck()  # an ambiguous on-link peer may now be elsewhere
            if link.up != was_up:
                moved.append(link)
        of = by_peer(moved, self.links.values())  # (link_down...: peers/linkevents.py)
        for link in moved:
            self.on_link_change(link, now, id(link.peer) in up_peers, of[id(link.peer)])
        for peer in list(self.peers.values()):
            is_up = id(peer) in up_peers
            peer.ever_up = peer.ever_up or is_up
            if is_up != peer.was_up:
                peer.was_up = is_up
                peer.down_since = None if is_up else now
                self._changed(peer, is_up, now)
            elif peer.up_unsaid_since is not None and (
                    peer.name is not None or now - peer.up_unsaid_since >= NAME_WAIT_S):
                self._tell(peer, True, "probes")
            if (peer.flaps.over(now, peer.name or peer.key) is not None
                    and peer.was_up != peer.told_up and peer.up_unsaid_since is None):
                self._say(peer, is_up, "probes" if is_up else "no probe replies", now)

    def resume(self, now: float, grace_s: float) -> None:
        """Monitoring resumes after a pause: a pause is not an outage."""
        self.paused = False
        for link in self.links.values():
            if link.last_reply is not None:
                link.last_reply = max(link.last_reply, now - grace_s)

    def answered(self, host: str) -> bool:
        """Whether `host` is the address of a link that answers our probes now."""
        return any(lk.up and lk.target[0] == host for lk in self.links.values())

    def best_target(self, peer: Peer, now: float) -> Target | None:
        """The address to fetch a peer's snapshot from: its fastest link that is up,
        else its first manual address (the user named it), else None: an address only
        mDNS named is never fetched from before it has answered a probe (so an
        announcement cannot aim our HTTP client at a bystander)."""
        up = [lk for lk in self.links.values() if lk.peer is peer and lk.up]
        if up:
            return min(up, key=lambda lk: lk.rtt.summary(now).median_ms or 1e9).target
        return next((t for t in peer.addresses if t in peer.manual_targets), None)

    def reachable(self) -> set[str]:
        """The keys of the peers `best_target` names an address for, in one pass over
        the links (asked for every peer each interval: per peer it is O(links))."""
        up = {id(lk.peer) for lk in self.links.values() if lk.up}
        return {p.key for p in self.peers.values()
                if id(p) in up or any(t in p.manual_targets for t in p.addresses)}

    # -- pruning ---------------------------------------------------------------------
    def prune(self, now: float) -> None:
        """Forget stale snapshots, and mDNS peers that have been down for too long.

        Also drop an mDNS address that has never answered for STALE_ADDRESS_S while
        another address of the same peer answers: mDNS caches keep an old address
        (after a DHCP change) for minutes, and its link would show down all that time.
        """
        by_peer: dict[int, list[Link]] = {}
        for lk in self.links.values():
            by_peer.setdefault(id(lk.peer), []).append(lk)
        for p in list(self.peers.values()):
            links = by_peer.get(id(p), [])
            if any(lk.up for lk in links):
                for lk in links:
                    if (lk.target in p.mdns_targets and lk.target not in p.manual_targets
                            and lk.last_reply is None and lk.first_probe is not None
                            and now - lk.first_probe > STALE_ADDRESS_S):
                        log.info("peer %s: address %s never answered while another does; "
                                 "dropping it (a stale mDNS record?)", p.name or p.key,
                                 lk.target[0])
                        p.mdns_targets = [t for t in p.mdns_targets if t != lk.target]
                        self.set_targets(p)
        never = [p for p in self.peers.values() if p.sources == {"mdns"} and not p.ever_up
                 and now - p.seen_at > L.NEVER_UP_FORGET_S]
        for p in never:
            self.remove(p, "never answered")
        self._admit_waiting(now)
        if never:
            log.info("forgot %d mDNS peer(s) that never answered a probe in %.0f s: %s",
                     len(never), L.NEVER_UP_FORGET_S,
                     ", ".join(p.name or p.key for p in never[:5])
                     + (", ..." if len(never) > 5 else ""))
        for p in list(self.peers.values()):
            if p.snapshot_at is not None and now - p.snapshot_at > PEER_FORGET_S:
                p.snapshot = None
                p.snapshot_at = None
            if (
                "manual" not in p.sources
                and p.down_since is not None
                and now - p.down_since > PEER_FORGET_S
            ):
                log.info("peer %s: down for %.0f s; forgetting it", p.name or p.key,
                         now - p.down_since)
                self.remove(p, "down too long")
